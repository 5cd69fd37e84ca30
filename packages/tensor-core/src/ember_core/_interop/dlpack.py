"""DLPack and CUDA Array Interface interop: ``Tensor.__dlpack__``,
``Tensor.__dlpack_device__``, ``from_dlpack``, ``Tensor.__cuda_array_interface__``
and tensors over objects that have one, zero-copy both ways, CPU and CUDA.

Note [DLPack]
A producer hands out a PyCapsule around a managed tensor (data pointer, shape,
strides in elements, dtype, device) plus a deleter; the consumer renames the
capsule "used_..." and calls the deleter when it no longer needs the memory.
ember speaks DLPack 1.x ("dltensor_versioned" capsules, whose flags carry
read-only and is-copied) when the consumer passes ``max_version=(1, ...)``, and
the legacy "dltensor" capsule otherwise.  Strides are exported as they are
(negative, zero and size-1 ones included).  The capsule machinery lives in
csrc/cpu/runtime/dlpack.c (it must hold the GIL and keep in-flight exceptions in deleters);
it takes Python objects, so it is reached through ctypes.PyDLL rather than cffi.

Note [DLPack streams]
CUDA memory comes with a stream contract.  The consumer passes its stream to
``__dlpack__(stream=...)`` (1: the legacy default stream, 2: the per-thread
default stream, another integer: a stream handle, None: the legacy default,
-1: no ordering wanted); the producer makes that stream wait for the work it
queued on its own current stream (an event recorded on one, waited for by the
other) before handing out the capsule.  ember does so as a producer, and as a
consumer passes the current stream of the producer's device (1 for ember's
default stream, which is the legacy one).  The CUDA Array Interface (v3) turns
this around: the producer names its stream in the ``stream`` entry and the
consumer waits for it; ember exports its current stream and, importing, makes
its current stream wait for the one named.
"""

import ctypes
import enum

