"""Samplers with per-element parameters (_random_dist): moments of many draws
against the distributions' known means and variances, supports, reproducibility
under manual_seed and Generator objects, independence from the thread count, and
_standard_gamma_grad against finite differences of the incomplete gamma function."""

import math

import numpy as np
import pytest

import ember_core as ec

N = 200_000


@pytest.fixture(autouse=True)
def _restore_threads():
    n = ec.get_num_threads()
    yield
    ec.set_num_threads(n)


def _moments(t):
    x = t.numpy().astype(np.float64)
    return x.mean(), x.var()


def _close(got, want, n, var):
    # 6 standard errors of the mean: a false failure is astronomically unlikely
    assert abs(got - want) < 6 * math.sqrt(var / n) + 1e-12, (got, want)


@pytest.mark.parametrize("alpha", [0.05, 0.5, 1.0, 3.7, 250.0])
@pytest.mark.parametrize("dtype", [ec.float32, ec.float64])
def test_standard_gamma_moments(alpha, dtype):
    ec.manual_seed(1)
    x = ec._standard_gamma(ec.full((N,), alpha, dtype=dtype))
    assert x.dtype is dtype and x.shape == (N,)
    assert bool((x > 0).all())
    m, v = _moments(x)
    _close(m, alpha, N, alpha)
    # variance of the sample variance of a gamma: (mu4 - sigma^4) / n, mu4 = 3a^2 + 6a
    _close(v, alpha, N, 3 * alpha**2 + 6 * alpha - alpha**2)


def test_standard_gamma_per_element_shapes_and_zero():
    ec.manual_seed(0)
    a = ec.tensor([[0.0, 1.0], [2.0, 1e-3]])
    x = ec._standard_gamma(a)
    assert x.shape == (2, 2)
    assert x[0, 0].item() == 0.0
    assert bool((x.reshape(-1)[1:] > 0).all())
    assert math.isnan(ec._standard_gamma(ec.tensor([-1.0])).item())


@pytest.mark.parametrize("rate", [0.0, 0.3, 4.0, 9.99, 10.0, 75.0, 5000.0])
def test_poisson_moments(rate):
    ec.manual_seed(2)
    k = ec.poisson(ec.full((N,), rate, dtype=ec.float64))
    x = k.numpy()
    assert np.all(x == np.floor(x)) and np.all(x >= 0)
    m, v = _moments(k)
    _close(m, rate, N, max(rate, 1e-12))
    _close(v, rate, N, max(rate + 2 * rate**2, 1e-12))


@pytest.mark.parametrize(
    "count,p", [(0, 0.5), (1, 0.3), (20, 0.3), (20, 0.9), (200, 0.5), (1000, 0.01), (7, 1.0)]
)
def test_binomial_moments(count, p):
    ec.manual_seed(3)
    k = ec.binomial(ec.full((N,), float(count)), ec.full((N,), p))
    x = k.numpy()
    assert np.all(x == np.floor(x)) and np.all(x >= 0) and np.all(x <= count)
    m, v = _moments(k)
    var = count * p * (1 - p)
    _close(m, count * p, N, max(var, 1e-12))
    _close(v, var, N, max(2 * var**2 + var, 1e-12))


def test_binomial_broadcasts_and_checks_dtypes():
    ec.manual_seed(4)
    k = ec.binomial(ec.tensor([[5.0], [10.0]]), ec.tensor([0.0, 1.0, 0.5]))
    assert k.shape == (2, 3)
    np.testing.assert_array_equal(k[:, :2].numpy(), [[0, 5], [0, 10]])
    with pytest.raises(RuntimeError, match="Found dtype Double but expected Float"):
        ec.binomial(ec.tensor([5.0]), ec.tensor([0.5], dtype=ec.float64))
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        ec.binomial(ec.tensor([5]), ec.tensor([1]))


def test_dirichlet_rows_on_the_simplex_with_dirichlet_means():
    ec.manual_seed(5)
    alpha = np.array([0.5, 2.0, 3.5])
    x = ec._sample_dirichlet(ec.tensor(np.tile(alpha, (50_000, 1)))).numpy()
    np.testing.assert_allclose(x.sum(1), 1.0, rtol=1e-6)
    assert np.all(x > 0)
    a0 = alpha.sum()
    var = alpha * (a0 - alpha) / (a0**2 * (a0 + 1))
    for j in range(3):
        _close(x[:, j].mean(), alpha[j] / a0, 50_000, var[j])


@pytest.mark.parametrize(
    "fn",
    [
        lambda g: ec._standard_gamma(ec.full((1000,), 2.5), generator=g),
        lambda g: ec.poisson(ec.full((1000,), 30.0), generator=g),
        lambda g: ec.binomial(ec.full((1000,), 50.0), ec.full((1000,), 0.4), generator=g),
    ],
)
def test_reproducible_and_thread_independent(fn):
    a = fn(ec.Generator().manual_seed(9)).numpy()
    ec.set_num_threads(1)
    b = fn(ec.Generator().manual_seed(9)).numpy()
    np.testing.assert_array_equal(a, b)
    g = ec.Generator().manual_seed(9)
    fn(g)
    assert not np.array_equal(fn(g).numpy(), a)  # the stream advances
    ec.manual_seed(11)
    c = fn(None).numpy()
    ec.manual_seed(11)
    np.testing.assert_array_equal(fn(None).numpy(), c)


def test_half_precision_and_integer_inputs():
    x = ec._standard_gamma(ec.full((10,), 2.0, dtype=ec.float16))
    assert x.dtype is ec.float16
    with pytest.raises(NotImplementedError, match="\"poisson_cpu\" not implemented for 'Long'"):
        ec.poisson(ec.tensor([1, 2]))


def _gammainc(a, x):
    """Regularized lower incomplete gamma by its power series (float64)."""
    term = 1.0 / a
    total = term
    n = 0
    while abs(term) > 1e-18 * abs(total):
        n += 1
        term *= x / (a + n)
        total += term
    return total * math.exp(-x + a * math.log(x) - math.lgamma(a))


@pytest.mark.parametrize(
    "a,x", [(0.05, 1e-4), (0.5, 0.2), (1.0, 1.0), (2.5, 4.0), (10.0, 7.0), (150.0, 160.0)]
)
def test_standard_gamma_grad_is_the_implicit_derivative(a, x):
    # x = F^-1(u; a) at fixed u: dx/da = -(dF/da) / (dF/dx)
    h = 1e-6 * max(a, 1.0)
    dFda = (_gammainc(a + h, x) - _gammainc(a - h, x)) / (2 * h)
    pdf = math.exp((a - 1) * math.log(x) - x - math.lgamma(a))
    want = -dFda / pdf
    got = ec._standard_gamma_grad(
        ec.tensor([a], dtype=ec.float64), ec.tensor([x], dtype=ec.float64)
    )
    assert got.item() == pytest.approx(want, rel=1e-5)
