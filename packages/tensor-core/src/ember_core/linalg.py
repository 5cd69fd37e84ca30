"""ember_core.linalg: PyTorch's ``torch.linalg`` on LAPACK (csrc/cpu/linalg/linalg.c).

Factorizations and solvers run LAPACK from the scipy-openblas32 wheel over
batches of matrices (leading dims are batch dims, float32 and float64; other
dtypes raise PyTorch's errors).  A few primitive ops carry derivative formulas
in ember_autograd (``_linalg_inv_ex``, ``_linalg_solve``, ``_linalg_det``,
``_linalg_slogdet``, ``_linalg_cholesky_ex``, ``_linalg_solve_triangular``,
``_linalg_qr``, ``_linalg_eigh``, ``_linalg_svd``, ``_linalg_pinv``,
``_linalg_lstsq``); everything else here is a composite of public ops.

The legacy top-level functions (``det``, ``logdet``, ``slogdet``, ``inverse``,
``pinverse``, ``cholesky``, ``cholesky_solve``, ``cholesky_inverse``, ``svd``,
``qr``, ``matrix_power``, ``matrix_exp``, ``triangular_solve``) are declared at
the end as composite ops, so they are ``ember_core.<name>`` and Tensor methods.

>>> import ember_core as ec
>>> A = ec.tensor([[4.0, 1.0], [1.0, 3.0]])
>>> ec.linalg.solve(A, ec.tensor([1.0, 2.0])).tolist()
[0.09090909361839294, 0.6363636255264282]
"""

import math

from ember_core._base import shape as _shape
from ember_core._base.dispatch import defop
from ember_core._base.lib import check
from ember_core._base.return_types import return_type
from ember_core._ops.linalg.products import matmul as _mm
from ember_core._ops.pointwise.elementwise import _tname, maximum, where
from ember_core._ops.reduction.reduction import return_types
from ember_core._ops.reduction.reduction import vector_norm as _vn
from ember_core._ops.shape.joining import stack
from ember_core._tensor import dtype as D
from ember_core._tensor.copy import copy_into, write_out
from ember_core._tensor.creation import arange, eye, full, ones, zeros
from ember_core._tensor.device import require_cpu
from ember_core._tensor.tensor import Tensor, empty

__all__ = [
    "LinAlgError",
    "cholesky",
    "cholesky_ex",
    "cond",
    "cross",
    "det",
    "diagonal",
    "eigh",
    "eigvalsh",
    "inv",
    "inv_ex",
    "lstsq",
    "lu_factor",
    "lu_factor_ex",
    "matmul",
    "matrix_exp",
    "matrix_norm",
    "matrix_power",
    "matrix_rank",
    "multi_dot",
    "norm",
    "pinv",
    "qr",
    "slogdet",
    "solve",
    "solve_ex",
    "solve_triangular",
    "svd",
    "svdvals",
    "vander",
    "vecdot",
    "vector_norm",
]


class LinAlgError(RuntimeError):
    """A matrix the algorithm cannot handle: singular, not positive-definite, or
    no convergence (``torch.linalg.LinAlgError``; a RuntimeError)."""


# torch.return_types of this module's ops (also reachable as ember_core.return_types.*)
for _name, _fields in [
    ("linalg_inv_ex", ["inverse", "info"]),
    ("linalg_solve_ex", ["result", "info"]),
    ("linalg_cholesky_ex", ["L", "info"]),
    ("linalg_slogdet", ["sign", "logabsdet"]),
    ("slogdet", ["sign", "logabsdet"]),
    ("linalg_qr", ["Q", "R"]),
    ("qr", ["Q", "R"]),
    ("linalg_eigh", ["eigenvalues", "eigenvectors"]),
    ("linalg_svd", ["U", "S", "Vh"]),
    ("svd", ["U", "S", "V"]),
    ("linalg_lstsq", ["solution", "residuals", "rank", "singular_values"]),
    ("linalg_lu_factor", ["LU", "pivots"]),
    ("linalg_lu_factor_ex", ["LU", "pivots", "info"]),
    ("triangular_solve", ["solution", "cloned_coefficient"]),
]:
    setattr(return_types, _name, return_type(_name, _fields))
R = return_types

# ------------------------------------------------------------------ checks


def _require_tensor(op, x, name="A"):
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument '{name}' must be Tensor, not {type(x).__name__}")


def _require_float(op, A, kernel=None):
    """float32/float64 pass.  Like PyTorch's CPU: integers and bool raise a
    RuntimeError; float16/bfloat16 raise NotImplementedError naming the CPU
    kernel (or, with kernel=None, RuntimeError 'Low precision dtypes')."""
    dt = A._dtype
    if dt is D.float32 or dt is D.float64:
        return
    if dt.category == 2:
        if kernel is None:
            raise RuntimeError(f"{op}: Low precision dtypes not supported. Got {_tname(dt)}")
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{_tname(dt)}'")
    if dt.is_complex:  # PyTorch has them; ember's LAPACK calls are real-only so far
        raise NotImplementedError(
            f"{op}: complex matrices ({_tname(dt)}) are not supported by ember's linalg yet"
        )
    raise RuntimeError(
        f"{op}: Expected a floating point or complex tensor as input. Got {_tname(dt)}"
    )


def _require_matrix(op, A, square=True, name="A"):
    _require_tensor(op, A, name)
    if len(A._shape) < 2:
        raise RuntimeError(f"{op}: The input tensor {name} must have at least 2 dimensions.")
    require_cpu(A._storage._device, op)
    if square and A._shape[-1] != A._shape[-2]:
        raise RuntimeError(
            f"{op}: {name} must be batches of square matrices, but they are "
            f"{A._shape[-2]} by {A._shape[-1]} matrices"
        )


def _same_dtype(op, A, B):
    if A._dtype is not B._dtype:
        raise RuntimeError(
            f"{op}: Expected A and B to have the same dtype, but found A of type "
            f"{_tname(A._dtype)} and B of type {_tname(B._dtype)} instead"
        )


# ------------------------------------------------------------ LAPACK calls

# Calls doing more multiply-adds than this release the GIL.
_NOGIL_FLOPS = 1 << 16


def _fn(name, flops, dev):
    return getattr(dev._kn if flops > _NOGIL_FLOPS else dev._k, name)


