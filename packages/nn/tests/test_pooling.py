"""Pooling layers: NumPy values, reprs and PyTorch parity (outputs, indices and
gradients)."""

import numpy as np
import pytest
from _parity import check_layer, to_numpy

import ember_core as ec
import ember_nn as nn


def test_max_and_avg_pool2d_match_numpy(rng):
    x = rng.standard_normal((2, 3, 6, 8))
    blocks = x.reshape(2, 3, 3, 2, 4, 2)
    np.testing.assert_allclose(to_numpy(nn.MaxPool2d(2)(ec.tensor(x))), blocks.max((3, 5)))
    np.testing.assert_allclose(
        to_numpy(nn.AvgPool2d(2)(ec.tensor(x))), blocks.mean((3, 5)), rtol=1e-12
    )
    np.testing.assert_allclose(
        to_numpy(nn.AdaptiveAvgPool2d(1)(ec.tensor(x))), x.mean((2, 3), keepdims=True), rtol=1e-12
    )
    np.testing.assert_allclose(
        to_numpy(nn.AdaptiveMaxPool2d((3, 4))(ec.tensor(x))), blocks.max((3, 5))
    )


def test_max_pool_indices(rng):
    x = rng.standard_normal((1, 1, 4, 4))
    values, idx = nn.MaxPool2d(2, return_indices=True)(ec.tensor(x))
    flat = x.reshape(-1)
    np.testing.assert_allclose(flat[to_numpy(idx).reshape(-1)], to_numpy(values).reshape(-1))


def test_reprs():
    assert (
        repr(nn.MaxPool2d(3, 2, 1))
        == "MaxPool2d(kernel_size=3, stride=2, padding=1, dilation=1, ceil_mode=False)"
    )
    assert repr(nn.AvgPool1d(3)) == "AvgPool1d(kernel_size=(3,), stride=(3,), padding=(0,))"
    assert repr(nn.AvgPool2d(2, padding=1)) == "AvgPool2d(kernel_size=2, stride=2, padding=1)"
    assert repr(nn.AdaptiveAvgPool2d((5, 7))) == "AdaptiveAvgPool2d(output_size=(5, 7))"
    assert (
        repr(nn.LPPool2d(2, 3))
        == "LPPool2d(norm_type=2, kernel_size=3, stride=None, ceil_mode=False)"
    )


CASES = [
    (lambda N: N.MaxPool1d(3, stride=2, padding=1), (2, 3, 9)),
    (lambda N: N.MaxPool1d(2, ceil_mode=True), (2, 3, 9)),
    (lambda N: N.MaxPool2d(2), (2, 3, 8, 6)),
    (lambda N: N.MaxPool2d(3, stride=2, padding=1, ceil_mode=True), (2, 2, 7, 7)),
    (lambda N: N.MaxPool2d(2, dilation=2), (1, 2, 7, 7)),
    (lambda N: N.MaxPool2d(2, return_indices=True), (2, 2, 6, 6)),
    (lambda N: N.MaxPool2d(2), (3, 6, 6)),
    (lambda N: N.MaxPool3d(2), (1, 2, 4, 4, 4)),
    (lambda N: N.AvgPool1d(3, stride=2, padding=1), (2, 3, 9)),
    (lambda N: N.AvgPool1d(3, padding=1, count_include_pad=False, ceil_mode=True), (2, 3, 8)),
    (lambda N: N.AvgPool2d(2), (2, 3, 8, 6)),
    (lambda N: N.AvgPool2d(3, stride=2, padding=1, count_include_pad=False), (2, 2, 7, 7)),
    (lambda N: N.AvgPool2d(2, divisor_override=3), (2, 2, 4, 4)),
    (lambda N: N.AvgPool3d(2, stride=1), (1, 2, 3, 4, 3)),
    (lambda N: N.AdaptiveAvgPool1d(4), (2, 3, 10)),
    (lambda N: N.AdaptiveAvgPool2d((3, 2)), (2, 3, 7, 5)),
    (lambda N: N.AdaptiveAvgPool2d(1), (2, 3, 7, 5)),
    (lambda N: N.AdaptiveAvgPool2d((None, 2)), (2, 3, 7, 5)),
    (lambda N: N.AdaptiveAvgPool3d(2), (1, 2, 4, 5, 3)),
    (lambda N: N.AdaptiveMaxPool1d(3), (2, 3, 10)),
    (lambda N: N.AdaptiveMaxPool2d((3, 2), return_indices=True), (2, 3, 7, 5)),
    (lambda N: N.AdaptiveMaxPool3d(2), (1, 2, 4, 4, 4)),
    (lambda N: N.LPPool1d(2, 3, stride=2), (2, 3, 9)),
    (lambda N: N.LPPool2d(1.5, 2), (2, 3, 6, 6)),
]


@pytest.mark.parity
@pytest.mark.parametrize("build, shape", CASES)
def test_parity(torch, rng, build, shape):
    x = rng.standard_normal(shape)
    if "LPPool" in repr(build(nn)):
        x = np.abs(x) + 0.1  # fractional norms of negative sums are NaN in both
    check_layer(torch, build, [x])
