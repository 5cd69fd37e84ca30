"""Tensor creation: tensor/as_tensor, empty/zeros/ones/full, *_like, new_* (the
Tensor methods), arange, linspace, logspace, eye, the deprecated inclusive range,
empty_permuted and fill (fill_ out of place)."""

import math
import numbers

import numpy as np

from ember_core._base import shape as _shape
from ember_core._base.dispatch import defop
from ember_core._base.lib import check
from ember_core._cuda import runtime as _cuda
from ember_core._ops.pointwise.elementwise import _tname, layout
from ember_core._ops.pointwise.elementwise import pow as _pow
from ember_core._tensor import dtype as D
from ember_core._tensor import storage as _storage
from ember_core._tensor.device import CPU, default_device, to_device
from ember_core._tensor.tensor import Size, Tensor, make, written
from ember_core._tensor.tensor import empty as _empty


def _dev(device):
    dev = to_device(device) or default_device()  # Note [Default device]
    if dev.type == "cuda" and dev.index is None:  # 'cuda': the current device
        from ember_core._tensor.copy import _resolve

        return _resolve(dev)
    return dev


def _alloc(shape, dt, device, pin_memory=False):
    """A fresh tensor on ``device`` (page-locked host memory with ``pin_memory``)."""
    dev = _dev(device)
    if pin_memory:
        if dev.type != "cpu":
            raise RuntimeError(f"pin_memory=True: only CPU memory can be pinned, not {dev}")

        if not _cuda.is_available():
            raise RuntimeError("Cannot access accelerator device when none is available.")
        return _cuda.pinned_empty(shape, dt)
    return _empty(shape, dt, dev)


def _pinned(t, pin_memory):
    return t.pin_memory() if pin_memory else t


def _finish(t, requires_grad):
    if requires_grad:
        t.requires_grad_(True)
    return t


def fill_values(t, value):
    """Fill every element of t (any strides) with a Python number (no version bump)."""
    dt = t._dtype
    if dt.is_complex:
        z = complex(value)
        k = t._storage._device._k
        lay = layout(t._shape, t._stride)
        check(k.ec_fill_complex(len(t._shape), lay, t._ptr, dt.code, z.real, z.imag), "fill_")
        return t
    if isinstance(value, (complex, np.complexfloating)):
        raise RuntimeError(f"value cannot be converted to type {dt.name} without overflow")
    if dt.category == 2:
        f, i = float(value), 0
    elif dt is D.bool_:
        f, i = 0.0, int(bool(value))
    else:
        if isinstance(value, float) and (value != value or math.isinf(value)):
            raise RuntimeError(f"value cannot be converted to type {dt.name} without overflow")
        i = int(value)
        if not dt.min <= i <= dt.max:
            raise RuntimeError(f"value cannot be converted to type {dt.name} without overflow")
        f = float(i)
        if i >= 2**63:  # uint64 above int64: the same bits
            i -= 2**64
    k = t._storage._device._k
    check(k.ec_fill(len(t._shape), layout(t._shape, t._stride), t._ptr, dt.code, f, i), "fill_")
    return t


@defop(
    "empty(*size, dtype=None, device=None, requires_grad=False, pin_memory=False, memory_format=None, out=None)",  # noqa: E501 - one string, as PyTorch spells it
    method=False,
    differentiable=False,
)
def empty(
    size,
    dtype=None,
    device=None,
    requires_grad=False,
    pin_memory=False,
    memory_format=None,
    out=None,
):
    """An uninitialised tensor of the given shape."""
    shape = _shape.as_shape(size, "empty")
    dt = D.to_dtype(dtype) or D.get_default_dtype()
    if out is not None:
        from ember_core._tensor.copy import resize_

        return resize_(out, shape)
    return _finish(_alloc(shape, dt, device, pin_memory), requires_grad)


def empty_like_class(cls, size, dtype=None, device=None, requires_grad=False):
    t = empty(size, dtype=dtype, device=device, requires_grad=requires_grad)
    return t if cls is Tensor else t.as_subclass(cls)


