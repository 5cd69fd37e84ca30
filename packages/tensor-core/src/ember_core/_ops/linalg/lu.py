"""torch.linalg's LU family built on the packed LU factorization (getrf, in
linalg.py): lu, lu_unpack, lu_solve (left/right, adjoint), and the tensor
inverse/solve and Householder product; geqrf, orgqr and ormqr; the legacy
torch.lu/torch.lu_solve; and LDL^T.  All are composites of differentiable
ops (triangular solves, tril/triu, matmul), so their gradients come from those
ops and from lu_factor's formula; pivots and permutations are integer data.
"""

import collections
import math

import numpy as np

from ember_core import linalg as L
from ember_core._base.dispatch import defop
from ember_core._base.lib import check
from ember_core._base.shape import broadcast_shapes
from ember_core._tensor import dtype as D
from ember_core._tensor.tensor import Tensor

_LU = collections.namedtuple("linalg_lu", ["P", "L", "U"])
_LU_UNPACK = collections.namedtuple("lu_unpack", ["P", "L", "U"])


def _ec():
    import ember_core

    return ember_core


def _out(r, out):
    if out is None:
        return r
    if not isinstance(out, (tuple, list)) or not all(isinstance(o, Tensor) for o in out):
        raise TypeError(
            f"argument 'out' must be a tuple of {len(r)} Tensors, not {type(out).__name__}"
        )
    for o, t in zip(out, r, strict=True):
        o.resize_(t.shape).copy_(t)
    return out


def _permutation(pivots, m, dtype, device):
    """P (batch, m, m) with A = P L U, from LAPACK's 1-based row swaps."""
    piv = np.asarray(pivots.detach().cpu().numpy(), dtype=np.int64).reshape(-1, pivots.shape[-1])
    batch = tuple(pivots.shape[:-1])
    perms = np.tile(np.arange(m), (piv.shape[0], 1))
    for b in range(piv.shape[0]):
        p = perms[b]
        for i, j in enumerate(piv[b]):
            j = int(j) - 1
            if not 0 <= j < m:
                raise RuntimeError(
                    f"torch.lu_unpack: LU_pivots contains an invalid pivot {j + 1} "
                    f"(expected values in [1, {m}])"
                )
            p[i], p[j] = p[j], p[i]
    # row i of L U is row perm[i] of A:  P^T = I[perm],  P = I[perm]^T
    eye = np.eye(m)
    P = np.stack([eye[p].T for p in perms]) if perms.shape[0] else np.zeros((0, m, m))
    return _ec().tensor(P.reshape(batch + (m, m)), dtype=dtype, device=device)


@defop(method=False, composite=True)
def lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True, *, out=None):
    """(P, L, U) from lu_factor's packed LU and pivots."""
    ec = _ec()
    if not isinstance(LU_data, Tensor) or LU_data.dim() < 2:
        raise RuntimeError("torch.lu_unpack: Expected tensor with 2 or more dimensions.")
    if LU_pivots.dtype is not D.int32:
        raise RuntimeError(
            "torch.lu_unpack: LU_pivots is expected to be a contiguous tensor of torch.int32 "
            f"dtype. Note: this function is intended to be used with the output produced by "
            f"torch.linalg.lu_factor. Got {LU_pivots.dtype}"
        )
    m, n = LU_data.shape[-2], LU_data.shape[-1]
    k = min(m, n)
    empty = ec.empty(0, dtype=LU_data.dtype, device=LU_data.device)
    if unpack_data:
        L = LU_data[..., :, :k].tril(-1) + ec.eye(m, k, dtype=LU_data.dtype, device=LU_data.device)
        U = LU_data[..., :k, :].triu()
    else:
        L = U = empty
    P = _permutation(LU_pivots, m, LU_data.dtype, LU_data.device) if unpack_pivots else empty
    return _out(_LU_UNPACK(P, L, U), out)


def lu(A, *, pivot=True, out=None):
    """A = P L U (partial pivoting): P permutation, L unit lower, U upper."""
    ec = _ec()
    LU, piv = ec.linalg.lu_factor(A, pivot=pivot)
    P, L, U = lu_unpack(LU, piv)
    return _out(_LU(P, L, U), out)


