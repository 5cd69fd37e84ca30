"""The one module that calls the C library: argument checks and status -> exception."""

from __future__ import annotations

from ember_allocator import _C  # type: ignore[attr-defined] # the cffi extension
from ember_allocator._errors import (
    AllocatorError,
    InvalidPointerError,
    OutOfMemoryError,
    UnavailableError,
)

ffi = _C.ffi
lib = _C.lib

# Constants come from C so they are written once.
MIN_BLOCK_SIZE = lib.EA_MIN_BLOCK_SIZE
SMALL_SIZE = lib.EA_SMALL_SIZE
SMALL_BUFFER = lib.EA_SMALL_BUFFER
LARGE_BUFFER = lib.EA_LARGE_BUFFER
MIN_LARGE_ALLOC = lib.EA_MIN_LARGE_ALLOC
ROUND_LARGE = lib.EA_ROUND_LARGE
HOST_ALIGNMENT = lib.EA_HOST_ALIGNMENT

RAW_KINDS = {
    "host": lib.EA_RAW_HOST,
    "pinned": lib.EA_RAW_PINNED,
    "cuda": lib.EA_RAW_CUDA,
    "shm": lib.EA_RAW_SHM,
    "sim": lib.EA_RAW_SIM,
}
BLOCK_STATES = {
    lib.EA_BLOCK_FREE: "inactive",
    lib.EA_BLOCK_ALLOCATED: "active_allocated",
    lib.EA_BLOCK_PENDING: "active_pending_free",
    lib.EA_BLOCK_UNMAPPED: "unmapped",
}
EVENT_KINDS = {
    lib.EA_EV_ALLOC: "alloc",
    lib.EA_EV_FREE: "free_requested",
    lib.EA_EV_FREE_COMPLETED: "free_completed",
    lib.EA_EV_SEGMENT_ALLOC: "segment_alloc",
    lib.EA_EV_SEGMENT_FREE: "segment_free",
    lib.EA_EV_OOM: "oom",
    lib.EA_EV_EMPTY_CACHE: "empty_cache",
    lib.EA_EV_MAP: "segment_map",
    lib.EA_EV_UNMAP: "segment_unmap",
}


def format_bytes(n: float) -> str:
    """1536 -> '1.50 KiB'."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n} B" if unit == "B" else f"{n:.2f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


def last_message() -> str:
    return ffi.string(lib.ea_last_message()).decode("utf-8", "replace")


def error(status: int, context: str) -> Exception:
    """The exception for a failed C call (status != EA_OK)."""
    message = f"{context}: {last_message()}"
    if status == lib.EA_ERR_NOT_ALLOCATED:
        return InvalidPointerError(message)
    if status == lib.EA_ERR_UNAVAILABLE:
        return UnavailableError(message)
    if status == lib.EA_ERR_OOM:
        return MemoryError(message)
    return AllocatorError(message)


def ensure(status: int, context: str) -> None:
    if status != lib.EA_OK:
        raise error(status, context)


def oom_error(name: str) -> OutOfMemoryError:
    """Build the OutOfMemoryError of the calling thread's last failed allocation."""
    info = ffi.new("ea_oom_info*")
    lib.ea_last_oom(info)
    f = format_bytes
    limit = f"{f(info.limit)}" if info.limit else "none"
    device = ""
    if info.device_total:
        device = f"; the system reports {f(info.device_free)} free of {f(info.device_total)}"
    message = (
        f"{name}: out of memory: tried to allocate {f(info.requested)} "
        f"(rounded to {f(info.rounded)}) on stream {info.stream}; "
        f"{f(info.allocated)} is allocated and {f(info.reserved)} reserved, of which "
        f"{f(info.reserved_free)} is reserved but free (largest free block "
        f"{f(info.largest_free)}); limit {limit}{device}. If reserved-but-free memory "
        "is large, fragmentation is the cause: try max_split_size or expandable_segments."
    )
    return OutOfMemoryError(
        message,
        requested=info.requested,
        rounded=info.rounded,
        allocated=info.allocated,
        reserved=info.reserved,
        reserved_free=info.reserved_free,
        largest_free=info.largest_free,
        limit=info.limit,
        device_free=info.device_free,
        device_total=info.device_total,
    )