def _fortran(A, batch=None, rows=None):
    """A fresh copy of A (broadcast to ``batch``) laid out for LAPACK: each
    matrix column-major (Note [LAPACK layout] in csrc/cpu/linalg/linalg.c).  Returned as
    the row-major (..., cols, rows) tensor holding that memory; ``.mT`` of it
    is the matrix.  ``rows`` pads each column to that many rows (lstsq)."""
    b = A._shape[:-2] if batch is None else tuple(batch)
    m, n = A._shape[-2], A._shape[-1]
    buf = empty(b + (n, m if rows is None else rows), A._dtype, A._storage._device)
    src = A.mT
    if src._shape[:-2] != b:
        src = src.expand(b + (n, m))
    copy_into(buf if rows is None else buf[..., :m], src)
    return buf


def _int32(shape, A):
    return empty(tuple(shape), D.int32, A._storage._device)


def _batch_prefix(info, i):
    return "" if len(info._shape) == 0 else f"(Batch element {i}): "


def _first_error(info):
    """(flat batch index, info code) of the first failed matrix, or None."""
    if info._numel == 0:
        return None
    a = info.numpy().reshape(-1)
    bad = a.nonzero()[0]
    if len(bad) == 0:
        return None
    return int(bad[0]), int(a[bad[0]])


_MESSAGES = {
    "inv": "The diagonal element {code} is zero, the inversion could not be completed because "
    "the input matrix is singular.",
    "solve": "The solver failed because the input matrix is singular.",
    "cholesky": "The factorization could not be completed because the input is not "
    "positive-definite (the leading minor of order {code} is not positive-definite).",
    "eigh": "The algorithm failed to converge because the input matrix is ill-conditioned or "
    "has too many repeated eigenvalues (error code: {code}).",
    "svd": "The algorithm failed to converge because the input matrix is ill-conditioned or "
    "has too many repeated singular values (error code: {code}).",
    "lstsq": "The least squares solution could not be computed because the input matrix does "
    "not have full rank (error code: {code}).",
    "lu_factor": "U[{code},{code}] is zero and using it on lu_solve would result in a division "
    "by zero. If you still want to perform the factorization, consider calling "
    "linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)",
}


def _check_info(op, info, kind):
    """Raise LinAlgError for the first matrix whose LAPACK info is non-zero."""
    err = _first_error(info)
    if err is None:
        return
    i, code = err
    if code < 0:  # an argument LAPACK refused: a bug here, not the user's
        raise RuntimeError(f"{op}: LAPACK rejected argument {-code} (internal error)")
    prefix = _batch_prefix(info, i) if kind not in ("eigh",) else ""
    raise LinAlgError(f"{op}: {prefix}" + _MESSAGES[kind].format(code=code))


def _numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


# ------------------------------------------------------ primitive ops (kernels)


@defop(method=False)
def _linalg_lu_factor_ex(A, check_errors=False):
    """(LU, pivots, info): partial-pivoting LU (getrf); pivots are 1-based int32."""
    op = "linalg.lu_factor_ex"
    _require_matrix(op, A, square=False)
    _require_float(op, A, "lu_cpu")
    m, n = A._shape[-2], A._shape[-1]
    k = min(m, n)
    batch = A._shape[:-2]
    lu = _fortran(A)
    piv = _int32(batch + (k,), A)
    info = _int32(batch, A)
    nb = _numel(batch)
    if nb and m and n:
        check(
            _fn("ec_linalg_lu", nb * m * n * k, lu._storage._device)(
                A._dtype.code, nb, m, n, lu._ptr, piv._ptr, info._ptr
            ),
            op,
        )
    else:
        info.zero_()
    if check_errors:
        _check_info("torch.linalg.lu_factor", info, "lu_factor")
    return lu.mT, piv, info


def _lu_det_parts(A, op):
    """(diagonal of U, permutation sign) of A's LU factorization."""
    lu, piv, _ = _linalg_lu_factor_ex(A)
    n = A._shape[-1]
    d = lu.diagonal(0, -2, -1)
    if n == 0:
        return d, None

    swaps = (piv != arange(1, n + 1, dtype=D.int32)).sum(-1)
    sign = 1 - 2 * (swaps % 2).to(A._dtype)
    return d, sign


@defop(method=False)
def _linalg_det(A):
    """Determinants: the product of U's diagonal times the pivots' sign."""
    op = "linalg.det"
    _require_matrix(op, A)
    _require_float(op, A, "lu_cpu")
    d, sign = _lu_det_parts(A, op)
    if sign is None:
        return ones(A._shape[:-2], dtype=A._dtype)
    return d.prod(-1) * sign


@defop(method=False)
def _linalg_slogdet(A):
    """(sign, log|det|) from the LU factors (log|det| sums logs: no overflow)."""
    op = "linalg.slogdet"
    _require_matrix(op, A)
    _require_float(op, A)
    d, sign = _lu_det_parts(A, op)
    if sign is None:
        return ones(A._shape[:-2], dtype=A._dtype), zeros(A._shape[:-2], dtype=A._dtype)
    return d.sign().prod(-1) * sign, d.abs().log().sum(-1)


@defop(method=False, autocast="fp32")
def _linalg_inv_ex(A, check_errors=False):
    """(inverse, info) through getrf + getrs against the identity, as PyTorch."""
    op = "linalg.inv"
    _require_matrix(op, A)
    _require_float(op, A)
    n = A._shape[-1]
    batch = A._shape[:-2]
    x = _fortran(A)
    info = _int32(batch, A)
    nb = _numel(batch)
    if nb and n:
        piv = _int32((nb, n), A)
        check(
            _fn("ec_linalg_inv", nb * n * n * n, x._storage._device)(
                A._dtype.code, nb, n, x._ptr, piv._ptr, info._ptr
            ),
            op,
        )
    else:
        info.zero_()
    if check_errors:
        _check_info(op, info, "inv")
    return x.mT, info


def _solve_shapes(op, A, B, left=True):
    """Whether B is a (batch of) vector(s), as PyTorch decides it."""
    vector = len(B._shape) == 1 or (
        len(A._shape) - 1 == len(B._shape) and B._shape == A._shape[:-1]
    )
    n = A._shape[-1]
    rows = B._shape[-1] if vector else (B._shape[-2] if left else B._shape[-1])
    if rows != n:
        bm = (B._shape[-1], 1) if vector else B._shape[-2:]
        eq = "AX = B" if left else "XA = B"
        raise RuntimeError(
            f"{op}: Incompatible shapes of A and B for the equation {eq} ({n}x{n} and "
            f"{bm[0]}x{bm[1]})"
        )
    return vector


