"""DLPack interop: ``Tensor.__dlpack__``, ``Tensor.__dlpack_device__`` and
``from_dlpack``, zero-copy both ways.

Note [DLPack]
A producer hands out a PyCapsule around a managed tensor (data pointer, shape,
strides in elements, dtype, device) plus a deleter; the consumer renames the
capsule "used_..." and calls the deleter when it no longer needs the memory.
ember speaks DLPack 1.x ("dltensor_versioned" capsules, whose flags carry
read-only and is-copied) when the consumer passes ``max_version=(1, ...)``, and
the legacy "dltensor" capsule otherwise.  Strides are exported as they are
(negative, zero and size-1 ones included).  The capsule machinery lives in
csrc/dlpack.c (it must hold the GIL and keep in-flight exceptions in deleters);
it takes Python objects, so it is reached through ctypes.PyDLL rather than cffi.
"""

import ctypes
import enum

from ember_core import _C, _storage
from ember_core import _dtype as D
from ember_core._device import CPU, to_device
from ember_core._lib import last_message, lib
from ember_core._tensor import Tensor, make


class DLDeviceType(enum.IntEnum):
    """DLPack's device codes (the ones ember may meet)."""

    kDLCPU = 1
    kDLCUDA = 2
    kDLCUDAHost = 3
    kDLOpenCL = 4
    kDLVulkan = 7
    kDLMetal = 8
    kDLVPI = 9
    kDLROCM = 10
    kDLROCMHost = 11
    kDLExtDev = 12
    kDLCUDAManaged = 13
    kDLOneAPI = 14


# DLDataTypeCode values, and ember's dtype for each (code, bits).
_kDLInt, _kDLUInt, _kDLFloat, _kDLBfloat, _kDLBool = 0, 1, 2, 4, 6
_FROM_DL = {
    (_kDLBool, 8): D.bool_,
    (_kDLUInt, 8): D.uint8,
    (_kDLInt, 8): D.int8,
    (_kDLInt, 16): D.int16,
    (_kDLInt, 32): D.int32,
    (_kDLInt, 64): D.int64,
    (_kDLFloat, 16): D.float16,
    (_kDLBfloat, 16): D.bfloat16,
    (_kDLFloat, 32): D.float32,
    (_kDLFloat, 64): D.float64,
}
_CODE_NAMES = {
    _kDLInt: "int",
    _kDLUInt: "uint",
    _kDLFloat: "float",
    _kDLBfloat: "bfloat",
    _kDLBool: "bool",
    5: "complex",
}

_i64p = ctypes.POINTER(ctypes.c_int64)
_pydll = ctypes.PyDLL(_C.__file__)
_to_capsule = _pydll.ec_dlpack_to_capsule
_to_capsule.argtypes = [
    ctypes.py_object,
    ctypes.c_size_t,
    ctypes.c_int,
    _i64p,
    _i64p,
    ctypes.c_int,
    ctypes.c_int,
    ctypes.c_uint64,
    ctypes.POINTER(ctypes.c_int),
]
_to_capsule.restype = ctypes.py_object
_from_capsule = _pydll.ec_dlpack_from_capsule
_from_capsule.argtypes = [ctypes.py_object, _i64p, _i64p, _i64p, ctypes.POINTER(ctypes.c_int)]
_from_capsule.restype = ctypes.py_object


def _is_capsule(obj):
    return type(obj).__name__ == "PyCapsule"


def dlpack_device(t):
    """(device type, device index) as DLPack numbers them."""
    dev = t._storage._device
    if dev.type == "cpu":
        return (DLDeviceType.kDLCPU, 0)
    return (DLDeviceType.kDLCUDA, dev.index or 0)


def to_dlpack(t, *, stream=None, max_version=None, dl_device=None, copy=None):
    """A DLPack capsule over ``t``'s memory (see Note [DLPack]).

    ``max_version`` (major, minor) of 1.x or more gives a versioned capsule,
    None a legacy one.  ``copy=True`` exports a fresh copy, ``copy=False``
    refuses anything that would need one.  Raises BufferError when the export
    is impossible."""
    if not isinstance(t, Tensor):
        raise TypeError(f"__dlpack__: expected a Tensor, got {type(t).__name__}")
    if t._rg:
        raise BufferError("Can't export tensors that require gradient, use tensor.detach()")
    if stream is not None and not isinstance(stream, int):
        raise TypeError(f"__dlpack__: stream must be an int or None, got {type(stream).__name__}")
    if t._storage._device.type != "cpu":
        raise BufferError(f"__dlpack__: ember cannot export memory on {t._storage._device} yet")
    if dl_device is not None:
        kind, index = (int(x) for x in dl_device)
        if (kind, index) != (DLDeviceType.kDLCPU, 0):
            raise BufferError(
                f"__dlpack__: cannot export a cpu tensor to DLPack device {tuple(dl_device)}; "
                "ember only exports to the CPU (device (1, 0))"
            )
    if copy is not None and not isinstance(copy, bool):
        raise TypeError(f"__dlpack__: copy must be True, False or None, got {copy!r}")
    versioned = max_version is not None and int(max_version[0]) >= 1
    readonly = t._storage._readonly
    flags = 0
    if copy:
        from ember_core._copy import to_dtype_copy

        t = to_dtype_copy(t, t._dtype)
        readonly = False
        flags |= lib.EC_DLPACK_FLAG_IS_COPIED
    elif readonly and not versioned:
        raise BufferError(
            "__dlpack__: the tensor is read-only and a legacy (unversioned) DLPack capsule "
            "cannot say so; ask for max_version=(1, 0) or copy=True"
        )
    if readonly:
        flags |= lib.EC_DLPACK_FLAG_READ_ONLY
    storage = t._storage
    _storage.exported.add(storage)  # share_memory_ must keep this memory alive
    n = len(t._shape)
    shape = (ctypes.c_int64 * max(n, 1))(*t._shape)
    stride = (ctypes.c_int64 * max(n, 1))(*t._stride)
    status = ctypes.c_int(0)
    capsule = _to_capsule(
        storage,
        t._ptr,
        n,
        shape,
        stride,
        t._dtype.code,
        int(versioned),
        flags,
        ctypes.byref(status),
    )
    if status.value:
        raise BufferError(f"__dlpack__: {last_message()}")
    return capsule


