"""ember_core.linalg (the LAPACK-backed ops of linalg.py) against numpy.linalg:
values in float32 and float64, batched and broadcast, with inputs in several
layouts (left untouched), empty matrices, and PyTorch's errors."""

import math

import numpy as np
import pytest

import ember_core as ec
from ember_core import linalg as LA

rng = np.random.default_rng(7)
DTYPES = [ec.float32, ec.float64]
BATCHES = [(), (3,), (2, 2)]


def tol(dtype):
    return dict(rtol=2e-4, atol=2e-4) if dtype is ec.float32 else dict(rtol=1e-9, atol=1e-9)


def npdt(dtype):
    return np.float32 if dtype is ec.float32 else np.float64


def randn(shape, dtype, well_conditioned=False):
    a = rng.standard_normal(shape)
    if well_conditioned:  # diagonally dominant: errors stay small in float32
        n = shape[-1]
        a = a + n * np.eye(n)
    return a.astype(npdt(dtype))


def spd(shape, dtype):
    a = rng.standard_normal(shape)
    s = a @ np.swapaxes(a, -1, -2) + shape[-1] * np.eye(shape[-1])
    return s.astype(npdt(dtype))


def T(a):
    return ec.from_numpy(np.ascontiguousarray(a))


def close(x, ref, dtype, **kw):
    np.testing.assert_allclose(x.numpy(), ref, **{**tol(dtype), **kw})


# ---------------------------------------------------------------- inverse, det


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batch", BATCHES)
def test_inv_det_slogdet(dtype, batch):
    a = randn(batch + (4, 4), dtype, well_conditioned=True)
    A = T(a)
    close(LA.inv(A), np.linalg.inv(a), dtype)
    close(ec.inverse(A), np.linalg.inv(a), dtype)
    close(LA.det(A), np.linalg.det(a), dtype, rtol=1e-3 if dtype is ec.float32 else 1e-9)
    close(A.det(), np.linalg.det(a), dtype, rtol=1e-3 if dtype is ec.float32 else 1e-9)
    sign, logabs = LA.slogdet(A)
    rs, rl = np.linalg.slogdet(a)
    close(sign, rs, dtype)
    close(logabs, rl, dtype)
    assert sign.dtype == dtype and LA.inv(A).dtype == dtype
    np.testing.assert_array_equal(A.numpy(), a)  # the input is not overwritten


@pytest.mark.parametrize("dtype", DTYPES)
def test_det_signs_and_logdet(dtype):
    a = np.stack([np.diag([1.0, -2.0, 3.0]), np.diag([1.0, 2.0, 0.0]), np.eye(3)[[1, 0, 2]]])
    A = T(a.astype(npdt(dtype)))
    close(LA.det(A), np.linalg.det(a), dtype)
    sign, logabs = ec.slogdet(A)
    np.testing.assert_array_equal(sign.numpy(), [-1.0, 0.0, -1.0])
    assert logabs.numpy()[1] == -np.inf
    ld = ec.logdet(A).numpy()
    assert math.isnan(ld[0]) and ld[1] == -np.inf and math.isnan(ld[2])
    assert ec.logdet(T(np.diag([2.0, 3.0]))).item() == pytest.approx(math.log(6.0))


@pytest.mark.parametrize("layout", ["transposed", "fortran", "strided"])
def test_inputs_in_any_layout_and_untouched(layout):
    a = randn((3, 4, 4), ec.float64, well_conditioned=True)
    if layout == "transposed":
        A = T(np.swapaxes(a, -1, -2)).mT  # values a, column-major memory (LAPACK's own)
    elif layout == "fortran":
        A = T(a).mT.contiguous().mT
    else:
        A = T(np.repeat(a, 2, axis=-1))[..., ::2]
    before = A.numpy().copy()
    close(LA.inv(A), np.linalg.inv(a), ec.float64)
    close(LA.cholesky(A @ A.mT), np.linalg.cholesky(a @ np.swapaxes(a, -1, -2)), ec.float64)
    close(LA.eigvalsh(A + A.mT), np.linalg.eigvalsh(a + np.swapaxes(a, -1, -2)), ec.float64)
    close(LA.svdvals(A), np.linalg.svd(a, compute_uv=False), ec.float64)
    np.testing.assert_array_equal(A.numpy(), before)