@defop(method=False, autocast="fp32")
def _linalg_solve(A, B):
    """X with A X = B for square A (..., n, n) and B (..., n, k); batch dims
    broadcast.  Raises LinAlgError for a singular A."""
    op = "linalg.solve"
    n, k = A._shape[-1], B._shape[-1]
    batch = _shape.broadcast_shapes(A._shape[:-2], B._shape[:-2], op=op)
    a = _fortran(A, batch)
    x = _fortran(B, batch)
    nb = _numel(batch)
    info = _int32(batch, A)
    if nb and n:
        piv = _int32((nb, n), A)
        check(
            _fn("ec_linalg_solve", nb * n * n * (n + k), a._storage._device)(
                A._dtype.code, nb, n, k, a._ptr, x._ptr, piv._ptr, info._ptr
            ),
            op,
        )
    else:
        info.zero_()
    _check_info("torch.linalg.solve", info, "solve")
    return x.mT


@defop(method=False, autocast="fp32")
def _linalg_cholesky_ex(A, upper=False, check_errors=False):
    """(L, info): the Cholesky factor (potrf) of symmetric positive-definite A,
    read from its lower (upper) triangle; the other triangle of L is zero."""
    op = "linalg.cholesky"
    _require_matrix(op, A)
    _require_float(op, A, "cholesky_cpu")
    n = A._shape[-1]
    batch = A._shape[:-2]
    x = _fortran(A)
    info = _int32(batch, A)
    nb = _numel(batch)
    if nb and n:
        check(
            _fn("ec_linalg_cholesky", nb * n * n * n // 3, x._storage._device)(
                A._dtype.code, nb, n, 1 if upper else 0, x._ptr, info._ptr
            ),
            op,
        )
    else:
        info.zero_()
    if check_errors:
        _check_info(op, info, "cholesky")
    L = x.mT
    L = L.triu_() if upper else L.tril_()
    return L, info


@defop(method=False, autocast="fp32")
def _linalg_solve_triangular(A, B, upper, unitriangular=False):
    """X with A X = B for triangular A (only its upper/lower triangle is read);
    batch dims broadcast."""
    op = "linalg.solve_triangular"
    n, k = A._shape[-1], B._shape[-1]
    batch = _shape.broadcast_shapes(A._shape[:-2], B._shape[:-2], op=op)
    a = _fortran(A, batch)
    x = _fortran(B, batch)
    nb = _numel(batch)
    if nb and n and k:
        info = _int32((nb,), A)
        check(
            _fn("ec_linalg_solve_triangular", nb * n * n * k, a._storage._device)(
                A._dtype.code,
                nb,
                n,
                k,
                1 if upper else 0,
                0,
                1 if unitriangular else 0,
                a._ptr,
                x._ptr,
                info._ptr,
            ),
            op,
        )
    return x.mT


@defop(method=False, autocast="fp32")
def _linalg_qr(A, mode="reduced"):
    """(Q, R) by Householder QR (geqrf + orgqr); mode 'reduced', 'complete' or
    'r' (Q empty)."""
    op = "linalg.qr"
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(
            f"qr received unrecognized mode '{mode}' but expected one of 'reduced' (default), "
            "'r', or 'complete'"
        )
    _require_matrix(op, A, square=False)
    _require_float(op, A, "geqrf_cpu")
    m, n = A._shape[-2], A._shape[-1]
    k = min(m, n)
    batch = A._shape[:-2]
    nb = _numel(batch)
    a = _fortran(A)
    qcols = m if mode == "complete" else k
    q = _fortran_empty(batch, m, qcols, A) if mode != "r" else None
    info = _int32(batch, A)
    if nb and m and n:
        check(
            _fn("ec_linalg_qr", nb * m * n * k, a._storage._device)(
                A._dtype.code, nb, m, n, qcols, a._ptr, q._ptr if q is not None else 0, info._ptr
            ),
            op,
        )
    elif q is not None and nb and m:  # n == 0: Q is the identity's first columns
        copy_into(q, eye(m, qcols, dtype=A._dtype).mT)
    rows = m if mode == "complete" else k
    r = a.mT[..., :rows, :].triu()
    if q is None:
        return empty((0,), A._dtype, A._storage._device), r
    return q.mT, r


def _fortran_empty(batch, rows, cols, like):
    return empty(tuple(batch) + (cols, rows), like._dtype, like._storage._device)


@defop(method=False, autocast="fp32")
def _linalg_eigh(A, UPLO="L", compute_v=True):
    """(eigenvalues ascending, eigenvectors as columns) of symmetric A (syevd),
    read from its lower ('L') or upper ('U') triangle; eigenvectors empty when
    not compute_v."""
    op = "linalg.eigh"
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    _require_matrix(op, A)
    _require_float(op, A, "linalg_eigh_cpu")
    n = A._shape[-1]
    batch = A._shape[:-2]
    nb = _numel(batch)
    a = _fortran(A)
    w = empty(batch + (n,), A._dtype, A._storage._device)
    info = _int32(batch, A)
    if nb and n:
        check(
            _fn("ec_linalg_eigh", nb * n * n * n, a._storage._device)(
                A._dtype.code,
                nb,
                n,
                1 if UPLO == "U" else 0,
                1 if compute_v else 0,
                a._ptr,
                w._ptr,
                info._ptr,
            ),
            op,
        )
    else:
        info.zero_()
    _check_info(op, info, "eigh")
    if not compute_v:
        return w, empty((0,), A._dtype, A._storage._device)
    return w, a.mT


@defop(method=False, autocast="fp32")
def _linalg_svd(A, full_matrices=True, compute_uv=True):
    """(U, S, Vh) by divide and conquer (gesdd); S descending.  U and Vh are
    empty when not compute_uv."""
    op = "linalg.svd"
    _require_matrix(op, A, square=False)
    _require_float(op, A, "linalg_svd_cpu")
    m, n = A._shape[-2], A._shape[-1]
    k = min(m, n)
    batch = A._shape[:-2]
    nb = _numel(batch)
    dev = A._storage._device
    job = ("A" if full_matrices else "S") if compute_uv else "N"
    ucols, vrows = (m, n) if full_matrices else (k, k)
    s = empty(batch + (k,), A._dtype, dev)
    u = _fortran_empty(batch, m, ucols, A) if compute_uv else None
    vt = _fortran_empty(batch, vrows, n, A) if compute_uv else None
    info = _int32(batch, A)
    if nb and m and n:
        a = _fortran(A)
        check(
            _fn("ec_linalg_svd", nb * m * n * k, a._storage._device)(
                A._dtype.code,
                nb,
                m,
                n,
                ord(job),
                a._ptr,
                s._ptr,
                u._ptr if u is not None else 0,
                vt._ptr if vt is not None else 0,
                info._ptr,
            ),
            op,
        )
        _check_info(op, info, "svd")
    elif compute_uv:  # an empty matrix: the singular vectors are identity columns
        copy_into(u, eye(m, ucols, dtype=A._dtype).mT)
        copy_into(vt, eye(vrows, n, dtype=A._dtype).mT)
    if not compute_uv:
        e = empty((0,), A._dtype, dev)
        return e, s, e
    return u.mT, s, vt.mT


