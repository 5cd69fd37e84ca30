"""Serve cupy from ember's caching allocator: ``cupy.cuda.set_allocator(cupy_allocator())``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ember_allocator._allocator import CachingAllocator
from ember_allocator._default import get_allocator


def cupy_allocator(allocator: CachingAllocator | None = None) -> Callable[[int], Any]:
    """Return a function cupy can use as its allocator (``cupy.cuda.set_allocator``).

    Each allocation comes from ``allocator`` (by default the process-wide CUDA
    allocator of cupy's current device) on cupy's current stream, and returns to
    the cache when cupy drops the memory.
    """
    import cupy

    def malloc(nbytes: int) -> Any:
        device = cupy.cuda.Device().id
        owner = allocator or get_allocator(f"cuda:{device}")
        block = owner.allocate(nbytes, cupy.cuda.get_current_stream().ptr)
        memory = cupy.cuda.UnownedMemory(block.ptr, nbytes, block, device)
        return cupy.cuda.MemoryPointer(memory, 0)

    return malloc
