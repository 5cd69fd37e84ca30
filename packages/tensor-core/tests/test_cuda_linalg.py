"""The matmul family and linalg on CUDA against the CPU.

matmul/mm/bmm/addmm/baddbmm/addbmm/addmv/addr/mv/dot/vdot/inner/outer/kron/
einsum/tensordot/trace/matrix_power over the floating dtypes PyTorch supports
on CUDA, with transposed and batched-broadcast operands, sizes from empty to
several tiles; TF32 (``ember.backends.cuda.matmul.allow_tf32``; ember_core's
switch) only loosens float32 within TF32's precision; and the linalg functions,
compared through quantities that are unique (Q R = A and |R|, singular values,
eigenvalues, reconstructions).
"""

import zlib

import numpy as np
import pytest
from cuda_helpers import (
    CUDA,
    FLOAT_DTYPES,
    SELFTEST,
    Spec,
    compare,
    maker,
    run_table,
    values,
)

import ember_core as ec
from ember_core import linalg as LA

SELFTEST_OK = True
pytestmark = pytest.mark.cuda

# float32 GEMMs sum in a different order (and split-K) on the GPU
MATMUL_TOL = {
    ec.float16: (1e-2, 1e-2),
    ec.bfloat16: (5e-2, 5e-2),
    ec.float32: (1e-4, 1e-4),
    ec.float64: (1e-10, 1e-10),
}
LINALG_TOL = {ec.float32: (1e-3, 1e-3), ec.float64: (1e-8, 1e-8)}


def _rng(*parts):
    return np.random.default_rng(zlib.crc32("/".join(map(str, parts)).encode()))


def matmul_cases(dtype, rng):
    def S(*shape, layout="contiguous"):
        return Spec(values(shape, dtype, rng, -1, 1), dtype, layout)

    cases = []
    for m, k, n in [(1, 1, 1), (3, 4, 5), (64, 64, 64), (130, 257, 65), (0, 4, 5), (3, 0, 5)]:
        cases += [
            (f"mm {m}x{k}x{n}", lambda a, b: ec.mm(a, b), maker(S(m, k), S(k, n)), "mm"),
            (
                f"mm transposed {m}x{k}x{n}",
                lambda a, b: ec.mm(a, b),
                maker(S(m, k, layout="transposed"), S(k, n, layout="transposed")),
                "mm",
            ),
        ]
    cases += [
        ("matmul 1d.1d", lambda a, b: ec.matmul(a, b), maker(S(33), S(33)), "matmul"),
        ("matmul 2d.1d", lambda a, b: ec.matmul(a, b), maker(S(5, 33), S(33)), "matmul"),
        ("matmul 1d.3d", lambda a, b: ec.matmul(a, b), maker(S(33), S(4, 33, 6)), "matmul"),
        (
            "matmul batch broadcast",
            lambda a, b: ec.matmul(a, b),
            maker(S(2, 1, 5, 7), S(3, 7, 4)),
            "matmul",
        ),
        (
            "matmul out=",
            lambda a, b: ec.matmul(a, b, out=ec.empty(0, dtype=dtype, device=a.device)),
            maker(S(5, 7), S(7, 3)),
            "matmul",
        ),
        ("bmm", lambda a, b: ec.bmm(a, b), maker(S(7, 33, 17), S(7, 17, 9)), "bmm"),
        (
            "bmm transposed",
            lambda a, b: ec.bmm(a, b.transpose(1, 2)),
            maker(S(7, 33, 17), S(7, 9, 17)),
            "bmm",
        ),
        (
            "bmm stepped batch",
            lambda a, b: ec.bmm(a[::2], b[::2]),
            maker(S(8, 6, 5), S(8, 5, 4)),
            "bmm",
        ),
        (
            "addmm",
            lambda c, a, b: ec.addmm(c, a, b, beta=0.5, alpha=2),
            maker(S(5, 6), S(5, 7), S(7, 6)),
            "addmm",
        ),
        (
            "addmm broadcast bias",
            lambda c, a, b: ec.addmm(c, a, b),
            maker(S(6), S(5, 7), S(7, 6)),
            "addmm",
        ),
        (
            "addmm_",
            lambda c, a, b: c.clone().addmm_(a, b, beta=0),
            maker(S(5, 6), S(5, 7), S(7, 6)),
            "addmm_",
        ),
        (
            "baddbmm",
            lambda c, a, b: ec.baddbmm(c, a, b, beta=2, alpha=0.5),
            maker(S(3, 5, 6), S(3, 5, 7), S(3, 7, 6)),
            "baddbmm",
        ),
        (
            "addbmm",
            lambda c, a, b: ec.addbmm(c, a, b),
            maker(S(5, 6), S(3, 5, 7), S(3, 7, 6)),
            "addbmm",
        ),
        ("addmv", lambda c, a, v: ec.addmv(c, a, v, alpha=2), maker(S(5), S(5, 7), S(7)), "addmv"),
        ("addr", lambda c, u, v: ec.addr(c, u, v), maker(S(5, 7), S(5), S(7)), "addr"),
        ("mv", lambda a, v: ec.mv(a, v), maker(S(9, 7, layout="transposed"), S(7)), "mv"),
        ("dot", lambda a, b: ec.dot(a, b), maker(S(1000), S(1000)), "dot"),
        ("vdot", lambda a, b: ec.vdot(a, b), maker(S(100), S(100)), "vdot"),
        ("inner", lambda a, b: ec.inner(a, b), maker(S(3, 8), S(4, 8)), "inner"),
        ("outer", lambda a, b: ec.outer(a, b), maker(S(5), S(7)), "outer"),
        ("kron", lambda a, b: ec.kron(a, b), maker(S(2, 3), S(4, 2)), "kron"),
        (
            "einsum bij,bjk->bik",
            lambda a, b: ec.einsum("bij,bjk->bik", a, b),
            maker(S(3, 4, 5), S(3, 5, 6)),
            "einsum",
        ),
        ("einsum ii->i", lambda a: ec.einsum("ii->i", a), maker(S(6, 6)), "einsum"),
        (
            "einsum ij,kj->ik transposed",
            lambda a, b: ec.einsum("ij,kj->ik", a, b),
            maker(S(4, 5, layout="transposed"), S(3, 5)),
            "einsum",
        ),
        (
            "tensordot",
            lambda a, b: ec.tensordot(a, b, dims=([1, 2], [0, 1])),
            maker(S(3, 4, 5), S(4, 5, 2)),
            "tensordot",
        ),
        ("trace", lambda a: ec.trace(a), maker(S(7, 7)), "trace"),
        ("matrix_power 3", lambda a: ec.matrix_power(a, 3), maker(S(2, 5, 5)), "matrix_power"),
        (
            "chain_matmul via @",
            lambda a, b, c: a @ b @ c,
            maker(S(4, 5), S(5, 6), S(6, 3)),
            "matmul",
        ),
        ("cdist", lambda a, b: ec.cdist(a, b), maker(S(2, 7, 3), S(2, 5, 3)), "cdist"),
        ("cross", lambda a, b: ec.cross(a, b, dim=1), maker(S(4, 3), S(4, 3)), "cross"),
    ]
    return cases


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
def test_matmul_family(dtype):
    cases = matmul_cases(dtype, _rng("mm", dtype))
    run_table(f"matmul family on CUDA ({dtype})", cases, dtype, tol=MATMUL_TOL)