def _tolerances(op, A, S_max, atol, rtol):
    """PyTorch's threshold max(atol, rtol * S_max) (rtol defaults to eps * max(m, n)
    when neither is given), as a tensor broadcasting against the singular values."""

    def as_t(v):
        if isinstance(v, Tensor):
            return v.to(A._dtype)

        return full((), float(v), dtype=A._dtype)

    if rtol is None:
        eps = 1.1920928955078125e-07 if A._dtype is D.float32 else 2.220446049250313e-16
        rtol = (
            0.0
            if (atol is not None and not _is_zero_number(atol))
            else eps * max(A._shape[-2], A._shape[-1])
        )
    a = as_t(0.0 if atol is None else atol)
    r = as_t(rtol)
    if len(a._shape):
        a = a.unsqueeze(-1)
    if len(r._shape):
        r = r.unsqueeze(-1)
    return maximum(a, r * S_max)


def _is_zero_number(v):
    return not isinstance(v, Tensor) and float(v) == 0.0


@defop(method=False, autocast="fp32")
def _linalg_pinv(A, atol=None, rtol=None, hermitian=False):
    """Moore-Penrose pseudo-inverse from the SVD (eigh when hermitian), singular
    values at or below max(atol, rtol * largest) treated as zero."""
    op = "linalg.pinv"
    _require_tensor(op, A)
    if len(A._shape) < 2 or A._dtype not in (D.float32, D.float64):
        raise RuntimeError(
            f"{op}({_tname(A._dtype)}{list(A._shape)}): expected a tensor with 2 or more "
            "dimensions of float, double, cfloat or cdouble types"
        )

    m, n = A._shape[-2], A._shape[-1]
    if m == 0 or n == 0:
        return zeros(A._shape[:-2] + (n, m), dtype=A._dtype)
    if hermitian:
        w, V = _linalg_eigh(A, "L", True)
        absw = w.abs()
        tol = _tolerances(op, A, absw.amax(-1, keepdim=True), atol, rtol)
        winv = where(absw > tol, 1.0 / w, 0.0)
        return (V * winv.unsqueeze(-2)) @ V.mT
    U, sv, Vh = _linalg_svd(A, False, True)
    tol = _tolerances(op, A, sv[..., :1], atol, rtol)
    sinv = where(sv > tol, 1.0 / sv, 0.0)
    return (Vh.mT * sinv.unsqueeze(-2)) @ U.mT


_DRIVERS = {"gels": 0, "gelsy": 1, "gelsd": 2, "gelss": 3}


@defop(method=False, autocast="fp32")
def _linalg_lstsq(A, B, rcond=None, driver=None):
    """(solution, residuals, rank, singular_values) of min ||A X - B|| with
    PyTorch's conventions: B (..., m, k), batch dims broadcast; driver 'gelsy'
    by default; residuals only for m > n (and full rank for gelsd/gelss), rank
    unless 'gels', singular values only for 'gelsd'/'gelss'."""
    op = "torch.linalg.lstsq"
    driver = "gelsy" if driver is None else driver
    if driver not in _DRIVERS:
        raise RuntimeError(
            f"{op}: parameter `driver` should be one of (gels, gelsy, gelsd, gelss), "
            f"but got {driver}"
        )
    m, n, k = A._shape[-2], A._shape[-1], B._shape[-1]
    if B._shape[-2] != m:
        raise RuntimeError(
            f"{op}: input.size(-2) should match other.size(-2), but got {m} and {B._shape[-2]}"
        )
    batch = _shape.broadcast_shapes(A._shape[:-2], B._shape[:-2], op=op)
    dev = A._storage._device
    if rcond is None:
        eps = 1.1920928955078125e-07 if A._dtype is D.float32 else 2.220446049250313e-16
        rcond = eps * max(m, n)
    nb = _numel(batch)
    ldb = max(m, n)
    a = _fortran(A, batch)
    x = _fortran(B, batch, rows=ldb)
    if ldb > m:
        x[..., m:].zero_()
    kk = min(m, n)
    want_sv = driver in ("gelsd", "gelss")
    s = empty(batch + (kk,), A._dtype, dev) if want_sv else None
    rank = _int32(batch, A)
    info = _int32(batch, A)
    if nb and m and n and k:
        check(
            _fn("ec_linalg_lstsq", nb * m * n * max(m, n, k), a._storage._device)(
                A._dtype.code,
                nb,
                m,
                n,
                k,
                _DRIVERS[driver],
                float(rcond),
                a._ptr,
                x._ptr,
                s._ptr if s is not None else 0,
                rank._ptr,
                info._ptr,
            ),
            op,
        )
        _check_info(op, info, "lstsq")
    else:
        x.zero_()
        rank.fill_(0 if not (m and n) else min(m, n))
        if s is not None:
            s.zero_()
    sol = x.mT[..., :n, :]
    residuals = empty((0,), A._dtype, dev)
    rank64 = rank.to(D.int64)
    if m > n and driver != "gelsy":
        full_rank = True
        if driver in ("gelsd", "gelss"):
            full_rank = bool((rank64 == n).all().item())
        if full_rank:
            residuals = x.mT[..., n:, :].square().sum(-2)
    if driver == "gels":
        rank64 = empty((0,), D.int64, dev)
    return sol, residuals, rank64, s if s is not None else empty((0,), A._dtype, dev)


# --------------------------------------------------- the torch.linalg namespace


@defop(
    "linalg_inv_ex(A, *, check_errors=False, out=None)",
    method=False,
    public=False,
    composite=True,
    autocast="fp32",
)
def inv_ex(A, check_errors=False, out=None):
    """(inverse, info) of square matrices; info is non-zero for singular ones."""
    inv_, info = _linalg_inv_ex(A, check_errors)
    return _out(R.linalg_inv_ex(inv_, info), out)


@defop(
    "linalg_inv(A, *, out=None)",
    method=False,
    public=False,
    composite=True,
    autocast="fp32",
)
def inv(A, out=None):
    """The inverse of square matrices (LinAlgError if one is singular).

    >>> import ember_core as ec
    >>> ec.linalg.inv(ec.tensor([[2.0, 0.0], [0.0, 4.0]])).tolist()
    [[0.5, 0.0], [0.0, 0.25]]
    """
    return _out(_linalg_inv_ex(A, True)[0], out)


