"""The CUDA backend's Python side: availability, the per-device kernel
namespaces, memory, and the compile-on-first-use callback.

The launch path is C (csrc/cuda/): an op's Python code calls a kernel entry
point of its device's namespace (Note [Kernel interface per device] in
_tensor/device.py); the C launcher finds the compiled kernel in its table, or calls
back into ``ecu_py_compile`` below, which compiles the kernel's group with
NVRTC (_cuda/compile.py), loads it and registers it (Note [Kernel table]).
"""

import os
import sys
import threading

import ember_allocator
from ember_core._base.dispatch import _GENERATED
from ember_core._base.lib import error, ffi, last_message, lib
from ember_core._cuda import compile as _cuda_compile
from ember_core._cuda import kernels as _cuda_kernels
from ember_core._tensor import storage as _storage
from ember_core._tensor.device import CPU
from ember_core._tensor.tensor import contiguous_strides, make

_lock = threading.Lock()
_status = []  # [] until the first check; then [None] when usable, [reason] when not


def _preload_runtime():
    """Load the CUDA runtime of NVIDIA's wheel, when installed, so that
    ember_allocator's dlopen of libcudart finds it (by soname) even though the
    wheel's directory is not on the library path."""
    try:
        from cuda import pathfinder

        pathfinder.load_nvidia_dynamic_lib("cudart")
    except Exception:  # no wheel: a system toolkit on the library path serves instead
        pass


def _why_unavailable():
    if not _status:
        with _lock:
            if not _status:
                _preload_runtime()
                st = lib.ecu_init()
                _status.append(None if st == 0 else last_message())
                if st == 0:
                    lib.ecu_set_launch_blocking(_launch_blocking())
    return _status[0]


def _launch_blocking():
    v = os.environ.get("EMBER_LAUNCH_BLOCKING", "") or os.environ.get("CUDA_LAUNCH_BLOCKING", "")
    return 1 if v not in ("", "0") else 0


def is_available():
    """Whether a CUDA device can be used (the driver loads and finds a GPU)."""
    return _why_unavailable() is None


def device_count():
    if _why_unavailable() is not None:
        return 0
    n = ffi.new("int*")
    lib.ecu_device_count(n)
    return n[0]


def unavailable(op, dev=None):
    """Raise the error for a CUDA request on a machine where CUDA cannot be used."""
    where = f" (asked for {dev})" if dev is not None else ""
    raise RuntimeError(
        f"{op}: CUDA is not available{where}: {_why_unavailable() or 'unknown reason'}"
    )


def require(dev, op):
    """Check that CUDA device ``dev`` (index or device) exists; raise clearly if not."""
    why = _why_unavailable()
    if why is not None:
        unavailable(op, dev)
    index = dev if isinstance(dev, int) else dev.index
    n = device_count()
    if index is not None and not 0 <= index < n:
        raise RuntimeError(
            f"{op}: CUDA error: invalid device ordinal (asked for cuda:{index}; "
            f"{n} device{'s' if n != 1 else ''} present)"
        )


def check(status, op):
    if status:
        raise error(status, op)


# --------------------------------------------------------------- devices


def current_device():
    require(0, "current_device")
    return lib.ecu_get_device()


def set_device(index):
    require(index, "set_device")
    check(lib.ecu_set_device(index), "set_device")


def current_stream_handle(index):
    return lib.ecu_current_stream(index)


# ------------------------------------------------------- kernel namespaces


def _current_op():
    """The op being run (from the generated function's frame), for messages."""

    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_code.co_filename == _GENERATED:
            return frame.f_code.co_name
        frame = frame.f_back
    return "this op"


class CudaKernels:
    """The kernel entry points of one CUDA device (Note [Kernel interface per
    device]): ``ec_<name>`` resolves to the C launcher ``ecu_<name>``.  Entry
    points without a CUDA launcher raise NotImplementedError naming the op."""

    def __init__(self, index):
        self._index = index

    def __getattr__(self, name):
        if not name.startswith("ec_"):
            raise AttributeError(name)
        dev = f"cuda:{self._index}" if self._index is not None else "cuda"
        require(self._index or 0, _current_op())
        fn = getattr(lib, "ecu_" + name[3:], None)
        if fn is None:
            raise NotImplementedError(
                f"{_current_op()}: not implemented for device '{dev}' yet (ember has no CUDA "
                f"kernel for {name[3:]}); move the tensors to the CPU with .cpu()"
            )
        if device_count() > 1 or (self._index or 0) != 0:
            fn = _on_device(fn, self._index or 0)
        setattr(self, name, fn)
        return fn


def _on_device(fn, index):
    """``fn`` run with ``index`` as the thread's current device (multi-GPU only)."""

    def call(*args):
        prev = lib.ecu_get_device()
        if prev == index:
            return fn(*args)
        lib.ecu_set_device(index)
        try:
            return fn(*args)
        finally:
            lib.ecu_set_device(prev)

    call.__name__ = getattr(fn, "__name__", "kernel")
    return call


# ------------------------------------------------------ compile on first use

_pending = []  # the exception of a failed compile, raised by _lib.error()


def _on_compile_error(exc_type, exc, tb):
    _pending[:] = [exc]
    return lib.EC_ERR_CUDA_COMPILE