def _capsule_of(ext, copy):
    """The capsule an object hands out, asking for DLPack 1.x first."""
    if not hasattr(ext, "__dlpack__"):
        raise TypeError(
            f"from_dlpack: expected an object with __dlpack__ or a DLPack capsule, got "
            f"{type(ext).__name__}"
        )
    if hasattr(ext, "__dlpack_device__"):
        kind, index = ext.__dlpack_device__()
        if int(kind) != DLDeviceType.kDLCPU:
            name = (
                DLDeviceType(int(kind)).name
                if int(kind) in DLDeviceType._value2member_map_
                else kind
            )
            raise BufferError(
                f"from_dlpack: the producer's memory is on DLPack device {name}:{index}; ember "
                "was built without its CUDA backend and can only import CPU memory"
            )
    kwargs = {"max_version": (lib.EC_DLPACK_MAJOR, lib.EC_DLPACK_MINOR)}
    if copy is not None:
        kwargs["copy"] = copy
    try:
        return ext.__dlpack__(**kwargs)
    except TypeError:
        # a producer predating DLPack 1.0 takes no keywords (the stream at most)
        return ext.__dlpack__()


def from_dlpack(ext_tensor, *, device=None, copy=None):
    """A tensor sharing memory with any object that speaks DLPack (or with a
    DLPack capsule): NumPy arrays, PyTorch and cupy tensors, ember tensors.
    Read-only memory gives a tensor that refuses in-place writes; ``copy=True``
    gives a tensor with its own memory.

    >>> import numpy as np
    >>> a = np.arange(3.0); t = from_dlpack(a); a[0] = 5; t.tolist()
    [5.0, 1.0, 2.0]
    """
    if device is not None and to_device(device).type != "cpu":
        from ember_core import _cuda

        _cuda.unavailable("from_dlpack", to_device(device))
    if copy is not None and not isinstance(copy, bool):
        raise TypeError(f"from_dlpack: copy must be True, False or None, got {copy!r}")
    capsule = ext_tensor if _is_capsule(ext_tensor) else _capsule_of(ext_tensor, copy)
    if not _is_capsule(capsule):
        raise TypeError(f"from_dlpack: __dlpack__ returned {type(capsule).__name__}, not a capsule")
    info = (ctypes.c_int64 * lib.EC_DLPACK_INFO_SIZE)()
    shape_buf = (ctypes.c_int64 * lib.EC_MAX_DIMS)()
    stride_buf = (ctypes.c_int64 * lib.EC_MAX_DIMS)()
    status = ctypes.c_int(0)
    owner = _from_capsule(capsule, info, shape_buf, stride_buf, ctypes.byref(status))
    if status.value:
        raise BufferError(f"from_dlpack: {last_message()}")
    # From here the memory is ours: dropping `owner` on an error returns it.
    if info[lib.EC_DLPACK_DEVICE_TYPE] != DLDeviceType.kDLCPU:
        raise BufferError(
            f"from_dlpack: the capsule's memory is on DLPack device type "
            f"{info[lib.EC_DLPACK_DEVICE_TYPE]}; ember can only import CPU memory"
        )
    code, bits, lanes = (
        info[lib.EC_DLPACK_CODE],
        info[lib.EC_DLPACK_BITS],
        info[lib.EC_DLPACK_LANES],
    )
    dt = _FROM_DL.get((code, bits))
    if dt is None or lanes != 1:
        kind = _CODE_NAMES.get(code, f"code {code}")
        raise BufferError(
            f"from_dlpack: ember has no dtype for DLPack {kind}{bits}"
            + (f" with {lanes} lanes" if lanes != 1 else "")
        )
    n = info[lib.EC_DLPACK_NDIM]
    shape = tuple(shape_buf[:n])
    if info[lib.EC_DLPACK_HAS_STRIDES]:
        stride = tuple(stride_buf[:n])
    else:
        from ember_core._tensor import contiguous_strides

        stride = contiguous_strides(shape)
    if any(s < 0 for s in shape):
        raise BufferError(
            f"from_dlpack: the capsule has a negative size in its shape {list(shape)}"
        )
    numel = 1
    for s in shape:
        numel *= s
    low = sum((s - 1) * st for s, st in zip(shape, stride) if st < 0) if numel else 0
    high = sum((s - 1) * st for s, st in zip(shape, stride) if st > 0) if numel else -1
    isz = dt.itemsize
    flags = info[lib.EC_DLPACK_FLAGS]
    storage = _storage.external(
        (info[lib.EC_DLPACK_DATA] & 0xFFFFFFFFFFFFFFFF) + low * isz,
        (high - low + 1) * isz,
        owner,
        CPU,
        readonly=bool(flags & lib.EC_DLPACK_FLAG_READ_ONLY),
    )
    t = make(storage, shape, stride, -low, dt, numel, None)
    if copy and not flags & lib.EC_DLPACK_FLAG_IS_COPIED:
        from ember_core._copy import clone

        t = clone(t)
    return t