def _out(r, out, op="linalg"):
    """Copy a result (or tuple of results) into out= tensors."""
    if out is None:
        return r

    if isinstance(r, tuple):
        if not isinstance(out, (tuple, list)) or len(out) != len(r):
            raise TypeError(f"out must be a tuple of {len(r)} tensors")
        for o, x in zip(out, r):
            write_out(o, x, op)
        return type(r)(*out) if hasattr(r, "_fields") else tuple(out)
    return write_out(out, r, op)


@defop(
    "linalg_solve(A, B, *, left=True, out=None)",
    method=False,
    public=False,
    composite=True,
    autocast="fp32",
)
def solve(A, B, left=True, out=None):
    """X with A X = B (X A = B when left=False); B may be a (batch of) vector(s),
    batch dims broadcast."""
    op = "linalg.solve"
    _require_matrix(op, A)
    _require_tensor(op, B, "B")
    _require_float(op, A, "lu_cpu")
    _same_dtype(op, A, B)
    vector = _solve_shapes(op, A, B, left)
    if vector:
        b = B.unsqueeze(-1)
        if not left:  # x A = b  <=>  A^T x^T = b^T
            return _out(_linalg_solve(A.mT, b).squeeze(-1), out)
        return _out(_linalg_solve(A, b).squeeze(-1), out)
    if not left:
        return _out(_linalg_solve(A.mT, B.mT).mT, out)
    return _out(_linalg_solve(A, B), out)


def solve_ex(A, B, *, left=True, check_errors=False, out=None):
    """(result, info) of solve; info is zero (a singular A raises)."""
    x = solve(A, B, left=left)
    info = empty(A._shape[:-2], D.int32, A._storage._device).zero_()
    return _out(R.linalg_solve_ex(x, info), out)


def det(A, *, out=None):
    """Determinants of square matrices."""
    return _out(_linalg_det(A), out)


def slogdet(A, *, out=None):
    """(sign, log|det|) of square matrices: a determinant without overflow."""
    return _out(R.linalg_slogdet(*_linalg_slogdet(A)), out)


@defop(
    "linalg_cholesky_ex(A, *, upper=False, check_errors=False, out=None)",
    method=False,
    public=False,
    composite=True,
    autocast="fp32",
)
def cholesky_ex(A, upper=False, check_errors=False, out=None):
    """(L, info): the Cholesky factor; info > 0 names the leading minor that is
    not positive-definite."""
    return _out(R.linalg_cholesky_ex(*_linalg_cholesky_ex(A, upper, check_errors)), out)


@defop(
    "linalg_cholesky(A, *, upper=False, out=None)",
    method=False,
    public=False,
    composite=True,
    autocast="fp32",
)
def cholesky(A, upper=False, out=None):
    """The lower (upper) Cholesky factor of symmetric positive-definite matrices;
    LinAlgError when one is not positive-definite."""
    return _out(_linalg_cholesky_ex(A, upper, True)[0], out)


def solve_triangular(A, B, *, upper, left=True, unitriangular=False, out=None):
    """X with A X = B (X A = B when left=False) for triangular A."""
    op = "linalg.solve_triangular"
    _require_matrix(op, A)
    _require_tensor(op, B, "B")
    if len(B._shape) < 2:
        raise RuntimeError(f"{op}: The input tensor B must have at least 2 dimensions.")
    _require_float(op, A, "triangular_solve_cpu")
    _same_dtype(op, A, B)
    n = A._shape[-1]
    rows = B._shape[-2] if left else B._shape[-1]
    if rows != n:
        eq = "AX = B" if left else "XA = B"
        raise RuntimeError(
            f"{op}: Incompatible shapes of A and B for the equation {eq} ({n}x{n} and "
            f"{B._shape[-2]}x{B._shape[-1]})"
        )
    if left:
        return _out(_linalg_solve_triangular(A, B, upper, unitriangular), out)
    return _out(_linalg_solve_triangular(A.mT, B.mT, not upper, unitriangular).mT, out)


@defop(
    'linalg_qr(A, mode="reduced", *, out=None)',
    method=False,
    public=False,
    composite=True,
    autocast="fp32",
)
def qr(A, mode="reduced", out=None):
    """(Q, R) with A = Q R: mode 'reduced' (Q m x k), 'complete' (Q m x m) or
    'r' (R only, Q empty)."""
    return _out(R.linalg_qr(*_linalg_qr(A, mode)), out)


@defop(
    'linalg_eigh(A, UPLO="L", *, out=None)',
    method=False,
    public=False,
    composite=True,
    autocast="fp32",
)
def eigh(A, UPLO="L", out=None):
    """(eigenvalues ascending, eigenvectors as columns) of symmetric matrices,
    read from the lower (UPLO='L') or upper triangle."""
    return _out(R.linalg_eigh(*_linalg_eigh(A, UPLO, True)), out)


@defop(
    'linalg_eigvalsh(A, UPLO="L", *, out=None)',
    method=False,
    public=False,
    composite=True,
    autocast="fp32",
)
def eigvalsh(A, UPLO="L", out=None):
    """Eigenvalues (ascending) of symmetric matrices."""
    return _out(_linalg_eigh(A, UPLO, _wants_grad(A))[0], out)


def _wants_grad(A):
    # the eigen/singular vectors are needed only to differentiate the values
    return bool(getattr(A, "requires_grad", False))


@defop(
    "linalg_svd(A, full_matrices=True, *, driver=None, out=None)",
    method=False,
    public=False,
    composite=True,
    autocast="fp32",
)
def svd(A, full_matrices=True, driver=None, out=None):
    """(U, S, Vh) with A = U diag(S) Vh, S descending."""
    return _out(R.linalg_svd(*_linalg_svd(A, full_matrices, True)), out)


@defop(
    "linalg_svdvals(A, *, driver=None, out=None)",
    method=False,
    public=False,
    composite=True,
    autocast="fp32",
)
def svdvals(A, driver=None, out=None):
    """Singular values, descending."""
    return _out(_linalg_svd(A, False, _wants_grad(A))[1], out)


def pinv(A, *, atol=None, rtol=None, hermitian=False, out=None, rcond=None):
    """The Moore-Penrose pseudo-inverse; singular values below max(atol, rtol *
    largest) count as zero (rcond: the old name of rtol)."""
    if rcond is not None:
        rtol = rcond
    return _out(_linalg_pinv(A, atol, rtol, hermitian), out)


