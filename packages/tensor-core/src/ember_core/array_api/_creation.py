"""Creation functions of the array API standard."""

import contextlib

import numpy as np

import ember_core as ec
from ember_core._interop import numpy as _interop
from ember_core._tensor import dtype as D
from ember_core.array_api._helpers import Array, check_array, device_arg, dtype_arg


def _shape(shape):
    return (shape,) if isinstance(shape, int) else tuple(shape)


def arange(start, /, stop=None, step=1, *, dtype=None, device=None):
    """Evenly spaced values in [start, stop) (or [0, start))."""
    device_arg(device)
    if stop is None:
        start, stop = 0, start
    if step != 0 and (stop - start) * step <= 0:  # the standard: empty, not an error
        return ec.arange(0, dtype=dtype_arg(dtype) or _arange_dtype(start, stop, step))
    return ec.arange(start, stop, step, dtype=dtype_arg(dtype))


def _arange_dtype(*values):
    if any(isinstance(v, float) for v in values):
        return D.get_default_dtype()
    return D.int64


def asarray(obj, /, *, dtype=None, device=None, copy=None):
    """An array from an array, a NumPy array, a DLPack or buffer-protocol object, a
    Python scalar or a nested sequence.  copy=None copies only when needed,
    copy=False never (ValueError if it must), copy=True always."""
    device_arg(device)
    dt = dtype_arg(dtype)
    if not isinstance(obj, (Array, np.ndarray, np.generic, list, tuple, bool, int, float)):
        if hasattr(obj, "__dlpack__"):
            obj = from_dlpack(obj)
        else:
            with contextlib.suppress(TypeError):
                obj = np.asarray(memoryview(obj))
    if isinstance(obj, np.ndarray):
        try:
            obj = _interop.wrap_numpy(obj)  # any strides, no read-only warning
        except (TypeError, ValueError):
            if copy is False:
                raise ValueError(
                    f"asarray: cannot share the memory of a {obj.dtype} array"
                ) from None
            return ec.tensor(obj, dtype=dt)
    if isinstance(obj, Array):
        if copy:
            return obj.to(dt or obj.dtype, copy=True)
        if dt is not None and dt is not obj.dtype:
            if copy is False:
                raise ValueError("asarray: copy=False, but converting the dtype needs a copy")
            return obj.to(dt)
        return obj
    if copy is False:
        raise ValueError(f"asarray: copy=False, but a {type(obj).__name__} must be copied")
    # Python data: bool -> bool, int -> int64, float -> the default floating dtype
    return ec.tensor(obj, dtype=dt)


def empty(shape, *, dtype=None, device=None):
    device_arg(device)
    return ec.empty(_shape(shape), dtype=dtype_arg(dtype))


def empty_like(x, /, *, dtype=None, device=None):
    device_arg(device)
    return ec.empty_like(check_array(x), dtype=dtype_arg(dtype))


def eye(n_rows, n_cols=None, /, *, k=0, dtype=None, device=None):
    """A 2-d array with ones on the k-th diagonal."""
    device_arg(device)
    n_cols = n_rows if n_cols is None else n_cols
    out = ec.zeros((n_rows, n_cols), dtype=dtype_arg(dtype) or D.get_default_dtype())
    if -n_rows < k < n_cols:
        out.diagonal(k).fill_(1)
    return out


def from_dlpack(x, /, *, device=None, copy=None):
    """An array sharing the memory of a DLPack producer (copied if copy=True)."""
    device_arg(device)
    own = getattr(ec, "from_dlpack", None)
    if own is not None:
        t = own(x)
    else:
        t = _interop.wrap_numpy(np.from_dlpack(x))
    return t.clone() if copy else t


def full(shape, fill_value, *, dtype=None, device=None):
    device_arg(device)
    return ec.full(_shape(shape), fill_value, dtype=dtype_arg(dtype))


def full_like(x, /, fill_value, *, dtype=None, device=None):
    device_arg(device)
    return ec.full_like(check_array(x), fill_value, dtype=dtype_arg(dtype))


def linspace(start, stop, /, num, *, dtype=None, device=None, endpoint=True):
    """num evenly spaced values from start to stop (stop excluded unless endpoint)."""
    device_arg(device)
    dt = dtype_arg(dtype) or D.get_default_dtype()
    if endpoint:
        return ec.linspace(start, stop, num, dtype=dt)
    return ec.linspace(start, stop, num + 1, dtype=dt)[:num]


def meshgrid(*arrays, indexing="xy"):
    """Coordinate arrays from 1-d arrays ('xy': Cartesian, 'ij': matrix indexing)."""
    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid: indexing must be 'xy' or 'ij', got {indexing!r}")
    for a in arrays:
        check_array(a)
        if a.ndim != 1:
            raise ValueError("meshgrid: every input must be 1-d")
    if len({a.dtype for a in arrays}) > 1:
        raise ValueError("meshgrid: every input must have the same dtype")
    sizes = [a.shape[0] for a in arrays]
    if indexing == "xy" and len(arrays) >= 2:
        sizes[0], sizes[1] = sizes[1], sizes[0]
    out = []
    n = len(arrays)
    for i, a in enumerate(arrays):
        pos = i
        if indexing == "xy" and n >= 2 and i < 2:
            pos = 1 - i
        shape = [1] * n
        shape[pos] = a.shape[0]
        out.append(a.reshape(shape).expand(sizes))
    return tuple(out)


def ones(shape, *, dtype=None, device=None):
    device_arg(device)
    return ec.ones(_shape(shape), dtype=dtype_arg(dtype))


def ones_like(x, /, *, dtype=None, device=None):
    device_arg(device)
    return ec.ones_like(check_array(x), dtype=dtype_arg(dtype))


def tril(x, /, *, k=0):
    return ec.tril(check_array(x), k)


def triu(x, /, *, k=0):
    return ec.triu(check_array(x), k)


def zeros(shape, *, dtype=None, device=None):
    device_arg(device)
    return ec.zeros(_shape(shape), dtype=dtype_arg(dtype))


def zeros_like(x, /, *, dtype=None, device=None):
    device_arg(device)
    return ec.zeros_like(check_array(x), dtype=dtype_arg(dtype))


__all__ = [
    "arange",
    "asarray",
    "empty",
    "empty_like",
    "eye",
    "from_dlpack",
    "full",
    "full_like",
    "linspace",
    "meshgrid",
    "ones",
    "ones_like",
    "tril",
    "triu",
    "zeros",
    "zeros_like",
]
