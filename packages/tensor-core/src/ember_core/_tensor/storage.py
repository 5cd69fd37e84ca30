"""Storages: a tensor's memory, who owns it, and its version counter.

Every tensor points at a storage; views share one.  A storage's ``_version``
counts in-place writes to it (through any view): autograd compares it with the
version a saved tensor had.  Memory goes back to its owner when the last tensor
(and so the storage) goes: CPU memory comes from ember_allocator's default host
allocator unless another allocator was installed with ``set_allocator``.  The
legacy typed view of a storage (``Tensor.storage()``, TypedStorage) is here too.
"""

import sys
import warnings
import weakref

import ember_allocator
from ember_core._base import settings as _settings
from ember_core._base.lib import lib, nogil
from ember_core._tensor.device import CPU, device

_host_malloc, _host_free = ember_allocator.host_fast_path()
_host_allocator = ember_allocator.host_allocator()
_new = object.__new__
_MAX_BYTES = 1 << 62


class UntypedStorage:
    """Bytes on a device, shared by every tensor viewing them.

    Every storage class has the same slots, so a storage can change kind in place
    (share_memory_ moves a storage into shared memory under its views' feet)."""

    __slots__ = ("_ptr", "_nbytes", "_version", "_owner", "_device", "__weakref__")
    _readonly = False
    _shared = False

    def data_ptr(self):
        return self._ptr

    def nbytes(self):
        return self._nbytes

    def size(self):
        return self._nbytes

    def __len__(self):
        return self._nbytes

    @property
    def device(self):
        return self._device

    def is_shared(self):
        return self._shared

    def __repr__(self):
        return f"<{type(self).__name__} {self._nbytes} bytes on {self._device} at 0x{self._ptr:x}>"


class _HostStorage(UntypedStorage):
    """Memory of the default host allocator (the hot path of every CPU tensor).

    Its memory is freed by a C finalizer (``_host_free(self._ptr)``), installed
    when ember_core._tensor.tensor configures ember_core._C (Note [Host storage
    finalizer] in csrc/cpu/runtime/pyfast.c)."""

    __slots__ = ()


class _BlockStorage(UntypedStorage):
    """Memory of any allocator object: ``_owner`` is (allocator, block[, more])."""

    __slots__ = ()

    def __del__(self):
        allocator, block = self._owner[0], self._owner[1]
        if hasattr(allocator, "free") and not getattr(block, "freed", False):
            allocator.free(block)


class _SharedStorage(_BlockStorage):
    """A block of shared memory (a memfd segment another process can map)."""

    __slots__ = ()
    _shared = True


class _CudaStorage(UntypedStorage):
    """Device memory of ember_allocator's CUDA pool (``_owner``: the allocator's
    free-by-address entry point; 0 bytes own nothing)."""

    __slots__ = ()

    def __del__(self):
        if self._ptr:
            self._owner(self._ptr)


# Note [Meta tensors]
# A tensor on the "meta" device has a shape, strides and a dtype but no memory:
# its storage records a size and a null pointer.  Ops run their Python as on any
# device (shapes, dtypes, broadcasting, autograd), and the meta device's kernel
# namespace (device._MetaKernels) answers every kernel with success without
# touching memory, so a model can be built and run for its shapes
# (``with ember.device("meta"):``), then materialized with ``Module.to_empty``.
# Values never leave: copying out (``cpu()``, ``item()``, ``tolist()``, and so any
# op whose output shape depends on values, such as nonzero) raises.


class _MetaStorage(UntypedStorage):
    """The storage of a meta tensor: a size and no memory (Note [Meta tensors])."""

    __slots__ = ()


def _meta_storage(nbytes, dev):
    s = _new(_MetaStorage)
    s._ptr = 0
    s._nbytes = nbytes
    s._version = 0
    s._owner = None
    s._device = dev
    return s


class _ExternalStorage(UntypedStorage):
    """Memory owned by another object (a NumPy array, a DLPack producer)."""

    __slots__ = ()


class _ReadonlyExternalStorage(_ExternalStorage):
    __slots__ = ()
    _readonly = True


class _SharedExternalStorage(_ExternalStorage):
    """Shared memory mapped from another process (owner: the mapping's keeper)."""

    __slots__ = ()
    _shared = True


# ------------------------------------------------------------- allocation

_allocators = {}  # device -> allocator object (absent: ember's default)


def set_allocator(allocator, device_="cpu"):
    """Install the allocator tensors on ``device_`` get memory from.

    ``allocator`` follows the allocator protocol: ``allocate(nbytes, device,
    stream)`` returns a block with a ``ptr`` attribute and ``free(block)`` returns
    it.  An ``ember_allocator.CachingAllocator`` may be passed as is.  ``None``
    restores ember's default.
    """
    dev = device(device_)
    if allocator is None:
        _allocators.pop(dev, None)
    else:
        _allocators[dev] = allocator


def get_allocator(device_="cpu"):
    dev = device(device_)
    return _allocators.get(dev) or ember_allocator.get_allocator(str(dev))


