"""Every activation module: NumPy values for the common ones, reprs, in-place
forms, and PyTorch parity of outputs and gradients."""

import math

import numpy as np
import pytest
from _parity import check_layer, to_numpy

import ember_core as ec
import ember_nn as nn

X = np.linspace(-4, 4, 41).reshape(1, 41)

NUMPY = [
    (nn.ReLU(), np.maximum(X, 0)),
    (nn.ReLU6(), np.clip(X, 0, 6)),
    (nn.LeakyReLU(0.2), np.where(X > 0, X, 0.2 * X)),
    (nn.Sigmoid(), 1 / (1 + np.exp(-X))),
    (nn.Tanh(), np.tanh(X)),
    (nn.ELU(0.5), np.where(X > 0, X, 0.5 * np.expm1(X))),
    (nn.Softplus(), np.log1p(np.exp(X))),
    (nn.SiLU(), X / (1 + np.exp(-X))),
    (nn.Hardtanh(-2, 2), np.clip(X, -2, 2)),
    (nn.Softsign(), X / (1 + np.abs(X))),
    (nn.Threshold(0.5, -1.0), np.where(X > 0.5, X, -1.0)),
    (nn.GELU(), X * 0.5 * (1 + np.vectorize(math.erf)(X / math.sqrt(2)))),
    (nn.Softmax(dim=1), np.exp(X) / np.exp(X).sum(1, keepdims=True)),
    (nn.LogSoftmax(dim=1), X - np.log(np.exp(X).sum(1, keepdims=True))),
    (nn.Hardshrink(1.0), np.where(np.abs(X) > 1.0, X, 0)),
    (nn.Softshrink(1.0), np.sign(X) * np.maximum(np.abs(X) - 1.0, 0)),
]


@pytest.mark.parametrize(
    "module, expected", NUMPY, ids=lambda v: type(v).__name__ if isinstance(v, nn.Module) else ""
)
def test_matches_numpy(module, expected):
    np.testing.assert_allclose(to_numpy(module(ec.tensor(X))), expected, rtol=1e-10, atol=1e-12)


def test_inplace_activation_writes_its_input():
    x = ec.tensor([-1.0, 2.0])
    y = nn.ReLU(inplace=True)(x)
    np.testing.assert_array_equal(to_numpy(x), [0.0, 2.0])
    assert y.data_ptr() == x.data_ptr()


def test_reprs():
    assert repr(nn.ReLU()) == "ReLU()"
    assert repr(nn.ReLU(inplace=True)) == "ReLU(inplace=True)"
    assert repr(nn.LeakyReLU(0.1, True)) == "LeakyReLU(negative_slope=0.1, inplace=True)"
    assert repr(nn.Hardswish(True)) == "Hardswish()"
    assert repr(nn.GELU("tanh")) == "GELU(approximate='tanh')"
    assert repr(nn.Softmax(1)) == "Softmax(dim=1)"
    assert repr(nn.PReLU(3)) == "PReLU(num_parameters=3)"
    assert repr(nn.Hardtanh(0.0, 6.0)) == "Hardtanh(min_val=0.0, max_val=6.0)"
    assert repr(nn.Softshrink(0.3)) == "Softshrink(0.3)"
    with pytest.raises(AssertionError, match="must be greater"):
        nn.Hardtanh(1.0, 0.0)


def test_softmax2d_checks_dims():
    with pytest.raises(ValueError, match="3D or 4D"):
        nn.Softmax2d()(ec.randn(2, 3))


def test_rrelu_eval_uses_mean_slope_and_train_slopes_lie_in_range():
    m = nn.RReLU(0.1, 0.3).eval()
    np.testing.assert_allclose(to_numpy(m(ec.tensor(X))), np.where(X >= 0, X, 0.2 * X), rtol=1e-10)
    m.train()
    x = -np.ones((1000,))
    slopes = -to_numpy(m(ec.tensor(x)))
    assert slopes.min() >= 0.1 and slopes.max() <= 0.3 and slopes.std() > 0.03


ACTIVATIONS = [
    lambda N: N.ReLU(),
    lambda N: N.ReLU6(),
    lambda N: N.ELU(),
    lambda N: N.ELU(alpha=0.3),
    lambda N: N.CELU(0.7),
    lambda N: N.SELU(),
    lambda N: N.GELU(),
    lambda N: N.GELU(approximate="tanh"),
    lambda N: N.SiLU(),
    lambda N: N.Mish(),
    lambda N: N.Sigmoid(),
    lambda N: N.Tanh(),
    lambda N: N.Hardsigmoid(),
    lambda N: N.Hardswish(),
    lambda N: N.Hardtanh(),
    lambda N: N.Hardtanh(-0.5, 2.0),
    lambda N: N.LeakyReLU(),
    lambda N: N.LeakyReLU(0.3),
    lambda N: N.LogSigmoid(),
    lambda N: N.Softplus(),
    lambda N: N.Softplus(2.0, 5.0),
    lambda N: N.Softshrink(),
    lambda N: N.Hardshrink(0.3),
    lambda N: N.Softsign(),
    lambda N: N.Tanhshrink(),
    lambda N: N.Threshold(0.1, 20.0),
    lambda N: N.GLU(),
    lambda N: N.GLU(dim=1),
    lambda N: N.Softmax(dim=-1),
    lambda N: N.Softmax(dim=1),
    lambda N: N.Softmin(dim=1),
    lambda N: N.LogSoftmax(dim=-1),
    lambda N: N.Softmax2d(),
    lambda N: N.PReLU(),
    lambda N: N.PReLU(4, init=0.1),
    lambda N: N.RReLU(),
]


@pytest.mark.parity
@pytest.mark.parametrize("build", ACTIVATIONS, ids=lambda b: repr(b(nn)))
def test_parity(torch, rng, build):
    x = rng.standard_normal((2, 4, 4, 6)) * 3
    x[np.abs(x) < 1e-3] = 0.5  # keep clear of kinks
    train = not isinstance(build(nn), nn.RReLU)  # RReLU is random while training
    check_layer(torch, build, [x], train=train)
