"""Conv1d/2d/3d, ConvTranspose1d/2d/3d and their lazy forms: NumPy values,
PyTorch's initialisation bounds, and PyTorch parity (outputs and gradients)."""

import math

import numpy as np
import pytest
from _parity import check_layer, to_numpy

import ember_core as ec
import ember_nn as nn


def conv2d_numpy(x, w, b, stride, padding, dilation, groups):
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    x = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    oh = (x.shape[2] - dilation * (kh - 1) - 1) // stride + 1
    ow = (x.shape[3] - dilation * (kw - 1) - 1) // stride + 1
    out = np.zeros((n, o, oh, ow))
    og = o // groups
    for g in range(groups):
        xs = x[:, g * cg : (g + 1) * cg]
        for i in range(oh):
            for j in range(ow):
                patch = xs[
                    :,
                    :,
                    i * stride : i * stride + dilation * (kh - 1) + 1 : dilation,
                    j * stride : j * stride + dilation * (kw - 1) + 1 : dilation,
                ]
                out[:, g * og : (g + 1) * og, i, j] = np.einsum(
                    "nchw,ochw->no", patch, w[g * og : (g + 1) * og]
                )
    return out + (b[None, :, None, None] if b is not None else 0)


@pytest.mark.parametrize(
    "stride, padding, dilation, groups", [(1, 0, 1, 1), (2, 1, 1, 1), (1, 2, 2, 2)]
)
def test_conv2d_matches_numpy(rng, stride, padding, dilation, groups):
    m = nn.Conv2d(
        4, 6, 3, stride=stride, padding=padding, dilation=dilation, groups=groups
    ).double()
    x = rng.standard_normal((2, 4, 9, 8))
    y = to_numpy(m(ec.tensor(x)))
    expected = conv2d_numpy(
        x, to_numpy(m.weight), to_numpy(m.bias), stride, padding, dilation, groups
    )
    np.testing.assert_allclose(y, expected, rtol=1e-10, atol=1e-10)


def test_default_initialisation_bounds():
    m = nn.Conv2d(8, 16, 3)
    bound = 1 / math.sqrt(8 * 9)  # kaiming_uniform_(a=sqrt(5)) on fan_in = 72
    w, b = to_numpy(m.weight), to_numpy(m.bias)
    assert w.shape == (16, 8, 3, 3) and np.abs(w).max() <= bound and np.abs(w).max() > 0.9 * bound
    assert np.abs(b).max() <= bound
    t = nn.ConvTranspose2d(8, 4, 3, groups=2)
    assert t.weight.shape == (8, 2, 3, 3)


def test_argument_errors():
    with pytest.raises(ValueError, match="divisible by groups"):
        nn.Conv2d(3, 6, 3, groups=2)
    with pytest.raises(ValueError, match="strided"):
        nn.Conv2d(3, 6, 3, stride=2, padding="same")
    with pytest.raises(ValueError, match="Invalid padding string"):
        nn.Conv2d(3, 6, 3, padding="full")
    with pytest.raises(ValueError, match="padding_mode"):
        nn.Conv2d(3, 6, 3, padding_mode="mirror")
    with pytest.raises(ValueError, match="zeros"):
        nn.ConvTranspose2d(3, 6, 3, padding_mode="reflect")


def test_reprs():
    assert repr(nn.Conv2d(3, 8, 3, padding="same", padding_mode="reflect", bias=False)) == (
        "Conv2d(3, 8, kernel_size=(3, 3), stride=(1, 1), padding=same, bias=False, "
        "padding_mode=reflect)"
    )
    assert repr(nn.ConvTranspose1d(4, 2, 3, stride=2, output_padding=1, dilation=2, groups=2)) == (
        "ConvTranspose1d(4, 2, kernel_size=(3,), stride=(2,), dilation=(2,), "
        "output_padding=(1,), groups=2)"
    )