def test_empty_matrices():
    A = ec.zeros(2, 0, 0, dtype=ec.float64)
    assert LA.det(A).tolist() == [1.0, 1.0]
    sign, logabs = LA.slogdet(A)
    assert sign.tolist() == [1.0, 1.0] and logabs.tolist() == [0.0, 0.0]
    assert LA.inv(A).shape == (2, 0, 0)
    assert LA.cholesky(A).shape == (2, 0, 0)
    w, V = LA.eigh(A)
    assert w.shape == (2, 0) and V.shape == (2, 0, 0)
    U, S, Vh = LA.svd(ec.zeros(0, 3))
    assert U.shape == (0, 0) and S.shape == (0,)
    np.testing.assert_array_equal(Vh.numpy(), np.eye(3))
    Q, R = LA.qr(ec.zeros(3, 0), mode="complete")
    np.testing.assert_array_equal(Q.numpy(), np.eye(3))
    assert R.shape == (3, 0)
    assert LA.solve(ec.zeros(0, 0), ec.zeros(0, 2)).shape == (0, 2)


# ---------------------------------------------------------------------- solve


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "a_shape,b_shape,out_shape",
    [
        ((4, 4), (4,), (4,)),
        ((4, 4), (4, 2), (4, 2)),
        ((3, 4, 4), (4,), (3, 4)),  # a vector broadcast over A's batch
        ((3, 4, 4), (3, 4), (3, 4)),  # a batch of vectors
        ((3, 4, 4), (4, 2), (3, 4, 2)),  # one B for every A
        ((4, 4), (2, 3, 4, 1), (2, 3, 4, 1)),  # one A for every B
        ((2, 1, 4, 4), (3, 4, 2), (2, 3, 4, 2)),  # batch dims broadcast both ways
    ],
)
def test_solve_broadcasting(dtype, a_shape, b_shape, out_shape):
    a = randn(a_shape, dtype, well_conditioned=True)
    b = randn(b_shape, dtype)
    X = LA.solve(T(a), T(b))
    assert X.shape == out_shape and X.dtype == dtype
    vector = len(b_shape) == 1 or (len(b_shape) == len(a_shape) - 1 and b_shape == a_shape[:-1])
    bb = b[..., None] if vector else b
    ref = np.linalg.solve(a, bb)
    close(X, ref[..., 0] if vector else ref, dtype, rtol=1e-3 if dtype is ec.float32 else 1e-9)


@pytest.mark.parametrize("dtype", DTYPES)
def test_solve_left_false_and_solve_ex(dtype):
    a = randn((2, 3, 3), dtype, well_conditioned=True)
    b = randn((2, 4, 3), dtype)
    X = LA.solve(T(a), T(b), left=False)  # X A = B
    close(X @ T(a), b, dtype, atol=1e-3 if dtype is ec.float32 else 1e-9)
    r, info = LA.solve_ex(T(a), T(b[:, 0]))
    assert info.tolist() == [0, 0]
    close(r, np.linalg.solve(a, b[:, 0, :, None])[..., 0], dtype, rtol=1e-3)


# ------------------------------------------------------------------- Cholesky


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batch", BATCHES)
def test_cholesky(dtype, batch):
    s = spd(batch + (5, 5), dtype)
    L = LA.cholesky(T(s))
    close(L, np.linalg.cholesky(s), dtype)
    U = LA.cholesky(T(s), upper=True)
    close(U, np.swapaxes(np.linalg.cholesky(s), -1, -2), dtype)
    close(ec.cholesky(T(s)), np.linalg.cholesky(s), dtype)
    L2, info = LA.cholesky_ex(T(s))
    assert (info.numpy() == 0).all() and info.dtype == ec.int32
    close(L2, np.linalg.cholesky(s), dtype)