@defop(
    method=False,
    differentiable=False,
)
def empty_strided(size, stride, *, dtype=None, device=None, requires_grad=False):
    """An uninitialised tensor with the given strides."""

    shape = _shape.as_shape(size, "empty_strided")
    stride = tuple(int(s) for s in stride)
    if len(stride) != len(shape):
        raise RuntimeError(
            f"empty_strided: size {list(shape)} and stride {list(stride)} differ in length"
        )
    if any(st < 0 for st in stride):  # the tensor would reach before its storage
        raise RuntimeError(
            f"empty_strided(): Storage size calculation overflowed with sizes={list(shape)} "
            f"and strides={list(stride)} (strides must be non-negative)"
        )
    dt = D.to_dtype(dtype) or D.get_default_dtype()
    extent = 1 + sum((s - 1) * st for s, st in zip(shape, stride)) if all(shape) else 0
    storage = _storage.allocate(max(extent, 0) * dt.itemsize, _dev(device))
    t = make(storage, shape, stride, 0, dt, _shape.numel(shape), None)
    return _finish(t, requires_grad)


def creation_out(op, out, shape, dtype):
    """The caller's ``out=`` of a factory (zeros, arange, rand...), announced as
    written and resized to ``shape``: the values are made in out's dtype, and a
    ``dtype`` given as well must be that one (as in PyTorch)."""
    if not isinstance(out, Tensor):
        raise TypeError(f"{op}(): argument 'out' must be Tensor, not {type(out).__name__}")
    dt = D.to_dtype(dtype)
    if dt is not None and dt is not out._dtype:
        raise RuntimeError(
            f"{op}: dtype {_tname(dt)} does not match dtype of out parameter ({_tname(out._dtype)})"
        )
    written(out, op)
    if out._shape != shape:
        from ember_core._tensor.copy import resize_

        resize_(out, shape)
    return out


def _filled(op, size, value, dtype, device, requires_grad, out, pin_memory=False):
    shape = _shape.as_shape(size, op)
    if out is not None:
        return fill_values(creation_out(op, out, shape, dtype), value)
    dt = D.to_dtype(dtype) or D.get_default_dtype()
    t = _alloc(shape, dt, device, pin_memory)
    if value == 0 and t._numel:
        # a float zero keeps its sign: full((), -0.0) is -0.0, as in PyTorch
        zero = value if isinstance(value, float) else 0.0
        k = t._storage._device._k
        check(k.ec_fill(1, layout((t._numel,), (1,)), t._ptr, dt.code, zero, 0), op)
    else:
        fill_values(t, value)
    return _finish(t, requires_grad)


@defop(
    "zeros(*size, dtype=None, device=None, requires_grad=False, pin_memory=False, out=None)",
    method=False,
    differentiable=False,
    tags=("unchecked-overlap",),
)
def zeros(size, dtype=None, device=None, requires_grad=False, pin_memory=False, out=None):
    """A tensor of zeros."""
    return _filled("zeros", size, 0, dtype, device, requires_grad, out, pin_memory)


@defop(
    "ones(*size, dtype=None, device=None, requires_grad=False, pin_memory=False, out=None)",
    method=False,
    differentiable=False,
    tags=("unchecked-overlap",),
)
def ones(size, dtype=None, device=None, requires_grad=False, pin_memory=False, out=None):
    """A tensor of ones."""
    return _filled("ones", size, 1, dtype, device, requires_grad, out, pin_memory)


def _fill_dtype(value):
    if isinstance(value, Tensor):
        return value._dtype
    return D.scalar_dtype(value)


@defop(method=False, differentiable=False, tags=("unchecked-overlap",))
def full(size, fill_value, *, dtype=None, device=None, requires_grad=False, out=None):
    """A tensor filled with ``fill_value`` (its dtype inferred from the value)."""
    if isinstance(fill_value, Tensor):
        fill_value = fill_value.item()
    dt = D.to_dtype(dtype) or _fill_dtype(fill_value)
    if isinstance(size, numbers.Integral):
        size = (size,)
    return _filled("full", (size,), fill_value, dt, device, requires_grad, out)


def _like(op, input, dtype, device):
    dt = D.to_dtype(dtype) or input._dtype
    dev = to_device(device) or input._storage._device
    return dt, dev


