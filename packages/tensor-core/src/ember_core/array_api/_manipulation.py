"""Manipulation functions of the array API standard."""

import ember_core as ec
from ember_core._base import shape as _shape
from ember_core._tensor import dtype as D
from ember_core.array_api._helpers import axes_arg, check_array


def _common(arrays, op):
    arrays = list(arrays)
    if not arrays:
        raise ValueError(f"{op}: needs at least one array")
    for a in arrays:
        check_array(a, "arrays")
    dt = arrays[0].dtype
    for a in arrays[1:]:
        dt = D.promote_types(dt, a.dtype)
    return [a if a.dtype is dt else a.to(dt) for a in arrays]


def broadcast_arrays(*arrays):
    """The arrays broadcast against each other (views)."""
    for a in arrays:
        check_array(a, "arrays")
    shape = _shape.broadcast_shapes(*(tuple(a.shape) for a in arrays), op="broadcast_arrays")
    return tuple(a.expand(shape) for a in arrays)


def broadcast_shapes(*shapes):
    """The shape the given shapes broadcast to (2025.12)."""
    return tuple(_shape.broadcast_shapes(*(tuple(s) for s in shapes), op="broadcast_shapes"))


def broadcast_to(x, /, shape):
    check_array(x)
    shape = tuple(shape)
    try:
        _shape.broadcast_shapes(tuple(x.shape), shape, op="broadcast_to")
        if len(shape) < x.ndim:
            raise RuntimeError
    except RuntimeError:
        raise ValueError(
            f"broadcast_to: an array of shape {tuple(x.shape)} cannot be broadcast to {shape}"
        ) from None
    return ec.broadcast_to(x, shape)


def concat(arrays, /, *, axis=0):
    """The arrays joined along axis (flattened first when axis is None)."""
    arrays = _common(arrays, "concat")
    if axis is not None and any(a.ndim == 0 for a in arrays):
        raise ValueError("concat: zero-dimensional arrays cannot be concatenated")
    if axis is None:
        return ec.cat([a.reshape(-1) for a in arrays])
    return ec.cat(arrays, axis)


def expand_dims(x, /, axis=0):
    check_array(x)
    if not -x.ndim - 1 <= axis <= x.ndim:
        raise IndexError(
            f"expand_dims: axis {axis} is out of bounds for an array of dimension {x.ndim}"
        )
    return x.unsqueeze(axis)


def flip(x, /, *, axis=None):
    check_array(x)
    return ec.flip(x, axes_arg(axis, x.ndim)) if x.ndim else x.clone()


def moveaxis(x, source, destination, /):
    check_array(x)
    src = axes_arg(source, x.ndim)  # IndexError out of bounds, ValueError repeated
    dst = axes_arg(destination, x.ndim)
    if len(src) != len(dst):
        raise ValueError(
            f"moveaxis: source {source} and destination {destination} differ in length"
        )
    return ec.movedim(x, src, dst)


def permute_dims(x, /, axes):
    return ec.permute(check_array(x), tuple(axes))


def repeat(x, repeats, /, *, axis=None):
    """Each element (or slice along axis) repeated ``repeats`` times, like NumPy's
    repeat; repeats is an int or a 1-d integer array with one count per element."""
    check_array(x)
    if axis is None:
        x = x.reshape(-1)
        axis = 0
    (a,) = axes_arg(axis, x.ndim)
    n = x.shape[a]
    if isinstance(repeats, int):
        if repeats < 0:
            raise ValueError("repeat: repeats must be non-negative")
        idx = ec.arange(n * repeats) // repeats if repeats else ec.zeros(0, dtype=D.int64)
    else:
        check_array(repeats, "repeats")
        if repeats.ndim > 1 or (repeats.ndim == 1 and repeats.shape[0] not in (1, n)):
            raise ValueError(
                f"repeat: repeats must have 1 or {n} elements, got shape {tuple(repeats.shape)}"
            )
        r = repeats.reshape(-1).to(D.int64)
        if r.numel() and r.min().item() < 0:
            raise ValueError("repeat: repeats must be non-negative")
        if r.numel() == 1:
            return repeat(x, int(r.item()), axis=a)
        ends = ec.cumsum(r, 0)
        total = int(ends[-1].item()) if n else 0
        idx = ec.searchsorted(ends, ec.arange(total), right=True)
    return ec.index_select(x, a, idx)


def reshape(x, /, shape, *, copy=None):
    """x with a new shape: a view when possible; copy=True always copies, copy=False
    raises ValueError when a copy would be needed."""
    check_array(x)
    shape = tuple(shape)
    if copy:
        return x.clone().reshape(shape)
    if copy is False:
        try:
            return x.view(shape)
        except RuntimeError as e:
            raise ValueError(f"reshape: copy=False, but the reshape needs a copy ({e})") from None
    return x.reshape(shape)


def roll(x, /, shift, *, axis=None):
    check_array(x)
    if axis is None:
        return ec.roll(x, shift)
    return ec.roll(x, shift, axis)


def squeeze(x, /, axis):
    """x without the size-1 dims ``axis``; ValueError for a dim of another size."""
    check_array(x)
    axes = axes_arg(axis, x.ndim)
    for a in axes:
        if x.shape[a] != 1:
            raise ValueError(f"squeeze: cannot squeeze axis {a} of size {x.shape[a]}")
    return x.reshape([s for i, s in enumerate(x.shape) if i not in axes])


def stack(arrays, /, *, axis=0):
    return ec.stack(_common(arrays, "stack"), axis)


def tile(x, repetitions, /):
    return ec.tile(check_array(x), tuple(repetitions))


def unstack(x, /, *, axis=0):
    """The slices of x along axis, as a tuple."""
    check_array(x)
    (a,) = axes_arg(axis, x.ndim)
    return tuple(x.unbind(a))


__all__ = [
    "broadcast_arrays",
    "broadcast_shapes",
    "broadcast_to",
    "concat",
    "expand_dims",
    "flip",
    "moveaxis",
    "permute_dims",
    "repeat",
    "reshape",
    "roll",
    "squeeze",
    "stack",
    "tile",
    "unstack",
]
