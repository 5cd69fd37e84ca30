"""Gradients of tensor-core's composite ops (_ops/shape/rearrange.py and the composites
of the other families): they have no formula of their own, so finite
differences (gradcheck, float64) check that the ops they are built from give
the right gradients."""

import numpy as np
import pytest

import ember_autograd as ag
import ember_core as ec

rng = np.random.default_rng(9)


def leaf(*shape, low=-1.0, high=1.0):
    return ec.from_numpy(rng.uniform(low, high, shape)).requires_grad_()


CASES = {
    "ravel": (lambda x: x.t().ravel(), [(3, 4)]),
    "rot90": (lambda x: ec.rot90(x, 3, [1, 0]), [(3, 4)]),
    "diff": (lambda x, p: ec.diff(x, n=2, dim=1, prepend=p), [(3, 4), (3, 2)]),
    "repeat_interleave": (lambda x: x.repeat_interleave(ec.tensor([2, 0, 1]), dim=0), [(3, 4)]),
    "diag": (lambda x: ec.diag(x, 1), [(4,)]),
    "diag_embed": (lambda x: ec.diag_embed(x, -1, 0, 2), [(2, 3)]),
    "diagflat": (lambda x: ec.diagflat(x), [(2, 2)]),
    "kron": (lambda a, b: ec.kron(a, b), [(2, 3), (3, 2)]),
    "block_diag": (lambda a, b: ec.block_diag(a, b), [(2, 3), (2,)]),
    "cartesian_prod": (lambda a, b: ec.cartesian_prod(a, b), [(3,), (2,)]),
    "combinations": (lambda a: ec.combinations(a, 2), [(4,)]),
    "vander": (lambda a: ec.vander(a, 4), [(3,)]),
    "logaddexp2": (lambda a, b: ec.logaddexp2(a, b), [(3, 4), (3, 4)]),
    "ldexp": (lambda a: ec.ldexp(a, ec.tensor([1, -2, 0, 3])), [(3, 4)]),
    "frexp": (lambda a: ec.frexp(a).mantissa, [(3, 4)]),
    "trapezoid": (lambda y, x: ec.trapezoid(y, x.cumsum(0)), [(3, 4), (4,)]),
    "cumulative_trapezoid": (lambda y: ec.cumulative_trapezoid(y, dx=0.3, dim=0), [(3, 4)]),
    "cov": (
        lambda a: ec.cov(a, aweights=ec.tensor([0.5, 1.0, 2.0, 0.1], dtype=ec.float64)),
        [(3, 4)],
    ),
    "corrcoef": (lambda a: ec.corrcoef(a), [(3, 5)]),
    "cross": (lambda a, b: ec.cross(a, b, dim=0), [(3, 4), (3, 4)]),
    "cdist_direct": (lambda a, b: ec.cdist(a, b, p=1.5), [(4, 3), (5, 3)]),
    "cdist_mm": (
        lambda a, b: ec.cdist(a, b, compute_mode="use_mm_for_euclid_dist"),
        [(4, 3), (5, 3)],
    ),
    "addbmm": (
        lambda i, a, b: ec.addbmm(i, a, b, beta=0.5, alpha=2),
        [(2, 5), (3, 2, 4), (3, 4, 5)],
    ),
    "index_reduce_mean": (
        lambda x, s: x.index_reduce(0, ec.tensor([0, 2, 0]), s, "mean"),
        [(3, 4), (3, 4)],
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradcheck(name):
    fn, shapes = CASES[name]
    inputs = tuple(leaf(*s) for s in shapes)
    assert ag.gradcheck(fn, inputs)


def test_logit_gradient_away_from_the_clamp():
    x = ec.from_numpy(rng.uniform(0.1, 0.9, (3, 4))).requires_grad_()
    assert ag.gradcheck(lambda t: ec.logit(t, 1e-3), (x,))
