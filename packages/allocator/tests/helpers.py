"""Helpers shared by the allocator tests (fixtures live in conftest.py)."""

import collections
import ctypes

KiB = 1 << 10
MiB = 1 << 20


def round512(n):
    return max(512, -(-n // 512) * 512)


def blocks(allocator):
    """[(segment address, block offset, size, state)] of a snapshot, in address order."""
    return [
        (seg["address"], b["address"] - seg["address"], b["size"], b["state"])
        for seg in allocator.memory_snapshot()
        for b in seg["blocks"]
    ]


def fill(ptr, nbytes, byte):
    ctypes.memset(ptr, byte, nbytes)


def holds(ptr, nbytes, byte):
    """Whether every byte of [ptr, ptr + nbytes) equals ``byte``."""
    return ctypes.string_at(ptr, nbytes) == bytes([byte]) * nbytes


def growing_interleaved(allocator, steps=60):
    """Activations of growing size kept for three steps, with a temporary a third
    their size between them: each new request is larger than every hole that
    earlier frees left, the pattern that fragments a caching allocator."""
    keep = collections.deque()
    size = MiB
    for _ in range(steps):
        size = round512(size * 108 // 100)
        x = allocator.allocate(size)
        tmp = allocator.allocate(size // 3)
        keep.append(x)
        del tmp
        if len(keep) > 3:
            keep.popleft()
    stats = allocator.memory_stats()
    return stats["reserved_bytes.all.peak"] / stats["allocated_bytes.all.peak"]