from ember_core import _C
from ember_core._base.lib import ffi, last_message, lib
from ember_core._cuda import runtime as _cuda
from ember_core._tensor import dtype as D
from ember_core._tensor import storage as _storage
from ember_core._tensor.copy import clone, to_dtype_copy, type_
from ember_core._tensor.device import CPU, device, to_device
from ember_core._tensor.device import device as _device
from ember_core._tensor.tensor import Tensor, contiguous_strides, make


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
_kDLInt, _kDLUInt, _kDLFloat, _kDLBfloat, _kDLComplex, _kDLBool = 0, 1, 2, 4, 5, 6
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
    (_kDLUInt, 16): D.uint16,
    (_kDLUInt, 32): D.uint32,
    (_kDLUInt, 64): D.uint64,
    (_kDLComplex, 64): D.complex64,
    (_kDLComplex, 128): D.complex128,
}
_CODE_NAMES = {
    _kDLInt: "int",
    _kDLUInt: "uint",
    _kDLFloat: "float",
    _kDLBfloat: "bfloat",
    _kDLComplex: "complex",
    _kDLBool: "bool",
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
    ctypes.c_int,
    ctypes.c_int,
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


def _stream_handle(stream):
    """A DLPack/CAI stream number as a driver handle: the legacy default stream
    (1) is ember's stream 0; 2 (per-thread default) and handles stay as they are."""
    return 0 if stream in (None, 0, 1) else int(stream)


def stream_wait(index, waiter, producer):
    """Make later work on stream ``waiter`` wait for the work queued on stream
    ``producer`` so far (both of cuda:index; an event between them)."""
    if waiter == producer:
        return

    prev = lib.ecu_get_device()
    if prev != index:
        _cuda.check(lib.ecu_set_device(index), "stream ordering")
    try:
        event = ffi.new("uint64_t*")
        _cuda.check(lib.ecu_event_create(0, event), "stream ordering")
        try:
            _cuda.check(lib.ecu_event_record(event[0], producer), "stream ordering")
            _cuda.check(lib.ecu_stream_wait_event(waiter, event[0]), "stream ordering")
        finally:
            lib.ecu_event_destroy(event[0])  # the wait keeps what it needs
    finally:
        if prev != index:
            lib.ecu_set_device(prev)


def _require_cuda(index, op, what):
    """BufferError (the protocol's error) when CUDA device ``index`` is unusable."""

    why = _cuda._why_unavailable()
    if why is None and not 0 <= index < _cuda.device_count():
        why = f"there is no CUDA device {index} ({_cuda.device_count()} present)"
    if why is not None:
        raise BufferError(f"{op}: {what} is CUDA memory, and CUDA is not available: {why}")


def _moved_for_export(t, dl_device, copy):
    """``t`` on the DLPack device the consumer asked for (a copy when that is not
    where it lives), and whether it was copied."""
    kind, index = (int(x) for x in dl_device)
    if (kind, index) == tuple(dlpack_device(t)):
        return t, False
    if copy is False:
        raise BufferError(
            f"__dlpack__: the tensor is on {t._storage._device}, DLPack device "
            f"{tuple(dlpack_device(t))}; device {(kind, index)} needs a copy, and copy=False"
        )
    if kind == DLDeviceType.kDLCPU and index == 0:
        target = CPU
    elif kind == DLDeviceType.kDLCUDA:
        _require_cuda(index, "__dlpack__", f"DLPack device {(kind, index)}")
        target = device("cuda", index)
    else:
        raise BufferError(
            f"__dlpack__: ember cannot export to DLPack device {(kind, index)}; it exports to "
            "the CPU (1, 0) and to CUDA devices (2, index)"
        )

    return to_dtype_copy(t, t._dtype, target), True


def to_dlpack(t, *, stream=None, max_version=None, dl_device=None, copy=None):
    """A DLPack capsule over ``t``'s memory (see Note [DLPack]).

    ``max_version`` (major, minor) of 1.x or more gives a versioned capsule,
    None a legacy one.  ``copy=True`` exports a fresh copy, ``copy=False``
    refuses anything that would need one.  For a CUDA tensor ``stream`` is the
    consumer's (Note [DLPack streams]).  Raises BufferError when the export is
    impossible."""
    if not isinstance(t, Tensor):
        raise TypeError(f"__dlpack__: expected a Tensor, got {type(t).__name__}")
    if t._rg:
        raise BufferError("Can't export tensors that require gradient, use tensor.detach()")
    if stream is not None and not isinstance(stream, int):
        raise TypeError(f"__dlpack__: stream must be an int or None, got {type(stream).__name__}")
    if t._storage._device.type not in ("cpu", "cuda"):
        raise BufferError(f"__dlpack__: ember cannot export memory on {t._storage._device}")
    if copy is not None and not isinstance(copy, bool):
        raise TypeError(f"__dlpack__: copy must be True, False or None, got {copy!r}")
    versioned = max_version is not None and int(max_version[0]) >= 1
    readonly = t._storage._readonly
    flags = 0
    moved = False
    if dl_device is not None:
        t, moved = _moved_for_export(t, dl_device, copy)
    if copy and not moved:
        t = to_dtype_copy(t, t._dtype)
    if copy or moved:
        readonly = False
        flags |= lib.EC_DLPACK_FLAG_IS_COPIED
    elif readonly and not versioned:
        raise BufferError(
            "__dlpack__: the tensor is read-only and a legacy (unversioned) DLPack capsule "
            "cannot say so; ask for max_version=(1, 0) or copy=True"
        )
    if readonly:
        flags |= lib.EC_DLPACK_FLAG_READ_ONLY
    dev = t._storage._device
    kind, index = dlpack_device(t)
    if dev.type == "cuda" and stream != -1:
        # the consumer's stream waits for ember's work on the tensor (Note [DLPack streams])
        stream_wait(index, _stream_handle(stream), lib.ecu_current_stream(index))
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
        int(kind),
        int(index),
        ctypes.byref(status),
    )
    if status.value:
        raise BufferError(f"__dlpack__: {last_message()}")
    return capsule


def _device_name(kind, index):
    name = DLDeviceType(kind).name if kind in DLDeviceType._value2member_map_ else kind
    return f"{name}:{index}"


