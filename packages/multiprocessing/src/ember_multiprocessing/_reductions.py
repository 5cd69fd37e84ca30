"""How tensors cross process boundaries: matched reduce/rebuild pairs registered
with multiprocessing's pickler (one function, ``install``).

A tensor is pickled as a handle to its storage's shared memory plus its
shape, strides, offset and dtype; the storage moves into shared memory once
(``Tensor.share_memory_``).  The receiver maps the memory (see _segments.py and
_file_system.py) and builds a tensor over it; two tensors that shared a
storage in the sender share one storage in the receiver.
"""

import os
import threading
import weakref
from multiprocessing import reduction

import ember_core as ec
from ember_core import _storage as core_storage
from ember_core import _tensor as core_tensor

from ember_multiprocessing import _file_system, _segments, _shared_memory
from ember_multiprocessing._C import lib

Tensor = ec.Tensor
HEADER = _shared_memory.HEADER

STRATEGIES = ("segments", "file_descriptor", "file_system")
_strategy = ["segments"]


def get_sharing_strategy():
    """The current strategy: "segments" (default), "file_descriptor" or "file_system"."""
    return _strategy[0]


def set_sharing_strategy(new_strategy):
    """Choose how tensors are shared:

    - "segments" (default): tensors are packed in memfd segments; each receiving
      process gets a segment's descriptor once, on first use, and caches the
      mapping.  Needs neither many open descriptors nor files in /dev/shm.
    - "file_descriptor": a descriptor travels with every message (PyTorch's
      default; many messages in flight can hit the open-files limit).
    - "file_system": one named file in /dev/shm per storage, unlinked by the last
      process to drop it, or by a cleanup process if processes die.
    """
    if new_strategy not in STRATEGIES:
        raise ValueError(f"sharing strategy must be one of {STRATEGIES}, got {new_strategy!r}")
    _strategy[0] = new_strategy


def get_all_sharing_strategies():
    return set(STRATEGIES)


# ------------------------------------------------------------------ owners


class _Received:
    """Owner of a storage received over memfd: drops one reference when it dies.
    ``origin`` is (server address, key) of the process that owns the segment, so
    forwarding the tensor points the next receiver at the owner, not at us."""

    __slots__ = ("mapping", "header", "base", "size", "fd", "origin", "pid")

    def __init__(self, mapping, header, base, size, fd, origin):
        self.mapping = mapping  # keeps the segment mapped (None: our own segment)
        self.header = header
        self.base, self.size, self.fd = base, size, fd
        self.origin = origin
        self.pid = os.getpid()

    def __del__(self):
        if self.pid != _pid():
            return  # a copy inherited through fork: the reference is the parent's
        # drop our reference in the shared header while still mapped, then the mapping
        m = self.mapping
        if lib is not None and (m is None or m.addr):
            lib.emp_ref_add(self.header, -1)
        if m is not None and _segments is not None:
            _segments.release(m)


class _ReceivedNamed:
    __slots__ = ("name", "base", "size", "pid")

    def __init__(self, name, base, size):
        self.name, self.base, self.size = name, base, size
        self.pid = os.getpid()

    def __del__(self):
        if _file_system is not None and self.pid == _pid():
            _file_system.release(self.name, self.base, self.size)


# ------------------------------------------------------------------ reduce


def _memfd_location(storage, tensor):
    """(segment base, size, fd, header address) of a storage in a memfd segment,
    moving it into the shared allocator first if needed."""
    owner = storage._owner
    if isinstance(owner, _Received):
        return owner.base, owner.size, owner.fd, owner.header, owner.origin
    block = owner[1] if isinstance(owner, tuple) and len(owner) > 1 else None
    if not (storage._shared and isinstance(block, _shared_memory.SharedBlock)):
        # references held by our callers: storage_handle's and our own parameter
        core_storage.share_(storage, _shared_memory.allocator(), tensor, caller_refs=2)
        block = storage._owner[1]
    base, size, fd = _shared_memory.allocator().segment_of(block)
    return base, size, fd, block.header, None


