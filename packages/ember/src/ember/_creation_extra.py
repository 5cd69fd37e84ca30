"""Top-level torch constructors ember_core lacks: the math constants, asarray
(array API copy semantics), frombuffer, the deprecated end-inclusive range,
the window functions, fill and empty_permuted."""

import builtins
import math
import warnings

import numpy as np

import ember_core as ec

_int, _float, _range = builtins.int, builtins.float, builtins.range

__all__ = [
    "asarray",
    "bartlett_window",
    "blackman_window",
    "e",
    "empty_permuted",
    "fill",
    "frombuffer",
    "hamming_window",
    "hann_window",
    "inf",
    "kaiser_window",
    "nan",
    "newaxis",
    "pi",
    "range",
]


# ------------------------------------------------------------------ constants

pi = math.pi
e = math.e
inf = math.inf
nan = math.nan
newaxis = None

# -------------------------------------------------------------- construction


def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=False):
    """A tensor from ``obj`` (array API semantics): shares memory with a tensor or
    a NumPy array when dtype and device allow and ``copy`` is not True; copies
    when it must (``copy=False`` then raises)."""
    if isinstance(obj, ec.Tensor):
        t = obj
    elif isinstance(obj, np.ndarray) and obj.dtype != object:
        t = (
            ec.from_numpy(obj)
            if obj.dtype.kind in "biuf" and obj.dtype.byteorder in "=|<"
            else None
        )
        if t is None:
            if copy is False:
                raise ValueError(f"asarray(): can't alias a NumPy array of dtype {obj.dtype}")
            t = ec.tensor(obj)
            copy = None  # already a copy
    elif hasattr(obj, "__dlpack__") and not isinstance(obj, (list, tuple)):
        t = ec.from_dlpack(obj)
    else:
        if copy is False:
            raise ValueError(f"can't alias Python sequence without copying: {type(obj).__name__}")
        t = ec.tensor(obj, dtype=dtype, device=device)
        copy = None
    needs_conversion = (dtype is not None and t.dtype != dtype) or (
        device is not None and t.device != ec.device(device)
    )
    if needs_conversion:
        if copy is False:
            raise ValueError(
                f"asarray(): can't satisfy dtype={dtype}, device={device} without copying"
            )
        t = t.to(dtype=dtype or t.dtype, device=device or t.device, copy=True)
    elif copy:
        t = t.clone()
    if requires_grad:
        if isinstance(obj, ec.Tensor) and t is obj:
            t = t.detach()
        t.requires_grad_(True)
    return t


def frombuffer(buffer, *, dtype, count=-1, offset=0, requires_grad=False):
    """A 1-D tensor over the memory of a Python buffer (shared, not copied)."""
    np_dtype = ec.empty(0, dtype=dtype).numpy().dtype
    mem = memoryview(buffer)
    nbytes = mem.nbytes
    if nbytes == 0:
        raise ValueError("both buffer length (0) and count (-1) must not be 0")
    if offset < 0 or offset >= nbytes:
        raise ValueError(
            f"offset ({offset} bytes) must be non-negative and no greater than buffer length "
            f"({nbytes} bytes) minus 1"
        )
    if count <= 0 and (nbytes - offset) % np_dtype.itemsize:
        raise ValueError(
            f"buffer length ({nbytes - offset} bytes) after offset ({offset} bytes) must be a "
            f"multiple of element size ({np_dtype.itemsize})"
        )
    if mem.readonly:
        warnings.warn(
            "The given buffer is not writable, and PyTorch does not support non-writable "
            "tensors. This means you can write to the underlying (supposedly non-writable) "
            "buffer using the tensor. You may want to copy the buffer to protect its data or "
            "make it writable before converting it to a tensor. This type of warning will be "
            "suppressed for the rest of this program.",
            UserWarning,
            stacklevel=2,
        )
    arr = np.frombuffer(mem, dtype=np_dtype, count=count, offset=offset)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PyTorch's warning above is the one to see
        t = ec.from_numpy(arr)  # shared; a read-only buffer gives a read-only tensor
    if requires_grad:
        t.requires_grad_(True)
    return t


