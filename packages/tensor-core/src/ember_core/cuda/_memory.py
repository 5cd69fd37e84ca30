"""CUDA memory: the statistics and controls of ember_allocator's CUDA pool,
under PyTorch's names (torch.cuda.memory_allocated, memory_summary, ...)."""

from ember_core._base.lib import ffi, lib
from ember_core._cuda import runtime as _cuda
from ember_core.cuda._devices import _index

OutOfMemoryError = _cuda.OutOfMemoryError


def _allocator(device, op):
    return _cuda.allocator(_index(device, op))


def _stat(device, op, method):
    # as in PyTorch, statistics read 0 where CUDA never started (no GPU)
    if not _cuda.is_available():
        return 0
    return getattr(_allocator(device, op), method)()


def memory_allocated(device=None):
    """Bytes held by tensors on the device."""
    return _stat(device, "memory_allocated", "memory_allocated")


def max_memory_allocated(device=None):
    return _stat(device, "max_memory_allocated", "max_memory_allocated")


def memory_reserved(device=None):
    """Bytes the caching allocator holds from the device (in use or cached)."""
    return _stat(device, "memory_reserved", "memory_reserved")


def max_memory_reserved(device=None):
    return _stat(device, "max_memory_reserved", "max_memory_reserved")


def reset_peak_memory_stats(device=None):
    _stat(device, "reset_peak_memory_stats", "reset_peak_stats")


def reset_max_memory_allocated(device=None):
    reset_peak_memory_stats(device)


def reset_accumulated_memory_stats(device=None):
    _stat(device, "reset_accumulated_memory_stats", "reset_accumulated_stats")


def memory_stats(device=None):
    """The allocator's counters under PyTorch's keys ('allocated_bytes.all.current', ...)."""
    if not _cuda.is_available():
        return {}
    return _allocator(device, "memory_stats").memory_stats()


def memory_snapshot(device=None):
    """Segments and blocks of the CUDA pool (for memory viewers)."""
    return _allocator(device, "memory_snapshot").memory_snapshot()


def empty_cache():
    """Give cached, unused blocks back to the device (tensors keep theirs)."""
    if _cuda.is_available():
        for i in range(_cuda.device_count()):
            _cuda.allocator(i).empty_cache()


def set_per_process_memory_fraction(fraction, device=None):
    """Cap this process's reserved memory on the device at ``fraction`` of its total."""
    if not 0 <= fraction <= 1:
        raise ValueError(f"Invalid fraction value: {fraction}. Allowed range: 0~1")
    _allocator(device, "set_per_process_memory_fraction").set_memory_limit(float(fraction))


def mem_get_info(device=None):
    """(free, total) bytes of the device, as the driver reports them."""
    index = _index(device, "mem_get_info")
    free, total = ffi.new("uint64_t*"), ffi.new("uint64_t*")
    _cuda.check(lib.ecu_mem_get_info(index, free, total), "mem_get_info")
    return free[0], total[0]


def _fmt(n):
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.2f} {unit}"
        n /= 1024


def memory_summary(device=None, abbreviated=False):
    """A table of the allocator's statistics, like torch.cuda.memory_summary()."""
    index = _index(device, "memory_summary")
    stats = memory_stats(index)
    rows = [
        ("Allocated memory", "allocated_bytes", True),
        ("Active memory", "active_bytes", True),
        ("Requested memory", "requested_bytes", True),
        ("GPU reserved memory", "reserved_bytes", True),
        ("Non-releasable memory", "inactive_split_bytes", True),
        ("Allocations", "allocation", False),
        ("Active allocs", "active", False),
        ("GPU reserved segments", "segment", False),
    ]
    line = "=" * 75
    out = [
        line,
        f"|{'ember CUDA memory summary, device ID ' + str(index):^73}|",
        line,
        f"| {'Metric':<26}| {'Cur Usage':>10} | {'Peak Usage':>10} | {'Tot Alloc':>9} |",
        line,
    ]
    pools = ("all",) if abbreviated else ("all", "large_pool", "small_pool")
    for title, key, is_bytes in rows:
        for pool in pools:
            f = _fmt if is_bytes else str
            vals = [stats.get(f"{key}.{pool}.{k}", 0) for k in ("current", "peak", "allocated")]
            name = title if pool == "all" else f"  from {pool.replace('_pool', '')} pool"
            out.append(f"| {name:<26}| {f(vals[0]):>10} | {f(vals[1]):>10} | {f(vals[2]):>9} |")
    out += [
        line,
        f"| Allocator: ember_allocator (CUDA), OOMs: {stats.get('num_ooms', 0)}, "
        f"cudaMalloc retries: {stats.get('num_alloc_retries', 0)}".ljust(74)
        + "|",
        line,
    ]
    return "\n".join(out) + "\n"
