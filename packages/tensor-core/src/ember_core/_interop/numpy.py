"""Zero-copy interop with NumPy (from_numpy, .numpy(), __array__), Python values
(item, tolist) and pickling (which copies the data); asarray (the array API's
copy semantics) and frombuffer (a tensor over a Python buffer's memory)."""

import warnings

import numpy as np

from ember_core._base.dispatch import defop
from ember_core._base.lib import ffi
from ember_core._interop.dlpack import from_dlpack
from ember_core._tensor import dtype as D
from ember_core._tensor import graph as _graph
from ember_core._tensor import storage as _storage
from ember_core._tensor.copy import contiguous, to_dtype_copy
from ember_core._tensor.creation import tensor
from ember_core._tensor.device import CPU, to_device
from ember_core._tensor.tensor import Tensor, empty, is_contig, make


def from_numpy(ndarray):
    """A tensor sharing memory with a NumPy array; the array stays alive as long as
    the tensor.  As in PyTorch, negative strides are refused (ValueError) and a
    read-only array warns (its tensor then refuses in-place writes).

    >>> a = np.arange(3.0); t = from_numpy(a); a[0] = 7; t.tolist()
    [7.0, 1.0, 2.0]
    """
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(ndarray).__name__})")
    if any(s < 0 for s in ndarray.strides):
        raise ValueError(
            "At least one stride in the given numpy array is negative, and tensors with "
            "negative strides are not currently supported. (You can probably work around "
            "this by making a copy of your array  with array.copy().) "
        )
    if not ndarray.flags.writeable:
        warnings.warn(
            "The given NumPy array is not writable, and the tensor from_numpy returns shares "
            "its memory: in-place writes to the tensor will raise. You may want to copy the "
            "array to protect its data or make it writable before converting it to a tensor.",
            UserWarning,
            stacklevel=2,
        )
    return wrap_numpy(ndarray)


def check_byte_order(arr, op):
    """PyTorch's ValueError for an array in the other byte order (tensor,
    as_tensor, from_numpy)."""
    if not arr.dtype.isnative:
        raise ValueError(
            f"{op}(): given numpy array has byte order different from the native byte order "
            f"({arr.dtype}). Conversion between byte orders is currently not supported; "
            "convert it first with arr.astype(arr.dtype.newbyteorder('='))"
        )