def _tf32_switch():
    """ember's allow_tf32 switch (the umbrella's ember.backends, as PyTorch's)."""
    try:
        import ember
    except ImportError:
        return None
    return ember.backends.cuda.matmul


@pytest.mark.skipif(SELFTEST, reason="needs a real GPU")
def test_tf32_switch_changes_float32_matmul_only_within_tf32_precision():
    sw = _tf32_switch()
    if sw is None:
        pytest.skip("the ember umbrella package is not installed")
    rng = _rng("tf32")
    a = values((512, 512), ec.float32, rng, -1, 1)
    b = values((512, 512), ec.float32, rng, -1, 1)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    ga, gb = ec.tensor(a, device="cuda"), ec.tensor(b, device="cuda")
    old = sw.allow_tf32
    try:
        sw.allow_tf32 = False
        full = (ga @ gb).cpu().numpy()
        sw.allow_tf32 = True
        tf32 = (ga @ gb).cpu().numpy()
    finally:
        sw.allow_tf32 = old
    err_full = np.abs(full - ref).max()
    err_tf32 = np.abs(tf32 - ref).max()
    assert err_full < 1e-4, f"float32 matmul with TF32 off: max error {err_full}"
    # TF32 keeps 10 mantissa bits: about 1e-3 relative per product
    assert err_tf32 < 5e-2, f"TF32 matmul: max error {err_tf32}"


@pytest.mark.parametrize("size", [256, 1024])
def test_large_matmul_against_float64(size):
    """Several tiles: ember CUDA float32 (TF32 off) against NumPy float64."""
    rng = _rng("mm-large", size)
    a = values((size, size), ec.float32, rng, -1, 1)
    b = values((size, size), ec.float32, rng, -1, 1)
    got = (ec.tensor(a, device=CUDA) @ ec.tensor(b, device=CUDA)).cpu().numpy()
    ref = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4 * np.sqrt(size))


def _spd(rng, n, batch=()):
    b = rng.uniform(-1, 1, (*batch, n, n))
    return b @ np.swapaxes(b, -1, -2) + n * np.eye(n)


def _qr_unique(r):
    q, rr = r
    return (q @ rr, rr.abs())


def _svd_unique(r):
    u, s, vh = r
    return (s, (u[..., :, : s.shape[-1]] * s[..., None, :]) @ vh[..., : s.shape[-1], :])


def _eigh_unique(r):
    w, v = r
    return (w, (v * w[..., None, :]) @ v.transpose(-2, -1))


