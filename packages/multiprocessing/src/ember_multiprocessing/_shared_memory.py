"""Shared memory with cross-process reference counts.

Note [Shared blocks]
A shared block is carved from ember_allocator's memfd ("shm") caching allocator,
so many tensors share one segment (one descriptor), and stats and limits cover
it.  Its first HEADER bytes hold an int64 reference count in the shared memory
itself: every process holding a storage over the block counts one, and so does
every message carrying it that has not been received yet.  A process that
drops its storage decrements; the block goes back to its allocator's cache only
when the count reaches zero (blocks still referenced elsewhere wait in a
pending list, reaped at the next allocation).  Memory is returned to the system
when the last process unmaps its segment.
"""

import os
import threading

import ember_allocator

from ember_multiprocessing._C import lib

HEADER = 64  # refcount + padding: keeps the data 64-byte aligned


class SharedBlock:
    """A block of the shared allocator: ``ptr`` is the data (after the header)."""

    __slots__ = ("raw", "ptr", "nbytes", "freed", "pid", "__weakref__")

    def __init__(self, raw, nbytes):
        self.raw = raw
        self.ptr = raw.ptr + HEADER
        self.nbytes = nbytes
        self.freed = False
        self.pid = os.getpid()

    @property
    def header(self):
        return self.raw.ptr


class SharedMemoryAllocator:
    """The allocator ember_core moves shared storages into (allocator protocol)."""

    kind = "shm"

    def __init__(self, backing=None):
        self._backing = backing
        self._pending = []
        self._lock = threading.Lock()

    @property
    def backing(self):
        if self._backing is None:
            self._backing = ember_allocator.get_allocator("shm")
        return self._backing

    def allocate(self, nbytes, device=None, stream=None):
        if self._pending:
            self.reap()
        raw = self.backing.allocate(nbytes + HEADER)
        lib.emp_ref_add(raw.ptr, 1 - lib.emp_ref_load(raw.ptr))  # count = 1: this process
        return SharedBlock(raw, nbytes)

    def free(self, block):
        if block.freed:
            return
        block.freed = True
        if block.pid != os.getpid():
            return  # inherited through fork: the reference is the parent's, not ours
        if lib.emp_ref_add(block.raw.ptr, -1) <= 0:
            self.backing.free(block.raw)
        else:
            with self._lock:
                self._pending.append(block.raw)

    def reap(self):
        """Return blocks every other process has let go of."""
        with self._lock:
            keep = []
            for raw in self._pending:
                if lib.emp_ref_load(raw.ptr) <= 0:
                    self.backing.free(raw)
                else:
                    keep.append(raw)
            self._pending = keep

    def pending(self):
        return len(self._pending)

    def memory_stats(self):
        return self.backing.memory_stats()

    def segment_of(self, block):
        """(segment base, segment size, memfd) holding block."""
        _, seg = self.backing.block_info(block.raw.ptr)
        return seg["address"], seg["total_size"], seg["handle"]


    def _after_fork_in_child(self):
        self._backing = None
        self._pending = []
        self._lock = threading.Lock()


_allocator = SharedMemoryAllocator()
os.register_at_fork(after_in_child=_allocator._after_fork_in_child)


def allocator():
    return _allocator
