"""ember.distributions without PyTorch: sample statistics (mean and variance of many
draws against each family's own closed forms, checked in NumPy), supports,
reproducibility under manual_seed, pathwise gradients, transforms' inverses and
log-det-Jacobians against finite differences, and register_kl's dispatch."""

import math
import warnings

import numpy as np
import pytest

import ember
import ember.distributions as D
from ember.distributions import constraints, transforms

N = 100_000


def _t(x):
    return ember.tensor(x, dtype=ember.float64)


FAMILIES = {
    "Normal": lambda: D.Normal(_t([0.0, 2.0]), _t([1.0, 0.5])),
    "Uniform": lambda: D.Uniform(_t([0.0, -2.0]), _t([1.0, 3.0])),
    "Bernoulli": lambda: D.Bernoulli(_t([0.2, 0.7])),
    "Binomial": lambda: D.Binomial(_t([10.0, 40.0]), _t([0.3, 0.6])),
    "Poisson": lambda: D.Poisson(_t([0.7, 30.0])),
    "Geometric": lambda: D.Geometric(_t([0.3, 0.8])),
    "NegativeBinomial": lambda: D.NegativeBinomial(_t([3.0, 7.5]), _t([0.4, 0.2])),
    "Exponential": lambda: D.Exponential(_t([0.5, 3.0])),
    "Laplace": lambda: D.Laplace(_t([0.0, 1.0]), _t([1.0, 0.3])),
    "Gumbel": lambda: D.Gumbel(_t([0.0, 1.0]), _t([1.0, 0.3])),
    "HalfNormal": lambda: D.HalfNormal(_t([1.0, 0.3])),
    "LogNormal": lambda: D.LogNormal(_t([0.0, 0.5]), _t([0.5, 0.3])),
    "Gamma": lambda: D.Gamma(_t([0.5, 4.0]), _t([1.0, 2.0])),
    "Chi2": lambda: D.Chi2(_t([1.0, 6.0])),
    "Beta": lambda: D.Beta(_t([0.5, 4.0]), _t([1.5, 2.0])),
    "Dirichlet": lambda: D.Dirichlet(_t([0.5, 2.0, 3.0])),
    "StudentT": lambda: D.StudentT(_t([5.0, 9.0]), _t([0.0, 1.0]), _t([1.0, 2.0])),
    "Pareto": lambda: D.Pareto(_t([1.0, 2.0]), _t([5.0, 6.0])),
    "Weibull": lambda: D.Weibull(_t([1.0, 2.0]), _t([0.8, 3.0])),
    "Kumaraswamy": lambda: D.Kumaraswamy(_t([0.8, 3.0]), _t([1.5, 2.0])),
    "ContinuousBernoulli": lambda: D.ContinuousBernoulli(_t([0.2, 0.8])),
    "MultivariateNormal": lambda: D.MultivariateNormal(
        _t([1.0, -1.0]), _t([[2.0, 0.6], [0.6, 0.5]])
    ),
    "LowRankMultivariateNormal": lambda: D.LowRankMultivariateNormal(
        _t([1.0, -1.0]), _t([[1.0], [0.5]]), _t([0.5, 0.2])
    ),
    "Categorical": lambda: D.OneHotCategorical(_t([0.2, 0.3, 0.5])),
    "Multinomial": lambda: D.Multinomial(6, _t([0.2, 0.3, 0.5])),
    "MixtureSameFamily": lambda: D.MixtureSameFamily(
        D.Categorical(_t([0.3, 0.7])), D.Normal(_t([-1.0, 2.0]), _t([0.5, 1.0]))
    ),
    "VonMises": lambda: D.VonMises(_t([0.5, -2.0]), _t([2.0, 30.0])),
    "FisherSnedecor": lambda: D.FisherSnedecor(_t([3.0, 10.0]), _t([20.0, 30.0])),
    "InverseGamma": lambda: D.InverseGamma(_t([9.0, 12.0]), _t([1.0, 3.0])),
    "GeneralizedPareto": lambda: D.GeneralizedPareto(
        _t([0.0, 1.0]), _t([1.0, 2.0]), _t([-0.2, 0.1])
    ),
    "Wishart": lambda: D.Wishart(_t(6.0), _t([[1.0, 0.3], [0.3, 0.5]])),
}


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_sample_moments_and_support(name):
    ember.manual_seed(0)
    d = FAMILIES[name]()
    x = d.sample((N,))
    assert tuple(x.shape) == (N,) + tuple(d.batch_shape) + tuple(d.event_shape)
    assert bool(d.support.check(x).all())
    xs = x.numpy().astype(np.float64)
    if name == "VonMises":  # circular mean and variance
        mean = np.angle(np.exp(1j * xs).mean(0))
        var = 1 - np.abs(np.exp(1j * xs).mean(0))
        np.testing.assert_allclose(mean, d.mean.numpy(), atol=0.02)
        np.testing.assert_allclose(var, d.variance.numpy(), atol=0.01)
        return
    mean, var = d.mean.numpy(), d.variance.numpy()
    # mean within 6 standard errors; variance within 5% (plus a small floor)
    np.testing.assert_array_less(np.abs(xs.mean(0) - mean), 6 * np.sqrt(var / N) + 1e-9)
    np.testing.assert_allclose(xs.var(0), var, rtol=0.05, atol=1e-3)