@defop(
    differentiable=False,
    method=False,
)
def empty_like(input, *, dtype=None, device=None, requires_grad=False, memory_format=None):
    dt, dev = _like("empty_like", input, dtype, device)
    return _finish(_empty(input._shape, dt, _dev(dev)), requires_grad)


@defop(
    differentiable=False,
    method=False,
)
def zeros_like(input, *, dtype=None, device=None, requires_grad=False, memory_format=None):
    dt, dev = _like("zeros_like", input, dtype, device)
    return _filled("zeros_like", (input._shape,), 0, dt, dev, requires_grad, None)


@defop(
    differentiable=False,
    method=False,
)
def ones_like(input, *, dtype=None, device=None, requires_grad=False, memory_format=None):
    dt, dev = _like("ones_like", input, dtype, device)
    return _filled("ones_like", (input._shape,), 1, dt, dev, requires_grad, None)


@defop(
    differentiable=False,
    method=False,
)
def full_like(
    input, fill_value, *, dtype=None, device=None, requires_grad=False, memory_format=None
):
    dt, dev = _like("full_like", input, dtype, device)
    return _filled("full_like", (input._shape,), fill_value, dt, dev, requires_grad, None)


def _new_method(fn):
    """Tensor.new_zeros & co: defaults dtype and device to the tensor's."""

    def method(self, *size, dtype=None, device=None, requires_grad=False, **kwargs):
        return fn(
            *size,
            dtype=dtype or self._dtype,
            device=device or self._storage._device,
            requires_grad=requires_grad,
            **kwargs,
        )

    return method


new_empty = _new_method(empty)
new_zeros = _new_method(zeros)
new_ones = _new_method(ones)


def new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad=False):
    return full(
        size,
        fill_value,
        dtype=dtype or self._dtype,
        device=device or self._storage._device,
        requires_grad=requires_grad,
    )


def new_tensor(self, data, *, dtype=None, device=None, requires_grad=False):
    return tensor(
        data,
        dtype=dtype or self._dtype,
        device=device or self._storage._device,
        requires_grad=requires_grad,
    )


def new_empty_strided(
    self,
    size,
    stride,
    *,
    dtype=None,
    device=None,
    requires_grad=False,
    layout=None,
    pin_memory=False,
):
    return empty_strided(
        size,
        stride,
        dtype=dtype or self._dtype,
        device=device or self._storage._device,
        requires_grad=requires_grad,
    )


def new(self, *args, device=None):
    """Tensor.new, the legacy constructor: an uninitialized tensor of self's dtype
    (on self's device unless given) of the given size, or holding the given data,
    or (given a tensor) a view of that tensor."""

    device = device or self._storage._device
    if not args:
        return empty(0, dtype=self._dtype, device=device)
    if len(args) == 1 and isinstance(args[0], Size):
        return empty(tuple(args[0]), dtype=self._dtype, device=device)
    if len(args) == 1 and isinstance(args[0], Tensor):
        return args[0].view(args[0].shape)
    if all(isinstance(a, int) and not isinstance(a, bool) for a in args):
        return empty(args, dtype=self._dtype, device=device)
    if len(args) == 1:
        return tensor(args[0], dtype=self._dtype, device=device)
    raise TypeError("new(): invalid arguments")


# ------------------------------------------- written with the ops of this module


@defop(
    "range(start, end, step=1, *, dtype=None, device=None, requires_grad=False)",
    method=False,
    composite=True,
    differentiable=False,
    tags=("creation",),
)
def _range(start, end, step=1, dtype=None, device=None, requires_grad=False):
    """Deprecated: values from start to end *inclusive*, in the default float dtype."""
    import warnings

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
    n = int(math.floor((end - start) / step)) + 1
    values = start + step * np.arange(n, dtype=np.float64)
    r = tensor(values, dtype=dtype or D.get_default_dtype(), device=device)
    return r.requires_grad_(True) if requires_grad else r


