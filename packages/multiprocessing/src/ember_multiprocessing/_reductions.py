"""How tensors and storages cross process boundaries: matched reduce/rebuild
pairs, registered with multiprocessing's pickler in one function
(``init_reductions``).

A tensor is pickled as a handle to its storage's shared memory plus its shape,
strides, offset, dtype and requires_grad; the storage moves into shared memory
once (``share_memory_``: later sends and views find it there).  The receiver
maps the memory and builds a tensor over it.  Storages are unique per process
and memory (Note [Storage identity]), so tensors that shared a storage in the
sender share one in the receiver, and a tensor sent back to its sender gets
its original storage back.

A storage already in shared memory travels the way it was shared (a memfd
segment or a named file), whatever the current strategy; the strategy decides
where storages that are not shared yet go.

Note [Storage identity]
``_storages`` maps (segment inode, data offset) or (file name) to the live
storage over that memory in this process: the ones it sent and the ones it
received.  A storage's memory cannot be reused while the storage lives (it
holds a reference, Note [Shared blocks]), so a key never names two memories at
once.  Each process starts with an empty map (forked children too: a storage
inherited through fork holds no reference of the child's, so a tensor received
there gets a storage of its own).
"""

import os
import threading
import weakref
from multiprocessing import reduction
from typing import Any

import ember_core
from ember_core._tensor import dtype as core_dtype
from ember_core._tensor import storage as core_storage
from ember_core._tensor import tensor as core_tensor
from ember_multiprocessing import _file_system, _lib, _segments, _shared_memory

Tensor = ember_core.Tensor
UntypedStorage = core_storage.UntypedStorage
SharedBlock = _shared_memory.SharedBlock
NamedBlock = _file_system.NamedBlock
HEADER = _shared_memory.HEADER


# -------------------------------------------------------------- strategies

_STRATEGIES = ("file_descriptor", "file_system")
_strategy = ["file_descriptor"]


class SharingStrategyError(ValueError, AssertionError):
    """An unknown sharing strategy (PyTorch asserts; both catch clauses work)."""


def get_sharing_strategy():
    """The current sharing strategy: "file_descriptor" (default) or "file_system"."""
    return _strategy[0]


def set_sharing_strategy(new_strategy):
    """Choose where tensors that are not shared yet are moved when sent (and
    what ``share_memory_()`` does):

    - "file_descriptor" (default): blocks carved from anonymous memfd segments;
      a receiving process fetches a segment's descriptor once, over a Unix
      socket, and caches the mapping (Note [Segment sharing]).  Needs neither
      one descriptor per tensor nor files in /dev/shm.
    - "file_system": one named file in /dev/shm per storage, unlinked by the
      last process to drop it, or by a cleanup process when processes die.

    >>> set_sharing_strategy("file_system")
    """
    if new_strategy not in _STRATEGIES:
        raise SharingStrategyError(
            f"set_sharing_strategy: unknown strategy {new_strategy!r}; "
            f"choose one of {sorted(_STRATEGIES)}"
        )
    _strategy[0] = new_strategy
    core_storage.set_shared_allocator(_allocator_for(new_strategy))


def get_all_sharing_strategies():
    """The strategies this platform supports: {"file_descriptor", "file_system"}."""
    return set(_STRATEGIES)


def _allocator_for(strategy):
    return _file_system.allocator() if strategy == "file_system" else _shared_memory.allocator()


# ------------------------------------------------------------------ owners


class _Received:
    """Owner of a storage over a memfd segment of another process (or over one
    of our own, sent back after our storage died): holds one reference to the
    block and one user of the mapping."""

    __slots__ = ("mapping", "ino", "base", "size", "header", "servers", "pid")

    def __init__(self, mapping, ino, base, size, header, servers):
        self.mapping = mapping  # a _segments.Mapping, or None for our own segment
        self.ino, self.base, self.size, self.header = ino, base, size, header
        self.servers = servers  # who can hand out the segment (Note [Segment sharing])
        self.pid = os.getpid()

    def __del__(self):
        try:
            if self.pid != os.getpid():
                return  # inherited through fork: the reference is the parent's
            _lib.ref_add(self.header, -1)  # while still mapped
            if self.mapping is not None:
                _segments.release(self.mapping)
        except (TypeError, AttributeError):
            pass  # interpreter shutdown: modules are gone, and so is the process's memory


class _ReceivedNamed:
    """Owner of a storage over a named file another process created."""

    __slots__ = ("name", "base", "size", "pid")

    def __init__(self, name, base, size):
        self.name, self.base, self.size = name, base, size
        self.pid = os.getpid()

    def __del__(self):
        try:
            if self.pid == os.getpid():
                _file_system.release(self.name, self.base, self.size)
        except (TypeError, AttributeError):
            pass


_storages: weakref.WeakValueDictionary[Any, Any] = (
    weakref.WeakValueDictionary()
)  # Note [Storage identity]
_lock = threading.Lock()


def _after_fork_in_child():
    global _storages, _lock
    _storages = weakref.WeakValueDictionary()
    _lock = threading.Lock()


os.register_at_fork(after_in_child=_after_fork_in_child)


# ------------------------------------------------------------------ reduce


