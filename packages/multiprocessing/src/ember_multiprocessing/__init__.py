"""ember_multiprocessing: Python's multiprocessing in which ember tensors travel
between processes through shared memory instead of being copied.

>>> import ember_multiprocessing as mp
>>> q = mp.Queue()
>>> q.put(tensor)        # the storage moves to shared memory once; the receiver maps it

Everything from the standard library's multiprocessing is re-exported; importing
this package registers the tensor reductions (see _reductions.py).
"""

import contextlib
import multiprocessing as _mp
from multiprocessing import *  # noqa: F403 - the standard API, as torch.multiprocessing

from ember_core import _storage as _core_storage

from ember_multiprocessing import _reductions, _shared_memory
from ember_multiprocessing._reductions import (
    get_all_sharing_strategies,
    get_sharing_strategy,
    rebuild_tensor,
    reduce_tensor,
    set_sharing_strategy,
)
from ember_multiprocessing._spawn import (
    ProcessContext,
    ProcessExitedException,
    ProcessRaisedException,
    spawn,
    start_processes,
)

__version__ = "0.1.0"

_reductions.install()


def shared_allocator():
    """The allocator of reference-counted shared memory tensors are shared through."""
    return _shared_memory.allocator()


def use_shared_memory(enabled=True):
    """Make new CPU tensors of this process live in shared memory (DataLoader
    workers do this, so their batches reach the main process without a copy)."""
    _core_storage.set_allocator(_shared_memory.allocator() if enabled else None, "cpu")


@contextlib.contextmanager
def shared_memory():
    """Within the block, new CPU tensors are created directly in shared memory."""
    previous = _core_storage._allocators.get(_core_storage.CPU)
    _core_storage.set_allocator(_shared_memory.allocator(), "cpu")
    try:
        yield
    finally:
        _core_storage.set_allocator(previous, "cpu")


__all__ = list(getattr(_mp, "__all__", [])) + [
    "ProcessContext",
    "ProcessExitedException",
    "ProcessRaisedException",
    "get_all_sharing_strategies",
    "get_sharing_strategy",
    "rebuild_tensor",
    "reduce_tensor",
    "set_sharing_strategy",
    "shared_allocator",
    "shared_memory",
    "spawn",
    "start_processes",
    "use_shared_memory",
]
