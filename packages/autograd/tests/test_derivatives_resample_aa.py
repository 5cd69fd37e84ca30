"""Gradients of anti-aliased interpolate (bilinear, bicubic; down and up) by
finite differences in float64."""

import numpy as np
import pytest

import ember_autograd as ag
import ember_core as ec


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("size", [(3, 4), (9, 8)])
def test_gradcheck(mode, size):
    x = ec.tensor(np.random.default_rng(0).standard_normal((1, 2, 7, 6)), requires_grad=True)
    assert ag.gradcheck(lambda x: ec.interpolate(x, size=size, mode=mode, antialias=True), (x,))
