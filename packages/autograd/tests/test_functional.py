"""Functional helpers (functional.py): vjp, jvp, jacobian, hessian, hvp, vhp
against closed forms, and against torch.autograd.functional."""

import numpy as np
import pytest

import ember_autograd as ag
import ember_core as ec
from ember_autograd import functional as AF

A = np.array([[1.0, 2.0, -1.0], [0.5, -0.5, 3.0]])
X = np.array([0.3, -0.7, 1.1])


def t64(a):
    return ec.tensor(a, dtype=ec.float64)


def f_vec(x):  # R^3 -> R^2: A @ tanh(x)
    return t64(A) @ x.tanh()


def f_scalar(x):  # R^3 -> R: sum(x^3) + x0 * x1
    return (x**3).sum() + x[0] * x[1]


def jac_vec(x):
    return A * (1 - np.tanh(x) ** 2)


def hess_scalar(x):
    h = np.diag(6 * x)
    h[0, 1] += 1
    h[1, 0] += 1
    return h


def test_jacobian_single_input_output():
    j = AF.jacobian(f_vec, t64(X))
    assert tuple(j.shape) == (2, 3) and not j.requires_grad
    np.testing.assert_allclose(j.numpy(), jac_vec(X))


def test_jacobian_tuples():
    x, y = t64(X), t64([2.0, 3.0])
    jac = AF.jacobian(lambda a, b: (a * b.sum(), b.exp()), (x, y))
    assert len(jac) == 2 and len(jac[0]) == 2
    np.testing.assert_allclose(jac[0][0].numpy(), np.eye(3) * 5.0)
    np.testing.assert_allclose(jac[0][1].numpy(), np.outer(X, [1.0, 1.0]))
    np.testing.assert_allclose(jac[1][0].numpy(), np.zeros((2, 3)))
    np.testing.assert_allclose(jac[1][1].numpy(), np.diag(np.exp([2.0, 3.0])))


def test_hessian():
    h = AF.hessian(f_scalar, t64(X))
    assert tuple(h.shape) == (3, 3)
    np.testing.assert_allclose(h.numpy(), hess_scalar(X))


def test_vjp_and_jvp():
    v_out, v_in = t64([1.0, -2.0]), t64([0.5, 1.0, -1.0])
    out, vjp = AF.vjp(f_vec, t64(X), v_out)
    np.testing.assert_allclose(out.numpy(), A @ np.tanh(X))
    np.testing.assert_allclose(vjp.numpy(), np.array([1.0, -2.0]) @ jac_vec(X))
    out, jvp = AF.jvp(f_vec, t64(X), v_in)
    np.testing.assert_allclose(jvp.numpy(), jac_vec(X) @ np.array([0.5, 1.0, -1.0]))


def test_hvp_and_vhp():
    v = t64([1.0, 0.0, 2.0])
    out, hvp = AF.hvp(f_scalar, t64(X), v)
    np.testing.assert_allclose(hvp.numpy(), hess_scalar(X) @ [1.0, 0.0, 2.0])
    out, vhp = AF.vhp(f_scalar, t64(X), v)
    np.testing.assert_allclose(vhp.numpy(), [1.0, 0.0, 2.0] @ hess_scalar(X))


def test_create_graph_gives_differentiable_results():
    x = t64(X).requires_grad_()
    j = AF.jacobian(f_scalar, x, create_graph=True)
    assert j.requires_grad
    (g,) = ag.grad(j.sum(), x)
    np.testing.assert_allclose(g.numpy(), hess_scalar(X).sum(0))


def test_inputs_are_not_modified_or_given_grads():
    x = t64(X).requires_grad_()
    AF.jacobian(f_vec, x)
    AF.hessian(f_scalar, x)
    assert x.grad is None


@pytest.mark.parity
@pytest.mark.parametrize("name", ["jacobian", "hessian", "vjp", "jvp", "hvp", "vhp"])
def test_parity_with_torch_functional(name):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    xa, ya = rng.standard_normal((2, 3)), rng.standard_normal(3)

    def run(ns, F):
        x, y = ns.tensor(xa, dtype=ns.float64), ns.tensor(ya, dtype=ns.float64)

        def f(a, b):
            return ((a * b).sin() @ b.exp()).pow(2)

        def fs(a, b):
            return f(a, b).sum()

        if name == "jacobian":
            res = F.jacobian(f, (x, y))
        elif name == "hessian":
            res = F.hessian(fs, (x, y))
        elif name == "vjp":
            res = F.vjp(f, (x, y), ns.tensor([1.0, -1.0], dtype=ns.float64))
        elif name == "jvp":
            res = F.jvp(f, (x, y), (x * 0.5, y + 1))
        elif name == "hvp":
            res = F.hvp(fs, (x, y), (x * 0.5, y + 1))
        else:
            res = F.vhp(fs, (x, y), (x * 0.5, y + 1))
        return res

    def flat(r):
        if isinstance(r, (tuple, list)):
            return [a for x in r for a in flat(x)]
        return [np.asarray(r.detach().numpy())]

    got, want = flat(run(ec, AF)), flat(run(torch, torch.autograd.functional))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)
