"""CachingAllocator and Block: the Python face of the C caching core."""

from __future__ import annotations

from typing import Any

from ember_allocator import _lib
from ember_allocator._lib import ffi, lib

_malloc = lib.ea_malloc
_free = lib.ea_free
_EA_OK = lib.EA_OK
_NOT_ALLOCATED = lib.EA_ERR_NOT_ALLOCATED
_ERR_OOM = lib.EA_ERR_OOM

_POOLS = ("all", "small_pool", "large_pool")
_POOLED_STATS = (
    "allocation",
    "segment",
    "active",
    "inactive_split",
    "allocated_bytes",
    "reserved_bytes",
    "active_bytes",
    "inactive_split_bytes",
    "requested_bytes",
)
_SCALAR_STATS = (
    "num_alloc_retries",
    "num_ooms",
    "num_sync_all_streams",
    "num_device_alloc",
    "num_device_free",
    "num_maps",
    "num_unmaps",
    "cache_hits",
    "cache_misses",
    "memory_limit",
)
_SINGLE_STATS = ("oversize_allocations", "oversize_segments")
_FIELDS = ("current", "peak", "allocated", "freed")


def _stream_id(stream: object) -> int:
    """Accept None, an int, or any object with an int `.ptr` (cupy) or `.cuda_stream`."""
    if stream is None:
        return 0
    if isinstance(stream, int):
        return stream
    for attr in ("ptr", "cuda_stream"):
        value = getattr(stream, attr, None)
        if isinstance(value, int):
            return value
    raise TypeError(f"stream must be None, an int or a stream object, not {type(stream).__name__}")


class Block:
    """Memory handed out by a CachingAllocator.

    ``ptr`` is the address, ``nbytes`` the size asked for, ``device`` a string
    such as ``'cpu'`` or ``'cuda:0'``, ``stream`` the stream it belongs to and
    ``allocator`` the CachingAllocator it came from.  The memory goes back to the
    allocator's cache when ``free()`` is called or when the last reference to the
    Block goes away, whichever comes first.
    """

    __slots__ = ("ptr", "nbytes")
    ptr: int
    nbytes: int
    device: str
    stream: int
    allocator: CachingAllocator

    def free(self) -> None:
        """Return the memory now; freeing a Block twice raises InvalidPointerError."""
        self.allocator.free(self)

    def record_stream(self, stream: object) -> None:
        """Mark the memory as used on another stream (see CachingAllocator.record_stream)."""
        self.allocator.record_stream(self, stream)

    @property
    def freed(self) -> bool:
        return self.ptr == 0

    def __int__(self) -> int:
        return self.ptr

    def __repr__(self) -> str:
        state = "freed" if self.ptr == 0 else f"ptr=0x{self.ptr:x}"
        return f"Block({state}, nbytes={self.nbytes}, device='{self.device}', stream={self.stream})"


class _AnyBlock(Block):
    """A block of any allocator on any stream."""

    __slots__ = ("device", "stream", "allocator")

    def __del__(self) -> None:
        ptr = self.ptr
        if ptr:
            self.ptr = 0
            _free(self.allocator._handle, ptr)


class _DefaultBlock(Block):
    """A block of the process's default host allocator: its constant fields live on
    the class and it frees through the one-argument entry point (the hot path of
    every CPU tensor)."""

    __slots__ = ()
    device = "cpu"
    stream = 0
    allocator: CachingAllocator = None  # type: ignore[assignment] # set by make_default

    def __del__(self) -> None:
        ptr = self.ptr
        if ptr:
            self.ptr = 0
            _default_free(ptr)


_new_block = object.__new__
_default_malloc = lib.ea_default_malloc
_default_free = lib.ea_default_free


