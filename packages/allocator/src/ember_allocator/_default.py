"""Process-wide default allocators, one per (kind, device), configured once from
the EMBER_ALLOC_CONF environment variable, e.g.
``EMBER_ALLOC_CONF="max_split_size_mb:256,expandable_segments:True"``."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Any

from ember_allocator._allocator import CachingAllocator

# A device: 'cpu', 'cuda:N', 'pinned', 'shm', or a (kind, index) pair.
Device = str | tuple[str, int]
_defaults: dict[tuple[str, int], CachingAllocator] = {}
_lock = threading.Lock()


def _parse_conf(text: str) -> dict[str, Any]:
    options: dict[str, Any] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        key, sep, value = item.partition(":")
        if not sep:
            raise ValueError(f"EMBER_ALLOC_CONF: expected key:value, got {item!r}")
        key, value = key.strip(), value.strip()
        if key == "max_split_size_mb":
            options["max_split_size"] = int(value) << 20
        elif key == "expandable_segments":
            options["expandable_segments"] = value.lower() in ("1", "true", "yes")
        elif key == "memory_limit_mb":
            options["memory_limit"] = int(value) << 20
        elif key == "memory_fraction":
            options["memory_limit"] = float(value)
        elif key == "history":
            options["history"] = int(value)
        else:
            raise ValueError(
                f"EMBER_ALLOC_CONF: unknown option {key!r}; known: max_split_size_mb, "
                "expandable_segments, memory_limit_mb, memory_fraction, history"
            )
    return options


def _parse_device(device: Device) -> tuple[str, int]:
    """'cpu' -> ('host', 0); 'cuda' / 'cuda:1' -> ('cuda', 1); also ('pinned', 0) etc."""
    if isinstance(device, tuple):
        return device
    text = str(device)
    kind, _, index = text.partition(":")
    number = int(index) if index else 0
    if kind == "cpu":
        return ("host", 0)
    if kind in ("cuda", "pinned", "shm", "host"):
        return (kind, number)
    raise ValueError(f"unknown device {device!r}: use 'cpu', 'cuda[:N]', 'pinned' or 'shm'")


def get_allocator(device: Device = "cpu") -> CachingAllocator:
    """The process-wide CachingAllocator for a device ('cpu', 'cuda:0', 'pinned', 'shm')."""
    key = _parse_device(device)
    allocator = _defaults.get(key)
    if allocator is None:
        with _lock:
            allocator = _defaults.get(key)
            if allocator is None:
                options = _parse_conf(os.environ.get("EMBER_ALLOC_CONF", ""))
                if key[0] in ("shm", "pinned"):
                    options.pop("expandable_segments", None)
                allocator = CachingAllocator(kind=key[0], device=key[1], **options)
                if key == ("host", 0):
                    allocator.make_default()
                _defaults[key] = allocator
    return allocator


def _after_fork_in_child() -> None:
    # Shared-memory segments stay shared after fork: a child that kept carving
    # blocks from its copy of the parent's bookkeeping would hand out memory the
    # parent also hands out.  The child starts a fresh shm allocator; blocks it
    # inherited keep the old one alive only as long as they live.
    _defaults.pop(("shm", 0), None)


os.register_at_fork(after_in_child=_after_fork_in_child)


def host_allocator() -> CachingAllocator:
    """The process-wide allocator of pageable host memory."""
    return get_allocator("cpu")


def host_fast_path(addresses: bool = False) -> tuple[Any, ...]:
    """``(malloc, free)``: the default host allocator's one-argument C entry points,
    for hot paths such as tensor creation.  ``malloc(nbytes)`` returns an address
    (0 on failure: raise ``host_allocator().allocation_error(nbytes)``, the
    matching exception, without allocating again); ``free(address)`` returns 0,
    or a non-zero status for an address it did not hand out.  Every address must
    be freed exactly once.  ``addresses=True``: the two C functions' addresses
    (ints) instead, for callers in C -- ``uintptr_t malloc(uint64_t nbytes)`` and
    ``int free(uintptr_t address)``."""
    from ember_allocator._lib import ffi, lib

    host_allocator()
    if addresses:
        return tuple(
            int(ffi.cast("uintptr_t", ffi.addressof(lib, name)))
            for name in ("ea_default_malloc", "ea_default_free")
        )
    return lib.ea_default_malloc, lib.ea_default_free


def fast_path(device: Device) -> tuple[Callable[[int, int], int], Callable[[int], int]]:
    """``(malloc, free)`` of the default allocator of ``device`` ('cuda:0', ...):
    its C entry points bound to it, for hot paths such as CUDA tensor creation.
    ``malloc(nbytes, stream)`` returns an address, or 0 on failure (then call
    ``get_allocator(device).allocation_error(nbytes)`` for the matching
    exception); ``free(address)`` returns 0, or a non-zero status for an address
    it did not hand out."""
    import functools

    from ember_allocator._lib import lib

    allocator = get_allocator(device)
    return (
        functools.partial(lib.ea_malloc, allocator._handle),
        functools.partial(lib.ea_free, allocator._handle),
    )


def memory_stats(device: Device = "cpu") -> dict[str, int]:
    return get_allocator(device).memory_stats()


def memory_snapshot(device: Device = "cpu") -> list[dict[str, Any]]:
    return get_allocator(device).memory_snapshot()


def empty_cache(device: Device = "cpu") -> None:
    get_allocator(device).empty_cache()


def reset_peak_stats(device: Device = "cpu") -> None:
    get_allocator(device).reset_peak_stats()
