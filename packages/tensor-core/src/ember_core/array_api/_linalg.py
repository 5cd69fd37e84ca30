"""Linear algebra functions of the array API standard's main namespace."""

import ember_core as ec
from ember_core.array_api._helpers import check_array, promote


def matmul(x1, x2, /):
    check_array(x1, "x1")
    check_array(x2, "x2")
    x1, x2 = promote(x1, x2)
    return ec.matmul(x1, x2)


def matrix_transpose(x, /):
    """The last two dims of x swapped."""
    check_array(x)
    if x.ndim < 2:
        raise ValueError("matrix_transpose: x must have at least two dimensions")
    return x.mT


def tensordot(x1, x2, /, *, axes=2):
    """Sum of products over the last ``axes`` dims of x1 and the first of x2 (or
    over the listed axes)."""
    check_array(x1, "x1")
    check_array(x2, "x2")
    x1, x2 = promote(x1, x2)
    if isinstance(axes, int):
        if axes < 0:
            raise ValueError(f"tensordot: axes must be non-negative, got {axes}")
        a1 = list(range(x1.ndim - axes, x1.ndim))
        a2 = list(range(axes))
    else:
        a1, a2 = list(axes[0]), list(axes[1])
    if len(a1) != len(a2) or any(
        not (-x1.ndim <= i < x1.ndim and -x2.ndim <= j < x2.ndim) or x1.shape[i] != x2.shape[j]
        for i, j in zip(a1, a2, strict=True)
    ):
        raise ValueError(
            f"tensordot: cannot contract axes {a1} of x1 {tuple(x1.shape)} with axes {a2} of "
            f"x2 {tuple(x2.shape)}"
        )
    return ec.tensordot(x1, x2, dims=(a1, a2) if not isinstance(axes, int) else axes)


def vecdot(x1, x2, /, *, axis=-1):
    """The dot product of x1 and x2 along axis (the other dims broadcast)."""
    check_array(x1, "x1")
    check_array(x2, "x2")
    x1, x2 = promote(x1, x2)
    n = min(x1.ndim, x2.ndim)
    if axis >= 0:  # the standard counts axis from the end only: [-N, -1]
        raise ValueError(f"vecdot: axis must be negative, got {axis}")
    if axis < -n:
        raise IndexError(f"vecdot: axis {axis} is out of bounds for {n}-d arrays")
    a = axis
    if x1.ndim < -a or x2.ndim < -a or x1.shape[a] != x2.shape[a]:
        raise ValueError(
            f"vecdot: x1 {tuple(x1.shape)} and x2 {tuple(x2.shape)} differ along axis {axis}"
        )
    return (x1 * x2).sum(a, dtype=x1.dtype)  # integer sums keep their dtype


__all__ = ["matmul", "matrix_transpose", "tensordot", "vecdot"]
