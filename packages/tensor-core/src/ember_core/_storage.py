"""Storages: a tensor's memory, who owns it, and its version counter.

Every tensor points at a storage; views share one.  A storage's ``_version``
counts in-place writes to it (through any view): autograd compares it with the
version a saved tensor had.  Memory goes back to its owner when the last tensor
(and so the storage) goes: CPU memory comes from ember_allocator's default host
allocator unless another allocator was installed with ``set_allocator``.
"""

import ember_allocator

from ember_core._device import CPU, device

_host_malloc, _host_free = ember_allocator.host_fast_path()
_host_allocator = ember_allocator.host_allocator()
_new = object.__new__


class UntypedStorage:
    """Bytes on a device, shared by every tensor viewing them."""

    __slots__ = ("_ptr", "_nbytes", "_version", "__weakref__")
    _owner = None
    _readonly = False
    _device = CPU

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
        return False

    def __repr__(self):
        return f"<{type(self).__name__} {self._nbytes} bytes on {self._device} at 0x{self._ptr:x}>"


class _HostStorage(UntypedStorage):
    """Memory of the default host allocator (the hot path of every CPU tensor)."""

    __slots__ = ()

    def __del__(self):
        _host_free(self._ptr)


class _BlockStorage(UntypedStorage):
    """Memory of any allocator object: ``owner`` is (allocator, block)."""

    __slots__ = ("_device", "_owner", "_shared")

    def __del__(self):
        allocator, block = self._owner
        if hasattr(allocator, "free") and not getattr(block, "freed", False):
            allocator.free(block)

    def is_shared(self):
        return self._shared


class _ExternalStorage(UntypedStorage):
    """Memory owned by another object (a NumPy array, a DLPack producer)."""

    __slots__ = ("_device", "_owner", "_readonly")


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
    if dev is CPU and not _allocators:
        ptr = _host_malloc(nbytes)
        if ptr:
            s = _new(_HostStorage)
            s._ptr = ptr
            s._nbytes = nbytes
            s._version = 0
            return s
        _host_allocator.allocate(nbytes)  # raises the allocator's exception
        raise MemoryError(f"cannot allocate {nbytes} bytes")
    if dev.type != "cpu":
        from ember_core import _cuda

        _cuda.unavailable("allocate", dev)
    allocator = get_allocator(dev)
    block = _alloc_block(allocator, nbytes, dev)
    s = _new(_BlockStorage)
    s._ptr = int(block.ptr)
    s._nbytes = nbytes
    s._version = 0
    s._device = dev
    s._owner = (allocator, block)
    s._shared = getattr(allocator, "kind", None) == "shm"
    return s


def from_block(allocator, block, nbytes, dev=CPU, shared=False):
    """Wrap a block that an allocator already handed out."""
    s = _new(_BlockStorage)
    s._ptr = int(block.ptr)
    s._nbytes = nbytes
    s._version = 0
    s._device = dev
    s._owner = (allocator, block)
    s._shared = shared
    return s


def external(ptr, nbytes, owner, dev=CPU, readonly=False):
    """A storage over memory that ``owner`` keeps alive."""
    s = _new(_ExternalStorage)
    s._ptr = ptr
    s._nbytes = nbytes
    s._version = 0
    s._device = dev
    s._owner = owner
    s._readonly = readonly
    return s