def lu_solve(LU, pivots, B, *, left=True, adjoint=False, out=None):
    """Solve A X = B (or X A = B with left=False; A^H with adjoint=True) from
    lu_factor's output."""
    ec = _ec()
    op = "linalg.lu_solve"
    if LU.dim() < 2 or LU.shape[-1] != LU.shape[-2]:
        raise RuntimeError(
            f"{op}: Expected LU to be a batch of square matrices, but got {tuple(LU.shape)}"
        )
    if B.dim() < 2:
        raise RuntimeError(
            f"{op}: Expected B to have at least 2 dimensions, but it has {B.dim()} "
            "dimensions instead"
        )
    n = LU.shape[-1]
    if (B.shape[-2] if left else B.shape[-1]) != n:
        side = "rows" if left else "columns"
        raise RuntimeError(
            f"{op}: Incompatible shapes of A and B for the equation "
            f"{'AX = B' if left else 'XA = B'} ({n}x{n} and {B.shape[-2]}x{B.shape[-1]}): "
            f"B must have {n} {side}"
        )
    if LU.dtype != B.dtype:
        raise RuntimeError(
            f"{op}: Expected LU and B to have the same dtype, but found LU of type "
            f"{LU.dtype} and B of type {B.dtype} instead"
        )
    P, L, U = lu_unpack(LU, pivots)
    if not left:
        # X A = B  <=>  A^H X^H = B^H
        X = lu_solve(LU, pivots, B.mT, left=True, adjoint=not adjoint).mT
        return out.copy_(X) if out is not None else X
    st = ec.linalg.solve_triangular
    if not adjoint:
        Y = st(L, P.mT @ B, upper=False, unitriangular=True)
        X = st(U, Y, upper=True)
    else:
        Y = st(U.mT, B, upper=False)
        X = P @ st(L.mT, Y, upper=True, unitriangular=True)
    return out.resize_(X.shape).copy_(X) if out is not None else X


@defop(
    "linalg_tensorinv(A, ind=2, *, out=None)",
    method=False,
    public=False,
    composite=True,
    autocast="fp32",
)
def tensorinv(A, ind=2, out=None):
    """The inverse of A seen as a map from its last dims to its first ``ind`` dims."""
    ec = _ec()
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    rows, cols = tuple(A.shape[:ind]), tuple(A.shape[ind:])
    pr, pc = math.prod(rows), math.prod(cols)
    if pr != pc:
        raise RuntimeError(
            f"Expected self to satisfy the requirement prod(self.shape[ind:]) == "
            f"prod(self.shape[:ind]), but got {pc} != {pr}"
        )
    r = ec.linalg.inv(A.reshape(pr, pc)).reshape(cols + rows)
    return out.resize_(r.shape).copy_(r) if out is not None else r


@defop(
    "linalg_tensorsolve(A, B, dims=None, *, out=None)",
    method=False,
    public=False,
    composite=True,
    autocast="fp32",
)
def tensorsolve(A, B, dims=None, out=None):
    """X with tensordot(A, X, X.ndim) == B."""
    ec = _ec()
    if dims is not None:
        nd = A.dim()
        dims = [d % nd for d in dims]
        keep = [d for d in range(nd) if d not in dims]
        A = A.permute(keep + dims)
    res_shape = tuple(A.shape[B.dim() :])
    nb = B.numel()
    nr = math.prod(res_shape)
    if math.prod(A.shape[: B.dim()]) != nb or nb != nr:
        raise RuntimeError(
            f"Expected self to satisfy the requirement prod(self.shape[other.ndim:]) == "
            f"prod(self.shape[:other.ndim]), but got {nr} != {math.prod(A.shape[: B.dim()])}"
        )
    x = ec.linalg.solve(A.reshape(nb, nr), B.reshape(nb, 1)).reshape(res_shape)
    return out.resize_(x.shape).copy_(x) if out is not None else x


@defop(
    "linalg_householder_product(A, tau, *, out=None)",
    method=False,
    public=False,
    composite=True,
    autocast="fp32",
)
def householder_product(A, tau, out=None):
    """The first n columns of H_1 ... H_k, H_i = I - tau_i v_i v_i^H, with v_i the
    i-th column of A below the diagonal and a unit diagonal (LAPACK's orgqr)."""
    ec = _ec()
    op = "torch.linalg.householder_product"
    if A.dim() < 2:
        raise RuntimeError(f"{op}: input must have at least 2 dimensions.")
    m, n = A.shape[-2], A.shape[-1]
    k = tau.shape[-1]
    if m < n:
        raise RuntimeError(
            f"{op}: input.shape[-2] must be greater than or equal to input.shape[-1]"
        )
    if n < k:
        raise RuntimeError(f"{op}: input.shape[-1] must be greater than or equal to tau.shape[-1]")
    if tuple(A.shape[:-2]) != tuple(tau.shape[:-1]):
        raise RuntimeError(
            f"{op}: Expected batch dimensions of tau to be equal to input.shape[:-2]"
        )
    V = A.tril(-1) + ec.eye(m, n, dtype=A.dtype, device=A.device)
    Q = ec.eye(m, n, dtype=A.dtype, device=A.device).expand(tuple(A.shape[:-2]) + (m, n))
    for i in reversed(range(k)):
        v = V[..., :, i : i + 1]  # (..., m, 1)
        Q = Q - tau[..., i, None, None] * (v @ (v.mT @ Q))
    return out.resize_(Q.shape).copy_(Q) if out is not None else Q