def _alloc_block(allocator, nbytes, dev):
    if isinstance(allocator, ember_allocator.CachingAllocator):
        return allocator.allocate(nbytes)
    return allocator.allocate(nbytes, dev, None)


def allocate(nbytes, dev=CPU):
    """A fresh storage of ``nbytes`` bytes (uninitialised)."""
    if dev.type == "meta":
        return _meta_storage(nbytes, dev)
    if nbytes > _MAX_BYTES:
        raise ember_allocator.OutOfMemoryError(
            f"cannot allocate {nbytes} bytes on {dev}: more than any address space holds"
        )
    if dev is CPU and not _allocators:
        ptr = _host_malloc(nbytes)
        if ptr:
            s = _new(_HostStorage)
            s._ptr = ptr
            s._nbytes = nbytes
            s._version = 0
            s._owner = None
            s._device = CPU
            return s
        # The failed malloc already counted its OOM; only build its exception.
        raise _host_allocator.allocation_error(nbytes)
    if dev.type == "cuda" and dev not in _allocators:
        return _cuda_allocate(nbytes, dev)
    if dev.type != "cpu" and dev not in _allocators:
        raise RuntimeError(f"cannot allocate memory on device '{dev}'")
    allocator = get_allocator(dev)
    block = _alloc_block(allocator, nbytes, dev)
    return from_block(allocator, block, nbytes, dev, getattr(allocator, "kind", None) == "shm")


_cuda_paths = {}  # cuda device -> (malloc, free, index): ember_allocator's fast path


def _cuda_allocate(nbytes, dev):
    path = _cuda_paths.get(dev)
    if path is None:
        path = _cuda_setup(dev)
        dev = path[3]
    malloc, free, index, dev = path
    ptr = 0
    if nbytes:
        ptr = malloc(nbytes, _current_stream(index))
        if not ptr:
            from ember_core._cuda import runtime as _cuda

            raise _cuda.oom_error(nbytes, index)
    s = _new(_CudaStorage)
    s._ptr = ptr
    s._nbytes = nbytes
    s._version = 0
    s._device = dev
    s._owner = free
    return s


def _cuda_setup(dev):
    from ember_core._cuda import runtime as _cuda

    if dev.index is None:  # 'cuda': the current device
        _cuda.require(0, "allocate")
        return _cuda_setup(device("cuda", _cuda.current_device()))
    _cuda.require(dev, "allocate")
    malloc, free = ember_allocator.fast_path(f"cuda:{dev.index}")
    path = _cuda_paths[dev] = (malloc, free, dev.index, dev)
    return path


def _current_stream(index):
    global _current_stream
    _current_stream = lib.ecu_current_stream
    return _current_stream(index)


def from_block(allocator, block, nbytes, dev=CPU, shared=False):
    """Wrap a block that an allocator already handed out."""
    s = _new(_SharedStorage if shared else _BlockStorage)
    s._ptr = int(block.ptr)
    s._nbytes = nbytes
    s._version = 0
    s._device = dev
    s._owner = (allocator, block)
    return s


def external(ptr, nbytes, owner, dev=CPU, readonly=False, shared=False):
    """A storage over memory that ``owner`` keeps alive (``shared``: memory another
    process shares, e.g. a received tensor)."""
    cls = (
        _ReadonlyExternalStorage
        if readonly
        else (_SharedExternalStorage if shared else _ExternalStorage)
    )
    s = _new(cls)
    s._ptr = ptr
    s._nbytes = nbytes
    s._version = 0
    s._device = dev
    s._owner = owner
    return s


# ------------------------------------------------------------ shared memory

# Storages whose memory was handed out by address (NumPy arrays, DLPack
# capsules): moving them must keep the old memory alive for those holders.
exported = weakref.WeakSet()


_shared_allocator = [None]


def shared_allocator():
    """The allocator share_memory_ moves storages into: ember_allocator's memfd
    allocator, unless a package installed another (ember_multiprocessing installs
    one whose blocks carry cross-process reference counts)."""
    return _shared_allocator[0] or ember_allocator.get_allocator("shm")


def set_shared_allocator(allocator):
    """Install the allocator (allocator protocol) that shared storages come from."""
    _shared_allocator[0] = allocator


