"""fuse_conv_bn_eval / fuse_linear_bn_eval: the fused layer computes what the
eval-mode pair computes (the pair's own output is the reference)."""

import numpy as np
import pytest
from _parity import to_numpy

import ember_autograd as ag
import ember_core as ec
import ember_nn as nn
from ember_nn.utils import fusion


def _randomise_bn(bn, rng):
    n = bn.num_features
    with ag.no_grad():
        bn.running_mean.copy_(ec.tensor(rng.standard_normal(n)))
        bn.running_var.copy_(ec.tensor(rng.uniform(0.5, 2.0, n)))
        bn.weight.copy_(ec.tensor(rng.standard_normal(n)))
        bn.bias.copy_(ec.tensor(rng.standard_normal(n)))


@pytest.mark.parametrize(
    "make_conv, make_bn, shape, transpose",
    [
        (lambda: nn.Conv2d(3, 4, 3, bias=False), lambda: nn.BatchNorm2d(4), (2, 3, 6, 6), False),
        (lambda: nn.Conv1d(3, 4, 2), lambda: nn.BatchNorm1d(4), (2, 3, 5), False),
        (lambda: nn.ConvTranspose2d(3, 4, 2), lambda: nn.BatchNorm2d(4), (1, 3, 3, 3), True),
    ],
)
def test_fused_conv_equals_conv_then_bn(rng, make_conv, make_bn, shape, transpose):
    conv, bn = make_conv().double().eval(), make_bn().double().eval()
    _randomise_bn(bn, rng)
    x = ec.tensor(rng.standard_normal(shape))
    fused = fusion.fuse_conv_bn_eval(conv, bn, transpose=transpose)
    np.testing.assert_allclose(to_numpy(fused(x)), to_numpy(bn(conv(x))), rtol=1e-10, atol=1e-12)
    assert fused is not conv and isinstance(fused.weight, nn.Parameter) and fused.bias is not None


def test_fused_linear_equals_linear_then_bn(rng):
    lin, bn = nn.Linear(3, 4).double().eval(), nn.BatchNorm1d(4).double().eval()
    _randomise_bn(bn, rng)
    x = ec.tensor(rng.standard_normal((5, 3)))
    fused = fusion.fuse_linear_bn_eval(lin, bn)
    np.testing.assert_allclose(to_numpy(fused(x)), to_numpy(bn(lin(x))), rtol=1e-10, atol=1e-12)


def test_training_mode_refused():
    with pytest.raises(AssertionError, match="eval"):
        fusion.fuse_conv_bn_eval(nn.Conv2d(1, 1, 1), nn.BatchNorm2d(1))
    with pytest.raises(AssertionError, match="eval"):
        fusion.fuse_linear_bn_eval(nn.Linear(1, 1), nn.BatchNorm1d(1))