@defop(
    "linalg_lstsq(A, B, rcond=None, *, driver=None)",
    method=False,
    public=False,
    composite=True,
    autocast="fp32",
)
def lstsq(A, B, rcond=None, driver=None):
    """(solution, residuals, rank, singular_values) of the least-squares problem
    min ||A X - B|| (see _linalg_lstsq for which fields are filled)."""
    op = "torch.linalg.lstsq"
    _require_tensor(op, A, "input")
    _require_tensor(op, B, "other")
    if A._dtype not in (D.float32, D.float64):
        raise RuntimeError("This function doesn't handle types other than float and double")
    _same_dtype(op, A, B)
    if len(A._shape) < 2:
        raise RuntimeError(f"{op}: input must have at least 2 dimensions.")
    d = len(A._shape) - len(B._shape)
    if d < 0 or d > 1:
        raise RuntimeError(
            f"{op}: input.dim() must be greater or equal to other.dim() and "
            "(input.dim() - other.dim()) <= 1"
        )
    vector = d == 1
    b = B.unsqueeze(-1) if vector else B
    sol, res, rank, sv = _linalg_lstsq(A, b, rcond, driver)
    if vector:
        sol = sol.squeeze(-1)
        if res._numel:
            res = res.squeeze(-1)
    return R.linalg_lstsq(sol, res, rank, sv)


@defop(
    "linalg_matrix_rank(A, *, atol=None, rtol=None, hermitian=False, out=None, tol=None)",
    method=False,
    public=False,
    composite=True,
    autocast="fp32",
)
def matrix_rank(A, atol=None, rtol=None, hermitian=False, out=None, tol=None):
    """The number of singular values above max(atol, rtol * largest)."""
    op = "linalg.matrix_rank"
    _require_tensor(op, A)
    if A._dtype not in (D.float32, D.float64):
        raise RuntimeError("This function doesn't handle types other than float and double")
    if tol is not None:
        atol, rtol = tol, 0.0
    if hermitian:
        sv = _linalg_eigh(A, "L", False)[0].abs()
        smax = sv.amax(-1, keepdim=True) if sv._shape[-1] else sv[..., :1]
    else:
        sv = _linalg_svd(A, False, False)[1]
        smax = sv[..., :1]
    tol_ = _tolerances(op, A, smax, atol, rtol)
    return _out((sv > tol_).sum(-1), out)


@defop(
    "linalg_cond(A, p=None, *, out=None)",
    method=False,
    public=False,
    composite=True,
    autocast="fp32",
)
def cond(A, p=None, out=None):
    """The condition number ||A|| * ||A^-1|| in the p norm (2 by default: the
    ratio of the extreme singular values)."""
    if p is None or p in (2, -2):
        S = svdvals(A)
        r = S[..., 0] / S[..., -1] if p in (None, 2) else S[..., -1] / S[..., 0]
        return _out(r, out)
    return _out(matrix_norm(A, p) * matrix_norm(inv(A), p), out)


def lu_factor_ex(A, *, pivot=True, check_errors=False, out=None):
    """(LU, pivots, info): L (unit diagonal, below) and U packed in one matrix,
    1-based pivots."""
    if not pivot:
        raise RuntimeError("linalg.lu_factor: LU without pivoting is not implemented on the CPU")
    lu, piv, info = _linalg_lu_factor_ex(A, check_errors)
    return _out(R.linalg_lu_factor_ex(lu, piv, info), out)


def lu_factor(A, *, pivot=True, out=None):
    """(LU, pivots) of partial-pivoting LU; LinAlgError when U is singular."""
    lu, piv, _ = lu_factor_ex(A, pivot=pivot, check_errors=True)
    return _out(R.linalg_lu_factor(lu, piv), out)


# ------------------------------------------------------------------- norms


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None, out=None):
    """The ord-norm of x's elements over dim (all dims by default)."""

    if isinstance(ord, str):
        raise RuntimeError(f"linalg.vector_norm: ord must be a number, got {ord!r}")
    return _out(_vn(x, ord, dim, keepdim, dtype=dtype), out, "vector_norm")


def _matrix_dims(op, A, dim):
    if not isinstance(dim, (tuple, list)) or len(dim) != 2:
        got = " ".join(str(d) for d in dim) if isinstance(dim, (tuple, list)) else str(dim)
        raise RuntimeError(f"{op}: dim must be a 2-tuple. Got {got}")
    nd = len(A._shape)
    d0, d1 = (_shape.normalize_dim(d, nd, op) for d in dim)
    if d0 == d1:
        raise RuntimeError(f"{op}: dims must be different. Got ({dim[0]}, {dim[1]})")
    return d0, d1


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None, out=None):
    """Matrix norms over the two dims in dim: 'fro', 'nuc', inf, -inf, 1, -1, 2, -2."""
    op = "linalg.matrix_norm"
    _require_tensor(op, A)
    if len(A._shape) < 2:
        raise RuntimeError(f"{op}: The input tensor A must have at least 2 dimensions.")
    d0, d1 = _matrix_dims(op, A, dim)
    if dtype is not None:
        A = A.to(dtype)
    if A._dtype not in (D.float32, D.float64) and A._dtype.category != 2:
        raise RuntimeError(
            f"{op}: Expected a floating point or complex tensor as input. Got {_tname(A._dtype)}"
        )
    if ord == "fro":
        return _out(vector_norm(A, 2, (d0, d1), keepdim), out)
    if ord == "nuc" or ord in (2, -2):
        if ord == "nuc":
            kernel = "linalg_svd_cpu"
        else:
            kernel = "linalg_svd_cpu"
        _require_float(op, A, kernel)
        # move the two dims last, take the singular values
        perm = [i for i in range(len(A._shape)) if i not in (d0, d1)] + [d0, d1]
        S = svdvals(A.permute(*perm))
        if ord == "nuc":
            r = S.sum(-1)
        elif ord == 2:
            r = S.amax(-1)
        else:
            r = S.amin(-1)
        if keepdim:
            for d in sorted((d0, d1)):
                r = r.unsqueeze(d)
        return _out(r, out)
    if isinstance(ord, str) or ord not in (1, -1, math.inf, -math.inf):
        raise RuntimeError(f"{op}: Order {ord} not supported.")
    # 1: max column sum (over rows d0); inf: max row sum
    sum_dim, red_dim = (d0, d1) if ord in (1, -1) else (d1, d0)
    s = A.abs().sum(sum_dim, keepdim=True)
    r = s.amax(red_dim, keepdim=True) if ord > 0 else s.amin(red_dim, keepdim=True)
    if not keepdim:
        r = r.squeeze((d0, d1))
    return _out(r, out)


