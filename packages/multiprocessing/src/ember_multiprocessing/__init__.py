"""ember_multiprocessing: Python's multiprocessing in which ember tensors travel
between processes through shared memory instead of being copied (as
torch.multiprocessing).

>>> import ember_multiprocessing as mp
>>> q = mp.Queue()
>>> q.put(tensor)   # the storage moves to shared memory once; the receiver maps it

Everything from the standard library's multiprocessing is re-exported;
importing this package registers the tensor reductions (_reductions.py).
"""

from __future__ import annotations

import contextlib
import multiprocessing as _mp
import typing as _typing
from collections import abc as _abc
from importlib import metadata as _metadata
from multiprocessing import *  # noqa: F403 - the standard API, as torch.multiprocessing

from ember_core._tensor import storage as _core_storage
from ember_multiprocessing import _reductions, _segments, _shared_memory
from ember_multiprocessing._reductions import (
    get_all_sharing_strategies,
    get_sharing_strategy,
    init_reductions,
    rebuild_storage,
    rebuild_tensor,
    reduce_storage,
    reduce_tensor,
    set_sharing_strategy,
)
from ember_multiprocessing._spawn import (
    ProcessContext,
    ProcessException,
    ProcessExitedException,
    ProcessRaisedException,
    spawn,
    start_processes,
)

if _typing.TYPE_CHECKING:
    import ember_allocator as _ember_allocator

# the installed distribution's version (Note [One version], VERSION)
__version__ = _metadata.version("ember-multiprocessing")

init_reductions()


def shared_allocator() -> _ember_allocator.CachingAllocator:
    """The allocator of reference-counted shared memory (Note [Shared blocks]);
    its ``memory_stats()`` are ember_allocator's "shm" allocator's."""
    return _shared_memory.allocator()


def use_shared_memory(enabled: bool = True) -> None:
    """From now on, make new CPU tensors of this process in shared memory (or
    stop, with False): sending them then copies nothing."""
    _core_storage.set_allocator(_shared_memory.allocator() if enabled else None, "cpu")


@contextlib.contextmanager
def shared_memory() -> _abc.Iterator[None]:
    """Within the block, new CPU tensors are created directly in shared memory.

    >>> with ember_multiprocessing.shared_memory():
    ...     batch = ember_core.empty(64, 3, 32, 32)   # batch.is_shared() is True
    """
    previous = _core_storage._allocators.get(_core_storage.CPU)
    _core_storage.set_allocator(_shared_memory.allocator(), "cpu")
    try:
        yield
    finally:
        _core_storage.set_allocator(previous, "cpu")


class _DataLoaderTransport:
    """ember_data's DataLoader hook (its Note [Transport hook]): workers make
    their tensors in shared memory, and tensors whose memory ember owns travel
    as shared-memory handles; tensors over foreign memory (NumPy arrays, such
    as the batches ember_data stacks into its own segments) are left to
    ember_data, which passes those segments itself."""

    def worker_setup(self) -> None:
        use_shared_memory(True)

    def workers_exited(self, pids: _abc.Iterable[int]) -> None:
        """The DataLoader's workers ``pids`` are gone: release the segments of
        theirs this process keeps mapped for reuse (its Note [Transport hook])."""
        _segments.retire(pids)

    def reducer_override(self, obj: object) -> _typing.Any:
        if isinstance(obj, _reductions.Tensor):
            storage = obj._storage
            if storage._device.type == "cpu" and (
                storage._shared or not isinstance(storage, _core_storage._ExternalStorage)
            ):
                return _reductions.reduce_tensor(obj)
        return NotImplemented


def dataloader_transport() -> _DataLoaderTransport:
    """The object ember_data's DataLoader uses to move tensors between its
    worker processes and the main process."""
    return _DataLoaderTransport()


__all__ = list(getattr(_mp, "__all__", [])) + [
    "ProcessContext",
    "ProcessException",
    "ProcessExitedException",
    "ProcessRaisedException",
    "dataloader_transport",
    "get_all_sharing_strategies",
    "get_sharing_strategy",
    "init_reductions",
    "rebuild_storage",
    "rebuild_tensor",
    "reduce_storage",
    "reduce_tensor",
    "set_sharing_strategy",
    "shared_allocator",
    "shared_memory",
    "spawn",
    "start_processes",
    "use_shared_memory",
]
