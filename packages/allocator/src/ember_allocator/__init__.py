"""ember_allocator: a caching memory allocator written in C, over host, pinned,
CUDA and shared memory.

>>> import ember_allocator
>>> a = ember_allocator.CachingAllocator("host")
>>> b = a.allocate(4096)
>>> a.memory_stats()["allocated_bytes.all.current"]
4096
>>> del b   # the memory returns to the cache with the last reference
"""

from importlib import metadata as _metadata

from ember_allocator._allocator import Block, CachingAllocator
from ember_allocator._cupy import cupy_allocator
from ember_allocator._default import (
    empty_cache,
    fast_path,
    get_allocator,
    host_allocator,
    host_fast_path,
    memory_snapshot,
    memory_stats,
    reset_peak_stats,
)
from ember_allocator._errors import (
    AllocatorError,
    InvalidPointerError,
    OutOfMemoryError,
    UnavailableError,
)
from ember_allocator._lib import (
    LARGE_BUFFER,
    MIN_BLOCK_SIZE,
    MIN_LARGE_ALLOC,
    ROUND_LARGE,
    SMALL_BUFFER,
    SMALL_SIZE,
    format_bytes,
)

# the installed distribution's version (Note [One version], VERSION); none while
# tensor-core's build imports the package from its build directory (Note [Stubs])
try:
    __version__ = _metadata.version("ember-allocator")
except _metadata.PackageNotFoundError:
    __version__ = "0+unknown"

__all__ = [
    "AllocatorError",
    "Block",
    "CachingAllocator",
    "InvalidPointerError",
    "LARGE_BUFFER",
    "MIN_BLOCK_SIZE",
    "MIN_LARGE_ALLOC",
    "OutOfMemoryError",
    "ROUND_LARGE",
    "SMALL_BUFFER",
    "SMALL_SIZE",
    "UnavailableError",
    "cupy_allocator",
    "empty_cache",
    "fast_path",
    "format_bytes",
    "get_allocator",
    "host_allocator",
    "host_fast_path",
    "memory_snapshot",
    "memory_stats",
    "reset_peak_stats",
]
