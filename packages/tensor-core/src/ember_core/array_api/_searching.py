"""Searching, sorting, set and indexing functions of the array API standard."""

from collections import namedtuple

import ember_core as ec
from ember_core._tensor import dtype as D
from ember_core.array_api._helpers import Array, axes_arg, check_array, promote


def argmax(x, /, *, axis=None, keepdims=False):
    check_array(x)
    return ec.argmax(x, axis, keepdims)


def argmin(x, /, *, axis=None, keepdims=False):
    check_array(x)
    return ec.argmin(x, axis, keepdims)


def isin(x1, x2, /, *, invert=False):
    """Whether each element of x1 is among x2's elements (2025.12); x1 or x2 may
    be a Python int."""
    if not isinstance(x1, Array) and not isinstance(x2, Array):
        raise TypeError("isin: at least one of x1 and x2 must be an array")
    if isinstance(x1, Array) and isinstance(x2, Array):
        x1, x2 = promote(x1, x2)
    if not isinstance(x1, Array):
        return ec.tensor(bool(ec.isin(ec.full((), x1, dtype=x2.dtype), x2)) != invert)
    if not isinstance(x2, Array):
        x2 = ec.full((1,), x2, dtype=x1.dtype)
    return ec.isin(x1, x2, invert=invert)


def nonzero(x, /):
    """The indices of the non-zero elements, one array per dimension."""
    check_array(x)
    if x.ndim == 0:
        raise ValueError("nonzero: zero-dimensional arrays are not supported")
    return ec.nonzero(x, as_tuple=True)


def searchsorted(x1, x2, /, *, side="left", sorter=None):
    """Insertion points of x2's elements into the sorted 1-d array x1."""
    check_array(x1, "x1")
    if x1.ndim != 1:
        raise ValueError("searchsorted: x1 must be one-dimensional")
    if side not in ("left", "right"):
        raise ValueError(f"searchsorted: side must be 'left' or 'right', got {side!r}")
    return ec.searchsorted(x1, x2, side=side, sorter=sorter)


def where(condition, x1, x2, /):
    """Elements of x1 where condition is true, else of x2 (broadcast)."""
    check_array(condition, "condition")
    if not isinstance(x1, Array) and not isinstance(x2, Array):
        x1 = ec.tensor(x1)
    x1, x2 = promote(x1, x2)
    if not isinstance(x1, Array):
        x1 = ec.full((), x1, dtype=x2.dtype)
    if not isinstance(x2, Array):
        x2 = ec.full((), x2, dtype=x1.dtype)
    cond = condition if condition.dtype is D.bool_ else condition.to(D.bool_)
    return ec.where(cond, x1, x2)


def sort(x, /, *, axis=-1, descending=False, stable=True):
    check_array(x)
    return ec.sort(x, axis, descending).values


def argsort(x, /, *, axis=-1, descending=False, stable=True):
    check_array(x)
    return ec.argsort(x, axis, descending)


UniqueAllResult = namedtuple("UniqueAllResult", ["values", "indices", "inverse_indices", "counts"])
UniqueCountsResult = namedtuple("UniqueCountsResult", ["values", "counts"])
UniqueInverseResult = namedtuple("UniqueInverseResult", ["values", "inverse_indices"])


def _unique(x):
    """(values, first indices, inverse (x's shape), counts) of x's distinct values;
    every NaN is distinct, as NaN != NaN."""
    check_array(x)
    flat = x.reshape(-1)
    n = flat.numel()
    values, order = ec.sort(flat, stable=True)
    starts = ec.ones(n, dtype=D.bool_)
    if n > 1:
        starts[1:] = values[1:] != values[:-1]
    first = ec.nonzero(starts, as_tuple=True)[0]
    uniq = values[first]
    bounds = ec.cat([first, ec.full((1,), n, dtype=D.int64)])
    counts = bounds[1:] - bounds[:-1]
    group = ec.cumsum(starts, 0) - 1
    inverse = ec.zeros(n, dtype=D.int64)
    if n:
        inverse.index_copy_(0, order, group)
    return uniq, order[first], inverse.reshape(x.shape), counts


def unique_all(x, /):
    v, i, inv, c = _unique(x)
    return UniqueAllResult(v, i, inv, c)


def unique_counts(x, /):
    v, _, _, c = _unique(x)
    return UniqueCountsResult(v, c)


def unique_inverse(x, /):
    v, _, inv, _ = _unique(x)
    return UniqueInverseResult(v, inv)


def unique_values(x, /):
    return _unique(x)[0]


def take(x, indices, /, *, axis=None):
    """Elements of x at ``indices`` (1-d) along axis (optional for 1-d x)."""
    check_array(x)
    check_array(indices, "indices")
    if axis is None:
        if x.ndim != 1:
            raise ValueError("take: axis is required for arrays of more than one dimension")
        axis = 0
    (a,) = axes_arg(axis, x.ndim)
    if indices.numel() and indices.min().item() < 0:  # negative: counted from the end
        indices = ec.where(indices < 0, indices + x.shape[a], indices)
    return ec.index_select(x, a, indices)


def take_along_axis(x, indices, /, *, axis=-1):
    """Elements of x at ``indices`` along axis (indices shaped like x, broadcast elsewhere)."""
    check_array(x)
    return ec.take_along_dim(x, check_array(indices, "indices"), axis)


__all__ = [
    "argmax",
    "argmin",
    "argsort",
    "isin",
    "nonzero",
    "searchsorted",
    "sort",
    "take",
    "take_along_axis",
    "unique_all",
    "unique_counts",
    "unique_inverse",
    "unique_values",
    "where",
]
