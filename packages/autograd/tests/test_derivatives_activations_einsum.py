"""Gradients of gelu and softplus (first and second derivatives, in place),
einsum through its primitives, outer with promotion and the in-place view ops
against finite differences (float64)."""

import numpy as np
import pytest

import ember_autograd as ag
import ember_core as ec


def leaf(*shape, seed=0, low=-3.0, high=3.0):
    rng = np.random.default_rng(seed)
    return ec.tensor(rng.uniform(low, high, shape), dtype=ec.float64, requires_grad=True)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_gradient_and_second_derivative(approximate):
    x = leaf(3, 4)
    assert ag.gradcheck(lambda t: ec.gelu(t, approximate=approximate), (x,))
    assert ag.gradgradcheck(lambda t: ec.gelu(t, approximate=approximate), (x,))


@pytest.mark.parametrize("beta, threshold", [(1.0, 20.0), (2.0, 1.0), (0.5, 3.0)])
def test_softplus_gradient_on_both_sides_of_the_threshold(beta, threshold):
    x = leaf(12, low=-6.0, high=6.0, seed=1)
    assert ag.gradcheck(lambda t: ec.softplus(t, beta, threshold), (x,))
    assert ag.gradgradcheck(lambda t: ec.softplus(t, beta, threshold), (x,))


def test_gelu_in_place_records_its_gradient():
    x = leaf(5, seed=2)
    y = x * 1.0
    ec.gelu_(y)
    y.sum().backward()
    ref = leaf(5, seed=2)
    ec.gelu(ref).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), ref.grad.numpy())


@pytest.mark.parametrize(
    "equation, shapes",
    [
        ("ij,jk->ik", [(2, 3), (3, 4)]),
        ("...i,kij,...j->...k", [(2, 3), (4, 3, 2), (2, 2)]),
        ("ii->i", [(3, 3)]),
        ("bij,bjk", [(2, 2, 3), (2, 3, 2)]),
        ("i,j->ij", [(3,), (2,)]),
        ("ij->", [(2, 3)]),
    ],
)
def test_einsum_gradients_through_its_primitives(equation, shapes):
    xs = tuple(leaf(*s, seed=i) for i, s in enumerate(shapes))
    assert ag.gradcheck(lambda *ts: ec.einsum(equation, *ts), xs)


def test_outer_with_promotion_and_in_place_view_ops():
    a, b = leaf(3, seed=3), leaf(4, seed=4)
    assert ag.gradcheck(ec.outer, (a, b))

    def f(t):
        u = t * 1.0
        u.transpose_(0, 1)
        u.unsqueeze_(0)
        return u * ec.arange(3.0, dtype=ec.float64).view(1, 3, 1)

    assert ag.gradcheck(f, (leaf(2, 3, seed=5),))
