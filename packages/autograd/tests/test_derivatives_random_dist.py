"""The _standard_gamma formula (implicit reparameterisation): the backward is
grad * _standard_gamma_grad(alpha, sample), and pathwise gradients are unbiased:
E[d x/d a] = d E[x]/d a = 1 and E[d x^2/d a] = d (a^2 + a)/d a = 2a + 1."""

import math

import numpy as np
import pytest

import ember_autograd as ea
import ember_core as ec


def test_backward_is_standard_gamma_grad():
    ec.manual_seed(0)
    a = ec.tensor([0.3, 1.0, 4.0], dtype=ec.float64, requires_grad=True)
    x = ec._standard_gamma(a)
    (g,) = ea.grad((x * ec.tensor([1.0, 2.0, 3.0], dtype=ec.float64)).sum(), [a])
    want = ec._standard_gamma_grad(a.detach(), x.detach()).numpy() * [1.0, 2.0, 3.0]
    np.testing.assert_allclose(g.numpy(), want, rtol=1e-12)
    assert type(x.grad_fn).__name__ == "StandardGammaBackward0"


@pytest.mark.parametrize("alpha", [0.4, 2.0, 25.0])
def test_pathwise_gradients_are_unbiased(alpha):
    ec.manual_seed(1)
    n = 100_000
    a = ec.full((n,), alpha, dtype=ec.float64, requires_grad=True)
    x = ec._standard_gamma(a)
    (g1,) = ea.grad(x.sum(), [a], retain_graph=True)
    (g2,) = ea.grad((x * x).sum(), [a])
    for g, want in ((g1.numpy(), 1.0), (g2.numpy(), 2 * alpha + 1)):
        se = g.std() / math.sqrt(n)
        assert abs(g.mean() - want) < 6 * se, (g.mean(), want, se)


def test_gradient_op_is_not_differentiable():
    a = ec.tensor([1.5], requires_grad=True)
    x = ec.tensor([2.0])
    assert not ec._standard_gamma_grad(a, x).requires_grad


def test_poisson_and_binomial_have_zero_gradients():
    rate = ec.tensor([2.0, 5.0], requires_grad=True)
    k = ec.poisson(rate)
    assert k.requires_grad
    (g,) = ea.grad(k.sum(), [rate])
    np.testing.assert_array_equal(g.numpy(), [0.0, 0.0])
    n = ec.tensor([5.0], requires_grad=True)
    p = ec.tensor([0.5], requires_grad=True)
    gn, gp = ea.grad(ec.binomial(n, p).sum(), [n, p])
    assert gn.item() == 0.0 and gp.item() == 0.0
