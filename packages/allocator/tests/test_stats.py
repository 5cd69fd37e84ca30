"""memory_stats(): PyTorch's keys and meanings, current/peak/allocated/freed for
all/small/large pools, peaks and their reset, accumulated counters."""

from helpers import KiB, MiB

import ember_allocator

# torch.cuda.memory_stats()'s keys (PyTorch 2.x), written out: the CPU build of
# torch reports an empty dict, so it cannot be asked.
_POOLED = (
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
_FIELDS = ("current", "peak", "allocated", "freed")
TORCH_KEYS = (
    {f"{s}.{p}.{f}" for s in _POOLED for p in ("all", "small_pool", "large_pool") for f in _FIELDS}
    | {f"{s}.{f}" for s in ("oversize_allocations", "oversize_segments") for f in _FIELDS}
    | {
        "num_alloc_retries",
        "num_ooms",
        "num_sync_all_streams",
        "num_device_alloc",
        "num_device_free",
        "max_split_size",
    }
)
EMBER_EXTRAS = {"cache_hits", "cache_misses", "num_maps", "num_unmaps", "memory_limit"}


def test_keys_are_pytorchs_plus_a_few_documented_extras(host):
    stats = host.memory_stats()
    assert set(stats) == TORCH_KEYS | EMBER_EXTRAS
    assert list(stats) == sorted(stats)  # sorted, as torch.cuda.memory_stats is
    assert all(isinstance(v, int) for v in stats.values())
    assert all(v == 0 for k, v in stats.items() if k != "max_split_size")
    assert stats["max_split_size"] == -1


def test_current_peak_allocated_freed_by_pool(host):
    small = host.allocate(1000)  # 1024 bytes from a 2 MiB small segment
    large = host.allocate(3 * MiB)  # from a 20 MiB large segment
    s = host.memory_stats()
    assert s["allocation.all.current"] == 2
    assert s["allocation.small_pool.current"] == s["allocation.large_pool.current"] == 1
    assert s["allocated_bytes.small_pool.current"] == 1024
    assert s["allocated_bytes.large_pool.current"] == 3 * MiB
    assert s["allocated_bytes.all.current"] == 3 * MiB + 1024
    assert s["requested_bytes.all.current"] == 3 * MiB + 1000
    assert s["reserved_bytes.small_pool.current"] == 2 * MiB
    assert s["reserved_bytes.large_pool.current"] == 20 * MiB
    assert s["segment.all.current"] == 2
    assert s["active_bytes.all.current"] == 3 * MiB + 1024
    # the rests of both split segments are inactive split blocks
    assert s["inactive_split.all.current"] == 2
    assert s["inactive_split_bytes.all.current"] == (2 * MiB - 1024) + 17 * MiB

    del large
    s = host.memory_stats()
    assert s["allocated_bytes.all.current"] == 1024
    assert s["allocated_bytes.all.peak"] == 3 * MiB + 1024
    assert s["allocated_bytes.all.allocated"] == 3 * MiB + 1024
    assert s["allocated_bytes.all.freed"] == 3 * MiB
    assert s["allocation.large_pool.freed"] == 1
    assert s["reserved_bytes.all.current"] == 22 * MiB  # cached, not returned
    assert s["inactive_split.large_pool.current"] == 0  # merged back into one block
    del small


def test_reset_peak_stats(host):
    a = host.allocate(5 * MiB)
    b = host.allocate(7 * MiB)
    del b
    assert host.max_memory_allocated() == 12 * MiB
    host.reset_peak_stats()
    s = host.memory_stats()
    assert s["allocated_bytes.all.peak"] == s["allocated_bytes.all.current"] == 5 * MiB
    assert s["reserved_bytes.all.peak"] == s["reserved_bytes.all.current"] == 20 * MiB
    assert s["allocation.all.peak"] == 1
    assert s["allocated_bytes.all.allocated"] == 12 * MiB  # accumulated counts stay
    c = host.allocate(MiB)
    assert host.max_memory_allocated() == 6 * MiB
    del a, c


def test_reset_accumulated_stats(host):
    for _ in range(3):
        host.allocate(4 * KiB)
    host.empty_cache()
    host.reset_accumulated_stats()
    s = host.memory_stats()
    for key in ("allocation.all.allocated", "allocation.all.freed", "allocated_bytes.all.freed"):
        assert s[key] == 0
    for key in ("num_device_alloc", "num_device_free", "cache_hits", "cache_misses"):
        assert s[key] == 0


def test_cache_hits_misses_and_device_calls(host):
    for _ in range(10):
        host.allocate(64 * KiB)
    s = host.memory_stats()
    assert (s["cache_misses"], s["cache_hits"]) == (1, 9)
    assert (s["num_device_alloc"], s["num_device_free"]) == (1, 0)
    host.empty_cache()
    assert host.memory_stats()["num_device_free"] == 1


def test_convenience_accessors(host):
    a = host.allocate(3 * MiB)
    assert host.memory_allocated() == 3 * MiB
    assert host.memory_reserved() == 20 * MiB
    del a
    assert host.memory_allocated() == 0
    assert host.max_memory_allocated() == 3 * MiB
    assert host.max_memory_reserved() == 20 * MiB


def test_module_level_functions_use_the_default_host_allocator():
    default = ember_allocator.host_allocator()
    assert ember_allocator.get_allocator("cpu") is default
    before = ember_allocator.memory_stats()["allocation.all.allocated"]
    b = default.allocate(123)
    assert ember_allocator.memory_stats()["allocation.all.allocated"] == before + 1
    del b
    ember_allocator.reset_peak_stats()
    s = ember_allocator.memory_stats()
    assert s["allocated_bytes.all.peak"] == s["allocated_bytes.all.current"]
    assert isinstance(ember_allocator.memory_snapshot(), list)