def wrap_numpy(arr):
    """from_numpy without its PyTorch restrictions: any strides (negative ones
    included, which ember's tensors support), no warning.  ember's own code uses it
    to view arrays it made."""
    if not isinstance(arr, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(arr).__name__})")
    check_byte_order(arr, "from_numpy")
    dt = D.NUMPY_TO_DTYPE.get(arr.dtype)
    if dt is None:
        raise TypeError(
            f"can't convert np.ndarray of type {arr.dtype}. The only supported types are: "
            "float64, float32, float16, complex64, complex128, int64, int32, int16, int8, "
            "uint64, uint32, uint16, uint8, and bool."
        )
    isz = dt.itemsize
    for s in arr.strides:
        if s % isz:
            raise ValueError(
                "given numpy array strides not a multiple of the element byte size. Copy the "
                "numpy array to reallocate the memory."
            )
    shape = tuple(int(s) for s in arr.shape)
    stride = tuple(s // isz for s in arr.strides)
    ptr = arr.__array_interface__["data"][0]
    numel = int(arr.size)
    low = sum((n - 1) * st for n, st in zip(shape, stride) if st < 0) if numel else 0
    high = sum((n - 1) * st for n, st in zip(shape, stride) if st > 0) if numel else -1
    storage = _storage.external(
        ptr + low * isz, (high - low + 1) * isz, arr, CPU, readonly=not arr.flags.writeable
    )
    return make(storage, shape, stride, -low, dt, numel, None)


class _ArrayView:
    """Exposes a tensor's memory through __array_interface__; NumPy keeps this
    object (and so the tensor) alive as the array's base."""

    __slots__ = ("__array_interface__", "tensor")

    def __init__(self, t, readonly=False):
        if _graph._active is not None:  # Note [Capture and replay]
            _graph.host_read("a NumPy view of a tensor")
        isz = t._dtype.itemsize
        self.tensor = t
        _storage.exported.add(t._storage)
        self.__array_interface__ = {
            "shape": t._shape,
            "typestr": t._dtype.numpy.str,
            "data": (t._ptr, readonly or t._storage._readonly),
            # a size-1 dim's stride is never used; keep it inside NumPy's int64
            "strides": tuple(
                s * isz if n > 1 or abs(s) < 1 << 58 else 0 for s, n in zip(t._stride, t._shape)
            ),
            "version": 3,
        }


def numpy(self, *, force=False):
    """A NumPy array sharing this tensor's memory (writes show on both sides)."""
    if self._rg and not force:
        raise RuntimeError(
            "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead."
        )
    if self._storage._device.type != "cpu":
        raise TypeError(
            f"can't convert {self._storage._device} device type tensor to numpy. Use Tensor.cpu() first."  # noqa: E501 - one string, as PyTorch spells it
        )
    if self._dtype.numpy is None:
        raise TypeError(
            f"Got unsupported ScalarType {self._dtype.name.capitalize()}: NumPy has no {self._dtype.name}"  # noqa: E501 - one string, as PyTorch spells it
        )
    return np.asarray(_ArrayView(self))


def to_numpy_array(t, dtype=None, copy=None):
    arr = numpy(t)
    if dtype is not None and np.dtype(dtype) != arr.dtype:
        return arr.astype(dtype)
    if copy:
        return arr.copy()
    return arr


_ITEM_TYPES = {
    D.float32: "float*",
    D.float64: "double*",
    D.int64: "int64_t*",
    D.int32: "int32_t*",
    D.int16: "int16_t*",
    D.int8: "int8_t*",
    D.uint8: "uint8_t*",
    D.uint16: "uint16_t*",
    D.uint32: "uint32_t*",
    D.uint64: "uint64_t*",
}


def item(self):
    """The value of a one-element tensor as a Python number."""
    if _graph._active is not None:  # Note [Capture and replay]
        _graph.host_read("Tensor.item()")
    if self._numel != 1:
        raise RuntimeError(f"a Tensor with {self._numel} elements cannot be converted to Scalar")
    if self._storage._device.type != "cpu":  # the value is read on the host
        self = to_dtype_copy(self, self._dtype, CPU)
    dt = self._dtype
    ctype = _ITEM_TYPES.get(dt)
    if ctype is not None:
        return ffi.cast(ctype, self._ptr)[0]
    if dt is D.bool_:
        return ffi.cast("uint8_t*", self._ptr)[0] != 0
    if dt.is_complex:
        parts = ffi.cast("float*" if dt is D.complex64 else "double*", self._ptr)
        return complex(parts[0], parts[1])
    if dt is D.bfloat16:
        bits = ffi.cast("uint16_t*", self._ptr)[0]
        return float(np.frombuffer(int(bits << 16).to_bytes(4, "little"), dtype=np.float32)[0])
    return float(np.frombuffer(ffi.buffer(ffi.cast("char*", self._ptr), 2), dtype=np.float16)[0])


def tolist(self):
    """Nested Python lists of Python numbers."""
    if _graph._active is not None:  # Note [Capture and replay]
        _graph.host_read("Tensor.tolist()")

    t = self
    if t._dtype is D.bfloat16:
        t = to_dtype_copy(t, D.float32, CPU)
    elif t._storage._device.type != "cpu":  # the values are read on the host
        t = to_dtype_copy(t, t._dtype, CPU)
    arr = np.asarray(_ArrayView(t, readonly=True))
    return arr.tolist()


# ---------------------------------------------------------------- pickling


def _rebuild(data, dtype_name, shape, requires_grad):
    dt = D.DTYPES_BY_NAME[dtype_name]
    t = empty(tuple(shape), dt, CPU)
    if len(data):
        ffi.memmove(ffi.cast("char*", t._ptr), data, len(data))
    if requires_grad:
        t.requires_grad_(True)
    return t


def reduce_tensor(t, protocol):
    """Pickle support: the values are copied into the pickle (contiguous bytes)."""

    if t._storage._device.type != "cpu":  # pickled as its values (loaded on the CPU)
        t = to_dtype_copy(t, t._dtype, CPU)
    c = t if is_contig(t) else contiguous(t)
    data = bytes(ffi.buffer(ffi.cast("char*", c._ptr), c._numel * c._dtype.itemsize))
    return (_rebuild, (data, t._dtype.name, tuple(t._shape), bool(t._rg)))


def is_tensor(obj):
    return isinstance(obj, Tensor)


# ------------------------------------------------- tensors over existing memory


@defop(method=False, composite=True, differentiable=False, tags=("creation",))
def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=False):
    """A tensor from ``obj`` (array API semantics): shares memory with a tensor or
    a NumPy array when dtype and device allow and ``copy`` is not True; copies
    when it must (``copy=False`` then raises)."""
    if isinstance(obj, Tensor):
        t = obj
    elif isinstance(obj, np.ndarray) and obj.dtype != object:
        t = from_numpy(obj) if obj.dtype.kind in "biuf" and obj.dtype.byteorder in "=|<" else None
        if t is None:
            if copy is False:
                raise ValueError(f"asarray(): can't alias a NumPy array of dtype {obj.dtype}")
            t = tensor(obj)
            copy = None  # already a copy
    elif hasattr(obj, "__dlpack__") and not isinstance(obj, (list, tuple)):
        t = from_dlpack(obj)
    else:
        if copy is False:
            raise ValueError(f"can't alias Python sequence without copying: {type(obj).__name__}")
        t = tensor(obj, dtype=dtype, device=device)
        copy = None
    needs_conversion = (dtype is not None and t.dtype != dtype) or (
        device is not None and t.device != to_device(device)
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
        if isinstance(obj, Tensor) and t is obj:
            t = t.detach()
        t.requires_grad_(True)
    return t


@defop(method=False, composite=True, differentiable=False, tags=("creation",))
def frombuffer(buffer, *, dtype, count=-1, offset=0, requires_grad=False):
    """A 1-D tensor over the memory of a Python buffer (shared, not copied)."""
    dt = D.to_dtype(dtype)
    # a dtype NumPy lacks (bfloat16) is read as the integers of its size, then viewed
    np_dtype = np.dtype(dt.numpy if dt.numpy is not None else f"i{dt.itemsize}")
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
        t = from_numpy(arr)  # shared; a read-only buffer gives a read-only tensor
    if dt.numpy is None:
        t = t.view(dt)
    if requires_grad:
        t.requires_grad_(True)
    return t