@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_solve_and_inverse(upper):
    s = spd((2, 4, 4), ec.float64)
    b = randn((2, 4, 3), ec.float64)
    F = LA.cholesky(T(s), upper=upper)
    close(ec.cholesky_solve(T(b), F, upper), np.linalg.solve(s, b), ec.float64)
    close(T(b).cholesky_solve(F, upper), np.linalg.solve(s, b), ec.float64)
    close(ec.cholesky_inverse(F, upper), np.linalg.inv(s), ec.float64)


def test_cholesky_reads_one_triangle():
    s = spd((4, 4), ec.float64)
    junk = s + np.triu(rng.standard_normal((4, 4)), 1)  # upper triangle is garbage
    close(LA.cholesky(T(junk)), np.linalg.cholesky(s), ec.float64)


# ------------------------------------------------------------ triangular solve


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("left", [False, True])
@pytest.mark.parametrize("unit", [False, True])
def test_solve_triangular(dtype, upper, left, unit):
    a = randn((2, 4, 4), dtype, well_conditioned=True)
    tri = np.triu(a) if upper else np.tril(a)
    if unit:  # the diagonal is taken to be ones, whatever A holds there
        idx = np.arange(4)
        tri[..., idx, idx] = 1.0
    b = randn((2, 4, 3) if left else (2, 3, 4), dtype)
    X = LA.solve_triangular(T(a), T(b), upper=upper, left=left, unitriangular=unit)
    ref = (
        np.linalg.solve(tri, b)
        if left
        else np.swapaxes(np.linalg.solve(np.swapaxes(tri, -1, -2), np.swapaxes(b, -1, -2)), -1, -2)
    )
    close(X, ref, dtype, rtol=1e-3 if dtype is ec.float32 else 1e-9)


@pytest.mark.parametrize("transpose", [False, True])
def test_triangular_solve_legacy(transpose):
    a = randn((4, 4), ec.float64, well_conditioned=True)
    b = randn((4, 2), ec.float64)
    sol, coeff = ec.triangular_solve(T(b), T(a), upper=True, transpose=transpose)
    tri = np.triu(a)
    close(sol, np.linalg.solve(tri.T if transpose else tri, b), ec.float64)
    np.testing.assert_array_equal(coeff.numpy(), a)


def test_solve_triangular_singular_gives_inf_not_garbage():
    a = np.triu(np.ones((3, 3)))
    a[1, 1] = 0.0
    X = LA.solve_triangular(T(a), T(np.ones((3, 1))), upper=True)
    assert not np.isfinite(X.numpy()).all()


# ---------------------------------------------------------------------- QR


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4), (2, 5, 3)])
@pytest.mark.parametrize("mode", ["reduced", "complete", "r"])
def test_qr(dtype, shape, mode):
    a = randn(shape, dtype)
    Q, R = LA.qr(T(a), mode=mode)
    m, n = shape[-2:]
    k = min(m, n)
    rref = np.linalg.qr(a, mode="r" if mode == "r" else mode)
    rref = rref if mode == "r" else rref[1]
    # R is unique up to the signs of its rows
    close(R.abs(), np.abs(rref), dtype)
    assert np.allclose(np.tril(R.numpy(), -1), 0)
    if mode == "r":
        assert Q.shape == (0,)
        return
    assert Q.shape == shape[:-2] + (m, m if mode == "complete" else k)
    close(Q @ R, a, dtype)
    qtq = Q.mT @ Q
    close(qtq, np.broadcast_to(np.eye(Q.shape[-1]), qtq.shape), dtype)


def test_qr_legacy_some():
    a = randn((5, 3), ec.float64)
    Q, R = ec.qr(T(a))
    assert Q.shape == (5, 3) and R.shape == (3, 3)
    Q, R = T(a).qr(some=False)
    assert Q.shape == (5, 5) and R.shape == (5, 3)
    close(Q @ R, a, ec.float64)


