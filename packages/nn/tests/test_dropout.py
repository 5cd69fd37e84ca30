"""Dropout layers: statistics of the masks (rate, scaling, channel-wise
zeroing, alpha dropout's preserved moments) and identity in eval mode."""

import numpy as np
import pytest
from _parity import to_numpy

import ember_core as ec
import ember_nn as nn


@pytest.mark.parametrize("p", [0.1, 0.5, 0.8])
def test_dropout_rate_and_scaling(p):
    ec.manual_seed(0)
    x = ec.ones(200, 500)
    y = to_numpy(nn.Dropout(p)(x))
    kept = y != 0
    # 100k Bernoulli draws: the kept fraction is within 4 standard deviations of 1 - p
    assert abs(kept.mean() - (1 - p)) < 4 * np.sqrt(p * (1 - p) / y.size)
    np.testing.assert_allclose(y[kept], 1 / (1 - p), rtol=1e-6)


def test_dropout_eval_and_p0_are_identity():
    x = ec.randn(10, 10)
    m = nn.Dropout(0.5).eval()
    np.testing.assert_array_equal(to_numpy(m(x)), to_numpy(x))
    np.testing.assert_array_equal(to_numpy(nn.Dropout(0.0)(x)), to_numpy(x))
    np.testing.assert_array_equal(to_numpy(nn.Dropout(1.0)(x)), np.zeros((10, 10)))


def test_dropout_gradient_uses_the_same_mask():
    ec.manual_seed(1)
    x = ec.ones(50, 50, requires_grad=True)
    y = nn.Dropout(0.3)(x)
    y.sum().backward()
    np.testing.assert_array_equal(to_numpy(x.grad), to_numpy(y))


def test_dropout_inplace():
    x = ec.ones(100, 100)
    y = nn.Dropout(0.5, inplace=True)(x)
    assert (to_numpy(x) == to_numpy(y)).all() and (to_numpy(x) == 0).any()


@pytest.mark.parametrize(
    "cls, shape",
    [
        (nn.Dropout1d, (40, 50, 7)),
        (nn.Dropout2d, (40, 50, 4, 3)),
        (nn.Dropout3d, (40, 50, 2, 2, 2)),
    ],
)
def test_channel_dropout_zeroes_whole_channels(cls, shape):
    ec.manual_seed(2)
    y = to_numpy(cls(0.4)(ec.ones(*shape))).reshape(shape[0], shape[1], -1)
    per_channel = y.max(-1)
    assert ((y == 0).all(-1) | (y == per_channel[..., None]).all(-1)).all(), (
        "a channel is kept or dropped whole"
    )
    kept = per_channel != 0
    assert abs(kept.mean() - 0.6) < 4 * np.sqrt(0.24 / kept.size)
    np.testing.assert_allclose(per_channel[kept], 1 / 0.6, rtol=1e-6)


def test_alpha_dropout_keeps_mean_and_variance():
    ec.manual_seed(3)
    x = ec.randn(400, 500)
    y = to_numpy(nn.AlphaDropout(0.3)(x))
    assert abs(y.mean()) < 0.02 and abs(y.std() - 1) < 0.02
    values, counts = np.unique(y, return_counts=True)
    assert abs(counts.max() / y.size - 0.3) < 0.01, "dropped units all take one value"
    np.testing.assert_array_equal(to_numpy(nn.AlphaDropout(0.3).eval()(x)), to_numpy(x))


def test_invalid_probability():
    with pytest.raises(ValueError, match="between 0 and 1"):
        nn.Dropout(1.5)
    assert repr(nn.Dropout(0.2)) == "Dropout(p=0.2, inplace=False)"
