"""Activations (leaky_relu, elu, celu, hardtanh, threshold, hardshrink,
softshrink, glu, prelu, rrelu and the fused backward op) against NumPy."""

import numpy as np
import pytest

import ember_core as ec

rng = np.random.default_rng(0)


def T(a):
    return ec.from_numpy(np.ascontiguousarray(a))


X = rng.standard_normal((5, 8)) * 2
X[0, :4] = [0.0, 0.5, -0.5, 1.0]  # boundaries of several activations

# name, ember call, NumPy forward, NumPy derivative (of x)
CASES = [
    (
        "leaky_relu",
        lambda t: ec.leaky_relu(t, 0.2),
        lambda x: np.where(x > 0, x, 0.2 * x),
        lambda x: np.where(x > 0, 1.0, 0.2),
        ("leaky_relu", 0.2, 0.0),
    ),
    (
        "elu",
        lambda t: ec.elu(t, 1.5),
        lambda x: np.where(x > 0, x, 1.5 * np.expm1(x)),
        lambda x: np.where(x > 0, 1.0, 1.5 * np.exp(x)),
        ("elu", 1.5, 1.0),
    ),
    (
        "celu",
        lambda t: ec.celu(t, 0.7),
        lambda x: np.where(x > 0, x, 0.7 * np.expm1(x / 0.7)),
        lambda x: np.where(x > 0, 1.0, np.exp(x / 0.7)),
        ("celu", 0.7, 0.0),
    ),
    (
        "hardtanh",
        lambda t: ec.hardtanh(t, -0.5, 1.0),
        lambda x: np.clip(x, -0.5, 1.0),
        lambda x: np.where((x > -0.5) & (x < 1.0), 1.0, 0.0),
        ("hardtanh", -0.5, 1.0),
    ),
    (
        "threshold",
        lambda t: ec.threshold(t, 0.5, -3.0),
        lambda x: np.where(x > 0.5, x, -3.0),
        lambda x: np.where(x > 0.5, 1.0, 0.0),
        ("threshold", 0.5, 0.0),
    ),
    (
        "hardshrink",
        lambda t: ec.hardshrink(t, 0.5),
        lambda x: np.where(np.abs(x) > 0.5, x, 0.0),
        lambda x: np.where(np.abs(x) > 0.5, 1.0, 0.0),
        ("hardshrink", 0.5, 0.0),
    ),
    (
        "softshrink",
        lambda t: ec.softshrink(t, 0.5),
        lambda x: np.where(x > 0.5, x - 0.5, np.where(x < -0.5, x + 0.5, 0.0)),
        lambda x: np.where(np.abs(x) > 0.5, 1.0, 0.0),
        ("softshrink", 0.5, 0.0),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_forward_values(case, dtype):
    _, fn, ref, _, _ = case
    x = X.astype(dtype)
    got = fn(T(x))
    assert got.dtype is (ec.float32 if dtype == np.float32 else ec.float64)
    np.testing.assert_allclose(got.numpy(), ref(x), rtol=1e-6, atol=1e-7)
    # non-contiguous input
    np.testing.assert_allclose(fn(T(x).T).numpy(), ref(x.T), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_fused_backward_op(case):
    _, _, _, deriv, (kind, p0, p1) = case
    g = rng.standard_normal(X.shape)
    got = ec._activation_backward(T(g), T(X), kind, p0, p1)
    np.testing.assert_allclose(got.numpy(), g * deriv(X), rtol=1e-12)
    # broadcast gradient and strided input
    got = ec._activation_backward(ec.ones((), dtype=ec.float64), T(X).T, kind, p0, p1)
    np.testing.assert_allclose(got.numpy(), deriv(X.T), rtol=1e-12)


@pytest.mark.parametrize("dtype", [ec.float16, ec.bfloat16])
def test_half_precision(dtype):
    x = T(X.astype(np.float32)).to(dtype)
    for name, fn, ref, _, _ in CASES:
        got = fn(x)
        assert got.dtype is dtype, name
        np.testing.assert_allclose(
            got.float().numpy(), ref(x.float().numpy()), rtol=1e-2, atol=1e-2
        )


def test_inplace_variants():
    for name, fn_, ref in [
        ("leaky_relu_", lambda t: ec.leaky_relu_(t, 0.1), lambda x: np.where(x > 0, x, 0.1 * x)),
        ("elu_", lambda t: ec.elu_(t), lambda x: np.where(x > 0, x, np.expm1(x))),
        (
            "celu_",
            lambda t: ec.celu_(t, 2.0),
            lambda x: np.where(x > 0, x, 2.0 * np.expm1(x / 2.0)),
        ),
        ("hardtanh_", lambda t: ec.hardtanh_(t, 0.0, 6.0), lambda x: np.clip(x, 0.0, 6.0)),
        ("threshold_", lambda t: ec.threshold_(t, 0.0, 9.0), lambda x: np.where(x > 0, x, 9.0)),
    ]:
        t = T(X.copy())
        v = t._version
        r = fn_(t)
        assert r is t and t._version > v, name
        np.testing.assert_allclose(t.numpy(), ref(X), rtol=1e-12, err_msg=name)


def test_integer_inputs():
    x = ec.tensor([-3, 0, 3])
    np.testing.assert_array_equal(ec.hardtanh(x).numpy(), [-1, 0, 1])
    np.testing.assert_array_equal(ec.threshold(x, 0, 5).numpy(), [5, 5, 3])
    assert ec.threshold(x, 0, 5).dtype is ec.int64
    with pytest.raises(NotImplementedError, match="leaky_relu.*Long"):
        ec.leaky_relu(x)
    with pytest.raises(NotImplementedError, match="elu.*Long"):
        ec.elu(x)


def test_glu():
    x = rng.standard_normal((3, 4, 6))
    for dim in (1, 2, -1):
        a, b = np.split(x, 2, axis=dim)
        np.testing.assert_allclose(ec.glu(T(x), dim).numpy(), a / (1 + np.exp(-b)), rtol=1e-12)
    with pytest.raises(
        RuntimeError, match="Halving dimension must be even, but dimension 0 is size 3"
    ):
        ec.glu(T(x), 0)
    with pytest.raises(RuntimeError, match="scalars"):
        ec.glu(ec.tensor(1.0))


def test_prelu():
    x = rng.standard_normal((2, 3, 4))
    w = rng.random(3)
    np.testing.assert_allclose(
        ec.prelu(T(x), T(w)).numpy(), np.where(x > 0, x, w.reshape(1, 3, 1) * x)
    )
    np.testing.assert_allclose(
        T(x).prelu(ec.tensor([0.25], dtype=ec.float64)).numpy(), np.where(x > 0, x, 0.25 * x)
    )
    v = rng.standard_normal(4)
    np.testing.assert_allclose(
        ec.prelu(T(v), ec.tensor([0.1], dtype=ec.float64)).numpy(), np.where(v > 0, v, 0.1 * v)
    )
    with pytest.raises(RuntimeError, match="parameter numbers = 4 and channel size = 3"):
        ec.prelu(T(x), ec.ones(4, dtype=ec.float64))
    with pytest.raises(RuntimeError, match="parameter numbers = 4 and channel size = 1"):
        ec.prelu(T(v), ec.ones(4, dtype=ec.float64))


def test_rrelu():
    x = T(X)
    np.testing.assert_allclose(
        ec.rrelu(x, 0.1, 0.3).numpy(), np.where(X > 0, X, 0.2 * X), rtol=1e-12
    )
    ec.manual_seed(3)
    y = ec.rrelu(x, 0.1, 0.3, True).numpy()
    ec.manual_seed(3)
    np.testing.assert_array_equal(ec.rrelu(x, 0.1, 0.3, True).numpy(), y)
    pos, neg = X > 0, X < 0
    np.testing.assert_array_equal(y[pos], X[pos])
    slopes = y[neg] / X[neg]
    assert (slopes >= 0.1).all() and (slopes <= 0.3).all() and len(np.unique(slopes)) > 1
    t = T(X.copy())
    assert ec.rrelu_(t, 0.1, 0.3) is t


def test_bad_arguments():
    with pytest.raises(ValueError, match="min_val cannot be greater than max_val"):
        ec.hardtanh(ec.ones(2), 2.0, 1.0)
    with pytest.raises(RuntimeError, match="lambda must be in range"):
        ec.softshrink(ec.ones(2), -0.5)
    with pytest.raises(RuntimeError, match="alpha cannot be 0 for CELU"):
        ec.celu(ec.ones(2), 0.0)
    with pytest.raises(TypeError):
        ec.leaky_relu([1.0])


@pytest.mark.parity
def test_parity_with_torch():
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    x = X.astype(np.float32)
    tx = torch.from_numpy(x)
    pairs = [
        (ec.leaky_relu(T(x), 0.05), F.leaky_relu(tx, 0.05)),
        (ec.elu(T(x), 0.8), F.elu(tx, 0.8)),
        (ec.celu(T(x), 1.3), F.celu(tx, 1.3)),
        (ec.hardtanh(T(x), -2.0, 0.5), F.hardtanh(tx, -2.0, 0.5)),
        (ec.threshold(T(x), 0.1, 20.0), F.threshold(tx, 0.1, 20.0)),
        (ec.hardshrink(T(x), 0.3), F.hardshrink(tx, 0.3)),
        (ec.softshrink(T(x), 0.3), F.softshrink(tx, 0.3)),
        (ec.glu(T(x), 1), F.glu(tx, 1)),
        (ec.prelu(T(x), ec.full((1,), 0.3)), F.prelu(tx, torch.full((1,), 0.3))),
        (ec.rrelu(T(x)), F.rrelu(tx)),
    ]
    for ours, theirs in pairs:
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6, atol=1e-7)