# ------------------------------------------------------ geqrf / orgqr / ormqr

_GEQRF = collections.namedtuple("geqrf", ["a", "tau"])


def _geqrf_impl(input, out=None):
    op = "geqrf"
    L._require_matrix(op, input, square=False)
    L._require_float(op, input, "geqrf_cpu")
    m, n = input._shape[-2], input._shape[-1]
    k = min(m, n)
    batch = input._shape[:-2]
    a = L._fortran(input)
    tau = _ec().empty(batch + (k,), dtype=input.dtype, device=input.device)
    info = L._int32(batch, input)
    nb = L._numel(batch)
    if nb and m and n:
        check(
            a._storage._device._k.ec_linalg_geqrf(
                input._dtype.code, nb, m, n, a._ptr, tau._ptr, info._ptr
            ),
            op,
        )
    return _out(_GEQRF(a.mT, tau), out)


def _reflectors(A, k):
    ec = _ec()
    m, n = A.shape[-2], A.shape[-1]
    V = A.tril(-1) + ec.eye(m, n, dtype=A.dtype, device=A.device)
    return [V[..., :, i : i + 1] for i in range(k)]


@defop(composite=True, autocast="fp32")
def orgqr(input, tau):
    """The Q of a geqrf result (linalg.householder_product)."""
    return householder_product(input, tau)


@defop(composite=True, autocast="fp32")
def ormqr(input, tau, other, left=True, transpose=False, *, out=None):
    """other multiplied by Q (or Q^T) of a geqrf result, from the left or the
    right, without forming Q: Q = H_1 ... H_k, H_i = I - tau_i v_i v_i^T."""
    op = "torch.ormqr"
    if input.dim() < 2 or other.dim() < 2:
        raise RuntimeError(f"{op}: input and other must have at least 2 dimensions.")
    k = tau.shape[-1]
    m = other.shape[-2] if left else other.shape[-1]
    if input.shape[-2] != m:
        raise RuntimeError(
            f"{op}: input.shape[-2] must be equal to other.shape[{-2 if left else -1}]"
        )
    if k > input.shape[-1]:
        raise RuntimeError(f"{op}: tau.shape[-1] must be less than or equal to input.shape[-1]")
    vs = _reflectors(input, k)
    order = range(k) if left == transpose else reversed(range(k))
    C = other
    for i in order:
        v, t = vs[i], tau[..., i, None, None]
        if left:
            C = C - t * (v @ (v.mT @ C))
        else:
            C = C - t * ((C @ v) @ v.mT)
    return out.resize_(C.shape).copy_(C) if out is not None else C


geqrf = defop("geqrf(input, *, out=None)", differentiable=False, autocast="fp32")(_geqrf_impl)


# ------------------------------------------------ legacy LU (torch.lu & co.)


@defop("lu(A, pivot=True, get_infos=False, out=None)", composite=True, autocast="fp32")
def _legacy_lu(A, pivot=True, get_infos=False, out=None):
    """torch.lu: (LU, pivots[, infos]) of the packed factorization."""
    L = _ec().linalg
    LU, piv, info = L.lu_factor_ex(A, pivot=pivot)
    if not get_infos and bool((info != 0).any()):
        L.lu_factor(A, pivot=pivot)  # raises PyTorch's singular-matrix error
    r = (LU, piv, info) if get_infos else (LU, piv)
    return r if out is None else _out(r, out)


@defop("lu_solve(b, LU_data, LU_pivots, *, out=None)", composite=True, autocast="fp32")
def _legacy_lu_solve(b, LU_data, LU_pivots, out=None):
    """torch.lu_solve: linalg.lu_solve with b first."""
    return lu_solve(LU_data, LU_pivots, b, out=out)