def share_(storage, allocator=None, tensor=None, caller_refs=0):
    """Move ``storage`` into shared memory in place (every view follows); a no-op
    when it is shared already (unless another ``allocator`` is asked for).
    Returns the storage.

    ``tensor``, when given, is a tensor over the storage; ``caller_refs`` counts
    other references the caller holds.  If no other tensor can view the storage
    only that tensor's cached address is refreshed, which saves a heap scan."""
    referrers = sys.getrefcount(storage) - 2 - caller_refs  # minus our parameter and getrefcount's
    if storage._shared and allocator is None:
        return storage
    if storage._device.type != "cpu":
        from ember_core._cuda import runtime as _cuda

        _cuda.unavailable("share_memory_", storage._device)
    shm = allocator or shared_allocator()
    block = _alloc_block(shm, max(storage._nbytes, 1), CPU)
    if storage._nbytes:
        fn = nogil.ec_copy_contig if storage._nbytes > (1 << 18) else lib.ec_copy_contig
        fn(storage._nbytes, block.ptr, 1, storage._ptr, 1)  # uint8 copy
    old_cls, old_ptr, old_owner = type(storage), storage._ptr, storage._owner
    keep_old = storage in exported
    if keep_old and old_cls is _HostStorage:
        old_owner = _OrphanedHostMemory(old_ptr)
    storage.__class__ = _SharedStorage
    storage._owner = (shm, block, old_owner) if keep_old else (shm, block)
    storage._ptr = int(block.ptr)
    if not keep_old:
        if old_cls is _HostStorage:
            _host_free(old_ptr)
        elif issubclass(old_cls, _BlockStorage):
            old_allocator, old_block = old_owner[0], old_owner[1]
            old_allocator.free(old_block)
    if tensor is not None and referrers <= 1 and tensor._storage is storage:
        tensor._ptr = storage._ptr + tensor._offset * tensor._dtype.itemsize
    else:
        _retarget_views(storage)
    return storage


class _OrphanedHostMemory:
    """Host memory a moved storage no longer uses but an exported array may."""

    __slots__ = ("ptr",)

    def __init__(self, ptr):
        self.ptr = ptr

    def __del__(self):
        _host_free(self.ptr)


def _retarget_views(storage):
    """Tensors cache their data address; after a storage moved, refresh every
    tensor that views it (found through the garbage collector's referrers)."""
    import gc

    from ember_core._tensor.tensor import Tensor

    for ref in gc.get_referrers(storage):
        if isinstance(ref, Tensor) and ref._storage is storage:
            ref._ptr = storage._ptr + ref._offset * ref._dtype.itemsize


# ------------------------------------------------------- typed storages (legacy)
# Tensor.storage(): PyTorch's (deprecated) TypedStorage, a typed 1-D view of a
# tensor's whole storage.  It is a thin wrapper over a flat tensor that shares
# the memory, so reads and writes go through ordinary ops.

_warned = [False]


def _warn_once():
    if not _warned[0] or _settings.is_warn_always_enabled():
        _warned[0] = True
        warnings.warn(
            "TypedStorage is deprecated. It will be removed in the future and UntypedStorage "
            "will be the only storage class. This should only matter to you if you are using "
            "storages directly.  To access UntypedStorage directly, use "
            "tensor.untyped_storage() instead of tensor.storage()",
            UserWarning,
            stacklevel=3,
        )


class TypedStorage:
    """A typed view of a storage: ``len`` elements of ``dtype`` on ``device``."""

    is_sparse = False

    def __init__(self, tensor):
        untyped = tensor.untyped_storage()
        n = untyped.nbytes() // tensor.element_size()
        self._flat = tensor.detach().as_strided((n,), (1,), 0)  # detached: nothing recorded
        self._untyped = untyped

    @property
    def dtype(self):
        return self._flat.dtype

    @property
    def device(self):
        return self._flat.device

    def size(self):
        return self._flat.numel()

    def __len__(self):
        return self._flat.numel()

    def nbytes(self):
        return self._flat.numel() * self._flat.element_size()

    def element_size(self):
        return self._flat.element_size()

    def data_ptr(self):
        return self._flat.data_ptr()

    def untyped(self):
        return self._untyped

    def _untyped_storage(self):
        return self._untyped

    def tolist(self):
        return self._flat.tolist()

    def __iter__(self):
        return iter(self.tolist())

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return self._flat[idx].clone().storage()
        return self._flat[idx].item()

    def __setitem__(self, idx, value):
        self._flat[idx] = value

    def fill_(self, value):
        self._flat.fill_(value)
        return self

    def copy_(self, source, non_blocking=None):
        src = source._flat if isinstance(source, TypedStorage) else source
        self._flat.copy_(src)
        return self

    def clone(self):
        return TypedStorage(self._flat.clone())

    def cpu(self):
        return self if self.device.type == "cpu" else TypedStorage(self._flat.cpu())

    def is_shared(self):
        return self._untyped.is_shared() if hasattr(self._untyped, "is_shared") else False

    def type(self):
        return "torch." + self._flat.type().rsplit(".", 1)[-1].replace("Tensor", "Storage")

    def __repr__(self):
        body = "\n".join(f" {v}" for v in self.tolist())
        kind = f"torch.storage.TypedStorage(dtype={self.dtype}, device={self.device})"
        return f"{body}\n[{kind} of size {len(self)}]"


def typed_storage(self):
    """Tensor.storage(): this tensor's storage as a TypedStorage (deprecated in PyTorch)."""
    _warn_once()
    return TypedStorage(self)


def is_storage(obj):
    """Whether obj is a storage (untyped, or a legacy TypedStorage)."""
    return isinstance(obj, (UntypedStorage, TypedStorage))
