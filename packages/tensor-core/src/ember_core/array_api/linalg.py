"""The array API standard's ``linalg`` extension (2024.12) over ember_core.linalg,
for real floating dtypes (ember has no complex ones).

Functions that need a floating input raise TypeError for integer and boolean
arrays, as the standard's reference does, rather than computing in some other
dtype; results of decompositions are the standard's named tuples.
"""

from collections import namedtuple

import ember_core as ec
from ember_core import linalg as _L
from ember_core._tensor import dtype as D
from ember_core.array_api._helpers import check_array, dtype_arg, promote
from ember_core.array_api._linalg import matmul, matrix_transpose, tensordot, vecdot

EighResult = namedtuple("EighResult", ["eigenvalues", "eigenvectors"])
QRResult = namedtuple("QRResult", ["Q", "R"])
SlogdetResult = namedtuple("SlogdetResult", ["sign", "logabsdet"])
SVDResult = namedtuple("SVDResult", ["U", "S", "Vh"])


def _floating(x, op, name="x"):
    check_array(x, name)
    if x.dtype.category != 2:
        raise TypeError(f"linalg.{op}: {name} must have a floating-point dtype, got {x.dtype}")
    return x


def _matrices(x, op, *, square=True):
    _floating(x, op)
    if x.ndim < 2:
        raise ValueError(
            f"linalg.{op}: x must have at least two dimensions, got shape {tuple(x.shape)}"
        )
    if square and x.shape[-1] != x.shape[-2]:
        raise ValueError(
            f"linalg.{op}: x must be a stack of square matrices, got shape {tuple(x.shape)}"
        )
    return x


def cholesky(x, /, *, upper=False):
    return _L.cholesky(_matrices(x, "cholesky"), upper=upper)


def cross(x1, x2, /, *, axis=-1):
    """The cross product of 3-vectors along axis (the other dims broadcast)."""
    check_array(x1, "x1")
    check_array(x2, "x2")
    if x1.dtype.category == 0 or x2.dtype.category == 0:
        raise TypeError("linalg.cross: x1 and x2 must have numeric dtypes")
    x1, x2 = promote(x1, x2)
    if not (-min(x1.ndim, x2.ndim) <= axis < 0):
        if axis >= 0:
            raise ValueError("linalg.cross: axis must be negative (counted from the end)")
        raise IndexError(f"linalg.cross: axis {axis} is out of bounds")
    if x1.shape[axis] != 3 or x2.shape[axis] != 3:
        raise ValueError(
            f"linalg.cross: x1 {tuple(x1.shape)} and x2 {tuple(x2.shape)} need size 3 along "
            f"axis {axis}"
        )
    return _L.cross(x1, x2, dim=axis)


def det(x, /):
    return _L.det(_matrices(x, "det"))


def diagonal(x, /, *, offset=0):
    check_array(x)
    if x.ndim < 2:
        raise ValueError("linalg.diagonal: x must have at least two dimensions")
    return _L.diagonal(x, offset=offset)


def eigh(x, /):
    w, v = _L.eigh(_matrices(x, "eigh"))
    return EighResult(w, v)


def eigvalsh(x, /):
    return _L.eigvalsh(_matrices(x, "eigvalsh"))


def inv(x, /):
    return _L.inv(_matrices(x, "inv"))


def matrix_norm(x, /, *, keepdims=False, ord="fro"):  # noqa: A002 - the standard's name
    return _L.matrix_norm(_matrices(x, "matrix_norm", square=False), ord, (-2, -1), keepdims)


def matrix_power(x, n, /):
    """x @ x @ ... (n times); the inverse's power for n < 0 (floating x only)."""
    if n < 0:
        _matrices(x, "matrix_power")
    else:
        check_array(x)
    return _L.matrix_power(x, n)


def matrix_rank(x, /, *, rtol=None):
    return _L.matrix_rank(_matrices(x, "matrix_rank", square=False), rtol=rtol)


def outer(x1, x2, /):
    check_array(x1, "x1")
    check_array(x2, "x2")
    if x1.ndim != 1 or x2.ndim != 1:
        raise ValueError(
            f"linalg.outer: x1 and x2 must be 1-d, got {tuple(x1.shape)} and {tuple(x2.shape)}"
        )
    x1, x2 = promote(x1, x2)
    return ec.outer(x1, x2)


def pinv(x, /, *, rtol=None):
    return _L.pinv(_matrices(x, "pinv", square=False), rtol=rtol)


def qr(x, /, *, mode="reduced"):
    if mode not in ("reduced", "complete"):
        raise ValueError(f"linalg.qr: mode must be 'reduced' or 'complete', got {mode!r}")
    q, r = _L.qr(_matrices(x, "qr", square=False), mode)
    return QRResult(q, r)


def slogdet(x, /):
    sign, logabsdet = _L.slogdet(_matrices(x, "slogdet"))
    return SlogdetResult(sign, logabsdet)


def solve(x1, x2, /):
    """The solution of x1 @ out = x2; x2 is a vector when 1-d, else a stack of
    matrices (broadcast against x1's batch dims)."""
    _matrices(x1, "solve")
    _floating(x2, "solve", "x2")
    x1, x2 = promote(x1, x2)
    if x2.ndim == 1:
        if x2.shape[0] != x1.shape[-1]:
            raise ValueError(
                f"linalg.solve: x1 {tuple(x1.shape)} and x2 {tuple(x2.shape)} do not match"
            )
        return _L.solve(x1, x2.reshape(-1, 1)).squeeze(-1)
    return _L.solve(x1, x2)


def svd(x, /, *, full_matrices=True):
    u, s, vh = _L.svd(_matrices(x, "svd", square=False), full_matrices)
    return SVDResult(u, s, vh)


def svdvals(x, /):
    return _L.svdvals(_matrices(x, "svdvals", square=False))


def trace(x, /, *, offset=0, dtype=None):
    """The sums along the offset diagonal of the last two dims; integer sums use
    the default integer dtype, like sum."""
    check_array(x)
    if x.ndim < 2:
        raise ValueError("linalg.trace: x must have at least two dimensions")
    dt = dtype_arg(dtype)
    if dt is None:
        dt = D.int64 if x.dtype.category < 2 else x.dtype
    d = _L.diagonal(x, offset=offset)
    return ec.sum(d.to(dt), -1, dtype=dt)


def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):  # noqa: A002
    _floating(x, "vector_norm")
    return _L.vector_norm(x, ord, axis, keepdims)


__all__ = [
    "EighResult",
    "QRResult",
    "SVDResult",
    "SlogdetResult",
    "cholesky",
    "cross",
    "det",
    "diagonal",
    "eigh",
    "eigvalsh",
    "inv",
    "matmul",
    "matrix_norm",
    "matrix_power",
    "matrix_rank",
    "matrix_transpose",
    "outer",
    "pinv",
    "qr",
    "slogdet",
    "solve",
    "svd",
    "svdvals",
    "tensordot",
    "trace",
    "vecdot",
    "vector_norm",
]