def norm(A, ord=None, dim=None, keepdim=False, *, dtype=None, out=None):
    """Vector or matrix norm: with dim an int (or ord None and dim None) a vector
    norm, with dim a 2-tuple (or a 2-D input and ord given) a matrix norm."""
    op = "linalg.norm"
    _require_tensor(op, A)
    if dim is not None:
        if isinstance(dim, int):
            dim = (dim,)
        if len(dim) == 2:
            return matrix_norm(A, "fro" if ord is None else ord, dim, keepdim, dtype=dtype, out=out)
        return vector_norm(A, 2 if ord is None else ord, dim, keepdim, dtype=dtype, out=out)
    if ord is None:
        return vector_norm(A, 2, None, keepdim, dtype=dtype, out=out)
    nd = len(A._shape)
    if nd == 2:
        return matrix_norm(A, ord, (-2, -1), keepdim, dtype=dtype, out=out)
    if nd == 1:
        return vector_norm(A, ord, None, keepdim, dtype=dtype, out=out)
    raise RuntimeError(
        f"{op}: If dim is not specified but ord is, the input must be 1D or 2D. Got {nd}D."
    )


def torch_norm(input, p="fro", dim=None, keepdim=False, dtype=None, out=None):
    """torch.norm's rules: a string p other than 'fro' over <= 2 dims (that is,
    'nuc', or 'fro' over more dims) is a matrix norm over dim (all dims by
    default); any other p is a vector norm (None and 'fro' mean 2)."""
    dims = (dim,) if isinstance(dim, int) else dim
    if isinstance(p, str):
        if p == "fro" and (dims is None or len(dims) <= 2):
            return vector_norm(input, 2, dims, keepdim, dtype=dtype, out=out)
        if dims is None:
            dims = tuple(range(len(input._shape)))
        return matrix_norm(input, p, dims, keepdim, dtype=dtype, out=out)
    return vector_norm(input, 2.0 if p is None else p, dims, keepdim, dtype=dtype, out=out)


# ------------------------------------------------------------- composites


def cross(input, other, *, dim=-1, out=None):
    """Cross product of 3-vectors along dim (batch dims broadcast)."""
    op = "linalg.cross"
    _require_tensor(op, input, "input")
    _require_tensor(op, other, "other")
    nd = max(len(input._shape), len(other._shape))
    d = _shape.normalize_dim(dim, nd, op)
    shape = _shape.broadcast_shapes(input._shape, other._shape, op=op)
    a = input.expand(shape) if input._shape != shape else input
    b = other.expand(shape) if other._shape != shape else other
    ai = input._shape[d - nd + len(input._shape)] if len(input._shape) else 0
    bi = other._shape[d - nd + len(other._shape)] if len(other._shape) else 0
    if ai != 3 or bi != 3:
        raise RuntimeError(f"{op}: inputs dimension {dim} must have length 3. Got {ai} and {bi}")

    a0, a1, a2 = (a.select(d, i) for i in range(3))
    b0, b1, b2 = (b.select(d, i) for i in range(3))
    r = stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], d)
    return _out(r, out)


@defop(
    "linalg_vecdot(x, y, *, dim=-1, out=None)",
    method=False,
    public=False,
    composite=True,
    autocast="lower_precision_fp",
)
def vecdot(x, y, dim=-1, out=None):
    """Dot products of vectors along dim (batch dims broadcast)."""
    return _out((x * y).sum(dim), out)


def matmul(input, other, *, out=None):
    """linalg.matmul is matmul."""

    return _mm(input, other, out=out)


def diagonal(A, *, offset=0, dim1=-2, dim2=-1):
    """The diagonal of each matrix (a view), over the last two dims by default."""
    return A.diagonal(offset, dim1, dim2)


def matrix_power(A, n, *, out=None):
    """A to the integer power n by repeated squaring (n < 0 inverts first)."""
    op = "linalg.matrix_power"
    _require_matrix(op, A)
    if not isinstance(n, int) or isinstance(n, bool):
        raise TypeError(f"{op}(): argument 'n' must be int, not {type(n).__name__}")
    if n == 0:
        k = A._shape[-1]
        r = eye(k, dtype=A._dtype).expand(A._shape).clone()
        return _out(r, out)
    if n < 0:
        A = inv(A)
        n = -n
    result = None
    base = A
    while n:
        if n & 1:
            result = base if result is None else result @ base
        n >>= 1
        if n:
            base = base @ base
    if result is A:
        result = A.clone()
    return _out(result, out)


def multi_dot(tensors, *, out=None):
    """The product of a chain of matrices (first and last may be vectors), in
    the order that needs the fewest multiplications."""
    op = "linalg.multi_dot"
    ts = list(tensors)
    if len(ts) < 2:
        raise RuntimeError(f"{op}(): expected at least 2 tensors but got {len(ts)}")
    first_vec = len(ts[0]._shape) == 1
    last_vec = len(ts[-1]._shape) == 1
    if first_vec:
        ts[0] = ts[0].unsqueeze(0)
    if last_vec:
        ts[-1] = ts[-1].unsqueeze(-1)
    for i, t in enumerate(ts):
        if len(t._shape) != 2:
            raise RuntimeError(
                f"{op}(): tensor {i} must be 2D but got {len(t._shape)}D"
                if 0 < i < len(ts) - 1
                else f"{op}(): the first and last tensors must be 1D or 2D but got {len(t._shape)}D"
            )
        if i and ts[i - 1]._shape[1] != t._shape[0]:
            raise RuntimeError(
                f"{op}(): tensors {i - 1} and {i} with shapes {list(ts[i - 1]._shape)} and "
                f"{list(t._shape)} cannot be multiplied"
            )
    r = _chain(ts)
    if first_vec:
        r = r.squeeze(0)
    if last_vec:
        r = r.squeeze(-1)
    return _out(r, out)


def _chain(ts):
    """Matrix chain product in the cheapest order (dynamic programming)."""
    n = len(ts)
    if n <= 2:
        return ts[0] @ ts[1] if n == 2 else ts[0]
    dims = [ts[0]._shape[0]] + [t._shape[1] for t in ts]
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            best = None
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if best is None or c < best:
                    best, split[i][j] = c, k
            cost[i][j] = best

    def product(i, j):
        if i == j:
            return ts[i]
        k = split[i][j]
        return product(i, k) @ product(k + 1, j)

    return product(0, n - 1)


# Padé coefficients of degree 13 (Higham 2005, "The scaling and squaring method
# for the matrix exponential revisited"); theta_13 bounds the 1-norm for which
# degree 13 is accurate to double precision without scaling.
_PADE13 = (
    64764752532480000.0,
    32382376266240000.0,
    7771770303897600.0,
    1187353796428800.0,
    129060195264000.0,
    10559470521600.0,
    670442572800.0,
    33522128640.0,
    1323241920.0,
    40840800.0,
    960960.0,
    16380.0,
    182.0,
    1.0,
)
_THETA13 = 5.371920351148152


