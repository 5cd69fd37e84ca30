"""Formulas of _derivatives_special.py and _derivatives_lu.py against finite
differences (gradcheck and gradgradcheck, float64), plus PyTorch's "not
implemented" inputs (zeta's and igamma's first argument)."""

import pytest

import ember_autograd as ag
import ember_core as ec
from ember_core._ops.pointwise import special as S


def _x(values):
    return ec.tensor(values, dtype=ec.float64, requires_grad=True)


A = ec.tensor([0.7, 1.5, 3.0], dtype=ec.float64)

CASES = [
    ("i0", lambda t: S.i0(t), [-1.5, 0.3, 2.0]),
    ("i0e", lambda t: S.special_i0e(t), [-1.5, 0.3, 25.0]),
    ("i1", lambda t: S.special_i1(t), [-1.5, 0.3, 2.0]),
    ("i1e", lambda t: S.special_i1e(t), [-1.5, 0.3, 25.0]),
    ("ndtri", lambda t: S.special_ndtri(t), [0.05, 0.5, 0.9]),
    ("log_ndtr", lambda t: S.special_log_ndtr(t), [-8.0, 0.1, 3.0]),
    ("erfcx", lambda t: S.special_erfcx(t), [-1.0, 0.5, 30.0]),
    ("entr", lambda t: S.special_entr(t), [0.2, 1.0, 3.0]),
    ("trigamma", lambda t: S._special_trigamma(t), [0.3, 2.0, 7.5]),
    ("polygamma2", lambda t: S.polygamma(2, t), [0.3, 2.0, 7.5]),
    ("polygamma0", lambda t: S.polygamma(0, t), [0.3, 2.0, 7.5]),
    ("zeta_q", lambda t: S.special_zeta(3.0, t), [0.3, 2.0, 7.5]),
    ("xlog1py", lambda t: S.special_xlog1py(t, t * 2), [0.3, 2.0, 7.5]),
    ("igamma_x", lambda t: S.igamma(A, t), [0.3, 2.0, 7.5]),
    ("igammac_x", lambda t: S.igammac(A, t), [0.3, 2.0, 7.5]),
    ("mvlgamma", lambda t: S.mvlgamma(t, 3), [1.3, 2.0, 7.5]),
]


@pytest.mark.parametrize("name, fn, values", CASES, ids=[c[0] for c in CASES])
def test_gradcheck(name, fn, values):
    x = _x(values)
    assert ag.gradcheck(fn, (x,))
    assert ag.gradgradcheck(fn, (x,))


def test_inplace_uses_the_formula():
    x = _x([0.3, 1.2])

    def f(t):
        y = t * 1.0
        y.i0_()
        return y

    assert ag.gradcheck(f, (x,))


@pytest.mark.parametrize(
    "fn, what",
    [
        (lambda t: S.special_zeta(t, 2.0), "zeta"),
        (lambda t: S.igamma(t, A), "igamma: input"),
        (lambda t: S.igammac(t, A), "igammac: input"),
    ],
)
def test_not_implemented_inputs(fn, what):
    x = _x([1.5, 2.0, 3.0])
    with pytest.raises(NotImplementedError, match=what):
        fn(x).sum().backward()


def test_non_differentiable_functions_give_no_graph():
    x = _x([0.5, 1.5])
    assert not S.special_bessel_j0(x).requires_grad
    assert not S.special_chebyshev_polynomial_t(x, 3).requires_grad


def test_lu_factor_gradient():
    a = ec.tensor(
        [[2.0, 1.0, 0.5], [4.0, -1.0, 3.0], [1.0, 2.0, -2.0]], dtype=ec.float64, requires_grad=True
    )
    assert ag.gradcheck(lambda t: ec.linalg.lu_factor(t)[0], (a,))
    assert ag.gradcheck(lambda t: ec.linalg.lu(t).L, (a,))
    b = ec.tensor([[1.0, 2.0], [0.5, -1.0], [3.0, 0.0]], dtype=ec.float64)
    bt = b.mT.contiguous()
    for rhs, left, adjoint in [(b, True, False), (b, True, True), (bt, False, False)]:

        def solve(t, rhs=rhs, left=left, adjoint=adjoint):
            return ec.linalg.lu_solve(*ec.linalg.lu_factor(t), rhs, left=left, adjoint=adjoint)

        assert ag.gradcheck(solve, (a,))


def test_householder_product_gradient():
    a = ec.tensor([[0.5, 1.0], [0.2, -0.3], [1.5, 0.7]], dtype=ec.float64, requires_grad=True)
    tau = ec.tensor([0.4, 1.2], dtype=ec.float64, requires_grad=True)
    assert ag.gradcheck(ec.linalg.householder_product, (a, tau))
