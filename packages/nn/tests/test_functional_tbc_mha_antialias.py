"""ember.nn.functional's conv_tbc against a NumPy loop and PyTorch,
multi_head_attention_forward exported (and used by MultiheadAttention), and
anti-aliased interpolate through F (PyTorch parity of values and gradients)."""

import numpy as np
import pytest
from _parity import to_numpy

import ember_autograd as ag
import ember_core as ec
import ember_nn as nn
import ember_nn.functional as F


def test_conv_tbc_against_numpy(rng):
    x, w, b = rng.standard_normal((7, 2, 3)), rng.standard_normal((3, 3, 4)), rng.standard_normal(4)
    pad = 1
    xp = np.pad(x, ((pad, pad), (0, 0), (0, 0)))
    t_out = xp.shape[0] - w.shape[0] + 1
    ref = np.stack([sum(xp[t + k] @ w[k] for k in range(3)) + b for t in range(t_out)])
    out = F.conv_tbc(ec.tensor(x), ec.tensor(w), ec.tensor(b), pad)
    np.testing.assert_allclose(to_numpy(out), ref, atol=1e-12)
    args = [ec.tensor(a, requires_grad=True) for a in (x, w, b)]
    assert ag.gradcheck(lambda x, w, b: F.conv_tbc(x, w, b, 2), args)
    with pytest.raises(RuntimeError, match="Input dim 2"):
        F.conv_tbc(ec.randn(5, 2, 4), ec.randn(3, 3, 4), ec.randn(4))


def test_multi_head_attention_forward_is_called_by_the_module(monkeypatch):
    calls = []
    original = F.multi_head_attention_forward

    def spy(*args, **kwargs):
        calls.append(args[4])
        return original(*args, **kwargs)

    monkeypatch.setattr(F, "multi_head_attention_forward", spy)
    mha = nn.MultiheadAttention(8, 2)
    x = ec.randn(3, 1, 8)
    mha(x, x, x)
    assert calls == [2]


@pytest.mark.parity
@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize(
    "shape,kw",
    [
        ((2, 3, 17, 23), {"size": (5, 7)}),
        ((1, 2, 10, 12), {"scale_factor": 0.37}),
        ((1, 2, 5, 6), {"size": (11, 13)}),
        ((1, 1, 9, 9), {"size": (4, 3), "align_corners": True}),
        ((1, 1, 20, 20), {"scale_factor": 0.3, "recompute_scale_factor": True}),
    ],
)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_antialias_parity(torch, rng, mode, shape, kw, dtype):
    x = rng.standard_normal(shape).astype(dtype)
    tx, ex = torch.tensor(x, requires_grad=True), ec.tensor(x, requires_grad=True)
    t = torch.nn.functional.interpolate(tx, mode=mode, antialias=True, **kw)
    e = F.interpolate(ex, mode=mode, antialias=True, **kw)
    tol = 1e-5 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(to_numpy(e), to_numpy(t), atol=tol)
    g = rng.standard_normal(tuple(t.shape)).astype(dtype)
    t.backward(torch.tensor(g))
    e.backward(ec.tensor(g))
    np.testing.assert_allclose(to_numpy(ex.grad), to_numpy(tx.grad), atol=tol)


@pytest.mark.parity
def test_conv_tbc_parity(torch, rng):
    x, w, b = rng.standard_normal((9, 3, 4)), rng.standard_normal((2, 4, 5)), rng.standard_normal(5)
    for pad in (0, 1, 3):
        t = torch.conv_tbc(torch.tensor(x), torch.tensor(w), torch.tensor(b), pad)
        e = F.conv_tbc(ec.tensor(x), ec.tensor(w), ec.tensor(b), pad)
        np.testing.assert_allclose(to_numpy(e), to_numpy(t), atol=1e-12)
