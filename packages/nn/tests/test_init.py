"""ember_nn.init: gains, fans and the statistics of every initialiser (moments
and bounds of large samples), and layers' default initialisations matching
PyTorch's distributions."""

import math

import numpy as np
import pytest
from _parity import to_numpy

import ember_core as ec
import ember_nn as nn
from ember_nn import init


@pytest.fixture(autouse=True)
def seeded():
    ec.manual_seed(0)


def sample(fn, shape=(400, 500), **kwargs):
    t = ec.empty(shape)
    out = fn(t, **kwargs)
    assert out is t, "initialisers work in place and return the tensor"
    return to_numpy(t)


def test_calculate_gain_table():
    assert init.calculate_gain("linear") == 1 and init.calculate_gain("conv2d") == 1
    assert init.calculate_gain("sigmoid") == 1
    assert init.calculate_gain("tanh") == pytest.approx(5 / 3)
    assert init.calculate_gain("relu") == pytest.approx(math.sqrt(2))
    assert init.calculate_gain("leaky_relu") == pytest.approx(math.sqrt(2 / (1 + 0.01**2)))
    assert init.calculate_gain("leaky_relu", 0.2) == pytest.approx(math.sqrt(2 / 1.04))
    assert init.calculate_gain("selu") == 0.75
    with pytest.raises(ValueError, match="Unsupported nonlinearity"):
        init.calculate_gain("swish")
    with pytest.raises(ValueError, match="not a valid number"):
        init.calculate_gain("leaky_relu", "x")


def test_fans():
    assert init._calculate_fan_in_and_fan_out(ec.empty(6, 4, 3, 3)) == (36, 54)
    assert init._calculate_fan_in_and_fan_out(ec.empty(5, 7)) == (7, 5)
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        init._calculate_fan_in_and_fan_out(ec.empty(3))


def test_uniform_and_normal_moments():
    u = sample(init.uniform_, a=-2.0, b=3.0)
    assert u.min() >= -2 and u.max() <= 3
    assert u.mean() == pytest.approx(0.5, abs=0.01) and u.var() == pytest.approx(25 / 12, rel=0.01)
    n = sample(init.normal_, mean=1.0, std=0.5)
    assert n.mean() == pytest.approx(1.0, abs=0.005) and n.std() == pytest.approx(0.5, rel=0.01)


def test_constant_zeros_ones_eye_dirac():
    assert np.all(sample(init.constant_, shape=(3, 4), val=2.5) == 2.5)
    assert np.all(sample(init.zeros_, shape=(3,)) == 0) and np.all(
        sample(init.ones_, shape=(3,)) == 1
    )
    np.testing.assert_array_equal(sample(init.eye_, shape=(3, 4)), np.eye(3, 4))
    d = sample(init.dirac_, shape=(4, 2, 3, 3), groups=2)
    expected = np.zeros((4, 2, 3, 3))
    expected[0, 0, 1, 1] = expected[1, 1, 1, 1] = expected[2, 0, 1, 1] = expected[3, 1, 1, 1] = 1
    np.testing.assert_array_equal(d, expected)
    with pytest.raises(ValueError):
        init.eye_(ec.empty(2, 2, 2))


@pytest.mark.parametrize("gain", [1.0, 2.0])
def test_xavier(gain):
    fan_in, fan_out = 500, 400
    u = sample(init.xavier_uniform_, gain=gain)
    bound = gain * math.sqrt(6 / (fan_in + fan_out))
    assert np.abs(u).max() <= bound and u.std() == pytest.approx(bound / math.sqrt(3), rel=0.01)
    n = sample(init.xavier_normal_, gain=gain)
    assert n.std() == pytest.approx(gain * math.sqrt(2 / (fan_in + fan_out)), rel=0.01)