def linalg_cases(dtype, rng):
    def S(arr, layout="contiguous"):
        return Spec(np.asarray(arr), dtype, layout)

    n = 6
    A = rng.uniform(-1, 1, (n, n)) + n * np.eye(n)
    Ab = rng.uniform(-1, 1, (3, n, n)) + n * np.eye(n)
    B = rng.uniform(-1, 1, (n, 2))
    spd = _spd(rng, n)
    tall = rng.uniform(-1, 1, (9, 4))
    return [
        ("inv", lambda a: LA.inv(a), maker(S(A)), "_linalg_inv_ex"),
        (
            "inv batched transposed",
            lambda a: LA.inv(a),
            maker(S(Ab, "transposed")),
            "_linalg_inv_ex",
        ),
        ("inverse", lambda a: ec.inverse(a), maker(S(A)), "inverse"),
        ("det", lambda a: LA.det(a), maker(S(Ab)), "_linalg_det"),
        ("slogdet", lambda a: LA.slogdet(a), maker(S(Ab)), "_linalg_slogdet"),
        ("logdet", lambda a: ec.logdet(a), maker(S(spd)), "logdet"),
        ("solve", lambda a, b: LA.solve(a, b), maker(S(A), S(B)), "_linalg_solve"),
        ("solve batched", lambda a, b: LA.solve(a, b), maker(S(Ab), S(B)), "_linalg_solve"),
        ("cholesky", lambda a: LA.cholesky(a), maker(S(spd)), "_linalg_cholesky_ex"),
        (
            "cholesky upper",
            lambda a: LA.cholesky(a, upper=True),
            maker(S(spd)),
            "_linalg_cholesky_ex",
        ),
        (
            "cholesky_solve",
            lambda b, a: ec.cholesky_solve(b, LA.cholesky(a)),
            maker(S(B), S(spd)),
            "cholesky_solve",
        ),
        (
            "cholesky_inverse",
            lambda a: ec.cholesky_inverse(LA.cholesky(a)),
            maker(S(spd)),
            "cholesky_inverse",
        ),
        (
            "solve_triangular",
            lambda a, b: LA.solve_triangular(ec.triu(a), b, upper=True),
            maker(S(A), S(B)),
            "_linalg_solve_triangular",
        ),
        (
            "triangular_solve",
            lambda b, a: ec.triangular_solve(b, ec.tril(a), upper=False),
            maker(S(B), S(A)),
            "triangular_solve",
        ),
        ("lu_factor", lambda a: LA.lu_factor(a), maker(S(Ab)), "_linalg_lu_factor_ex"),
        ("qr", lambda a: LA.qr(a), maker(S(tall)), "_linalg_qr", _qr_unique),
        (
            "svd",
            lambda a: LA.svd(a, full_matrices=False),
            maker(S(tall)),
            "_linalg_svd",
            _svd_unique,
        ),
        ("svdvals", lambda a: LA.svdvals(a), maker(S(Ab)), "_linalg_svd"),
        ("eigh", lambda a: LA.eigh(a), maker(S(spd)), "_linalg_eigh", _eigh_unique),
        ("eigvalsh", lambda a: LA.eigvalsh(a), maker(S(spd)), "_linalg_eigh"),
        ("pinv", lambda a: LA.pinv(a), maker(S(tall)), "_linalg_pinv"),
        (
            "lstsq",
            lambda a, b: LA.lstsq(a, b).solution,
            maker(S(tall), S(tall[:, :2])),
            "_linalg_lstsq",
        ),
        ("matrix_rank", lambda a: LA.matrix_rank(a), maker(S(tall)), "_linalg_svd"),
        ("matrix_norm fro", lambda a: LA.matrix_norm(a), maker(S(Ab)), "norm"),
        ("matrix_norm 2", lambda a: LA.matrix_norm(a, 2), maker(S(A)), "_linalg_svd"),
        ("cond", lambda a: LA.cond(a), maker(S(A)), "_linalg_svd"),
        ("matrix_exp", lambda a: ec.matrix_exp(a * 0.1), maker(S(Ab)), "matrix_exp"),
        (
            "torch-level linalg",
            lambda a, s: (
                ec.det(a),
                ec.slogdet(a),
                ec.cholesky(s),
                _qr_unique(ec.qr(a)),
                ec.svd(a)[1],
                ec.pinverse(a),
            ),
            maker(S(A), S(spd)),
            "_linalg_svd",
        ),
        ("geqrf", lambda a: ec.geqrf(a)[0].abs(), maker(S(tall)), "geqrf"),
    ]


@pytest.mark.parametrize("dtype", [ec.float32, ec.float64], ids=str)
def test_linalg(dtype):
    cases = linalg_cases(dtype, _rng("linalg", dtype))
    run_table(f"linalg on CUDA ({dtype})", cases, dtype, tol=LINALG_TOL)


@pytest.mark.skipif(SELFTEST, reason="needs a real GPU")
def test_matmul_of_tensors_on_different_devices_raises():
    a = ec.ones(3, 3, device="cuda")
    b = ec.ones(3, 3)
    with pytest.raises(RuntimeError, match="device"):
        a @ b
    with pytest.raises(RuntimeError, match="device"):
        ec.mm(b, a)
    compare(a @ b.cuda(), ec.full((3, 3), 3.0), where="after moving b")