@defop(method=False, composite=True, differentiable=False, tags=("creation",))
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
    if sorted(order) != list(range(len(size))):
        raise RuntimeError(
            f"Number of dimensions in size does not match the length of the physical_layout; "
            f"i.e. len(size) = {len(size)} is not equal to len(physical_layout) = {len(order)}"
        )
    phys = empty([size[d] for d in order], dtype=dtype, device=device)
    inverse = [order.index(d) for d in range(len(size))]
    r = phys.permute(inverse)
    return r.requires_grad_(True) if requires_grad else r


@defop(method=False, composite=True)
def fill(input, value):
    """A new tensor shaped like input, filled with value (fill_ out of place)."""
    return input.clone().fill_(value)


# ----------------------------------------------------------- from data


def _fits_target(value, target):
    """Whether a Python int beyond int64 may go into a tensor of dtype ``target``:
    uint64 holds up to 2**64 - 1, and floating/complex dtypes take any int (rounded),
    as in PyTorch; every other dtype overflows as int64 does."""
    if target is D.uint64:
        return 0 <= value <= D.uint64.max
    return target is not None and (target.is_floating_point or target.is_complex)


def _wide_ints(data, target):
    """Python data with ints beyond int64 that NumPy kept as objects (mixed with
    negatives, bools or floats, or beyond uint64), as an array of ``target``'s
    kind, or None where those ints overflow ``target``."""
    values = list(_flat(data))
    if not all(isinstance(v, (int, float)) for v in values):
        return None
    if target is D.uint64 and all(isinstance(v, int) and 0 <= v <= D.uint64.max for v in values):
        return np.array(data, dtype=np.uint64)
    if target is not None and (target.is_floating_point or target.is_complex):
        return np.array(data, dtype=np.complex128 if target.is_complex else np.float64)
    return None


def _infer_numpy(data, target=None):
    """A NumPy array holding Python data, and the ember dtype PyTorch would infer.
    ``target`` (the requested dtype, or None) decides whether Python ints beyond
    int64 are an overflow (_fits_target)."""
    if isinstance(data, (list, tuple)) and any(isinstance(x, Tensor) for x in _flatten_first(data)):
        data = _tensors_to_lists(data)
    try:
        arr = np.asarray(data)
    except ValueError as e:
        raise ValueError(f"tensor(): could not build a tensor from the given data: {e}") from None
    from ember_core._interop.numpy import check_byte_order

    check_byte_order(arr, "tensor")
    if arr.dtype == object:
        if any(isinstance(v, int) and not D.int64.min <= v <= D.int64.max for v in _flat(data)):
            wide = _wide_ints(data, target)
            if wide is None:
                raise ValueError(_overflow(target))
            return wide, target
        raise TypeError(
            f"tensor(): could not infer dtype of {type(data).__name__} (ragged nesting or "
            "unsupported element types)"
        )
    kind = arr.dtype.kind
    if (
        kind == "f"
        and isinstance(data, (list, tuple))
        and arr.size
        and np.abs(arr).max() >= 2.0**63
        and any(isinstance(v, int) and not D.int64.min <= v <= D.int64.max for v in _flat(data))
    ):  # NumPy made floats of ints beyond int64 mixed with negatives or floats
        wide = _wide_ints(data, target)
        if wide is None:
            raise ValueError(_overflow(target))
        return wide, target
    if kind in "iuf" and isinstance(data, (list, tuple)):
        mixed = _sequence_dtype(data)
        if mixed is not None:
            return arr, mixed
    if kind == "b":
        inferred = D.bool_
    elif kind in "iu":
        if (
            arr.dtype == np.uint64
            and _is_python_data(data)
            and arr.size
            and arr.max() > D.int64.max
            and not _fits_target(int(arr.max()), target)
        ):
            raise ValueError(_overflow(target))
        inferred = (
            D.NUMPY_TO_DTYPE.get(arr.dtype, D.int64) if not _is_python_data(data) else D.int64
        )
    elif kind == "f":
        inferred = (
            D.NUMPY_TO_DTYPE[arr.dtype] if not _is_python_data(data) else D.get_default_dtype()
        )
    elif kind == "c":
        inferred = (
            D.NUMPY_TO_DTYPE.get(arr.dtype, D.complex128)
            if not _is_python_data(data)
            else D.default_complex_dtype()
        )
    else:
        raise TypeError(f"tensor(): cannot make a tensor from elements of type {arr.dtype}")
    return arr, inferred


