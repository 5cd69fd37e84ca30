"""ember_core.linalg on complex64/complex128 (csrc/cpu/linalg/linalg_complex.c)
and the general eigendecomposition linalg.eig/eigvals (real and complex input), against
NumPy's values; result dtypes (real eigen- and singular values, complex eig
results for real input); errors."""

import numpy as np
import pytest

import ember_core as ec
from ember_core import linalg as LA

rng = np.random.default_rng(19)

DTYPES = [(ec.complex64, np.complex64, 2e-4), (ec.complex128, np.complex128, 1e-10)]


def cmat(*shape, dtype=np.complex128, shift=0.0):
    a = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
    if shift:
        a = a + shift * np.eye(shape[-1])
    return a.astype(dtype)


def hpd(a):
    """A Hermitian positive-definite matrix from a."""
    n = a.shape[-1]
    return (a @ np.conj(np.swapaxes(a, -1, -2)) + n * np.eye(n)).astype(a.dtype)


def close(x, y, tol):
    x = x.numpy() if isinstance(x, ec.Tensor) else np.asarray(x)
    scale = max(1.0, float(np.abs(y).max())) if np.size(y) else 1.0
    np.testing.assert_allclose(x, y, rtol=0, atol=tol * scale)


@pytest.fixture(params=DTYPES, ids=["complex64", "complex128"])
def dt(request):
    return request.param


def test_solve_inv_det_slogdet(dt):
    edt, ndt, tol = dt
    A, B = cmat(2, 4, 4, dtype=ndt), cmat(2, 4, 3, dtype=ndt)
    a, b = ec.tensor(A), ec.tensor(B)
    close(LA.solve(a, b), np.linalg.solve(A, B), tol)
    close(LA.solve(a, b[..., 0]), np.linalg.solve(A, B[..., :1])[..., 0], tol)
    close(LA.solve(a, b.mT, left=False), B.swapaxes(-1, -2) @ np.linalg.inv(A), tol)
    close(LA.inv(a), np.linalg.inv(A), tol)
    close(ec.inverse(a), np.linalg.inv(A), tol)
    close(LA.det(a), np.linalg.det(A), tol)
    sign, logabs = LA.slogdet(a)
    s2, l2 = np.linalg.slogdet(A)
    assert sign.dtype is edt and logabs.dtype is edt.to_real()
    close(sign, s2, tol)
    close(logabs, l2, tol)
    close(ec.logdet(a), np.log(np.linalg.det(A)), tol)  # complex log of det


def test_singular_complex_matrix_raises():
    a = ec.tensor(np.ones((3, 3), dtype=np.complex128))
    with pytest.raises(LA.LinAlgError, match="singular"):
        LA.inv(a)
    with pytest.raises(LA.LinAlgError, match="singular"):
        LA.solve(a, ec.ones(3, dtype=ec.complex128))
    assert int(LA.inv_ex(a).info) != 0
    assert abs(complex(LA.det(a).item())) < 1e-12


def test_cholesky_and_solvers(dt):
    edt, ndt, tol = dt
    H = hpd(cmat(2, 4, 4, dtype=ndt))
    B = cmat(2, 4, 2, dtype=ndt)
    h, b = ec.tensor(H), ec.tensor(B)
    L = LA.cholesky(h)
    close(L, np.linalg.cholesky(H), tol)
    U = LA.cholesky(h, upper=True)
    close(U, np.conj(np.swapaxes(np.linalg.cholesky(H), -1, -2)), tol)
    close(ec.cholesky_solve(b, L), np.linalg.solve(H, B), tol)
    close(ec.cholesky_solve(b, U, upper=True), np.linalg.solve(H, B), tol)
    close(ec.cholesky_inverse(L), np.linalg.inv(H), tol)
    T = np.triu(cmat(4, 4, dtype=ndt, shift=4.0))
    close(LA.solve_triangular(ec.tensor(T), b, upper=True), np.linalg.solve(T, B), tol)
    close(
        LA.solve_triangular(ec.tensor(T), b.mT, upper=True, left=False),
        B.swapaxes(-1, -2) @ np.linalg.inv(T),
        tol,
    )
    with pytest.raises(LA.LinAlgError, match="positive-definite"):
        LA.cholesky(ec.tensor(-H))