# --------------------------------------------------------------------- eigh


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize("uplo", ["L", "U"])
def test_eigh(dtype, batch, uplo):
    s = spd(batch + (5, 5), dtype)
    junk = s + (np.triu if uplo == "L" else np.tril)(
        rng.standard_normal(s.shape), 1 if uplo == "L" else -1
    ).astype(s.dtype)
    w, V = LA.eigh(T(junk), UPLO=uplo)
    close(w, np.linalg.eigvalsh(s), dtype, rtol=1e-4 if dtype is ec.float32 else 1e-9)
    assert np.all(np.diff(w.numpy(), axis=-1) >= 0)  # ascending
    recon = (V * w.unsqueeze(-2)) @ V.mT
    close(recon, s, dtype, atol=1e-3 if dtype is ec.float32 else 1e-9)
    close(LA.eigvalsh(T(junk), uplo), np.linalg.eigvalsh(s), dtype, rtol=1e-4)


# ---------------------------------------------------------------------- SVD


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4), (2, 3, 6, 4)])
@pytest.mark.parametrize("full", [False, True])
def test_svd(dtype, shape, full):
    a = randn(shape, dtype)
    U, S, Vh = LA.svd(T(a), full_matrices=full)
    m, n = shape[-2:]
    k = min(m, n)
    ru, rs, rvh = np.linalg.svd(a, full_matrices=full)
    assert U.shape == ru.shape and S.shape == rs.shape and Vh.shape == rvh.shape
    close(S, rs, dtype)
    close((U[..., :k] * S.unsqueeze(-2)) @ Vh[..., :k, :], a, dtype)
    close(U.mT @ U, np.broadcast_to(np.eye(U.shape[-1]), U.shape[:-2] + (U.shape[-1],) * 2), dtype)
    close(LA.svdvals(T(a)), rs, dtype)
    # torch.svd: V rather than Vh, reduced by default
    U2, S2, V2 = ec.svd(T(a))
    assert U2.shape[-1] == k and V2.shape[-2:] == (n, k)
    close((U2 * S2.unsqueeze(-2)) @ V2.mT, a, dtype)


def test_svd_compute_uv_false():
    a = randn((4, 3), ec.float64)
    U, S, V = ec.svd(T(a), compute_uv=False)
    assert U.shape == (4, 4) and V.shape == (3, 3)
    assert not U.numpy().any() and not V.numpy().any()
    close(S, np.linalg.svd(a, compute_uv=False), ec.float64)


# ------------------------------------------------- pinv, lstsq, rank, cond


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 4, 4)])
def test_pinv(dtype, shape):
    a = randn(shape, dtype)
    close(LA.pinv(T(a)), np.linalg.pinv(a), dtype, atol=1e-3 if dtype is ec.float32 else 1e-9)
    close(ec.pinverse(T(a)), np.linalg.pinv(a), dtype, atol=1e-3 if dtype is ec.float32 else 1e-9)


def test_pinv_rank_deficient_and_hermitian():
    a = np.outer([1.0, 2.0, 3.0], [1.0, -1.0, 2.0])  # rank 1
    close(LA.pinv(T(a)), np.linalg.pinv(a), ec.float64)
    s = spd((4, 4), ec.float64)
    close(LA.pinv(T(s), hermitian=True), np.linalg.inv(s), ec.float64)
    close(LA.pinv(T(a), atol=1e6), np.zeros((3, 3)), ec.float64)  # everything cut


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("driver", [None, "gels", "gelsy", "gelsd", "gelss"])
@pytest.mark.parametrize("shape", [(6, 3), (3, 6)])
def test_lstsq(dtype, driver, shape):
    m, n = shape
    a = randn((2,) + shape, dtype)
    b = randn((2, m, 2), dtype)
    r = LA.lstsq(T(a), T(b), driver=driver)
    ref = np.stack([np.linalg.lstsq(a[i], b[i], rcond=None)[0] for i in range(2)])
    close(
        r.solution,
        ref,
        dtype,
        rtol=2e-3 if dtype is ec.float32 else 1e-8,
        atol=2e-3 if dtype is ec.float32 else 1e-8,
    )
    drv = driver or "gelsy"
    if m > n and drv != "gelsy":
        res = ((a @ ref - b) ** 2).sum(-2)
        close(r.residuals, res, dtype, rtol=2e-3 if dtype is ec.float32 else 1e-8)
    else:
        assert r.residuals.shape == (0,)
    if drv == "gels":
        assert r.rank.shape == (0,)
    else:
        assert r.rank.tolist() == [min(m, n)] * 2 and r.rank.dtype == ec.int64
    if drv in ("gelsd", "gelss"):
        close(r.singular_values, np.linalg.svd(a, compute_uv=False), dtype)
    else:
        assert r.singular_values.shape == (0,)