def test_lkj_cholesky_samples_are_correlation_factors():
    ember.manual_seed(4)
    d = D.LKJCholesky(4, _t(2.0))
    L = d.sample((5000,))
    assert bool(d.support.check(L).all())
    C = (L @ L.mT).numpy()
    np.testing.assert_allclose(np.diagonal(C, axis1=-2, axis2=-1), 1.0, rtol=1e-9)
    # the LKJ marginal of each correlation is Beta(eta - 1 + d/2, same) on [-1, 1]: mean 0,
    # variance 1 / (2 (eta - 1 + d/2) + 1)
    off = C[:, 1, 0]
    assert abs(off.mean()) < 6 * np.sqrt(1 / (2 * 3.0 + 1) / 5000)
    np.testing.assert_allclose(off.var(), 1 / (2 * 3.0 + 1), rtol=0.1)


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_manual_seed_reproduces_samples(name):
    d = FAMILIES[name]()
    ember.manual_seed(7)
    a = d.sample((5,))
    ember.manual_seed(7)
    np.testing.assert_array_equal(d.sample((5,)).numpy(), a.numpy())


@pytest.mark.parametrize("name", ["Normal", "Gamma", "Beta", "Dirichlet", "Exponential", "Chi2"])
def test_rsample_pathwise_gradient_of_the_mean(name):
    # d/dtheta E[x] estimated from rsample equals the gradient of the closed-form mean
    ember.manual_seed(3)
    params = {
        "Normal": [[0.5], [1.5]],
        "Gamma": [[2.0], [0.5]],
        "Beta": [[2.0], [3.0]],
        "Dirichlet": [[1.0, 2.0, 3.0]],
        "Exponential": [[0.7]],
        "Chi2": [[3.0]],
    }[name]
    ps = [_t(p).requires_grad_() for p in params]
    d = getattr(D, name)(*ps)
    x = d.rsample((N,))
    est = ember.autograd.grad(x.mean(0).sum(), ps)
    exact = ember.autograd.grad(getattr(D, name)(*ps).mean.sum(), ps, allow_unused=True)
    for e, w in zip(est, exact):
        w = np.zeros(e.shape) if w is None else w.numpy()  # Normal's mean ignores scale
        np.testing.assert_allclose(e.numpy(), w, rtol=0.03, atol=0.01)


def test_straight_through_and_relaxed_have_gradients():
    p = _t([0.2, 0.3, 0.5]).requires_grad_()
    s = D.OneHotCategoricalStraightThrough(p).rsample((4,))
    (g,) = ember.autograd.grad((s * _t([1.0, 2.0, 3.0])).sum(), [p])
    # the gradient of 4 * <w, p / sum(p)>: probs are normalised from p
    w = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(g.numpy(), 4 * (w - w @ [0.2, 0.3, 0.5]))
    r = D.RelaxedOneHotCategorical(_t(0.5), probs=p).rsample((3,))
    np.testing.assert_allclose(r.sum(-1).detach().numpy(), 1.0, rtol=1e-9)
    assert r.requires_grad
    b = D.RelaxedBernoulli(_t(0.5), probs=_t([0.3])).rsample((10,))
    assert bool(((b > 0) & (b < 1)).all())