def _capsule_of(ext, copy):
    """The capsule an object hands out, asking for DLPack 1.x first; for CUDA
    memory it passes ember's current stream (Note [DLPack streams])."""
    if not hasattr(ext, "__dlpack__"):
        raise TypeError(
            f"from_dlpack: expected an object with __dlpack__ or a DLPack capsule, got "
            f"{type(ext).__name__}"
        )
    kwargs = {}
    if hasattr(ext, "__dlpack_device__"):
        kind, index = (int(x) for x in ext.__dlpack_device__())
        if kind == DLDeviceType.kDLCUDA:
            _require_cuda(
                index, "from_dlpack", f"the producer's memory ({_device_name(kind, index)})"
            )
            current = lib.ecu_current_stream(index)
            kwargs["stream"] = 1 if current == 0 else current
        elif kind not in (DLDeviceType.kDLCPU, DLDeviceType.kDLCUDAHost):
            raise BufferError(
                f"from_dlpack: the producer's memory is on DLPack device "
                f"{_device_name(kind, index)}; ember imports CPU and CUDA memory"
            )
    kwargs["max_version"] = (lib.EC_DLPACK_MAJOR, lib.EC_DLPACK_MINOR)
    if copy is not None:
        kwargs["copy"] = copy
    try:
        return ext.__dlpack__(**kwargs)
    except TypeError:
        # a producer predating DLPack 1.0 takes no keywords but the stream
        if "stream" in kwargs:
            return ext.__dlpack__(stream=kwargs["stream"])
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
    kind, index = info[lib.EC_DLPACK_DEVICE_TYPE], info[lib.EC_DLPACK_DEVICE_ID]
    if kind in (DLDeviceType.kDLCPU, DLDeviceType.kDLCUDAHost):  # host memory either way
        dev = CPU
    elif kind == DLDeviceType.kDLCUDA:
        _require_cuda(index, "from_dlpack", f"the capsule's memory ({_device_name(kind, index)})")
        dev = _device("cuda", index)
    else:
        raise BufferError(
            f"from_dlpack: the capsule's memory is on DLPack device "
            f"{_device_name(kind, index)}; ember imports CPU and CUDA memory"
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
    if not dt.base and dev.type != "cpu":  # Note [CPU-only dtypes]
        raise BufferError(f"from_dlpack: ember has no {dt.name} tensors on {dev} yet")
    n = info[lib.EC_DLPACK_NDIM]
    shape = tuple(shape_buf[:n])
    if info[lib.EC_DLPACK_HAS_STRIDES]:
        stride = tuple(stride_buf[:n])
    else:
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
        dev,
        readonly=bool(flags & lib.EC_DLPACK_FLAG_READ_ONLY),
    )
    t = make(storage, shape, stride, -low, dt, numel, None)
    return _placed(t, device, copy, bool(flags & lib.EC_DLPACK_FLAG_IS_COPIED), "from_dlpack")


def _placed(t, device, copy, copied, op):
    """An imported tensor on the ``device`` asked for (None: where it is), copied
    when ``copy`` is True (unless the producer copied already) or when it must
    move (BufferError with copy=False)."""
    target = to_device(device)
    if target is not None and target.index is None and target.type == "cuda":
        target = to_device(f"cuda:{_cuda.current_device()}")
    if target is not None and target != t._storage._device:
        if copy is False:
            raise BufferError(
                f"{op}: the memory is on {t._storage._device}; device={target} needs a copy, "
                "and copy=False"
            )

        return to_dtype_copy(t, t._dtype, target)
    if copy and not copied:
        return clone(t)
    return t


# ------------------------------------------------- CUDA Array Interface

_TYPESTR = {
    D.bool_: "|b1",
    D.uint8: "|u1",
    D.int8: "|i1",
    D.int16: "<i2",
    D.int32: "<i4",
    D.int64: "<i8",
    D.float16: "<f2",
    D.float32: "<f4",
    D.float64: "<f8",
}