# PyTorch wraps negative Python ints into uint8/16/32 but refuses them for uint64 (an
# OverflowError there; a ValueError here, as every overflow: Note [Argument errors])
_NEGATIVE_UINT64 = "tensor(): can't convert negative int to unsigned (dtype uint64)"
_OVERFLOW = "tensor(): Overflow when unpacking long long (a value does not fit int64)"


def _overflow(target):
    """PyTorch's message, and the dtype the values were meant for when one was given."""
    if target is None or target is D.int64:
        return _OVERFLOW
    return f"{_OVERFLOW[:-1]}, nor dtype {target.name} as given)"


def _flat(data):
    if isinstance(data, (list, tuple)):
        for x in data:
            yield from _flat(x)
    else:
        yield data


def _flatten_first(data):
    while isinstance(data, (list, tuple)) and data:
        yield data[0]
        data = data[0]


def _tensors_to_lists(data):
    if isinstance(data, Tensor):
        return data.tolist()
    if isinstance(data, (list, tuple)):
        return [_tensors_to_lists(x) for x in data]
    return data


def _sequence_dtype(data):
    """The dtype PyTorch infers for a sequence holding NumPy scalars or arrays: every
    element's own dtype (Python bool/int/float: bool/int64/default float), promoted
    together. None when the sequence holds Python numbers only."""
    np_dtypes = set()
    py_types = set()
    for x in _flat(data):
        if isinstance(x, (np.generic, np.ndarray)):
            np_dtypes.add(x.dtype)
        else:
            py_types.add(x.__class__)
    if not np_dtypes:
        return None
    result = None
    for d in np_dtypes:
        d = D.NUMPY_TO_DTYPE.get(d) or (D.int64 if d.kind in "iu" else D.float64)
        result = d if result is None else D.promote_types(result, d)
    for t in py_types:
        d = D.bool_ if t is bool else D.int64 if issubclass(t, int) else D.get_default_dtype()
        result = D.promote_types(result, d)
    return result


def _is_python_data(data):
    """Python numbers (not NumPy arrays or scalars) decide dtype by PyTorch's rules."""
    return not isinstance(data, (np.ndarray, np.generic))


def from_array(arr, dtype, dev):
    """A new ember tensor holding a copy of NumPy array ``arr`` converted to dtype."""
    from ember_core._interop.numpy import wrap_numpy
    from ember_core._tensor.copy import copy_into

    if arr.dtype not in D.NUMPY_TO_DTYPE or not arr.dtype.isnative:
        # NumPy dtypes ember lacks (uint16, ...) or byte-swapped: NumPy converts
        arr = arr.astype(np.float32 if dtype is D.bfloat16 else dtype.numpy)
    elif any(st % arr.itemsize for st in arr.strides):
        arr = arr.copy()
    out = _empty(tuple(arr.shape), dtype, dev)
    copy_into(out, wrap_numpy(arr))
    return out


def _cuda_array(data, op):
    """A tensor over the memory of an object with a __cuda_array_interface__, or
    the object itself when its property declines (a CPU PyTorch tensor's).
    CUDA objects that speak DLPack too come through DLPack: exact dtypes (the
    interface has no bfloat16; PyTorch calls its bfloat16 "<f2") and the
    stream contract."""
    from ember_core._interop.dlpack import cuda_array_desc, from_cuda_array_interface, from_dlpack

    where = getattr(data, "__dlpack_device__", None)
    if where is not None and hasattr(data, "__dlpack__"):
        try:
            kind = int(where()[0])
        except Exception:  # a broken or declining producer: try the interface instead
            kind = None
        if kind == 2:  # kDLCUDA
            return from_dlpack(data)
    desc = cuda_array_desc(data)
    return data if desc is None else from_cuda_array_interface(data, desc, op)


