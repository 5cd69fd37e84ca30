"""Derivative formulas of the linalg ops on complex matrices and of linalg.eig
(_derivatives_linalg.py, _derivatives_linalg_geev.py) in PyTorch's convention
(Note [Complex gradients]): gradcheck by finite differences (complex inputs as
pairs of reals), and gradients against PyTorch's (parity).  The functions are
written once for both namespaces (``ns`` is ember_core or torch) and are
invariant to the phases of eigen- and singular vectors (Note [Spectral gauge])."""

import numpy as np
import pytest

import ember_autograd as ag
import ember_core as ec

rng = np.random.default_rng(29)


def _c(*shape, shift=0.0):
    a = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
    return a + shift * np.eye(shape[-1]) if shift else a


def _r(*shape):
    return rng.standard_normal(shape)


def _hpd(ns, x):
    n = x.shape[-1]
    return x @ x.mH + n * ns.eye(n, dtype=x.dtype)


def _recon(ns, w, V):
    return V @ ns.diag_embed(w) @ ns.linalg.inv(V)


# name: (fn(ns, *inputs), NumPy inputs)
CASES = {
    "inv": (lambda ns, A: ns.linalg.inv(A), [_c(2, 3, 3, shift=3)]),
    "solve": (lambda ns, A, B: ns.linalg.solve(A, B), [_c(3, 3, shift=3), _c(3, 2)]),
    "solve_vector_right": (
        lambda ns, A, B: ns.linalg.solve(A, B, left=False),
        [_c(3, 3, shift=3), _c(2, 3)],
    ),
    "det": (lambda ns, A: ns.linalg.det(A), [_c(2, 3, 3)]),
    "slogdet": (lambda ns, A: tuple(ns.linalg.slogdet(A)), [_c(3, 3)]),
    "logdet": (lambda ns, A: ns.logdet(A), [_c(3, 3, shift=3)]),
    "solve_triangular": (
        lambda ns, A, B: ns.linalg.solve_triangular(A, B, upper=True),
        [_c(3, 3, shift=3), _c(3, 2)],
    ),
    "cholesky": (lambda ns, X: ns.linalg.cholesky(_hpd(ns, X)), [_c(3, 3)]),
    "cholesky_upper": (lambda ns, X: ns.linalg.cholesky(_hpd(ns, X), upper=True), [_c(3, 3)]),
    "qr_tall": (lambda ns, A: tuple(ns.linalg.qr(A)), [_c(4, 3)]),
    "qr_wide": (lambda ns, A: tuple(ns.linalg.qr(A)), [_c(3, 4)]),
    "eigvalsh": (lambda ns, X: ns.linalg.eigvalsh(_hpd(ns, X)), [_c(3, 3)]),
    "eigh_abs": (lambda ns, X: ns.linalg.eigh(_hpd(ns, X))[1].abs(), [_c(3, 3)]),
    "svdvals": (lambda ns, A: ns.linalg.svdvals(A), [_c(4, 3)]),
    "svd_abs": (
        lambda ns, A: tuple(t.abs() for t in ns.linalg.svd(A, full_matrices=False)),
        [_c(3, 4)],
    ),
    "svd_UVh": (
        lambda ns, A: (lambda U, S, Vh: U @ Vh)(*ns.linalg.svd(A, full_matrices=False)),
        [_c(4, 3)],
    ),
    "pinv": (lambda ns, A: ns.linalg.pinv(A), [_c(4, 3)]),
    "lstsq": (lambda ns, A, B: ns.linalg.lstsq(A, B).solution, [_c(4, 3), _c(4, 2)]),
    "matrix_norm_nuc": (lambda ns, A: ns.linalg.matrix_norm(A, "nuc"), [_c(3, 3)]),
    "matrix_exp": (lambda ns, A: ns.linalg.matrix_exp(A), [_c(3, 3)]),
    "lu_solve": (
        lambda ns, A, B: ns.linalg.lu_solve(*ns.linalg.lu_factor(A), B),
        [_c(3, 3, shift=3), _c(3, 2)],
    ),
    "householder_product": (
        lambda ns, A, tau: ns.linalg.householder_product(A, tau),
        [_c(4, 3), _c(2)],
    ),
    "eigvals": (lambda ns, A: ns.linalg.eigvals(A), [_c(3, 3)]),
    "eig_abs": (lambda ns, A: ns.linalg.eig(A)[1].abs(), [_c(3, 3)]),
    "eig_reconstruct": (lambda ns, A: _recon(ns, *ns.linalg.eig(A)), [_c(3, 3)]),
    "eigvals_real": (lambda ns, A: ns.linalg.eigvals(A), [_r(2, 3, 3)]),
    "eig_real_abs": (lambda ns, A: ns.linalg.eig(A)[1].abs(), [_r(3, 3)]),
}


