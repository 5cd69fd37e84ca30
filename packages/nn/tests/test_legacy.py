"""Container and CrossMapLRN2d: CrossMapLRN2d's values against a NumPy loop of
PyTorch's legacy running-sum window (channel 0 is never dropped), and PyTorch
parity of outputs, its hand-written backward, and reprs."""

import numpy as np
import pytest
from _parity import check_layer, to_numpy

import ember_core as ec
import ember_nn as nn


def _reference_lrn(x, size, alpha, beta, k):
    c = x.shape[1]
    pre_pad = int((size - 1) / 2 + 1)
    sq = x**2
    scale = np.zeros_like(x)
    scale[:, 0] = sq[:, : min(pre_pad, c)].sum(1)
    for ch in range(1, c):
        scale[:, ch] = scale[:, ch - 1]
        if ch < c - pre_pad + 1:
            scale[:, ch] += sq[:, ch + pre_pad - 1]
        if ch > pre_pad:
            scale[:, ch] -= sq[:, ch - pre_pad]
    return x * (scale * alpha / size + k) ** -beta


@pytest.mark.parametrize("size,channels", [(3, 6), (5, 9), (4, 3), (1, 4)])
def test_cross_map_lrn_values(rng, size, channels):
    x = rng.standard_normal((2, channels, 3, 4))
    m = nn.CrossMapLRN2d(size, alpha=0.3, beta=0.75, k=2.0)
    np.testing.assert_allclose(
        to_numpy(m(ec.tensor(x))), _reference_lrn(x, size, 0.3, 0.75, 2.0), rtol=1e-12
    )


def test_cross_map_lrn_errors_and_repr():
    with pytest.raises(ValueError, match="Expected input to be 4D, got 3D"):
        nn.CrossMapLRN2d(3)(ec.randn(2, 3, 4))
    assert repr(nn.CrossMapLRN2d(5)) == "CrossMapLRN2d(5, alpha=0.0001, beta=0.75, k=1)"


def test_container():
    c = nn.Container(a=nn.Linear(2, 3), b=nn.ReLU())
    assert [n for n, _ in c.named_children()] == ["a", "b"]
    assert [n for n, _ in c.named_parameters()] == ["a.weight", "a.bias"]


@pytest.mark.parity
@pytest.mark.parametrize("size,channels", [(3, 6), (5, 9), (2, 5)])
def test_parity(torch, rng, size, channels):
    x = rng.standard_normal((2, channels, 3, 4))
    em, tm = check_layer(torch, lambda n: n.CrossMapLRN2d(size, 0.5, 0.6, 1.5), [x])
    assert repr(em) == repr(tm)
    assert repr(nn.Container(a=nn.Linear(2, 3))) == repr(
        torch.nn.Container(a=torch.nn.Linear(2, 3))
    )