def test_lstsq_vector_rhs_and_rank_deficient():
    a = np.outer(np.arange(1.0, 6.0), [1.0, 2.0])  # rank 1
    b = np.arange(5.0)
    r = LA.lstsq(T(a), T(b), driver="gelsd")
    close(r.solution, np.linalg.lstsq(a, b, rcond=None)[0], ec.float64)
    assert r.rank.item() == 1 and r.residuals.shape == (0,)  # not full rank: no residuals


def test_matrix_rank_and_cond():
    a = np.outer([1.0, 2.0, 3.0], [1.0, -1.0, 2.0])
    assert LA.matrix_rank(T(a)).item() == 1
    assert LA.matrix_rank(T(np.eye(4))).item() == 4
    assert LA.matrix_rank(T(a + a.T), hermitian=True).item() == np.linalg.matrix_rank(a + a.T)
    assert LA.matrix_rank(T(np.diag([1.0, 1e-3])), atol=1e-2).item() == 1
    x = randn((3, 4, 4), ec.float64)
    close(LA.cond(T(x)), np.linalg.cond(x), ec.float64, rtol=1e-7)
    for p in ("fro", "nuc", 1, -1, math.inf, -math.inf, -2):
        close(LA.cond(T(x), p), np.linalg.cond(x, p), ec.float64, rtol=1e-7)


