"""BatchNorm (train and eval, running statistics), LayerNorm, GroupNorm,
InstanceNorm, RMSNorm, LocalResponseNorm: NumPy values, state dicts, and
PyTorch parity (outputs, gradients, buffers)."""

import numpy as np
import pytest
from _parity import check_layer, to_numpy

import ember_core as ec
import ember_nn as nn


def test_batchnorm2d_training_and_running_stats_match_numpy(rng):
    m = nn.BatchNorm2d(3, momentum=0.2).double()
    x = rng.standard_normal((4, 3, 5, 5)) * 2 + 1
    y = to_numpy(m(ec.tensor(x)))
    mean = x.mean((0, 2, 3))
    var = x.var((0, 2, 3))
    np.testing.assert_allclose(
        y, (x - mean[:, None, None]) / np.sqrt(var[:, None, None] + 1e-5), atol=1e-10
    )
    n = x.size / 3
    np.testing.assert_allclose(to_numpy(m.running_mean), 0.2 * mean, rtol=1e-10)
    np.testing.assert_allclose(to_numpy(m.running_var), 0.8 + 0.2 * var * n / (n - 1), rtol=1e-10)
    assert m.num_batches_tracked.item() == 1
    m.eval()
    y = to_numpy(m(ec.tensor(x)))
    rm, rv = to_numpy(m.running_mean), to_numpy(m.running_var)
    np.testing.assert_allclose(
        y, (x - rm[:, None, None]) / np.sqrt(rv[:, None, None] + 1e-5), atol=1e-10
    )
    assert m.num_batches_tracked.item() == 1


def test_batchnorm_cumulative_average_with_momentum_none(rng):
    m = nn.BatchNorm1d(2, momentum=None).double()
    xs = [rng.standard_normal((6, 2)) for _ in range(3)]
    for x in xs:
        m(ec.tensor(x))
    np.testing.assert_allclose(
        to_numpy(m.running_mean), np.mean([x.mean(0) for x in xs], 0), rtol=1e-10
    )


def test_batchnorm_without_running_stats_uses_batch_stats_in_eval(rng):
    m = nn.BatchNorm1d(3, track_running_stats=False, affine=False).double().eval()
    x = rng.standard_normal((5, 3))
    np.testing.assert_allclose(
        to_numpy(m(ec.tensor(x))), (x - x.mean(0)) / np.sqrt(x.var(0) + 1e-5), atol=1e-10
    )
    assert list(m.state_dict()) == []


def test_batchnorm_input_checks():
    with pytest.raises(ValueError, match="expected 4D input"):
        nn.BatchNorm2d(3)(ec.randn(3, 4, 4))
    with pytest.raises(ValueError, match="expected 2D or 3D input"):
        nn.BatchNorm1d(3)(ec.randn(3))


def test_batchnorm_loads_state_dict_without_num_batches_tracked():
    m = nn.BatchNorm1d(2)
    sd = {k: v for k, v in nn.BatchNorm1d(2).state_dict().items() if k != "num_batches_tracked"}
    assert m.load_state_dict(sd).missing_keys == []  # no metadata: treated as an old checkpoint


def test_layer_group_rms_norm_match_numpy(rng):
    x = rng.standard_normal((2, 6, 4))
    ln = nn.LayerNorm(4).double()
    mu, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    np.testing.assert_allclose(
        to_numpy(ln(ec.tensor(x))), (x - mu) / np.sqrt(var + 1e-5), atol=1e-10
    )
    gn = nn.GroupNorm(3, 6).double()
    g = x.reshape(2, 3, 8)
    ref = ((g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + 1e-5)).reshape(
        x.shape
    )
    np.testing.assert_allclose(to_numpy(gn(ec.tensor(x))), ref, atol=1e-10)
    rms = nn.RMSNorm(4, eps=1e-6).double()
    np.testing.assert_allclose(
        to_numpy(rms(ec.tensor(x))), x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-6), atol=1e-10
    )