@pytest.mark.parametrize(
    "mode, nonlinearity, a",
    [
        ("fan_in", "leaky_relu", 0),
        ("fan_out", "relu", 0),
        ("fan_in", "leaky_relu", math.sqrt(5)),
        ("fan_out", "tanh", 0),
    ],
)
def test_kaiming(mode, nonlinearity, a):
    fan = 500 if mode == "fan_in" else 400
    gain = init.calculate_gain(nonlinearity, a)
    std = gain / math.sqrt(fan)
    u = sample(init.kaiming_uniform_, a=a, mode=mode, nonlinearity=nonlinearity)
    assert np.abs(u).max() <= math.sqrt(3) * std and u.std() == pytest.approx(std, rel=0.01)
    n = sample(init.kaiming_normal_, a=a, mode=mode, nonlinearity=nonlinearity)
    assert n.std() == pytest.approx(std, rel=0.01) and abs(n.mean()) < 0.01 * std * 10
    with pytest.raises(ValueError, match="fan_in, fan_out"):
        init.kaiming_uniform_(ec.empty(2, 2), mode="fan_avg")


def test_trunc_normal():
    t = sample(init.trunc_normal_, mean=0.5, std=1.0, a=-1.0, b=2.0)
    assert t.min() >= -1 and t.max() <= 2
    # moments of N(0.5, 1) truncated to [-1, 2]: alpha = -1.5, beta = 1.5
    z = 2 * (0.5 * (1 + math.erf(1.5 / math.sqrt(2)))) - 1
    pdf = math.exp(-(1.5**2) / 2) / math.sqrt(2 * math.pi)
    var = 1 + (-1.5 * pdf - 1.5 * pdf) / z
    assert t.mean() == pytest.approx(0.5, abs=0.01) and t.var() == pytest.approx(var, rel=0.02)


@pytest.mark.parametrize("shape", [(6, 10), (10, 6), (4, 3, 2, 2)])
def test_orthogonal(shape):
    w = sample(init.orthogonal_, shape=shape, gain=2.0).reshape(shape[0], -1)
    rows, cols = w.shape
    gram = w @ w.T if rows <= cols else w.T @ w
    np.testing.assert_allclose(gram, 4 * np.eye(min(rows, cols)), atol=1e-5)


def test_sparse():
    w = sample(init.sparse_, shape=(10, 30), sparsity=0.3, std=0.02)
    assert np.all((w == 0).sum(0) >= 3)


def test_generator_makes_initialisation_reproducible():
    g1, g2 = ec.Generator().manual_seed(7), ec.Generator().manual_seed(7)
    a = init.kaiming_uniform_(ec.empty(4, 4), generator=g1)
    b = init.kaiming_uniform_(ec.empty(4, 4), generator=g2)
    np.testing.assert_array_equal(to_numpy(a), to_numpy(b))


def test_zero_element_tensor_warns():
    with pytest.warns(UserWarning, match="zero-element"):
        init.kaiming_uniform_(ec.empty(0, 3))


LAYERS = [
    lambda N: N.Linear(300, 200),
    lambda N: N.Conv2d(16, 32, 3),
    lambda N: N.ConvTranspose2d(16, 8, 4),
    lambda N: N.Bilinear(30, 20, 10),
    lambda N: N.Embedding(500, 64),
    lambda N: N.LSTM(64, 128),
    lambda N: N.GRUCell(32, 64),
    lambda N: N.MultiheadAttention(64, 4),
    lambda N: N.BatchNorm2d(16),
    lambda N: N.LayerNorm(32),
    lambda N: N.PReLU(),
]


@pytest.mark.parity
@pytest.mark.parametrize("build", LAYERS, ids=lambda b: type(b(nn)).__name__)
def test_default_initialisation_matches_torch(torch, build):
    torch.manual_seed(0)
    ours = {k: to_numpy(v) for k, v in build(nn).state_dict().items()}
    theirs = {k: v.numpy() for k, v in build(torch.nn).state_dict().items()}
    assert list(ours) == list(theirs)
    for k in ours:
        a, b = ours[k].astype(np.float64), theirs[k].astype(np.float64)
        assert a.shape == b.shape, k
        if b.std() == 0:
            np.testing.assert_array_equal(a, b, err_msg=k)
            continue
        if b.size < 256:  # too few samples to compare distributions; same scale at least
            assert np.abs(a).max() <= 3 * np.abs(b).max(), k
            continue
        # same distribution: equal range and moments within sampling error
        assert a.min() >= b.min() - 0.05 * np.ptp(b) and a.max() <= b.max() + 0.05 * np.ptp(b), k
        assert a.std() == pytest.approx(b.std(), rel=0.1), k
        assert abs(a.mean() - b.mean()) < 5 * b.std() / math.sqrt(b.size), k