def matrix_exp(A):
    """exp(A) = sum A^k / k! by scaling and squaring with a degree-13 Padé
    approximant (composite: differentiable through its matmuls and solve)."""
    op = "linalg.matrix_exp"
    _require_matrix(op, A)
    if A._dtype.category != 2:
        raise RuntimeError(
            f"{op}: Expected a floating point or complex tensor as input. Got {_tname(A._dtype)}"
        )
    low = A._dtype not in (D.float32, D.float64)
    X = A.to(D.float32) if low else A
    n = X._shape[-1]
    if X._numel == 0:
        return A.clone()
    if n == 1:
        r = X.exp()
        return r.to(A._dtype) if low else r
    norm1 = float(X.detach().abs().sum(-2).amax().item())
    s = (
        0
        if norm1 <= _THETA13 or not math.isfinite(norm1)
        else int(math.ceil(math.log2(norm1 / _THETA13)))
    )
    if s:
        X = X / float(2**s)

    b = _PADE13
    ident = eye(n, dtype=X._dtype)
    X2 = X @ X
    X4 = X2 @ X2
    X6 = X4 @ X2
    U = X @ (
        X6 @ (b[13] * X6 + b[11] * X4 + b[9] * X2)
        + b[7] * X6
        + b[5] * X4
        + b[3] * X2
        + b[1] * ident
    )
    V = (
        X6 @ (b[12] * X6 + b[10] * X4 + b[8] * X2)
        + b[6] * X6
        + b[4] * X4
        + b[2] * X2
        + b[0] * ident
    )
    r = _linalg_solve(V - U, V + U)
    for _ in range(s):
        r = r @ r
    return r.to(A._dtype) if low else r


def vander(x, *, N=None):
    """The Vandermonde matrix [1, x, x^2, ..., x^(N-1)] of the last dim of x."""
    n = x._shape[-1] if N is None else N
    if n < 1:
        raise RuntimeError("N must be greater than 1.")

    return x.unsqueeze(-1) ** arange(n, dtype=D.int64)


# ------------------------------------------- legacy top-level functions (torch.*)


@defop("det(input)", composite=True)
def _torch_det(input):
    """Determinants of square matrices (torch.det)."""
    return _linalg_det(input)


@defop("logdet(input)", composite=True)
def _torch_logdet(input):
    """log(det(A)): nan for a negative determinant, -inf for zero."""
    sign, logabs = _linalg_slogdet(input)

    return where(sign < 0, math.nan, logabs)


@defop("slogdet(input)", composite=True)
def _torch_slogdet(input):
    """(sign, log|det|) (torch.slogdet)."""
    return R.slogdet(*_linalg_slogdet(input))


@defop("inverse(input, *, out=None)", composite=True, autocast="fp32")
def _torch_inverse(input, out=None):
    """The inverse of square matrices (torch.inverse)."""
    return inv(input, out=out)


@defop("pinverse(input, rcond=1e-15)", composite=True, autocast="fp32")
def _torch_pinverse(input, rcond=1e-15):
    """The pseudo-inverse, singular values below rcond * largest dropped."""
    return _linalg_pinv(input, None, rcond, False)


@defop("cholesky(input, upper=False, *, out=None)", composite=True, autocast="fp32")
def _torch_cholesky(input, upper=False, out=None):
    """The Cholesky factor (torch.cholesky; deprecated in PyTorch for linalg.cholesky)."""
    return cholesky(input, upper=upper, out=out)


@defop("cholesky_solve(input, input2, upper=False, *, out=None)", composite=True, autocast="fp32")
def _torch_cholesky_solve(input, input2, upper=False, out=None):
    """X with A X = B given B (input) and A's Cholesky factor (input2)."""
    op = "cholesky_solve"
    _require_matrix(op, input, square=False, name="B")
    _require_matrix(op, input2, name="A")
    _require_float(op, input2, "cholesky_solve_cpu")
    _same_dtype(op, input2, input)
    L = input2.mT if upper else input2
    y = _linalg_solve_triangular(L, input, False)
    return _out(_linalg_solve_triangular(L.mT, y, True), out)


@defop("cholesky_inverse(input, upper=False, *, out=None)", composite=True, autocast="fp32")
def _torch_cholesky_inverse(input, upper=False, out=None):
    """The inverse of A from its Cholesky factor."""

    n = input._shape[-1]
    ident = eye(n, dtype=input._dtype).expand(input._shape)
    return _torch_cholesky_solve(ident, input, upper, out=out)


@defop("svd(input, some=True, compute_uv=True, *, out=None)", composite=True, autocast="fp32")
def _torch_svd(input, some=True, compute_uv=True, out=None):
    """(U, S, V) with A = U diag(S) V^T (torch.svd: V, not Vh; some=True is the
    reduced SVD; without compute_uv U and V are zero)."""
    if compute_uv:
        U, S, Vh = _linalg_svd(input, not some, True)
        return _out(R.svd(U, S, Vh.mT), out)

    S = _linalg_svd(input, False, _wants_grad(input))[1]
    m, n = input._shape[-2], input._shape[-1]
    b = input._shape[:-2]
    return _out(
        R.svd(zeros(b + (m, m), dtype=input._dtype), S, zeros(b + (n, n), dtype=input._dtype)), out
    )


@defop("qr(input, some=True, *, out=None)", composite=True, autocast="fp32")
def _torch_qr(input, some=True, out=None):
    """(Q, R) (torch.qr: some=True is mode 'reduced', False 'complete')."""
    return _out(R.qr(*_linalg_qr(input, "reduced" if some else "complete")), out)


@defop("matrix_power(input, n)", composite=True)
def _torch_matrix_power(input, n):
    return matrix_power(input, n)


@defop("matrix_exp(input)", composite=True)
def _torch_matrix_exp(input):
    return matrix_exp(input)


@defop(
    "triangular_solve(input, A, upper=True, transpose=False, unitriangular=False, *, out=None)",
    composite=True,
    autocast="fp32",
)
def _torch_triangular_solve(input, A, upper=True, transpose=False, unitriangular=False, out=None):
    """(solution, cloned_coefficient): X with op(A) X = B, B = input (deprecated
    in PyTorch for linalg.solve_triangular, which reverses the arguments)."""
    op = "triangular_solve"
    _require_matrix(op, input, square=False, name="B")
    _require_matrix(op, A)
    _require_float(op, A, "triangular_solve_cpu")
    _same_dtype(op, A, input)
    a = A.mT if transpose else A
    x = _linalg_solve_triangular(a, input, upper != transpose, unitriangular)
    return _out(R.triangular_solve(x, A.clone()), out)