def test_reprs():
    assert (
        repr(nn.BatchNorm2d(4))
        == "BatchNorm2d(4, eps=1e-05, momentum=0.1, affine=True, bias=True, "
        "track_running_stats=True)"
    )
    assert (
        repr(nn.LayerNorm((3, 4), bias=False))
        == "LayerNorm((3, 4), eps=1e-05, elementwise_affine=True, bias=False)"
    )
    assert repr(nn.GroupNorm(2, 4)) == "GroupNorm(2, 4, eps=1e-05, affine=True, bias=True)"
    assert repr(nn.RMSNorm(8)) == "RMSNorm((8,), eps=None, elementwise_affine=True)"
    with pytest.raises(ValueError, match="divisible by num_groups"):
        nn.GroupNorm(3, 4)


def test_lazy_batchnorm():
    m = nn.LazyBatchNorm1d()
    m(ec.randn(4, 3))
    assert type(m) is nn.BatchNorm1d and m.num_features == 3 and m.running_mean.shape == (3,)


CASES = [
    (lambda N: N.BatchNorm1d(3), (5, 3), True),
    (lambda N: N.BatchNorm1d(3), (5, 3, 4), True),
    (lambda N: N.BatchNorm1d(3, momentum=None, affine=False), (5, 3), True),
    (lambda N: N.BatchNorm2d(3), (4, 3, 5, 4), True),
    (lambda N: N.BatchNorm2d(3), (4, 3, 5, 4), False),
    (lambda N: N.BatchNorm2d(3, track_running_stats=False), (4, 3, 5, 4), False),
    (lambda N: N.BatchNorm2d(3, eps=1e-3, bias=False), (4, 3, 2, 2), True),
    (lambda N: N.BatchNorm3d(2), (3, 2, 3, 2, 2), True),
    (lambda N: N.LayerNorm(5), (3, 4, 5), True),
    (lambda N: N.LayerNorm((4, 5), elementwise_affine=False), (3, 4, 5), True),
    (lambda N: N.LayerNorm(5, bias=False), (2, 5), True),
    (lambda N: N.GroupNorm(2, 6), (3, 6, 4, 2), True),
    (lambda N: N.GroupNorm(3, 6, affine=False), (3, 6, 5), True),
    (lambda N: N.InstanceNorm1d(3), (2, 3, 6), True),
    (lambda N: N.InstanceNorm2d(3, affine=True), (2, 3, 5, 4), True),
    (lambda N: N.InstanceNorm2d(3, track_running_stats=True), (2, 3, 5, 4), True),
    (lambda N: N.InstanceNorm2d(3, track_running_stats=True), (2, 3, 5, 4), False),
    (lambda N: N.InstanceNorm2d(3, affine=True), (3, 5, 4), True),
    (lambda N: N.RMSNorm(5), (3, 4, 5), True),
    (lambda N: N.RMSNorm((4, 5), eps=1e-3, elementwise_affine=False), (3, 4, 5), True),
    (lambda N: N.LocalResponseNorm(3), (2, 5, 4, 4), True),
]


@pytest.mark.parity
@pytest.mark.parametrize("build, shape, train", CASES)
def test_parity(torch, rng, build, shape, train):
    em, tm = check_layer(torch, build, [rng.standard_normal(shape) * 1.5 + 0.5], train=train)


@pytest.mark.parity
def test_batchnorm_running_stats_over_steps_parity(torch, rng):
    tm = torch.nn.BatchNorm2d(3).double()
    em = nn.BatchNorm2d(3).double()
    for _ in range(4):
        x = rng.standard_normal((4, 3, 3, 3))
        tm(torch.from_numpy(x))
        em(ec.tensor(x))
    for (k, a), (_, b) in zip(em.state_dict().items(), tm.state_dict().items()):
        np.testing.assert_allclose(to_numpy(a), b.numpy(), rtol=1e-12, err_msg=k)