TRANSFORMS = [
    transforms.ExpTransform(),
    transforms.SigmoidTransform(),
    transforms.TanhTransform(),
    transforms.SoftplusTransform(),
    transforms.AffineTransform(1.0, -3.0),
    transforms.PowerTransform(_t(3.0)),
    transforms.ComposeTransform([transforms.ExpTransform(), transforms.AffineTransform(2.0, 0.5)]),
]


@pytest.mark.parametrize("t", TRANSFORMS, ids=lambda t: type(t).__name__)
def test_elementwise_transform_inverse_and_jacobian(t):
    x = _t([0.3, 0.9, 1.7])
    y = t(x)
    np.testing.assert_allclose(t.inv(y).numpy(), x.numpy(), rtol=1e-9)
    h = 1e-6
    fd = (t(x + h).numpy() - t(x - h).numpy()) / (2 * h)
    np.testing.assert_allclose(t.log_abs_det_jacobian(x, y).numpy(), np.log(np.abs(fd)), rtol=1e-6)


def test_stick_breaking_jacobian_by_finite_differences():
    t = transforms.StickBreakingTransform()
    x = np.array([0.3, -0.4, 1.1])
    y = t(_t(x))
    np.testing.assert_allclose(y.sum().item(), 1.0, rtol=1e-12)
    np.testing.assert_allclose(t.inv(y).numpy(), x, rtol=1e-9)
    # Jacobian of the first K-1 outputs (the last is determined by the others)
    h = 1e-6
    J = np.stack(
        [
            (t(_t(x + h * e)).numpy()[:-1] - t(_t(x - h * e)).numpy()[:-1]) / (2 * h)
            for e in np.eye(3)
        ],
        1,
    )
    want = np.log(abs(np.linalg.det(J)))
    assert t.log_abs_det_jacobian(_t(x), y).item() == pytest.approx(want, rel=1e-6)


def test_transformed_distribution_log_prob_by_change_of_variables():
    base = D.Normal(_t([0.0]), _t([1.0]))
    d = D.TransformedDistribution(
        base, [transforms.AffineTransform(1.0, 2.0), transforms.ExpTransform()]
    )
    y = _t([0.5, 3.0])
    x = (np.log(y.numpy()) - 1.0) / 2.0
    want = -0.5 * x**2 - 0.5 * math.log(2 * math.pi) - math.log(2.0) - np.log(y.numpy())
    np.testing.assert_allclose(d.log_prob(y).numpy(), want, rtol=1e-10)
    np.testing.assert_allclose(d.cdf(d.icdf(_t([0.3]))).numpy(), [0.3], rtol=1e-9)


def test_biject_to_maps_into_the_constraint():
    for c in [
        constraints.positive,
        constraints.unit_interval,
        constraints.interval(-2.0, 5.0),
        constraints.greater_than(3.0),
        constraints.less_than(-1.0),
        constraints.simplex,
    ]:
        t = D.biject_to(c)
        y = t(_t([-3.0, 0.0, 2.5]))
        assert bool(c.check(y).all()), c
        np.testing.assert_allclose(t.inv(y).numpy(), [-3.0, 0.0, 2.5], rtol=1e-7, atol=1e-9)
    with pytest.raises(NotImplementedError, match="Cannot transform _Boolean constraints"):
        D.biject_to(constraints.boolean)


def test_register_kl_dispatches_to_the_most_specific_pair():
    class MyNormal(D.Normal):
        pass

    p, q = MyNormal(_t(0.0), _t(1.0)), D.Normal(_t(1.0), _t(2.0))
    base = D.kl_divergence(D.Normal(_t(0.0), _t(1.0)), q)
    np.testing.assert_allclose(D.kl_divergence(p, q).numpy(), base.numpy())

    @D.register_kl(MyNormal, D.Normal)
    def _kl(p, q):
        return ember.zeros(())

    try:
        assert D.kl_divergence(p, q).item() == 0.0
        assert D.kl_divergence(D.Normal(_t(0.0), _t(1.0)), q).item() == base.item()
    finally:
        from ember.distributions import kl as kl_module

        del kl_module._KL_REGISTRY[MyNormal, D.Normal]
        kl_module._KL_MEMOIZE.clear()
    with pytest.raises(TypeError):
        D.register_kl(int, D.Normal)


def test_kl_matches_monte_carlo():
    ember.manual_seed(5)
    p, q = D.Gamma(_t(2.0), _t(1.5)), D.Gamma(_t(3.0), _t(0.7))
    x = p.sample((N,))
    mc = (p.log_prob(x) - q.log_prob(x)).mean().item()
    assert D.kl_divergence(p, q).item() == pytest.approx(mc, abs=0.02)


