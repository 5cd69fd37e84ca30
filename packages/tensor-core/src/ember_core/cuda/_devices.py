"""CUDA devices: count, current device, properties."""

import collections

from ember_core._base.lib import ffi, lib
from ember_core._cuda import runtime as _cuda
from ember_core._tensor.device import device as device_cls

is_available = _cuda.is_available
device_count = _cuda.device_count

_ATTR_SM_COUNT = 16
_ATTR_MAJOR = 75
_ATTR_MINOR = 76
_ATTR_L2 = 38
_ATTR_MAX_THREADS_PER_SM = 39
_ATTR_WARP = 10
_ATTR_SHARED_PER_BLOCK_OPTIN = 97
_ATTR_INTEGRATED = 18


def _index(device, op):
    """A device argument (None, int, 'cuda:1', device) as an index."""

    if device is None:
        return current_device()
    if isinstance(device, int) and not isinstance(device, bool):
        index = device
    else:
        d = device_cls(device) if not isinstance(device, device_cls) else device
        if d.type != "cuda":
            raise ValueError(f"{op}: expected a cuda device, but got: {d}")
        index = current_device() if d.index is None else d.index
    _cuda.require(index, op)
    return index


def current_device():
    """The index of the current CUDA device of this thread."""
    return _cuda.current_device()


def set_device(device):
    """Make ``device`` this thread's current CUDA device (a negative index is a no-op,
    as in PyTorch)."""
    if isinstance(device, int) and device < 0:
        return
    _cuda.set_device(_index(device, "set_device"))


class device:
    """Context manager that makes a CUDA device current: ``with ember.cuda.device(1):``."""

    def __init__(self, device):
        self.idx = -1 if device is None else _index(device, "cuda.device")
        self.prev_idx = -1

    def __enter__(self):
        if self.idx >= 0:
            self.prev_idx = current_device()
            if self.prev_idx != self.idx:
                set_device(self.idx)
        return self

    def __exit__(self, *exc):
        if self.idx >= 0 and self.prev_idx != self.idx:
            set_device(self.prev_idx)
        return False


class device_of(device):
    """``with ember.cuda.device_of(tensor):`` -- the tensor's device (CPU: no-op)."""

    def __init__(self, obj):
        dev = obj.device
        super().__init__(dev.index if dev.type == "cuda" else None)


def _attr(index, attr):
    v = ffi.new("int*")
    _cuda.check(lib.ecu_device_attribute(index, attr, v), "get_device_properties")
    return v[0]


def get_device_name(device=None):
    index = _index(device, "get_device_name")
    buf = ffi.new("char[256]")
    _cuda.check(lib.ecu_device_name(index, buf, 256), "get_device_name")
    return ffi.string(buf).decode()


def get_device_capability(device=None):
    index = _index(device, "get_device_capability")
    return _attr(index, _ATTR_MAJOR), _attr(index, _ATTR_MINOR)


_Properties = collections.namedtuple(
    "_CudaDeviceProperties",
    [
        "name",
        "major",
        "minor",
        "total_memory",
        "multi_processor_count",
        "is_integrated",
        "max_threads_per_multi_processor",
        "warp_size",
        "L2_cache_size",
        "shared_memory_per_block_optin",
    ],
)


class _CudaDeviceProperties(_Properties):
    def __repr__(self):
        return (
            f"_CudaDeviceProperties(name='{self.name}', major={self.major}, minor={self.minor}, "
            f"total_memory={self.total_memory >> 20}MB, "
            f"multi_processor_count={self.multi_processor_count}, "
            f"L2_cache_size={self.L2_cache_size >> 20}MB)"
        )


def get_device_properties(device=None):
    index = _index(device, "get_device_properties")
    total = ffi.new("uint64_t*")
    _cuda.check(lib.ecu_device_total_memory(index, total), "get_device_properties")
    return _CudaDeviceProperties(
        name=get_device_name(index),
        major=_attr(index, _ATTR_MAJOR),
        minor=_attr(index, _ATTR_MINOR),
        total_memory=total[0],
        multi_processor_count=_attr(index, _ATTR_SM_COUNT),
        is_integrated=_attr(index, _ATTR_INTEGRATED),
        max_threads_per_multi_processor=_attr(index, _ATTR_MAX_THREADS_PER_SM),
        warp_size=_attr(index, _ATTR_WARP),
        L2_cache_size=_attr(index, _ATTR_L2),
        shared_memory_per_block_optin=_attr(index, _ATTR_SHARED_PER_BLOCK_OPTIN),
    )


def is_bf16_supported(including_emulation=True):
    """bfloat16 works on every CUDA device ember runs on (computed in float32);
    native bf16 arithmetic needs compute capability 8.0."""
    if not is_available():
        return False
    return including_emulation or get_device_capability()[0] >= 8


def synchronize(device=None):
    """Wait for all work queued on a CUDA device; raises errors kernels reported."""
    _cuda.synchronize(_index(device, "synchronize"))


def driver_version():
    v = ffi.new("int*")
    _cuda.check(lib.ecu_driver_version(v), "driver_version")
    return v[0]


def is_initialized():
    return _cuda._status == [None]


def init():
    _cuda.require(0, "init")