@defop(
    method=False,
    differentiable=False,
)
def tensor(data, *, dtype=None, device=None, requires_grad=False, pin_memory=False):
    """A new tensor holding a copy of ``data`` (numbers, nested sequences, NumPy
    arrays, tensors); the dtype is inferred as PyTorch does unless given.

    >>> tensor([[1, 2], [3, 4]]).dtype
    ember.int64
    """
    dev = _dev(device)
    dt = D.to_dtype(dtype)
    if not isinstance(data, Tensor) and hasattr(type(data), "__cuda_array_interface__"):
        data = _cuda_array(data, "tensor")  # CuPy, Numba, ...: copied on their device
    if isinstance(data, Tensor):
        from ember_core._tensor.copy import to_dtype_copy

        r = to_dtype_copy(data, dt or data._dtype, dev)
        return _finish(_pinned(r, pin_memory), requires_grad)
    if (
        isinstance(data, bool)
        or isinstance(data, numbers.Number)
        and not isinstance(data, np.ndarray)
    ):
        if (
            data.__class__ is int
            and not D.int64.min <= data <= D.int64.max
            and not _fits_target(data, dt)
        ):
            raise ValueError(f"{_overflow(dt)} ({data})")
        if dt is D.uint64 and data.__class__ is int and data < 0:
            raise ValueError(_NEGATIVE_UINT64)
        if isinstance(data, np.generic):
            nd = np.dtype(type(data))
            inferred = D.NUMPY_TO_DTYPE.get(nd) or (D.int64 if nd.kind in "iu" else D.float64)
        else:
            inferred = D.scalar_dtype(data)
        t = _empty((), dt or inferred, dev)
        fill_values(t, data)
        return _finish(_pinned(t, pin_memory), requires_grad)
    arr, inferred = _infer_numpy(data, dt)
    target = dt or inferred
    if (
        dt is D.uint64
        and arr.dtype.kind == "i"
        and arr.size
        and arr.min() < 0
        and _is_python_data(data)
    ):
        raise ValueError(_NEGATIVE_UINT64)
    if arr.dtype.kind == "f" and arr.dtype.itemsize > 8:  # float128 and the like
        arr = arr.astype(np.float64)
    elif arr.dtype.kind == "c" and arr.dtype.itemsize > 16:
        arr = arr.astype(np.complex128)
    return _finish(_pinned(from_array(arr, target, dev), pin_memory), requires_grad)


@defop(method=False, differentiable=False)
def as_tensor(data, dtype=None, device=None):
    """Like tensor(), but shares memory with a tensor, a NumPy array or a CUDA
    array (``__cuda_array_interface__``: CuPy, Numba) when it can."""
    dt = D.to_dtype(dtype)
    if not isinstance(data, Tensor) and hasattr(type(data), "__cuda_array_interface__"):
        data = _cuda_array(data, "as_tensor")
    if isinstance(data, Tensor):
        from ember_core._tensor.copy import to

        return to(data, dt or data._dtype, device or data._storage._device)
    if isinstance(data, np.ndarray) and _dev(device) is CPU:
        from ember_core._interop.numpy import wrap_numpy

        if any(s < 0 for s in data.strides):  # PyTorch raises; ember copies
            return tensor(data, dtype=dt, device=device)
        try:
            t = wrap_numpy(data)
        except TypeError:  # a dtype ember lacks: tensor() converts or refuses it
            return tensor(data, dtype=dt, device=device)
        if dt is not None and dt is not t._dtype:
            from ember_core._tensor.copy import to

            return to(t, dt)
        return t
    return tensor(data, dtype=dt, device=device)


@defop(
    method=False,
    differentiable=False,
)
def scalar_tensor(s, *, dtype=None, device=None, requires_grad=False):
    return tensor(
        s, dtype=dtype or D.get_default_dtype(), device=device, requires_grad=requires_grad
    )


# ------------------------------------------------------------- sequences


def _num(x):
    return x.item() if isinstance(x, (Tensor, np.generic)) else x