def test_lu_family(dt):
    edt, ndt, tol = dt
    A, B = cmat(3, 3, dtype=ndt, shift=2.0), cmat(3, 2, dtype=ndt)
    a, b = ec.tensor(A), ec.tensor(B)
    P, L, U = LA.lu(a)
    close(P @ L @ U, A, tol)
    LU, piv = LA.lu_factor(a)
    close(LA.lu_solve(LU, piv, b), np.linalg.solve(A, B), tol)
    close(LA.lu_solve(LU, piv, b, adjoint=True), np.linalg.solve(A.conj().T, B), tol)
    close(LA.lu_solve(LU, piv, b.mT, left=False), B.T @ np.linalg.inv(A), tol)
    close(
        LA.lu_solve(LU, piv, b.mT, left=False, adjoint=True), B.T @ np.linalg.inv(A.conj().T), tol
    )


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 4, 4)])
def test_qr(dt, shape):
    edt, ndt, tol = dt
    A = cmat(*shape, dtype=ndt)
    for mode in ("reduced", "complete"):
        Q, R = LA.qr(ec.tensor(A), mode=mode)
        assert Q.dtype is edt and R.dtype is edt
        close(Q @ R, A, tol)
        k = Q.shape[-1]
        close(Q.mH @ Q, np.broadcast_to(np.eye(k), Q.shape[:-2] + (k, k)), tol)
        close(R, np.triu(R.numpy()), 0)
        # LAPACK's R has a real diagonal
        close(R.diagonal(0, -2, -1).imag, np.zeros(R.shape[:-2] + (min(shape[-2:]),)), tol)
    _, R = LA.qr(ec.tensor(A), mode="r")
    close(R.abs(), np.abs(np.linalg.qr(A, mode="r")), tol)


def test_eigh(dt):
    edt, ndt, tol = dt
    H = hpd(cmat(3, 5, 5, dtype=ndt))
    w, V = LA.eigh(ec.tensor(H))
    assert w.dtype is edt.to_real() and V.dtype is edt
    close(w, np.linalg.eigvalsh(H), tol)
    close((V * w.unsqueeze(-2).to(edt)) @ V.mH, H, tol)
    close(LA.eigvalsh(ec.tensor(H), "U"), np.linalg.eigvalsh(H, "U"), tol)


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 4, 4)])
def test_svd(dt, shape):
    edt, ndt, tol = dt
    A = cmat(*shape, dtype=ndt)
    s_np = np.linalg.svd(A, compute_uv=False)
    for full in (True, False):
        U, S, Vh = LA.svd(ec.tensor(A), full_matrices=full)
        assert S.dtype is edt.to_real() and U.dtype is edt and Vh.dtype is edt
        close(S, s_np, tol)
        k = S.shape[-1]
        close((U[..., :k] * S.unsqueeze(-2).to(edt)) @ Vh[..., :k, :], A, tol)
    close(LA.svdvals(ec.tensor(A)), s_np, tol)
    U, S, V = ec.svd(ec.tensor(A))  # torch.svd: V, with A = U S V^H
    close((U * S.unsqueeze(-2).to(edt)) @ V.mH, A, tol)


def test_pinv_lstsq_rank_norms_cond(dt):
    edt, ndt, tol = dt
    A, B = cmat(2, 5, 3, dtype=ndt), cmat(2, 5, 2, dtype=ndt)
    a, b = ec.tensor(A), ec.tensor(B)
    close(LA.pinv(a), np.linalg.pinv(A), tol)
    H = hpd(cmat(4, 4, dtype=ndt))
    close(LA.pinv(ec.tensor(H), hermitian=True), np.linalg.pinv(H), tol)
    ref = np.stack([np.linalg.lstsq(A[i], B[i], rcond=None)[0] for i in range(2)])
    for driver in ("gels", "gelsy", "gelsd", "gelss"):
        r = LA.lstsq(a, b, driver=driver)
        close(r.solution, ref, tol)
        if driver in ("gelsd", "gelss"):
            assert r.singular_values.dtype is edt.to_real()
            close(r.singular_values, np.linalg.svd(A, compute_uv=False), tol)
            resid = np.abs(A @ ref - B) ** 2
            assert r.residuals.dtype is edt.to_real()
            close(r.residuals, resid.sum(-2), tol)
    low_rank = ec.tensor(A[0] @ np.diag([1.0, 1.0, 0.0]).astype(ndt))
    assert int(LA.matrix_rank(low_rank)) == 2
    assert int(LA.matrix_rank(ec.tensor(H), hermitian=True)) == 4
    for ord in ("fro", "nuc", 2, -2, 1, -1, np.inf, -np.inf):
        r = LA.matrix_norm(a, ord)
        assert r.dtype is edt.to_real()
        close(r, np.linalg.norm(A, ord, axis=(-2, -1)), tol)
    S = cmat(3, 3, dtype=ndt, shift=2.0)
    close(LA.cond(ec.tensor(S)), np.linalg.cond(S), tol * 10)
    close(LA.cond(ec.tensor(S), "fro"), np.linalg.cond(S, "fro"), tol * 10)