def test_validate_args_switch():
    D.Distribution.set_default_validate_args(False)
    try:
        d = D.Normal(0.0, -1.0)  # accepted without validation
        assert d.scale.item() == -1.0
    finally:
        D.Distribution.set_default_validate_args(True)
    with pytest.raises(ValueError, match="Expected parameter scale"):
        D.Normal(0.0, -1.0)
    d = D.Normal(0.0, 1.0, validate_args=False)
    assert d.log_prob(_t(float("nan"))).isnan().item()
    with pytest.raises(ValueError):
        D.Distribution.set_default_validate_args(2)


def test_lazy_parameters_are_cached_and_repr():
    d = D.Bernoulli(logits=_t([0.0, 1.0]))
    assert "probs" not in d.__dict__
    p = d.probs
    assert d.probs is p
    assert repr(D.Normal(0.0, 1.0)) == "Normal(loc: 0.0, scale: 1.0)"
    assert repr(D.Independent(D.Normal(_t([0.0]), _t([1.0])), 1)).startswith("Independent(Normal(")


def test_custom_init_subclass_must_define_expand():
    class Shifted(D.Normal):
        def __init__(self, loc):
            super().__init__(loc, 1.0)

    with pytest.raises(NotImplementedError, match="must also define a custom .expand"):
        Shifted(_t([0.0])).expand((3, 1))


def test_warns_on_ambiguous_kl():
    class A(D.Normal):
        pass

    class B(D.Normal):
        pass

    from ember.distributions import kl as kl_module

    @D.register_kl(A, D.Normal)
    def _k1(p, q):
        return ember.zeros(())

    @D.register_kl(D.Normal, B)
    def _k2(p, q):
        return ember.ones(())

    try:
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            D.kl_divergence(A(_t(0.0), _t(1.0)), B(_t(0.0), _t(1.0)))
        assert any("Ambiguous kl_divergence(A, B)" in str(x.message) for x in w)
    finally:
        del kl_module._KL_REGISTRY[A, D.Normal]
        del kl_module._KL_REGISTRY[D.Normal, B]
        kl_module._KL_MEMOIZE.clear()


RSAMPLE_GRADCHECK = {
    "Normal": (D.Normal, [[0.3, -1.0], [0.5, 2.0]]),
    "Uniform": (D.Uniform, [[0.3, -1.0], [0.5, 2.0]]),
    "Exponential": (D.Exponential, [[0.3, 2.0]]),
    "Laplace": (D.Laplace, [[0.3, -1.0], [0.5, 2.0]]),
    "Cauchy": (D.Cauchy, [[0.3, -1.0], [0.5, 2.0]]),
    "Gumbel": (D.Gumbel, [[0.3, -1.0], [0.5, 2.0]]),
    "LogNormal": (D.LogNormal, [[0.3, -1.0], [0.5, 2.0]]),
    "Kumaraswamy": (D.Kumaraswamy, [[0.7, 3.0], [1.5, 2.0]]),
    "Weibull": (D.Weibull, [[0.7, 3.0], [1.5, 2.0]]),
    "LogisticNormal": (D.LogisticNormal, [[0.3, -1.0], [0.5, 2.0]]),
    "MultivariateNormal": (
        lambda loc, tril: D.MultivariateNormal(loc, scale_tril=tril.tril()),
        [[0.3, -1.0], [[1.0, 0.0], [0.4, 0.8]]],
    ),
    "LowRankMultivariateNormal": (
        D.LowRankMultivariateNormal,
        [[0.3, -1.0], [[1.0], [0.4]], [0.5, 0.7]],
    ),
}


@pytest.mark.parametrize("name", sorted(RSAMPLE_GRADCHECK))
def test_rsample_gradcheck(name):
    # with the generator reset before each draw, rsample is a smooth function of the
    # parameters: finite differences in float64 must match its backward
    ctor, params = RSAMPLE_GRADCHECK[name]

    def draw(*ps):
        ember.manual_seed(0)
        return ctor(*ps).rsample((3,))

    ps = tuple(_t(p).requires_grad_() for p in params)
    assert ember.autograd.gradcheck(draw, ps, eps=1e-6, atol=1e-5)