def range(start, end, step=1, *, dtype=None, device=None, requires_grad=False):  # noqa: A001
    """Deprecated: values from start to end *inclusive*, in the default float dtype."""
    warnings.warn(
        "torch.range is deprecated and will be removed in a future release because its "
        "behavior is inconsistent with Python's range builtin. Instead, use torch.arange, "
        "which produces values in [start, end).",
        UserWarning,
        stacklevel=2,
    )
    if step == 0:
        raise RuntimeError("range: step must be nonzero")
    if (end - start) * step < 0:
        raise RuntimeError("upper bound and larger bound inconsistent with step sign")
    n = _int(math.floor((end - start) / step)) + 1
    values = start + step * np.arange(n, dtype=np.float64)
    dt = dtype or ec.get_default_dtype()
    r = ec.tensor(values, dtype=dt, device=device)
    return r.requires_grad_(True) if requires_grad else r


# -------------------------------------------------------------- windows


def _window(name, window_length, periodic, dtype, device, requires_grad, fn):
    if window_length < 0:
        raise RuntimeError(
            f"{name} requires non-negative window_length, got window_length={window_length}"
        )
    dt = dtype or ec.get_default_dtype()
    if not dt.is_floating_point:
        raise RuntimeError(f"{name} expects floating point dtypes, got: {dt}")
    if window_length <= 1:
        r = ec.ones(window_length, dtype=dt, device=device)
    else:
        n_total = window_length + 1 if periodic else window_length
        n = np.arange(window_length, dtype=np.float64)
        r = ec.tensor(fn(n, n_total - 1), dtype=dt, device=device)
    return r.requires_grad_(True) if requires_grad else r


def hann_window(
    window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False
):
    """0.5 - 0.5 cos(2 pi n / (N - 1)); periodic windows use N + 1 points and drop the last."""
    return _window(
        "hann_window",
        window_length,
        periodic,
        dtype,
        device,
        requires_grad,
        lambda n, m: 0.5 - 0.5 * np.cos(2 * np.pi * n / m),
    )


def hamming_window(
    window_length,
    periodic=True,
    alpha=0.54,
    beta=0.46,
    *,
    dtype=None,
    layout=None,
    device=None,
    requires_grad=False,
):
    return _window(
        "hamming_window",
        window_length,
        periodic,
        dtype,
        device,
        requires_grad,
        lambda n, m: alpha - beta * np.cos(2 * np.pi * n / m),
    )


def blackman_window(
    window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False
):
    return _window(
        "blackman_window",
        window_length,
        periodic,
        dtype,
        device,
        requires_grad,
        lambda n, m: 0.42 - 0.5 * np.cos(2 * np.pi * n / m) + 0.08 * np.cos(4 * np.pi * n / m),
    )


def bartlett_window(
    window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False
):
    return _window(
        "bartlett_window",
        window_length,
        periodic,
        dtype,
        device,
        requires_grad,
        lambda n, m: 1 - np.abs(2 * n / m - 1),
    )


def kaiser_window(
    window_length,
    periodic=True,
    beta=12.0,
    *,
    dtype=None,
    layout=None,
    device=None,
    requires_grad=False,
):
    """I0(beta sqrt(1 - ((n - m/2) / (m/2))^2)) / I0(beta)."""

    def kaiser(n, m):
        ratio = np.clip(1 - ((n - m / 2) / (m / 2)) ** 2, 0, None)
        vals = ec.tensor(beta * np.sqrt(ratio), dtype=ec.float64)
        return (ec.i0(vals) / ec.i0(ec.tensor(_float(beta), dtype=ec.float64))).numpy()

    return _window("kaiser_window", window_length, periodic, dtype, device, requires_grad, kaiser)


# ------------------------------------------------ small remaining surface


def fill(input, value):
    """A new tensor shaped like input, filled with value (out-of-place fill_)."""
    return input.clone().fill_(value)


def empty_permuted(
    size,
    physical_layout,
    *,
    dtype=None,
    layout=None,
    device=None,
    requires_grad=False,
    pin_memory=False,
):
    """An uninitialized tensor of ``size`` whose memory holds its dimensions in the
    order ``physical_layout`` (outermost first)."""
    size, order = tuple(size), tuple(physical_layout)
    if sorted(order) != list(_range(len(size))):
        raise RuntimeError(
            f"Number of dimensions in size does not match the length of the physical_layout; "
            f"i.e. len(size) = {len(size)} is not equal to len(physical_layout) = {len(order)}"
        )
    phys = ec.empty([size[d] for d in order], dtype=dtype, device=device)
    inverse = [order.index(d) for d in _range(len(size))]
    r = phys.permute(inverse)
    return r.requires_grad_(True) if requires_grad else r