def test_conv_transpose_output_size():
    m = nn.ConvTranspose2d(2, 3, 3, stride=2, padding=1)
    x = ec.randn(1, 2, 4, 4)
    assert m(x).shape == (1, 3, 7, 7)
    assert m(x, output_size=(8, 8)).shape == (1, 3, 8, 8)
    assert m(x, output_size=[1, 3, 8, 8]).shape == (1, 3, 8, 8)
    with pytest.raises(ValueError, match="requested an output size"):
        m(x, output_size=(10, 10))


def test_lazy_conv_becomes_conv():
    m = nn.LazyConv2d(5, 3, padding=1)
    y = m(ec.randn(2, 3, 6, 6))
    assert type(m) is nn.Conv2d and m.in_channels == 3 and m.weight.shape == (5, 3, 3, 3)
    assert y.shape == (2, 5, 6, 6)
    t = nn.LazyConvTranspose2d(4, 2, stride=2)
    assert t(ec.randn(1, 6, 3, 3)).shape == (1, 4, 6, 6) and type(t) is nn.ConvTranspose2d


CASES = [
    (lambda N: N.Conv1d(3, 4, 3), (2, 3, 10)),
    (
        lambda N: N.Conv1d(4, 4, 3, stride=2, padding=2, dilation=2, groups=2, bias=False),
        (2, 4, 11),
    ),
    (lambda N: N.Conv1d(3, 4, 3, padding="same", padding_mode="circular"), (2, 3, 9)),
    (lambda N: N.Conv1d(3, 2, 2), (3, 7)),
    (lambda N: N.Conv2d(3, 4, 3), (2, 3, 8, 7)),
    (lambda N: N.Conv2d(3, 6, (3, 2), stride=(2, 1), padding=(1, 0), groups=3), (2, 3, 9, 8)),
    (lambda N: N.Conv2d(4, 4, 3, groups=4, padding=1, bias=False), (2, 4, 6, 6)),
    (lambda N: N.Conv2d(2, 3, 3, padding=2, dilation=2), (1, 2, 7, 7)),
    (lambda N: N.Conv2d(2, 3, 3, padding="same", padding_mode="reflect"), (2, 2, 6, 5)),
    (lambda N: N.Conv2d(2, 3, 4, padding="same", padding_mode="replicate"), (2, 2, 6, 5)),
    (lambda N: N.Conv2d(2, 3, 3, padding=1, padding_mode="circular"), (2, 2, 5, 5)),
    (lambda N: N.Conv2d(2, 3, 3, padding="valid"), (2, 2, 5, 5)),
    (lambda N: N.Conv2d(2, 3, 1), (2, 5, 5)),
    (lambda N: N.Conv3d(2, 3, 2, stride=(1, 2, 1), padding=1), (2, 2, 4, 5, 4)),
    (lambda N: N.ConvTranspose1d(3, 2, 3, stride=2, padding=1, output_padding=1), (2, 3, 5)),
    (
        lambda N: N.ConvTranspose2d(4, 2, 3, stride=2, padding=1, output_padding=1, groups=2),
        (2, 4, 4, 3),
    ),
    (lambda N: N.ConvTranspose2d(2, 3, 2, dilation=2, bias=False), (1, 2, 4, 4)),
    (lambda N: N.ConvTranspose2d(2, 3, 3), (2, 3, 3)),
    (lambda N: N.ConvTranspose3d(2, 2, 2, stride=2), (1, 2, 2, 3, 2)),
]


@pytest.mark.parity
@pytest.mark.parametrize("build, shape", CASES)
def test_parity(torch, rng, build, shape):
    check_layer(torch, build, [rng.standard_normal(shape)])


@pytest.mark.parity
def test_conv_transpose_output_size_parity(torch, rng):
    check_layer(
        torch,
        lambda N: N.ConvTranspose2d(2, 3, 3, stride=2, padding=1),
        [rng.standard_normal((1, 2, 4, 4))],
        call=lambda m, x: m(x, output_size=(8, 8)),
    )