class CachingAllocator:
    """A caching allocator over one kind of memory.

    kind: ``'host'`` (pageable, 64-byte aligned or better), ``'pinned'`` (page
    locked, needs CUDA), ``'cuda'`` (device memory), ``'shm'`` (memfd shared
    memory, shareable across processes) or ``'sim'`` (host memory behind a
    simulated device with asynchronous streams, for tests).

    memory_limit: cap on reserved bytes, as an int or as a fraction (0, 1] of the
    memory the raw allocator reports.  max_split_size: blocks at least this large
    are never split (bounds fragmentation).  expandable_segments: large allocations
    grow one mapped segment per stream instead of many fixed ones.  history: keep
    the last N allocation events (0 = off).

    >>> a = CachingAllocator()
    >>> block = a.allocate(1000)
    >>> block.nbytes, block.ptr % 64
    (1000, 0)
    >>> a.free(block)
    """

    _handle = ffi.NULL  # until ea_create succeeds (__del__ may run after a failed __init__)

    def __init__(
        self,
        kind: str = "host",
        device: int = 0,
        memory_limit: int | float | None = None,
        max_split_size: int | None = None,
        expandable_segments: bool = False,
        history: int = 0,
    ) -> None:
        if kind not in _lib.RAW_KINDS:
            raise ValueError(
                f"unknown allocator kind {kind!r}; use one of {sorted(_lib.RAW_KINDS)}"
            )
        if not isinstance(device, int) or device < 0:
            raise ValueError(f"device must be a non-negative int, got {device!r}")
        self.kind = kind
        self.device = f"cuda:{device}" if kind == "cuda" else "cpu"
        self.device_index = device
        self.name = (
            f"ember_allocator({kind}{':' + str(device) if kind in ('cuda', 'pinned') else ''})"
        )
        config = ffi.new("ea_config*")
        config.raw_kind = _lib.RAW_KINDS[kind]
        config.device_index = device
        config.max_split_size = self._check_max_split(max_split_size)
        config.expandable_segments = bool(expandable_segments)
        status = ffi.new("int*")
        handle = lib.ea_create(config, status)
        if handle == ffi.NULL:
            raise _lib.error(status[0], f"{self.name}: cannot create allocator")
        self._handle = handle
        if memory_limit is not None:
            self.set_memory_limit(memory_limit)
        if history:
            self.record_history(history)

    # ---------------------------------------------------------------- core

    def allocate(self, nbytes: int, stream: object = None) -> Block:
        """Return a Block of at least ``nbytes`` bytes on ``stream`` (None = default)."""
        sid = 0 if stream is None else _stream_id(stream)
        try:
            ptr = _malloc(self._handle, nbytes, sid)
        except (TypeError, OverflowError):
            raise self._bad_size(nbytes) from None
        if not ptr:
            raise self._alloc_failure(nbytes)
        block = _new_block(_AnyBlock)
        block.ptr = ptr
        block.nbytes = nbytes
        block.device = self.device
        block.stream = sid
        block.allocator = self
        return block

    def _allocate_default(self, nbytes: int, stream: object = None) -> Block:
        # allocate() of the default allocator (see make_default): the hot path of
        # every CPU tensor, so it is kept to one C call and one small object.
        if stream is None:
            try:
                ptr = _default_malloc(nbytes)
            except (TypeError, OverflowError):
                raise self._bad_size(nbytes) from None
            if ptr:
                block = _new_block(_DefaultBlock)
                block.ptr = ptr
                block.nbytes = nbytes
                return block
            raise self._alloc_failure(nbytes)
        return CachingAllocator.allocate(self, nbytes, stream)

    def make_default(self) -> None:
        """Make this the process's default host allocator: its stream-0 blocks then
        take the fast one-argument path.  Called once by host_allocator()."""
        if self.kind != "host":
            raise ValueError(f"{self.name}: only a host allocator can be the default")
        _lib.ensure(lib.ea_set_default(self._handle), self.name)
        _DefaultBlock.allocator = self
        self.allocate = self._allocate_default  # type: ignore[method-assign]

    def free(self, block: Block) -> None:
        """Return a Block's memory to the cache now."""
        ptr = block.ptr
        if not ptr:
            raise _lib.InvalidPointerError(f"{self.name}: free: {block!r} was already freed")
        if block.allocator is not self:
            raise _lib.InvalidPointerError(
                f"{self.name}: free: {block!r} belongs to {block.allocator.name}"
            )
        block.ptr = 0
        status = _default_free(ptr) if type(block) is _DefaultBlock else _free(self._handle, ptr)
        if status != _EA_OK:
            raise _lib.error(status, self.name)

    def free_ptr(self, ptr: int) -> None:
        """Free by raw address (for adapters such as cupy's); foreign or freed
        addresses raise InvalidPointerError."""
        status = _free(self._handle, int(ptr))
        if status != _EA_OK:
            raise _lib.error(status, self.name)

    def malloc_ptr(self, nbytes: int, stream: object = None) -> int:
        """Allocate and return the raw address; pair with free_ptr."""
        sid = _stream_id(stream)
        try:
            ptr = _malloc(self._handle, nbytes, sid)
        except (TypeError, OverflowError):
            raise self._bad_size(nbytes) from None
        if not ptr:
            raise self._alloc_failure(nbytes)
        return ptr

    def record_stream(self, block: Block | int, stream: object) -> None:
        """Declare that ``block`` is used on ``stream`` too: when freed it is not
        reused until the work queued on that stream so far has finished."""
        ptr = block if isinstance(block, int) else block.ptr
        _lib.ensure(lib.ea_record_stream(self._handle, ptr, _stream_id(stream)), self.name)

    def _bad_size(self, nbytes: object) -> Exception:
        if isinstance(nbytes, int) and not isinstance(nbytes, bool) and nbytes < 0:
            return ValueError(f"{self.name}: allocate: nbytes must be >= 0, got {nbytes}")
        if isinstance(nbytes, int) and not isinstance(nbytes, bool):
            return self._oom_for(nbytes)
        return TypeError(
            f"{self.name}: allocate: nbytes must be an int, not {type(nbytes).__name__}"
        )

    def _oom_for(self, nbytes: int) -> Exception:
        # Sizes beyond 64 bits cannot even be passed to C; report them as OOM.
        return _lib.OutOfMemoryError(
            f"{self.name}: out of memory: tried to allocate {nbytes} bytes, more than any "
            "address space holds",
            requested=nbytes,
        )

    def allocation_error(self, nbytes: int) -> Exception:
        """The exception for this thread's last failed allocation of ``nbytes`` bytes
        (for callers of a fast path such as ``host_fast_path()``'s malloc, which
        returns 0 instead of raising; asking again would count a second OOM)."""
        return self._alloc_failure(nbytes)

    def _alloc_failure(self, nbytes: int) -> Exception:
        status = lib.ea_last_status()
        if status == _ERR_OOM:
            return _lib.oom_error(self.name)
        return _lib.error(status, f"{self.name}: allocate({nbytes})")

    # ------------------------------------------------------------- control

    def empty_cache(self) -> None:
        """Return every unused cached segment (and unused mapped page) to the system."""
        _lib.ensure(lib.ea_empty_cache(self._handle), self.name)

    def synchronize(self) -> None:
        """Wait for all streams and release blocks that were waiting on them."""
        _lib.ensure(lib.ea_synchronize(self._handle), self.name)

    def set_memory_limit(self, limit: int | float | None) -> None:
        """Cap reserved memory: an int of bytes, a float fraction in (0, 1], or None."""
        if limit is None:
            nbytes = 0
        elif isinstance(limit, float):
            if not 0.0 < limit <= 1.0:
                raise ValueError(f"{self.name}: memory fraction must be in (0, 1], got {limit}")
            total = self.device_memory()[1]
            if not total:
                raise _lib.AllocatorError(f"{self.name}: total memory unknown; give bytes")
            nbytes = int(total * limit)
        elif isinstance(limit, int) and not isinstance(limit, bool) and limit > 0:
            nbytes = limit
        else:
            raise ValueError(
                f"{self.name}: memory_limit must be bytes > 0 or a fraction, got {limit!r}"
            )
        _lib.ensure(lib.ea_set_memory_limit(self._handle, nbytes), self.name)

    @property
    def memory_limit(self) -> int | None:
        stats = ffi.new("ea_stats*")
        lib.ea_get_stats(self._handle, stats)
        return stats.memory_limit or None

    def set_max_split_size(self, nbytes: int | None) -> None:
        _lib.ensure(
            lib.ea_set_max_split_size(self._handle, self._check_max_split(nbytes)), self.name
        )

    def _check_max_split(self, nbytes: int | None) -> int:
        if nbytes is None:
            return 0
        if not isinstance(nbytes, int) or nbytes <= _lib.SMALL_SIZE:
            raise ValueError(
                f"max_split_size must be an int larger than {_lib.SMALL_SIZE} bytes, got {nbytes!r}"
            )
        return nbytes

    def device_memory(self) -> tuple[int, int]:
        """(free, total) bytes as the raw allocator sees them; (0, 0) when unknown."""
        free, total = ffi.new("uint64_t*"), ffi.new("uint64_t*")
        _lib.ensure(lib.ea_device_memory(self._handle, free, total), self.name)
        return free[0], total[0]

    def _stress_threads(
        self,
        threads: int = 8,
        iterations: int = 10_000,
        max_bytes: int = 1 << 20,
        streams: int = 1,
        seed: int = 0,
    ) -> None:
        """Self-test: ``threads`` C threads allocate and free at once (Python
        threads cannot: the GIL serialises them), each checking that no block it
        holds is written by anyone else.  Raises AllocatorError on a failure."""
        status = lib.ea_stress_threads(self._handle, threads, iterations, max_bytes, streams, seed)
        _lib.ensure(status, f"{self.name}: stress_threads")

    def sim_complete(self, stream: object) -> None:
        """Simulated device only: finish the work queued on ``stream``."""
        _lib.ensure(lib.ea_sim_complete(self._handle, _stream_id(stream)), self.name)

    # --------------------------------------------------------------- stats

    def memory_stats(self) -> dict[str, int]:
        """Statistics in PyTorch's flat layout (``torch.cuda.memory_stats``), keys
        sorted, e.g. ``'allocated_bytes.all.peak'``.  ``max_split_size`` is -1 when
        unset, as in PyTorch; ``cache_hits``, ``cache_misses``, ``num_maps``,
        ``num_unmaps`` and ``memory_limit`` (0 = none) are ember's additions."""
        s = ffi.new("ea_stats*")
        lib.ea_get_stats(self._handle, s)
        out: dict[str, int] = {}
        for name in _POOLED_STATS:
            arr = getattr(s, name)
            for i, pool in enumerate(_POOLS):
                stat = arr[i]
                for field in _FIELDS:
                    out[f"{name}.{pool}.{field}"] = getattr(stat, field)
        for name in _SINGLE_STATS:
            stat = getattr(s, name)
            for field in _FIELDS:
                out[f"{name}.{field}"] = getattr(stat, field)
        for name in _SCALAR_STATS:
            out[name] = getattr(s, name)
        out["max_split_size"] = s.max_split_size or -1
        return dict(sorted(out.items()))

    def memory_allocated(self) -> int:
        return self.memory_stats()["allocated_bytes.all.current"]

    def memory_reserved(self) -> int:
        return self.memory_stats()["reserved_bytes.all.current"]

    def max_memory_allocated(self) -> int:
        return self.memory_stats()["allocated_bytes.all.peak"]

    def max_memory_reserved(self) -> int:
        return self.memory_stats()["reserved_bytes.all.peak"]

    def reset_peak_stats(self) -> None:
        lib.ea_reset_peak_stats(self._handle)

    def reset_accumulated_stats(self) -> None:
        lib.ea_reset_accumulated_stats(self._handle)

    def memory_snapshot(self) -> list[dict[str, Any]]:
        """Every segment and its blocks, as a list of dicts (PyTorch's layout)."""
        from ember_allocator import _snapshot

        return _snapshot.snapshot(self)

    def block_info(self, ptr: int) -> tuple[dict[str, Any], dict[str, Any]]:
        """The block and segment holding address ``ptr`` (dicts), e.g. to share it."""
        from ember_allocator import _snapshot

        return _snapshot.block_info(self, ptr)

    def record_history(self, capacity: int = 100_000) -> None:
        """Keep the last ``capacity`` allocation events (0 turns recording off)."""
        _lib.ensure(lib.ea_set_history(self._handle, capacity), self.name)

    def history(self) -> list[dict[str, Any]]:
        """The recorded events, oldest first, as dicts."""
        from ember_allocator import _snapshot

        return _snapshot.history(self)

    # ------------------------------------------------------------- lifetime

    def __repr__(self) -> str:
        return f"<CachingAllocator {self.kind} device={self.device!r}>"

    def __del__(self) -> None:
        # Never release memory that blocks still point at: at interpreter
        # shutdown, finalisers run in any order, and unmapping segments under live
        # tensors would turn their last frees into segfaults.  The OS reclaims it.
        if lib is None or self._handle == ffi.NULL:
            return
        stats = ffi.new("ea_stats*")
        lib.ea_get_stats(self._handle, stats)
        if stats.active[0].current:
            return
        handle, self._handle = self._handle, ffi.NULL
        lib.ea_destroy(handle)