def _leaves(arrays):
    return [ec.tensor(a).requires_grad_() for a in arrays]


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradcheck(name):
    fn, arrays = CASES[name]
    inputs = _leaves(arrays)
    assert ag.gradcheck(lambda *xs: fn(ec, *xs), tuple(inputs), eps=1e-6, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize(
    "name", ["inv", "solve", "det", "slogdet", "cholesky", "eigvalsh", "svdvals", "eigvals"]
)
def test_second_derivatives(name):
    # create_graph=True through the formulas, against finite differences of gradients
    fn, arrays = CASES[name]
    inputs = _leaves(arrays)
    assert ag.gradgradcheck(lambda *xs: fn(ec, *xs), tuple(inputs), eps=1e-6, atol=1e-4, rtol=1e-3)


def test_phase_dependent_loss_raises():
    # the eigenvectors' phases are arbitrary: a loss that reads them has no gradient
    A = ec.tensor(_c(3, 3)).requires_grad_()
    with pytest.raises(RuntimeError, match="e\\^\\{i phi\\}"):
        ec.linalg.eig(A)[1].real.sum().backward()
    H = ec.tensor(_c(3, 3)).requires_grad_()
    with pytest.raises(RuntimeError, match="e\\^\\{i phi\\}"):
        ec.linalg.eigh(_hpd(ec, H))[1].imag.sum().backward()


def test_singular_det_gradient_is_the_conjugate_cofactor():
    # rank 2: the gradient of det is conj(cofactor) (through the SVD)
    a = _c(3, 2) @ _c(2, 3)
    A = ec.tensor(a).requires_grad_()
    ec.linalg.det(A).real.backward()
    cof = np.array(
        [
            [(-1) ** (i + j) * np.linalg.det(np.delete(np.delete(a, i, 0), j, 1)) for j in range(3)]
            for i in range(3)
        ]
    )
    np.testing.assert_allclose(A.grad.numpy(), np.conj(cof), atol=1e-10)


@pytest.mark.parity
@pytest.mark.parametrize("name", sorted(CASES))
def test_gradients_match_torch(name):
    torch = pytest.importorskip("torch")
    fn, arrays = CASES[name]
    inputs = _leaves(arrays)
    out = fn(ec, *inputs)
    outs = out if isinstance(out, tuple) else (out,)
    ws = [
        rng.standard_normal(tuple(o.shape))
        + (1j * rng.standard_normal(tuple(o.shape)) if o.dtype.is_complex else 0)
        for o in outs
    ]
    # a real loss: Re(sum(conj(w) * out))
    total = sum(
        ((o * ec.tensor(np.conj(w))).real.sum() if o.dtype.is_complex else (o * ec.tensor(w)).sum())
        for o, w in zip(outs, ws)
    )
    mine = ag.grad(total, inputs)
    tins = [torch.tensor(a, requires_grad=True) for a in arrays]
    tout = fn(torch, *tins)
    touts = tout if isinstance(tout, tuple) else (tout,)
    ttotal = sum(
        (
            (o * torch.tensor(np.conj(w))).real.sum()
            if o.is_complex()
            else (o * torch.tensor(w)).sum()
        )
        for o, w in zip(touts, ws)
    )
    theirs = torch.autograd.grad(ttotal, tins)
    for m, t in zip(mine, theirs):
        np.testing.assert_allclose(m.numpy(), t.resolve_conj().numpy(), rtol=1e-6, atol=1e-8)