def cuda_array_interface(t):
    """``Tensor.__cuda_array_interface__`` (version 3): the tensor's device
    memory for CuPy, Numba and the like, with ember's current stream as the
    one to wait for (Note [DLPack streams]).  Strides are None when the tensor
    is contiguous, as PyTorch reports them."""
    dev = t._storage._device
    if dev.type != "cuda":
        raise AttributeError(
            f"Can't get __cuda_array_interface__ on non-CUDA tensor type: {type_(t)} If CUDA "
            "data is required use tensor.cuda() to copy tensor to device memory."
        )
    if t._rg:
        raise RuntimeError(
            "Can't get __cuda_array_interface__ on Variable that requires grad. If gradients "
            "aren't required, use var.detach() to get Variable that doesn't require grad."
        )
    typestr = _TYPESTR.get(t._dtype)
    if typestr is None:
        raise TypeError(
            f"__cuda_array_interface__: dtype {t._dtype} has no type string in the CUDA Array "
            "Interface (export it through DLPack instead)"
        )
    itemsize = t._dtype.itemsize
    strides = None if t.is_contiguous() else tuple(s * itemsize for s in t._stride)
    stream = lib.ecu_current_stream(dev.index or 0)
    return {
        "shape": tuple(t._shape),
        "typestr": typestr,
        "descr": [("", typestr)],
        "data": (t._ptr if t._numel else 0, bool(t._storage._readonly)),
        "strides": strides,
        "version": 3,
        # 0 would be ambiguous (the spec disallows it): ember's default stream is the legacy one
        "stream": 1 if stream == 0 else stream,
    }


def cuda_array_desc(obj):
    """``obj.__cuda_array_interface__``, or None when ``obj`` has none (a CPU
    PyTorch tensor's property raises AttributeError)."""
    if not hasattr(type(obj), "__cuda_array_interface__"):
        return None
    try:
        return obj.__cuda_array_interface__
    except AttributeError:
        return None


def from_cuda_array_interface(obj, desc=None, op="as_tensor"):
    """A CUDA tensor over the memory an object describes with the CUDA Array
    Interface (versions 0-3), keeping the object alive; ember's current stream
    waits for the producer's ``stream`` (v3)."""
    import numpy as np

    if desc is None:
        desc = obj.__cuda_array_interface__
    if desc.get("mask") is not None:
        raise TypeError(
            f"{op}: masked CUDA arrays (a __cuda_array_interface__ mask) are not supported"
        )
    typestr = desc["typestr"]
    try:
        npdt = np.dtype(typestr)
    except TypeError:
        npdt = None
    dt = D.NUMPY_TO_DTYPE.get(npdt) if npdt is not None and npdt.isnative else None
    if dt is None or not dt.base:  # Note [CPU-only dtypes]: none on CUDA
        raise TypeError(f"{op}: the CUDA array's type {typestr!r} has no ember dtype on CUDA")
    shape = tuple(int(s) for s in desc["shape"])
    if any(s < 0 for s in shape):
        raise ValueError(f"{op}: the CUDA array has a negative size in its shape {list(shape)}")
    ptr, readonly = desc["data"]
    ptr = int(ptr or 0)
    isz = dt.itemsize
    byte_strides = desc.get("strides")
    if byte_strides is None:
        stride = contiguous_strides(shape)
    else:
        if any(int(s) % isz for s in byte_strides):
            raise ValueError(
                f"{op}: the CUDA array's strides {tuple(byte_strides)} are not multiples of "
                f"its element size {isz}"
            )
        stride = tuple(int(s) // isz for s in byte_strides)
    numel = 1
    for s in shape:
        numel *= s
    stream = desc.get("stream") if desc.get("version", 0) >= 3 else None
    if stream is not None and int(stream) == 0:
        raise ValueError(
            f"{op}: __cuda_array_interface__ stream 0 is disallowed (the spec asks for None, 1 "
            "or 2 instead)"
        )
    _cuda.require(0, op)
    if numel == 0 or ptr == 0:
        index = _cuda.current_device()
    else:
        where = ffi.new("int*")
        _cuda.check(lib.ecu_pointer_device(ptr, where), op)
        if where[0] < 0:
            raise TypeError(
                f"{op}: the __cuda_array_interface__ pointer 0x{ptr:x} is not CUDA device "
                "memory ember can use"
            )
        index = where[0]
    if stream is not None:  # ember's current stream waits for the producer's
        stream_wait(index, lib.ecu_current_stream(index), _stream_handle(int(stream)))
    low = sum((s - 1) * st for s, st in zip(shape, stride) if st < 0) if numel else 0
    high = sum((s - 1) * st for s, st in zip(shape, stride) if st > 0) if numel else -1

    storage = _storage.external(
        ptr + low * isz,
        (high - low + 1) * isz,
        obj,
        _device("cuda", index),
        readonly=bool(readonly),
    )
    return make(storage, shape, stride, -low, dt, numel, None)
