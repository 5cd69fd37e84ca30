"""SyncBatchNorm in one process: the same values as BatchNorm (NumPy batch
statistics), convert_sync_batchnorm sharing parameters and buffers, errors, and
PyTorch parity (outputs, gradients, running stats, reprs, state_dict keys)."""

import numpy as np
import pytest
from _parity import check_layer, to_numpy

import ember_core as ec
import ember_nn as nn


def test_values_against_numpy(rng):
    x = rng.standard_normal((4, 3, 5, 2))
    bn = nn.SyncBatchNorm(3).double()
    y = to_numpy(bn(ec.tensor(x)))
    mean = x.mean(axis=(0, 2, 3), keepdims=True)
    var = x.var(axis=(0, 2, 3), keepdims=True)
    np.testing.assert_allclose(y, (x - mean) / np.sqrt(var + 1e-5), atol=1e-10)
    n = x.size / 3
    np.testing.assert_allclose(
        to_numpy(bn.running_var), 0.9 + 0.1 * var.ravel() * n / (n - 1), atol=1e-12
    )
    assert int(bn.num_batches_tracked) == 1


def test_convert_shares_tensors():
    inner = nn.BatchNorm1d(2, affine=False)
    net = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Sequential(inner))
    weight, mean = net[1].weight, net[1].running_mean
    net.eval()
    out = nn.SyncBatchNorm.convert_sync_batchnorm(net)
    assert out is net and isinstance(net[1], nn.SyncBatchNorm)
    assert isinstance(net[2][0], nn.SyncBatchNorm) and net[2][0].weight is None
    assert net[1].weight is weight and net[1].running_mean is mean
    assert not net[1].training
    single = nn.SyncBatchNorm.convert_sync_batchnorm(nn.BatchNorm3d(5, momentum=None))
    assert isinstance(single, nn.SyncBatchNorm) and single.momentum is None


def test_errors():
    with pytest.raises(ValueError, match="expected at least 2D input \\(got 1D input\\)"):
        nn.SyncBatchNorm(3)(ec.randn(3))
    with pytest.raises(ValueError, match="number of input channels should be non-zero"):
        nn.SyncBatchNorm(0)(ec.randn(2, 0, 3))


@pytest.mark.parity
@pytest.mark.parametrize("shape", [(6, 3), (4, 3, 5), (2, 3, 4, 4), (2, 3, 2, 2, 3)])
@pytest.mark.parametrize("train", [True, False])
def test_parity(torch, rng, shape, train):
    x = rng.standard_normal(shape)
    em, tm = check_layer(torch, lambda n: n.SyncBatchNorm(3, momentum=0.3), [x], train=train)
    assert repr(em) == repr(tm)
    assert list(em.state_dict()) == list(tm.state_dict())
    t_net = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4, bias=False))
    e_net = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4, bias=False))
    assert repr(nn.SyncBatchNorm.convert_sync_batchnorm(e_net)) == repr(
        torch.nn.SyncBatchNorm.convert_sync_batchnorm(t_net)
    )