# ---------------------------------------------------------------------- norms


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("ord", ["fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf])
@pytest.mark.parametrize("keepdim", [False, True])
def test_matrix_norm(dtype, ord, keepdim):
    a = randn((3, 4, 5), dtype)
    r = LA.matrix_norm(T(a), ord, keepdim=keepdim)
    close(r, np.linalg.norm(a, ord, axis=(-2, -1), keepdims=keepdim), dtype)
    r = LA.matrix_norm(T(a), ord, dim=(0, 2))
    close(r, np.linalg.norm(a, ord, axis=(0, 2)), dtype)
    r = LA.norm(T(a), ord, dim=(2, 1))  # dims in either order
    close(r, np.linalg.norm(a, ord, axis=(2, 1)), dtype)


@pytest.mark.parametrize("ord", [None, 0, 1, 2, 3.5, math.inf, -math.inf])
def test_vector_norms(ord):
    a = randn((3, 4), ec.float64)
    o = 2 if ord is None else ord
    close(LA.vector_norm(T(a), o), np.linalg.norm(a.ravel(), o), ec.float64)
    close(
        LA.vector_norm(T(a), o, dim=1, keepdim=True),
        np.linalg.norm(a, o, axis=1, keepdims=True),
        ec.float64,
    )
    close(LA.norm(T(a), ord, dim=0), np.linalg.norm(a, o, axis=0), ec.float64)
    close(LA.norm(T(a[0]), ord), np.linalg.norm(a[0], ord), ec.float64)


def test_linalg_norm_rules():
    a = randn((2, 3, 4), ec.float64)
    close(LA.norm(T(a)), np.linalg.norm(a.ravel()), ec.float64)  # flattened 2-norm
    close(LA.norm(T(a[0]), "nuc"), np.linalg.norm(a[0], "nuc"), ec.float64)
    with pytest.raises(RuntimeError, match="must be 1D or 2D"):
        LA.norm(T(a), 2)
    with pytest.raises(RuntimeError, match="Order 3 not supported"):
        LA.matrix_norm(T(a), 3)
    with pytest.raises(RuntimeError, match="dim must be a 2-tuple"):
        LA.matrix_norm(T(a), "fro", dim=(0, 1, 2))


def test_torch_norm():
    a = randn((2, 3, 4), ec.float64)
    A = T(a)
    close(ec.norm(A), np.linalg.norm(a.ravel()), ec.float64)
    close(A.norm(), np.linalg.norm(a.ravel()), ec.float64)
    close(ec.norm(A, "fro", dim=(1, 2)), np.linalg.norm(a, "fro", axis=(1, 2)), ec.float64)
    close(ec.norm(A, 2, dim=(1, 2)), np.sqrt((a**2).sum((1, 2))), ec.float64)  # vector norm
    close(ec.norm(A, 1, dim=2, keepdim=True), np.abs(a).sum(2, keepdims=True), ec.float64)
    close(ec.norm(A[0], "nuc"), np.linalg.norm(a[0], "nuc"), ec.float64)
    close(ec.norm(A, "nuc", dim=(0, 2)), np.linalg.norm(a, "nuc", axis=(0, 2)), ec.float64)
    close(ec.norm(A, math.inf), np.abs(a).max(), ec.float64)
    close(ec.norm(A, p=3, dim=1), (np.abs(a) ** 3).sum(1) ** (1 / 3), ec.float64)
    with pytest.raises(RuntimeError, match="dim must be a 2-tuple"):
        ec.norm(A, "nuc")
    with pytest.raises(RuntimeError):
        ec.norm(A[0], "bad")


# ------------------------------------------------------------ composites


def test_cross_vecdot_diagonal_matmul():
    a, b = randn((4, 3), ec.float64), randn((1, 3), ec.float64)
    close(LA.cross(T(a), T(b)), np.cross(a, b), ec.float64)
    close(LA.cross(T(a.T), T(b.T), dim=0), np.cross(a.T, b.T, axis=0), ec.float64)
    with pytest.raises(RuntimeError, match="must have length 3"):
        LA.cross(T(a[:, :2]), T(b[:, :2]))
    close(LA.vecdot(T(a), T(b)), (a * b).sum(-1), ec.float64)
    m = randn((2, 3, 3), ec.float64)
    close(LA.diagonal(T(m)), np.diagonal(m, axis1=-2, axis2=-1), ec.float64)
    close(LA.matmul(T(m), T(m)), m @ m, ec.float64)


@pytest.mark.parametrize("n", [0, 1, 2, 3, 5, 8, -1, -3])
def test_matrix_power(n):
    a = randn((2, 3, 3), ec.float64, well_conditioned=True)
    close(LA.matrix_power(T(a), n), np.linalg.matrix_power(a, n), ec.float64)
    close(T(a).matrix_power(n), np.linalg.matrix_power(a, n), ec.float64)


def test_matrix_power_integers():
    a = np.array([[1, 1], [1, 0]], dtype=np.int64)
    r = LA.matrix_power(T(a), 10)
    assert r.dtype == ec.int64 and r.tolist() == np.linalg.matrix_power(a, 10).tolist()


def test_multi_dot():
    shapes = [(10, 3), (3, 40), (40, 2), (2, 7)]
    ms = [randn(s, ec.float64) for s in shapes]
    close(LA.multi_dot([T(m) for m in ms]), np.linalg.multi_dot(ms), ec.float64)
    v, w = randn((10,), ec.float64), randn((7,), ec.float64)
    ref = np.linalg.multi_dot([v] + ms + [w])
    close(LA.multi_dot([T(v)] + [T(m) for m in ms] + [T(w)]), ref, ec.float64)
    with pytest.raises(RuntimeError, match="cannot be multiplied"):
        LA.multi_dot([T(ms[0]), T(ms[2])])


def _expm_reference(a):
    """exp(a) by a Taylor series on a scaled matrix, then squaring (float64)."""
    s = max(0, int(np.ceil(np.log2(max(np.abs(a).sum(-2).max(), 1e-300)))) + 4)
    x = a / 2.0**s
    r = np.eye(a.shape[-1]) + 0 * x
    term = r.copy()
    for k in range(1, 30):
        term = term @ x / k
        r = r + term
    for _ in range(s):
        r = r @ r
    return r


@pytest.mark.parametrize("scale", [0.01, 1.0, 20.0])
def test_matrix_exp(scale):
    a = randn((2, 4, 4), ec.float64) * scale
    ref = _expm_reference(a)
    close(LA.matrix_exp(T(a)), ref, ec.float64, rtol=1e-8, atol=1e-10 * np.abs(ref).max())
    close(
        ec.matrix_exp(T(a.astype(np.float32))),
        ref,
        ec.float32,
        rtol=1e-3,
        atol=1e-4 * np.abs(ref).max(),
    )
    # the exponential of a diagonal matrix is the exponential of its diagonal
    d = np.diag([0.5, -1.0, 2.0])
    close(LA.matrix_exp(T(d)), np.diag(np.exp([0.5, -1.0, 2.0])), ec.float64)


def test_lu_factor():
    a = randn((2, 4, 4), ec.float64)
    LU, piv = LA.lu_factor(T(a))
    lu, p = LU.numpy(), piv.numpy()
    for i in range(2):
        L = np.tril(lu[i], -1) + np.eye(4)
        U = np.triu(lu[i])
        perm = np.arange(4)
        for j, pj in enumerate(p[i] - 1):  # LAPACK's row swaps, in order
            perm[[j, pj]] = perm[[pj, j]]
        np.testing.assert_allclose((L @ U), a[i][perm], atol=1e-12)


def test_vander():
    x = np.array([1.0, 2.0, 3.0])
    close(LA.vander(T(x)), np.vander(x, increasing=True), ec.float64)
    close(LA.vander(T(x), N=2), np.vander(x, 2, increasing=True), ec.float64)


def test_tensor_methods_and_umbrella_names():
    # the legacy top-level ops linalg.py declares are functions and Tensor methods
    legacy = [op for op in ec.OPS.values() if op.module == "ember_core.linalg" and op.public]
    assert {"det", "inverse", "svd", "qr", "triangular_solve"} <= {op.name for op in legacy}
    for op in legacy:
        assert callable(getattr(ec, op.name)), op.name
        assert not op.method or hasattr(ec.Tensor, op.name), op.name
    assert hasattr(ec.Tensor, "norm")
    for name in LA.__all__:
        assert hasattr(LA, name), name
    assert issubclass(LA.LinAlgError, RuntimeError)


def test_out_arguments():
    a = randn((3, 3), ec.float64, well_conditioned=True)
    out = ec.empty(3, 3, dtype=ec.float64)
    r = LA.inv(T(a), out=out)
    assert r is out
    close(out, np.linalg.inv(a), ec.float64)


# --------------------------------------------------------------------- errors


def test_singular_matrices_raise_linalg_error():
    z = ec.zeros(3, 3)
    with pytest.raises(LA.LinAlgError, match=r"^linalg.inv: The diagonal element 1 is zero"):
        LA.inv(z)
    a = np.stack([np.eye(3), np.diag([1.0, 0.0, 1.0])])
    with pytest.raises(LA.LinAlgError, match=r"\(Batch element 1\): The diagonal element 2"):
        LA.inv(T(a))
    with pytest.raises(RuntimeError, match="input matrix is singular"):
        LA.solve(z, ec.ones(3))
    inv, info = LA.inv_ex(T(a))
    assert info.tolist() == [0, 2]
    with pytest.raises(LA.LinAlgError, match="U\\[2,2\\] is zero"):
        LA.lu_factor(T(a))


def test_not_positive_definite():
    a = np.stack([np.eye(3), np.diag([1.0, -1.0, 1.0])])
    with pytest.raises(
        LA.LinAlgError,
        match=r"linalg.cholesky: \(Batch element 1\): The factorization could not be completed "
        r"because the input is not positive-definite \(the leading minor of order 2",
    ):
        LA.cholesky(T(a))
    L, info = LA.cholesky_ex(T(a))
    assert info.tolist() == [0, 2]


@pytest.mark.parametrize(
    "fn,name",
    [
        (LA.inv, "linalg.inv"),
        (LA.det, "linalg.det"),
        (LA.slogdet, "linalg.slogdet"),
        (LA.cholesky, "linalg.cholesky"),
        (LA.eigh, "linalg.eigh"),
        (LA.eigvalsh, "linalg.eigh"),
        (LA.matrix_exp, "linalg.matrix_exp"),
    ],
)
def test_shape_and_dtype_errors(fn, name):
    with pytest.raises(
        RuntimeError,
        match=rf"^{name}: A must be batches of square matrices, but "
        "they are 2 by 3 matrices",
    ):
        fn(ec.zeros(2, 3))
    with pytest.raises(RuntimeError, match="must have at least 2 dimensions"):
        fn(ec.zeros(3))
    with pytest.raises(
        RuntimeError, match="Expected a floating point or complex tensor as input. Got Long"
    ):
        fn(ec.zeros(3, 3, dtype=ec.int64)) if name != "linalg.eigh" else LA.inv(
            ec.zeros(3, 3, dtype=ec.int64)
        )


def test_low_precision_dtypes():
    h = ec.eye(3, dtype=ec.float16)
    with pytest.raises(RuntimeError, match="Low precision dtypes not supported. Got Half"):
        LA.inv(h)
    with pytest.raises(NotImplementedError, match="\"cholesky_cpu\" not implemented for 'Half'"):
        LA.cholesky(h)
    with pytest.raises(NotImplementedError, match="linalg_svd_cpu"):
        LA.svd(ec.eye(3, dtype=ec.bfloat16))
    with pytest.raises(NotImplementedError, match="linalg_eigh_cpu"):
        LA.eigh(h)
    with pytest.raises(NotImplementedError, match="geqrf_cpu"):
        LA.qr(h)
    with pytest.raises(NotImplementedError, match="lu_cpu"):
        LA.det(h)
    with pytest.raises(RuntimeError, match="types other than float and double"):
        LA.lstsq(h, h)
    # matrix_exp computes in float32 and keeps the dtype, as PyTorch's CPU does
    r = LA.matrix_exp(h)
    assert r.dtype == ec.float16
    np.testing.assert_allclose(r.numpy().astype(np.float64), np.e * np.eye(3), rtol=1e-3)


def test_argument_errors():
    a = ec.eye(3)
    with pytest.raises(RuntimeError, match="Incompatible shapes of A and B for the equation AX"):
        LA.solve(a, ec.ones(2))
    with pytest.raises(RuntimeError, match="Expected A and B to have the same dtype"):
        LA.solve(a, ec.ones(3, dtype=ec.float64))
    with pytest.raises(RuntimeError, match="qr received unrecognized mode 'bad'"):
        LA.qr(a, mode="bad")
    with pytest.raises(RuntimeError, match="Expected UPLO argument to be 'L' or 'U', but got X"):
        LA.eigh(a, UPLO="X")
    with pytest.raises(RuntimeError, match="parameter `driver` should be one of"):
        LA.lstsq(a, a, driver="nope")
    with pytest.raises(RuntimeError, match="input.dim\\(\\) must be greater or equal"):
        LA.lstsq(ec.ones(3, 3), ec.ones(2, 3, 3))
    with pytest.raises(TypeError, match="must be Tensor"):
        LA.inv([[1.0]])
    with pytest.raises(RuntimeError, match="expected a tensor with 2 or more dimensions"):
        LA.pinv(ec.ones(3))