def test_matrix_exp_and_power(dt):
    edt, ndt, tol = dt
    A = (0.5 * cmat(3, 3, dtype=ndt)).astype(ndt)
    # exp(A) by the eigendecomposition (A is diagonalizable almost surely)
    w, V = np.linalg.eig(A.astype(np.complex128))
    ref = V @ np.diag(np.exp(w)) @ np.linalg.inv(V)
    close(LA.matrix_exp(ec.tensor(A)), ref, tol * 10)
    close(
        LA.matrix_power(ec.tensor(A), -2),
        np.linalg.matrix_power(A.astype(np.complex128), -2),
        tol * 10,
    )


def test_eig_complex(dt):
    edt, ndt, tol = dt
    A = cmat(3, 4, 4, dtype=ndt)
    w, V = LA.eig(ec.tensor(A))
    assert w.dtype is edt and V.dtype is edt
    close(ec.tensor(A) @ V, (V * w.unsqueeze(-2)).numpy(), tol * 10)
    close(np.sort_complex(w.numpy()), np.sort_complex(np.linalg.eigvals(A)), tol * 10)
    # unit-norm columns whose largest component is real (LAPACK's normalization)
    close(V.abs().square().sum(-2), np.ones((3, 4)), tol)
    close(LA.eigvals(ec.tensor(A)), w.numpy(), 0)


@pytest.mark.parametrize("ndt,edt", [(np.float32, ec.complex64), (np.float64, ec.complex128)])
def test_eig_real_input_gives_complex_results(ndt, edt):
    tol = 2e-4 if ndt is np.float32 else 1e-10
    A = rng.standard_normal((2, 5, 5)).astype(ndt)
    w, V = LA.eig(ec.tensor(A))
    assert w.dtype is edt and V.dtype is edt
    close(ec.tensor(A).to(edt) @ V, (V * w.unsqueeze(-2)).numpy(), tol * 10)
    close(np.sort_complex(w.numpy()), np.sort_complex(np.linalg.eigvals(A)), tol * 10)
    # a rotation: the conjugate pair +-i with conjugate eigenvectors
    w, V = LA.eig(ec.tensor([[0.0, 1.0], [-1.0, 0.0]]))
    close(w, np.array([1j, -1j]), 1e-6)
    close(V[:, 1], np.conj(V[:, 0].numpy()), 0)
    # empty and 1x1 matrices
    w, V = LA.eig(ec.zeros(0, 0))
    assert w.shape == (0,) and V.shape == (0, 0) and w.dtype is ec.complex64
    assert complex(LA.eigvals(ec.tensor([[2.5]], dtype=ec.float64))[0].item()) == 2.5


def test_eig_errors():
    with pytest.raises(RuntimeError, match="square"):
        LA.eig(ec.ones(2, 3))
    with pytest.raises(RuntimeError, match="infs or NaNs"):
        LA.eig(ec.tensor([[float("nan"), 1.0], [0.0, 1.0]]))
    with pytest.raises(NotImplementedError, match="Half"):
        LA.eig(ec.eye(2, dtype=ec.float16))
    with pytest.raises(RuntimeError, match="Long"):
        LA.eigvals(ec.eye(2, dtype=ec.int64))


def test_geqrf_householder_ormqr(dt):
    edt, ndt, tol = dt
    A, C = cmat(2, 5, 3, dtype=ndt), cmat(2, 5, 2, dtype=ndt)
    a, tau = ec.geqrf(ec.tensor(A))
    Q = LA.householder_product(a, tau)
    close(Q @ a.triu()[..., :3, :], A, tol)
    close(ec.orgqr(a, tau), Q.numpy(), tol)
    # Q^H C without forming Q (ormqr's transpose is the conjugate transpose)
    Qfull = LA.qr(ec.tensor(A), mode="complete")[0]
    ref = np.conj(np.swapaxes(Qfull.numpy(), -1, -2)) @ C
    got = ec.ormqr(a, tau, ec.tensor(C), transpose=True).numpy()
    close(np.abs(got[..., :3, :]), np.abs(ref[..., :3, :]), tol)  # columns agree up to phase
    close(ec.ormqr(a, tau, ec.ormqr(a, tau, ec.tensor(C), transpose=True)), C, tol)


@pytest.mark.parametrize("hermitian", [False, True])
def test_ldl(dt, hermitian):
    edt, ndt, tol = dt
    A, B = cmat(2, 4, 4, dtype=ndt), cmat(2, 4, 3, dtype=ndt)
    At = np.swapaxes(A, -1, -2)
    M = (A + (np.conj(At) if hermitian else At)).astype(ndt)  # Hermitian or complex symmetric
    LD, piv = LA.ldl_factor(ec.tensor(M), hermitian=hermitian)
    assert LD.dtype is edt
    close(LA.ldl_solve(LD, piv, ec.tensor(B), hermitian=hermitian), np.linalg.solve(M, B), tol * 10)


def test_mixed_dtypes_raise():
    a = ec.tensor(cmat(3, 3))
    with pytest.raises(RuntimeError, match="same dtype"):
        LA.solve(a, ec.ones(3, 1, dtype=ec.float64))