@ffi.def_extern(onerror=_on_compile_error)
def ecu_py_compile(device, family, op, dtype, dtype2, variant):
    """Called by the C launchers on a kernel-table miss (Note [Kernel table]):
    compiles the asked variant of its group."""
    group = _cuda_kernels.group(family, op, dtype, dtype2).variant(variant)
    image, lowered = _cuda_compile.compile_group(group, _cuda_compile.arch_of(device))
    module = ffi.new("uint64_t*")
    buf = ffi.from_buffer(image)
    check(lib.ecu_module_load(buf, module), "loading a CUDA kernel")
    for variant, expr in group.kernels:
        check(
            lib.ecu_register(family, op, dtype, dtype2, variant, module[0], lowered[expr].encode()),
            f"loading CUDA kernel {expr}",
        )
    return 0


def compile_all(threads=None, device=0):
    """Compile every kernel the launchers can ask for (every variant of every
    group) for ``device``'s architecture into the disk cache, on ``threads``
    threads (NVRTC releases the GIL).  Returns (kernels compiled, [(name,
    error)]).  Later processes then load kernels instead of compiling them."""
    import concurrent.futures

    arch = _cuda_compile.arch_of(device)
    jobs = [g.variant(v) for g in _cuda_kernels.all_groups() for v, _ in g.kernels]
    failed = []

    def one(g):
        try:
            _cuda_compile.compile_group(g, arch)
        except Exception as e:  # reported, not raised: compile what can be compiled
            failed.append((g.name, f"{type(e).__name__}: {e}"))

    workers = threads or os.cpu_count() or 4
    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        list(pool.map(one, jobs))
    return len(jobs) - len(failed), failed


def take_pending_error():
    return _pending.pop() if _pending else None


# ------------------------------------------------------------------ memory


class OutOfMemoryError(ember_allocator.OutOfMemoryError):
    """CUDA memory could not be allocated (a RuntimeError, like torch's)."""


def allocator(index):
    return ember_allocator.get_allocator(f"cuda:{index}")


def oom_error(nbytes, index):
    """The exception for this thread's failed allocation of ``nbytes`` on cuda:index."""
    e = allocator(index).allocation_error(nbytes)
    if not isinstance(e, ember_allocator.OutOfMemoryError):
        return e
    err = OutOfMemoryError(f"CUDA out of memory. {e}")
    err.__dict__.update(e.__dict__)
    return err


# ------------------------------------------------------------------ copies


def _block_of(storage):
    owner = storage._owner
    if isinstance(owner, tuple) and getattr(owner[0], "kind", None) == "pinned":
        return owner[0], owner[1]
    return None


def is_pinned(storage):
    """Whether a host storage is page-locked memory of ember_allocator's pinned pool."""
    return _block_of(storage) is not None


def pinned_empty(shape, dtype):
    """An uninitialised contiguous CPU tensor in page-locked memory."""

    n = 1
    for s in shape:
        n *= s
    nbytes = n * dtype.itemsize
    pool = ember_allocator.get_allocator("pinned")
    block = pool.allocate(max(nbytes, 1))
    storage = _storage.from_block(pool, block, nbytes, CPU)
    return make(storage, tuple(shape), contiguous_strides(tuple(shape)), 0, dtype, n, True)


def memcpy(dst, src, nbytes, non_blocking=False):
    """Copy ``nbytes`` from tensor ``src`` to ``dst`` (different devices, at least
    one a GPU) on the GPU's current stream.  Blocking unless ``non_blocking``; an
    asynchronous copy from or to pinned host memory keeps that memory from reuse
    until the stream has done it."""
    dd, sd = dst._storage._device, src._storage._device
    gpu = dd if dd.type == "cuda" else sd
    index = gpu.index or 0
    prev = lib.ecu_get_device()
    if sd.type == "cuda" and dd.type == "cuda" and sd.index != dd.index:
        # GPU to GPU: the copy runs on the destination's stream, which must first
        # wait for the work queued on the source's stream (that wrote src)
        _order_after(sd.index or 0, index, prev)
    if prev != index:
        check(lib.ecu_set_device(index), "copy")
    try:
        host = src._storage if sd.type == "cpu" else dst._storage if dd.type == "cpu" else None
        blocking = not non_blocking
        check(lib.ecu_memcpy(dst._ptr, src._ptr, nbytes, 1 if blocking else 0), "copy")
        if not blocking and host is not None:
            pinned = _block_of(host)
            if pinned is not None:
                pinned[0].record_stream(pinned[1], lib.ecu_current_stream(index))
    finally:
        if prev != index:
            lib.ecu_set_device(prev)


def _order_after(src_index, dst_index, prev):
    """Make dst_index's current stream wait for src_index's current stream."""
    event = ffi.new("uint64_t*")
    try:
        check(lib.ecu_set_device(src_index), "copy")
        check(lib.ecu_event_create(0, event), "copy")
        check(lib.ecu_event_record(event[0], lib.ecu_current_stream(src_index)), "copy")
        check(lib.ecu_set_device(dst_index), "copy")
        check(lib.ecu_stream_wait_event(lib.ecu_current_stream(dst_index), event[0]), "copy")
    finally:
        if event[0]:
            lib.ecu_event_destroy(event[0])  # released once the wait is done
        lib.ecu_set_device(prev)


def synchronize(index):
    check(lib.ecu_synchronize(index), "synchronize")
