"""Helpers shared by the allocator tests (fixtures live in conftest.py)."""

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
