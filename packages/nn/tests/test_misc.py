"""Flatten/Unflatten, padding layers, Upsample, PixelShuffle/Unshuffle,
ChannelShuffle, Fold/Unfold, distances: NumPy values and PyTorch parity."""

import numpy as np
import pytest
from _parity import check_layer, to_numpy

import ember_core as ec
import ember_nn as nn


def test_flatten_unflatten(rng):
    x = rng.standard_normal((2, 3, 4, 5))
    np.testing.assert_array_equal(to_numpy(nn.Flatten()(ec.tensor(x))), x.reshape(2, -1))
    np.testing.assert_array_equal(to_numpy(nn.Flatten(0, 2)(ec.tensor(x))), x.reshape(24, 5))
    np.testing.assert_array_equal(
        to_numpy(nn.Unflatten(1, (3, 1))(ec.tensor(x))), x.reshape(2, 3, 1, 4, 5)
    )
    with pytest.raises(TypeError, match="tuple of ints"):
        nn.Unflatten(1, 3)


def test_padding_layers_match_numpy(rng):
    x = rng.standard_normal((1, 2, 3, 4))
    np.testing.assert_array_equal(
        to_numpy(nn.ZeroPad2d((1, 2, 0, 1))(ec.tensor(x))),
        np.pad(x, ((0, 0), (0, 0), (0, 1), (1, 2))),
    )
    np.testing.assert_array_equal(
        to_numpy(nn.ConstantPad1d(2, 3.5)(ec.tensor(x[0]))),
        np.pad(x[0], ((0, 0), (0, 0), (2, 2)), constant_values=3.5),
    )
    np.testing.assert_array_equal(
        to_numpy(nn.ReflectionPad2d(1)(ec.tensor(x))),
        np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)), mode="reflect"),
    )
    np.testing.assert_array_equal(
        to_numpy(nn.ReplicationPad2d(2)(ec.tensor(x))),
        np.pad(x, ((0, 0), (0, 0), (2, 2), (2, 2)), mode="edge"),
    )
    np.testing.assert_array_equal(
        to_numpy(nn.CircularPad2d(1)(ec.tensor(x))),
        np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)), mode="wrap"),
    )
    assert repr(nn.ZeroPad2d(1)) == "ZeroPad2d((1, 1, 1, 1))"
    assert repr(nn.ConstantPad2d(1, 2.0)) == "ConstantPad2d(padding=(1, 1, 1, 1), value=2.0)"
    assert repr(nn.ReflectionPad1d((1, 2))) == "ReflectionPad1d((1, 2))"


def test_pixel_shuffle_round_trip(rng):
    x = rng.standard_normal((2, 8, 3, 3))
    y = nn.PixelShuffle(2)(ec.tensor(x))
    assert y.shape == (2, 2, 6, 6)
    ref = x.reshape(2, 2, 2, 2, 3, 3).transpose(0, 1, 4, 2, 5, 3).reshape(2, 2, 6, 6)
    np.testing.assert_array_equal(to_numpy(y), ref)
    np.testing.assert_array_equal(to_numpy(nn.PixelUnshuffle(2)(y)), x)


def test_upsample_nearest_and_repr(rng):
    x = rng.standard_normal((1, 1, 2, 3))
    y = to_numpy(nn.Upsample(scale_factor=2)(ec.tensor(x)))
    np.testing.assert_array_equal(y, x.repeat(2, 2).repeat(2, 3))
    assert repr(nn.Upsample(scale_factor=2)) == "Upsample(scale_factor=2.0, mode='nearest')"
    assert (
        repr(nn.Upsample(size=(4, 4), mode="bilinear")) == "Upsample(size=(4, 4), mode='bilinear')"
    )


def test_distances_match_numpy(rng):
    a, b = rng.standard_normal((4, 5)), rng.standard_normal((4, 5))
    np.testing.assert_allclose(
        to_numpy(nn.PairwiseDistance()(ec.tensor(a), ec.tensor(b))),
        np.linalg.norm(a - b + 1e-6, axis=1),
        rtol=1e-10,
    )
    cos = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    np.testing.assert_allclose(
        to_numpy(nn.CosineSimilarity()(ec.tensor(a), ec.tensor(b))), cos, rtol=1e-10
    )