# ------------------------------------------------------------- LDL^T

_LDL_EX = collections.namedtuple("linalg_ldl_factor_ex", ["LD", "pivots", "info"])
_LDL = collections.namedtuple("linalg_ldl_factor", ["LD", "pivots"])


def ldl_factor_ex(A, *, hermitian=False, check_errors=False, out=None):
    """(LD, pivots, info): Bunch-Kaufman A = L D L^T of a symmetric matrix (its
    lower triangle is read), LAPACK's compact form (sytrf) with 1-based pivots."""

    op = "torch.linalg.ldl_factor_ex"
    if not isinstance(A, Tensor) or A.dim() < 2 or A.shape[-1] != A.shape[-2]:
        shape = tuple(A.shape[-2:]) if isinstance(A, Tensor) and A.dim() >= 2 else None
        raise RuntimeError(
            f"{op}: A must be batches of square matrices, but they are "
            f"{shape[0]} by {shape[1]} matrices"
            if shape
            else f"{op}: The input tensor A must have at least 2 dimensions."
        )
    if not A.dtype.is_floating_point:
        raise RuntimeError(
            f"{op}: Expected a floating point or complex tensor as input. Got {L._tname(A.dtype)}"
        )
    L._require_float(op, A, "ldl_factor_cpu")
    n = A.shape[-1]
    batch = tuple(A.shape[:-2])
    a = L._fortran(A)
    piv = L._int32(batch + (n,), A)
    info = L._int32(batch, A)
    nb = L._numel(batch)
    if nb and n:
        check(
            a._storage._device._k.ec_linalg_ldl_factor(
                A._dtype.code, nb, n, a._ptr, piv._ptr, info._ptr
            ),
            op,
        )
    else:
        info.zero_()
    if check_errors and bool((info != 0).any()):
        code = int(info.reshape(-1)[(info.reshape(-1) != 0).nonzero()[0, 0]].item())
        raise RuntimeError(
            f"{op}: D[{code},{code}] is zero (error code: {code}): the matrix is singular"
        )
    return _out(_LDL_EX(a.mT.tril(), piv, info), out)


def ldl_factor(A, *, hermitian=False, out=None):
    """(LD, pivots) of ldl_factor_ex; a singular D raises."""
    LD, piv, info = ldl_factor_ex(A, hermitian=hermitian)
    if bool((info != 0).any()):
        code = int(info.reshape(-1)[(info.reshape(-1) != 0).nonzero()[0, 0]].item())
        raise RuntimeError(
            f"torch.linalg.ldl_factor: D[{code},{code}] is zero (error code: {code}): the "
            "matrix is singular"
        )
    return _out(_LDL(LD, piv), out)


def ldl_solve(LD, pivots, B, *, hermitian=False, out=None):
    """X with A X = B, from ldl_factor's (LD, pivots); batches broadcast."""

    op = "torch.linalg.ldl_solve"
    if LD.dim() < 2 or LD.shape[-1] != LD.shape[-2]:
        raise RuntimeError(f"{op}: LD must be batches of square matrices")
    if B.dim() < 2:
        raise RuntimeError(f"{op}: B must have at least 2 dimensions")
    n = LD.shape[-1]
    if B.shape[-2] != n:
        raise RuntimeError(
            f"{op}: Incompatible shapes of LD and B for the equation AX = B "
            f"({n}x{n} and {B.shape[-2]}x{B.shape[-1]})"
        )
    if pivots.dtype is not D.int32:
        raise RuntimeError(f"{op}: Expected pivots to be integers. Got {pivots.dtype}")
    if LD.dtype != B.dtype:
        raise RuntimeError(
            f"{op}: Expected LD and B to have the same dtype, but found LD of type "
            f"{LD.dtype} and B of type {B.dtype} instead"
        )
    batch = tuple(broadcast_shapes(tuple(LD.shape[:-2]), tuple(B.shape[:-2]), op=op))
    nrhs = B.shape[-1]
    a = L._fortran(LD, batch)
    piv = pivots.expand(batch + (n,)).contiguous()
    x = L._fortran(B, batch)
    info = L._int32(batch, LD)
    nb = L._numel(batch)
    if nb and n and nrhs:
        check(
            a._storage._device._k.ec_linalg_ldl_solve(
                LD._dtype.code, nb, n, nrhs, a._ptr, piv._ptr, x._ptr, info._ptr
            ),
            op,
        )
    r = x.mT
    return out.resize_(r.shape).copy_(r) if out is not None else r