def storage_handle(storage, tensor=None):
    strategy = _strategy[0]
    nbytes = storage._nbytes
    if strategy == "file_system":
        owner = storage._owner
        if isinstance(owner, _ReceivedNamed):
            name, base, size = owner.name, owner.base, owner.size
        else:
            block = owner[1] if isinstance(owner, tuple) and len(owner) > 1 else None
            if not isinstance(block, _file_system.NamedBlock):
                core_storage.share_(storage, _file_system.allocator(), tensor, caller_refs=1)
                block = storage._owner[1]
            name, base, size = block.name, block.base, block.size
        lib.emp_ref_add(base, 1)  # the reference this message carries
        return ("fs", name, size, nbytes)
    base, size, fd, header, origin = _memfd_location(storage, tensor)
    lib.emp_ref_add(header, 1)  # the reference this message carries
    data_off, header_off = storage._ptr - base, header - base
    if strategy == "segments":
        if origin is not None:  # a received tensor: the owner serves its segment
            return ("seg", origin[0], origin[1], size, data_off, header_off, nbytes)
        srv = _segments.server()
        srv.register(base, fd, size)
        return ("seg", srv.address, base, size, data_off, header_off, nbytes)
    return ("fd", reduction.DupFd(fd), size, data_off, header_off, nbytes)


def reduce_tensor(t):
    if t._storage._device.type != "cpu":
        raise RuntimeError(
            "ember_multiprocessing: sharing CUDA tensors needs CUDA IPC handles, which come with "
            "ember's CUDA backend (not built yet); move the tensor to the CPU first"
        )
    if t._rg and t.grad_fn is not None:
        raise RuntimeError(
            "Cowardly refusing to serialize non-leaf tensor which requires_grad, since autograd "
            "does not support crossing process boundaries.  If you just want to transfer the "
            "data, call detach() on the tensor before serializing (e.g., putting it on the queue)."
        )
    handle = storage_handle(t._storage, t)
    cls = type(t) if type(t) is not Tensor else None
    return (rebuild_tensor, (handle, t._shape, t._stride, t._offset, t._dtype.name, bool(t._rg), cls))


# ----------------------------------------------------------------- rebuild

_received = weakref.WeakValueDictionary()
_lock = threading.Lock()


def _storage_from(handle):
    kind = handle[0]
    if kind == "fs":
        _, name, size, nbytes = handle
        ident = ("fs", name)
        with _lock:
            s = _received.get(ident)
            if s is not None:
                lib.emp_ref_add(s._owner.base, -1)  # fold the message's reference into ours
                return s
            base = _file_system.open_block(name, size)
            s = core_storage.external(base + HEADER, nbytes, _ReceivedNamed(name, base, size), shared=True)
            _received[ident] = s
            return s
    if kind == "seg":
        _, address, key, size, data_off, header_off, nbytes = handle
        ident = ("seg", address, key, data_off)
    else:
        _, dupfd, size, data_off, header_off, nbytes = handle
        ident = None
    with _lock:
        if ident is not None:
            s = _received.get(ident)
            if s is not None:
                lib.emp_ref_add(s._owner.header, -1)
                return s
        if kind == "seg":
            srv = _segments._server[0]
            if srv is not None and srv.address == address and srv.pid == _pid():
                mapping, base, fd = None, key, srv.segments[key][0]  # our own segment
            else:
                mapping = _segments.fetch(address, key, size)
                base, fd = mapping.addr, mapping.fd
        else:
            mapping = _segments.fd_mapping(dupfd.detach(), size)
            base, fd = mapping.addr, mapping.fd
            ident = (mapping.key, data_off)
            s = _received.get(ident)
            if s is not None:
                lib.emp_ref_add(s._owner.header, -1)
                _segments.release(mapping)
                return s
        origin = (address, key) if kind == "seg" else None
        owner = _Received(mapping, base + header_off, base, size, fd, origin)
        s = core_storage.external(base + data_off, nbytes, owner, shared=True)
        _received[ident] = s
        return s


def _pid():
    return os.getpid()


def rebuild_tensor(handle, shape, stride, offset, dtype_name, requires_grad, cls):
    storage = _storage_from(handle)
    dtype = ec._dtype.DTYPES_BY_NAME[dtype_name]
    numel = 1
    for s in shape:
        numel *= s
    t = core_tensor.make(storage, tuple(shape), tuple(stride), offset, dtype, numel, None)
    if cls is not None:
        t = t.as_subclass(cls)
    if requires_grad:
        t.requires_grad_(True)
    return t


# ----------------------------------------------------------------- install


def _reducer_override(self, obj):
    if isinstance(obj, Tensor):
        return reduce_tensor(obj)
    return NotImplemented


def install():
    """Register the reductions with multiprocessing's pickler (Queue, Pipe, Pool)
    and make share_memory_ use reference-counted shared blocks."""
    reduction.ForkingPickler.reducer_override = _reducer_override
    core_storage.set_shared_allocator(_shared_memory.allocator())