CASES = [
    (lambda N: N.Flatten(), [(2, 3, 4)]),
    (lambda N: N.Flatten(0, -1), [(2, 3, 4)]),
    (lambda N: N.Unflatten(-1, (2, 2)), [(2, 3, 4)]),
    (lambda N: N.ZeroPad1d((1, 2)), [(2, 3, 4)]),
    (lambda N: N.ZeroPad2d((1, 0, 2, 1)), [(2, 3, 4, 4)]),
    (lambda N: N.ZeroPad3d(1), [(1, 2, 2, 3, 2)]),
    (lambda N: N.ConstantPad2d((1, 1, 0, 2), -1.5), [(2, 3, 4, 4)]),
    (lambda N: N.ConstantPad3d((1, 0, 0, 1, 1, 0), 2.0), [(1, 2, 2, 3, 2)]),
    (lambda N: N.ReflectionPad1d(2), [(2, 3, 5)]),
    (lambda N: N.ReflectionPad2d((1, 2, 2, 1)), [(2, 3, 4, 4)]),
    (lambda N: N.ReflectionPad3d(1), [(1, 2, 3, 3, 3)]),
    (lambda N: N.ReplicationPad1d((3, 1)), [(2, 3, 5)]),
    (lambda N: N.ReplicationPad2d(2), [(2, 3, 4, 4)]),
    (lambda N: N.ReplicationPad3d(1), [(1, 2, 2, 2, 2)]),
    (lambda N: N.CircularPad1d(2), [(2, 3, 5)]),
    (lambda N: N.CircularPad2d((1, 2, 1, 0)), [(2, 3, 4, 4)]),
    (lambda N: N.Upsample(scale_factor=2), [(2, 3, 4, 5)]),
    (lambda N: N.Upsample(size=(5, 7), mode="nearest"), [(2, 3, 4, 5)]),
    (lambda N: N.Upsample(scale_factor=2, mode="bilinear"), [(2, 3, 4, 5)]),
    (lambda N: N.Upsample(scale_factor=1.5, mode="bilinear", align_corners=True), [(2, 3, 4, 5)]),
    (lambda N: N.Upsample(scale_factor=3, mode="linear"), [(2, 3, 4)]),
    (lambda N: N.Upsample(size=(6, 6), mode="bicubic"), [(1, 2, 4, 5)]),
    (lambda N: N.UpsamplingNearest2d(scale_factor=2), [(1, 2, 3, 3)]),
    (lambda N: N.UpsamplingBilinear2d(size=(5, 5)), [(1, 2, 3, 3)]),
    (lambda N: N.PixelShuffle(2), [(2, 8, 3, 2)]),
    (lambda N: N.PixelUnshuffle(2), [(2, 2, 4, 6)]),
    (lambda N: N.ChannelShuffle(2), [(2, 6, 3, 3)]),
    (lambda N: N.Unfold(2), [(2, 3, 4, 5)]),
    (lambda N: N.Unfold((2, 3), dilation=1, padding=1, stride=2), [(2, 3, 5, 5)]),
    (lambda N: N.Fold((4, 5), 2), [(2, 12, 12)]),
    (lambda N: N.PairwiseDistance(), [(4, 5), (4, 5)]),
    (lambda N: N.PairwiseDistance(p=1.0, keepdim=True), [(4, 5), (4, 5)]),
    (lambda N: N.CosineSimilarity(dim=1), [(4, 5), (4, 5)]),
    (lambda N: N.CosineSimilarity(dim=0), [(4, 5), (1, 5)]),
]


@pytest.mark.parity
@pytest.mark.parametrize(
    "build, shapes", CASES, ids=[repr(c[0](nn)).replace("\n", "") for c in CASES]
)
def test_parity(torch, rng, build, shapes):
    check_layer(torch, build, [rng.standard_normal(s) for s in shapes])
