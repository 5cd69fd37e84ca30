"""Statistical and utility functions of the array API standard (reductions over
``axis``: None for all, an int, or a tuple; ``axis=()`` reduces nothing)."""

import builtins as _builtins

import ember_core as ec
from ember_core._tensor import dtype as D
from ember_core.array_api._helpers import axes_arg, check_array, dtype_arg


def _no_axes(x, axis):
    return isinstance(axis, tuple) and len(axis) == 0 and x.ndim > 0


def max(x, /, *, axis=None, keepdims=False):  # noqa: A001 - the standard's name
    check_array(x)
    if _no_axes(x, axis):
        return x.clone()
    return ec.amax(x, axes_arg(axis, x.ndim), keepdims)


def min(x, /, *, axis=None, keepdims=False):  # noqa: A001
    check_array(x)
    if _no_axes(x, axis):
        return x.clone()
    return ec.amin(x, axes_arg(axis, x.ndim), keepdims)


def mean(x, /, *, axis=None, keepdims=False):
    check_array(x)
    if _no_axes(x, axis):
        return x.clone()
    return ec.mean(x, axes_arg(axis, x.ndim), keepdims)


def sum(x, /, *, axis=None, dtype=None, keepdims=False):  # noqa: A001
    check_array(x)
    dt = dtype_arg(dtype)
    if _no_axes(x, axis):
        return x.to(dt or _sum_dtype(x), copy=True)
    return ec.sum(x, axes_arg(axis, x.ndim), keepdims, dtype=dt)


def _sum_dtype(x):
    return D.int64 if x.dtype.category < 2 else x.dtype


def prod(x, /, *, axis=None, dtype=None, keepdims=False):
    check_array(x)
    dt = dtype_arg(dtype) or _sum_dtype(x)
    if _no_axes(x, axis):
        return x.to(dt, copy=True)
    axes = axes_arg(axis, x.ndim)
    r = x.to(dt)
    if x.ndim == 0:
        return r.clone()
    for a in sorted(axes, reverse=True):
        r = ec.prod(r, a, True, dtype=dt)
    if not keepdims:
        r = r.reshape([s for i, s in enumerate(r.shape) if i not in axes])
    return r


def std(x, /, *, axis=None, correction=0.0, keepdims=False):
    check_array(x)
    if _no_axes(x, axis):
        return ec.sqrt(_var_of_each(x, correction))
    return ec.std(x, axes_arg(axis, x.ndim), keepdim=keepdims, correction=correction)


def var(x, /, *, axis=None, correction=0.0, keepdims=False):
    check_array(x)
    if _no_axes(x, axis):
        return _var_of_each(x, correction)
    return ec.var(x, axes_arg(axis, x.ndim), keepdim=keepdims, correction=correction)


def _var_of_each(x, correction):
    """The variance of each element on its own (a reduction over no axes): 0, or
    NaN once the correction leaves no degrees of freedom; NaN for NaN and inf."""
    return (x - x) ** 2 / _builtins.max(1 - correction, 0)


def _cumulative(name, fn, init, x, axis, dtype, include_initial):
    check_array(x)
    if axis is None:
        if x.ndim != 1:
            raise ValueError(f"{name}: axis is required for arrays of dimension {x.ndim}")
        axis = 0
    (a,) = axes_arg(axis, x.ndim)
    dt = dtype_arg(dtype)
    r = fn(x, a, dtype=dt)
    if include_initial:
        shape = list(r.shape)
        shape[a] = 1
        r = ec.cat([ec.full(shape, init, dtype=r.dtype), r], a)
    return r


def cumulative_sum(x, /, *, axis=None, dtype=None, include_initial=False):
    """Running sums along axis (with a leading 0 when include_initial)."""
    return _cumulative("cumulative_sum", ec.cumsum, 0, x, axis, dtype, include_initial)


def cumulative_prod(x, /, *, axis=None, dtype=None, include_initial=False):
    """Running products along axis (with a leading 1 when include_initial)."""
    return _cumulative("cumulative_prod", ec.cumprod, 1, x, axis, dtype, include_initial)


def all(x, /, *, axis=None, keepdims=False):  # noqa: A001
    check_array(x)
    if _no_axes(x, axis):
        return x.to(D.bool_, copy=True)
    r = ec.all(x, axes_arg(axis, x.ndim), keepdims)
    return r if r.dtype is D.bool_ else r.to(D.bool_)


def any(x, /, *, axis=None, keepdims=False):  # noqa: A001
    check_array(x)
    if _no_axes(x, axis):
        return x.to(D.bool_, copy=True)
    r = ec.any(x, axes_arg(axis, x.ndim), keepdims)
    return r if r.dtype is D.bool_ else r.to(D.bool_)


def count_nonzero(x, /, *, axis=None, keepdims=False):
    check_array(x)
    axes = axes_arg(axis, x.ndim)
    if _no_axes(x, axis):
        return (x != 0).to(D.int64)
    r = ec.count_nonzero(x, axes) if axes else (x != 0).to(D.int64)
    if keepdims:
        r = r.reshape([1 if i in axes else s for i, s in enumerate(x.shape)])
    return r


def diff(x, /, *, axis=-1, n=1, prepend=None, append=None):
    """The n-th discrete difference along axis (out[i] = x[i+1] - x[i])."""
    check_array(x)
    if x.ndim == 0:
        raise ValueError("diff: x must have at least one dimension")
    (a,) = axes_arg(axis, x.ndim)
    parts = [p for p in (prepend, x, append) if p is not None]
    if len(parts) > 1:
        x = ec.cat(parts, a)
    for _ in range(n):
        hi = x.narrow(a, 1, x.shape[a] - 1) if x.shape[a] else x
        lo = x.narrow(a, 0, x.shape[a] - 1) if x.shape[a] else x
        x = ec.ne(hi, lo) if x.dtype is D.bool_ else hi - lo
    return x


__all__ = [
    "all",
    "any",
    "count_nonzero",
    "cumulative_prod",
    "cumulative_sum",
    "diff",
    "max",
    "mean",
    "min",
    "prod",
    "std",
    "sum",
    "var",
]
