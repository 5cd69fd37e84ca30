"""Shared memory with cross-process reference counts (the default strategy's
allocator).

Note [Shared blocks]
A shared block is carved from ember_allocator's memfd ("shm") caching
allocator, so many tensors share one segment (one descriptor), and that
allocator's stats and limits cover them.  The first HEADER bytes of a block hold
an int64 reference count in the shared memory itself: every process holding a
storage over the block counts one, and so does every pickled message carrying it
that has not been unpickled yet.  A process that drops its storage decrements.
The owner's block goes back to its allocator's cache only when the count is
zero: blocks still referenced elsewhere wait in a pending list that is reaped
as allocations go on (amortised: a reap scans the list only after it has grown,
or when much memory waits in it, or before an out-of-memory error).  The
segment's memory itself goes back to the system when its last mapping and
descriptor in any process are gone (the kernel's count of the memfd).

A block inherited through fork carries no reference of the child's: the child
neither counts it nor frees it (blocks remember the pid that owns them).
"""

import os
import threading

import ember_allocator
from ember_multiprocessing import _lib

HEADER = 64  # the count, padded so the data stays 64-byte aligned
_REAP_BYTES = 16 << 20  # reap at once when this much memory waits in the pending list


class SharedBlock:
    """A block of the shared allocator: ``ptr`` is the data (after the header)."""

    __slots__ = ("raw", "ptr", "nbytes", "freed", "pid", "segment", "__weakref__")

    def __init__(self, raw, nbytes):
        self.raw = raw  # the ember_allocator Block (header + data)
        self.ptr = raw.ptr + HEADER
        self.nbytes = nbytes
        self.freed = False
        self.pid = os.getpid()
        self.segment = None  # (inode, base, size, fd), filled when first sent

    @property
    def header(self):
        return self.raw.ptr

    def locate(self):
        """(inode, segment base, segment size, memfd) of the segment holding this block."""
        seg = self.segment
        if seg is None:
            _, info = self.raw.allocator.block_info(self.raw.ptr)
            fd = info["handle"]
            seg = self.segment = (os.fstat(fd).st_ino, info["address"], info["total_size"], fd)
        return seg


class SharedMemoryAllocator:
    """The allocator ember_core moves shared storages into (allocator protocol:
    ``allocate(nbytes, device, stream)`` / ``free(block)``)."""

    kind = "shm"

    def __init__(self, backing=None):
        self._backing = backing
        self._reset()

    def _reset(self):
        self._pending = []  # raw blocks this process dropped that others still hold
        self._pending_bytes = 0
        self._reap_at = 16
        self._lock = threading.Lock()

    @property
    def backing(self):
        """The ember_allocator CachingAllocator ("shm") blocks are carved from."""
        if self._backing is None:
            self._backing = ember_allocator.get_allocator("shm")
        return self._backing

    def allocate(self, nbytes, device=None, stream=None):
        if len(self._pending) >= self._reap_at or self._pending_bytes >= _REAP_BYTES:
            self.reap()
        try:
            raw = self.backing.allocate(nbytes + HEADER)
        except MemoryError:
            if not self._pending:
                raise
            self.reap()
            raw = self.backing.allocate(nbytes + HEADER)
        _lib.ref_store(raw.ptr, 1)  # this process's storage
        return SharedBlock(raw, nbytes)

    def free(self, block):
        if block.freed:
            return
        block.freed = True
        if block.pid != os.getpid():
            return  # inherited through fork: the reference is the parent's
        if _lib.ref_add(block.raw.ptr, -1) <= 0:
            block.raw.allocator.free(block.raw)
            return
        with self._lock:
            self._pending.append(block.raw)
            self._pending_bytes += block.raw.nbytes

    def reap(self):
        """Give back the pending blocks every other process has let go of."""
        with self._lock:
            keep, done = [], []
            for raw in self._pending:
                (done if _lib.ref_load(raw.ptr) <= 0 else keep).append(raw)
            self._pending = keep
            self._pending_bytes = sum(raw.nbytes for raw in keep)
            self._reap_at = max(16, 2 * len(keep))
        for raw in done:
            raw.allocator.free(raw)

    def pending(self):
        """How many blocks this process dropped wait for other processes."""
        return len(self._pending)

    def memory_stats(self):
        return self.backing.memory_stats()

    def _after_fork_in_child(self):
        # The parent's pending blocks are the parent's; the child carves from a
        # fresh shm allocator (ember_allocator starts one after fork).
        self._backing = None
        self._reset()


_allocator = SharedMemoryAllocator()
os.register_at_fork(after_in_child=_allocator._after_fork_in_child)


def allocator():
    """The process's SharedMemoryAllocator."""
    return _allocator