def _handle(storage, tensor=None):
    """The picklable handle of ``storage``'s shared memory, carrying one reference
    to it; moves the storage into shared memory first when needed."""
    owner = storage._owner
    kind = type(owner)
    if kind is _Received:
        _lib.ref_add(owner.header, 1)
        servers = owner.servers
        here = _segments.server_address()
        if here not in servers:
            servers = (*servers, here)
        return (
            "fd",
            owner.ino,
            owner.size,
            storage._ptr - owner.base,
            owner.header - owner.base,
            storage._nbytes,
            servers,
        )
    if kind is _ReceivedNamed:
        _lib.ref_add(owner.base, 1)
        return ("fs", owner.name, owner.size, storage._nbytes)
    if kind is tuple and storage._shared:
        block = owner[1]
        if type(block) is SharedBlock:
            ino, base, size, fd = block.locate()
            _lib.ref_add(block.header, 1)
            data_off = storage._ptr - base
            if block.pid == os.getpid():  # not a fork-inherited one (Note [Storage identity])
                _storages[("fd", ino, data_off)] = storage
            return (
                "fd",
                ino,
                size,
                data_off,
                block.header - base,
                storage._nbytes,
                (_segments.publish(ino, base, size, fd),),
            )
        if type(block) is NamedBlock:
            _lib.ref_add(block.base, 1)
            if block.pid == os.getpid():
                _storages[("fs", block.name)] = storage
            return ("fs", block.name, block.size, storage._nbytes)
    # Not in memory another process can map with a reference count: move it (once).
    # caller_refs=1: our own ``storage`` variable.  When nothing but ``tensor``
    # refers to the storage, share_ need not search the heap for other views.
    core_storage.share_(storage, _allocator_for(_strategy[0]), tensor, caller_refs=1)
    return _handle(storage)


def _check_device(storage, what):
    if storage._device.type != "cpu":
        raise RuntimeError(
            f"ember_multiprocessing: cannot send a {what} on {storage._device} to another "
            "process: sharing CUDA memory needs CUDA IPC handles, which come with ember's CUDA "
            "backend (not built yet); move it to the CPU first (.cpu())"
        )


def reduce_tensor(tensor):
    """(rebuild_tensor, args) for a tensor: its storage's handle and its geometry."""
    _check_device(tensor._storage, "tensor")
    if tensor._rg and tensor.grad_fn is not None:
        raise RuntimeError(
            "Cowardly refusing to serialize non-leaf tensor which requires_grad, since autograd "
            "does not support crossing process boundaries.  If you just want to transfer the "
            "data, call detach() on the tensor before serializing (e.g., putting it on the queue)."
        )
    cls = type(tensor)
    return (
        rebuild_tensor,
        (
            _handle(tensor._storage, tensor),  # (no local: see _handle's caller_refs)
            tensor._shape,
            tensor._stride,
            tensor._offset,
            tensor._dtype.name,
            bool(tensor._rg),
            None if cls is Tensor else cls,
        ),
    )


def reduce_storage(storage):
    """(rebuild_storage, args) for an UntypedStorage."""
    _check_device(storage, "storage")
    return (rebuild_storage, (_handle(storage),))


# ----------------------------------------------------------------- rebuild


def rebuild_storage(handle):
    """The storage in this process over the memory ``handle`` names (the message's
    reference becomes the storage's, or is dropped when the storage exists)."""
    if handle[0] == "fs":
        _, name, size, nbytes = handle
        key = ("fs", name)
        with _lock:
            s = _storages.get(key)
            if s is not None:
                _lib.ref_add(s._ptr - HEADER, -1)  # ours already counts
                return s
            base = _file_system.open_block(name, size)
            s = core_storage.external(
                base + HEADER, nbytes, _ReceivedNamed(name, base, size), shared=True
            )
            _storages[key] = s
            return s
    _, ino, size, data_off, header_off, nbytes, servers = handle
    key = ("fd", ino, data_off)
    with _lock:
        s = _storages.get(key)
        if s is not None:
            _lib.ref_add(s._ptr - data_off + header_off, -1)  # ours already counts
            return s
        base = _segments.own_segment(ino)
        mapping = None
        if base is None:
            mapping = _segments.acquire(ino, size, servers)
            base = mapping.addr
        owner = _Received(mapping, ino, base, size, base + header_off, servers)
        s = core_storage.external(base + data_off, nbytes, owner, shared=True)
        _storages[key] = s
        return s


def rebuild_tensor(handle, shape, stride, offset, dtype_name, requires_grad, cls):
    """A tensor over the received storage, with the sender's geometry."""
    storage = rebuild_storage(handle)
    numel = 1
    for n in shape:
        numel *= n
    t = core_tensor.make(
        storage, shape, stride, offset, core_dtype.DTYPES_BY_NAME[dtype_name], numel, None
    )
    if cls is not None:
        t = t.as_subclass(cls)
    if requires_grad:
        t.requires_grad_(True)
    return t


# ----------------------------------------------------------------- install


def _reducer_override(self, obj):
    if isinstance(obj, Tensor):
        return reduce_tensor(obj)
    if isinstance(obj, UntypedStorage):
        return reduce_storage(obj)
    return NotImplemented


def init_reductions():
    """Register the reductions with multiprocessing's pickler (Queue, Pipe, Pool,
    spawned processes' arguments) and make ``share_memory_()`` move storages
    into reference-counted shared memory.  Called on import."""
    reduction.ForkingPickler.reducer_override = _reducer_override
    core_storage.set_shared_allocator(_allocator_for(_strategy[0]))