@defop(
    method=False,
    differentiable=False,
)
def arange(start=0, end=None, step=1, *, dtype=None, device=None, requires_grad=False, out=None):
    """Values from start (inclusive) to end (exclusive) by step.

    >>> arange(5).tolist()
    [0, 1, 2, 3, 4]
    """
    start, end, step = _num(start), _num(end), _num(step)
    if end is None:
        start, end = 0, start
    if step == 0:
        raise RuntimeError("arange: step must be nonzero")
    for v in (start, end, step):
        if isinstance(v, float) and not math.isfinite(v):
            raise RuntimeError(f"arange: unsupported range: {start} -> {end}")
    if (step > 0 and start > end) or (step < 0 and start < end):
        raise RuntimeError("arange: upper bound and larger bound inconsistent with step sign")
    is_float = any(isinstance(v, float) for v in (start, end, step))
    dt = D.to_dtype(dtype) or getattr(out, "_dtype", None)
    dt = dt or (D.get_default_dtype() if is_float else D.int64)
    if is_float or dt.category == 2:
        n = math.ceil((float(end) - float(start)) / float(step))
    else:
        n = -((int(start) - int(end)) // int(step))
    n = max(n, 0)
    t = _empty((n,), dt, _dev(device)) if out is None else _contig_out("arange", out, n, dtype)
    int_start = int(start) if not isinstance(start, float) else 0
    int_step = int(step) if not isinstance(step, float) else 0
    k = t._storage._device._k
    check(k.ec_arange(dt.code, n, t._ptr, float(start), float(step), int_start, int_step), "arange")
    return _finish(t if out is None else _copy_back(out, t), requires_grad)


def _contig_out(op, out, n, dtype):
    """A 1-d contiguous tensor for a factory kernel to fill: ``out`` itself (checked
    and resized, see creation_out) when it is contiguous, else a temporary."""
    creation_out(op, out, (n,), dtype)
    return out if out.is_contiguous() else _empty((n,), out._dtype, out._storage._device)


def _copy_back(out, t):
    if t is not out:
        from ember_core._tensor.copy import copy_into

        copy_into(out, t)
    return out


@defop(
    method=False,
    differentiable=False,
)
def linspace(start, end, steps, *, dtype=None, device=None, requires_grad=False, out=None):
    """``steps`` evenly spaced values from start to end, both included."""
    start, end = float(_num(start)), float(_num(end))
    steps = int(steps)
    if steps < 0:
        raise RuntimeError("linspace: number of steps must be non-negative")
    dt = D.to_dtype(dtype) or D.get_default_dtype()
    if out is None:
        t = _empty((steps,), dt, _dev(device))
    else:
        t = _contig_out("linspace", out, steps, dtype)
    check(t._storage._device._k.ec_linspace(t._dtype.code, steps, t._ptr, start, end), "linspace")
    return _finish(t if out is None else _copy_back(out, t), requires_grad)


@defop(
    method=False,
    differentiable=False,
)
def logspace(start, end, steps, base=10.0, *, dtype=None, device=None, requires_grad=False):
    """base ** linspace(start, end, steps)."""

    dt = D.to_dtype(dtype) or D.get_default_dtype()
    exps = linspace(start, end, steps, dtype=D.float64, device=device)
    r = _pow(float(base), exps)
    from ember_core._tensor.copy import to

    return _finish(to(r, dt), requires_grad)


@defop(
    method=False,
    differentiable=False,
)
def eye(n, m=None, *, dtype=None, device=None, requires_grad=False):
    """A 2-D tensor with ones on the diagonal."""
    m = n if m is None else m
    if n < 0 or m < 0:
        raise RuntimeError(f"eye: n and m must be non-negative, got {n} and {m}")
    t = zeros(n, m, dtype=dtype, device=device)
    k = min(n, m)
    if k:
        diag = make(t._storage, (k,), (m + 1,), 0, t._dtype, k, None)
        fill_values(diag, 1)
    return _finish(t, requires_grad)


@defop(inplace_of="fill", differentiable=True, tags=("unchecked-overlap",))
def fill_(input, value):
    """Set every element to value (a number or a one-element tensor)."""
    if isinstance(value, Tensor):
        if value._shape:
            raise RuntimeError(
                f"fill_ only supports 0-dimension value tensor but got tensor with {len(value._shape)} dimensions."  # noqa: E501 - one string, as PyTorch spells it
            )
        value = value.item()
    written(input, "fill_")
    return fill_values(input, value)


@defop(inplace_of="zero", differentiable=True, tags=("unchecked-overlap",))
def zero_(input):
    """Set every element to zero."""
    written(input, "zero_")
    return fill_values(input, 0)
