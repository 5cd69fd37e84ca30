"""Out of memory: the fallback chain (cache, new segment, release the cache and
retry, raise), the report in OutOfMemoryError, and memory limits."""

import re

import pytest
from helpers import MiB

import ember_allocator


def test_oom_error_is_a_memory_error_and_a_runtime_error():
    # MemoryError as the issue asks; RuntimeError like torch.OutOfMemoryError.
    assert issubclass(ember_allocator.OutOfMemoryError, MemoryError)
    assert issubclass(ember_allocator.OutOfMemoryError, RuntimeError)


def test_oom_with_a_small_limit_reports_what_it_knows():
    a = ember_allocator.CachingAllocator("host", memory_limit=40 * MiB)
    keep = a.allocate(12 * MiB)  # segment of 12 MiB
    hole = a.allocate(2 * MiB)  # from a 20 MiB segment, then freed:
    del hole  # 20 MiB reserved but free, its largest free block 20 MiB
    with pytest.raises(ember_allocator.OutOfMemoryError) as info:
        a.allocate(30 * MiB)
    e = info.value
    # The cached 20 MiB segment was released and the allocation retried once.
    stats = a.memory_stats()
    assert stats["num_alloc_retries"] == 1
    assert stats["num_ooms"] == 1
    assert stats["num_device_free"] == 1
    assert (e.requested, e.rounded) == (30 * MiB, 30 * MiB)
    assert e.allocated == 12 * MiB
    assert e.reserved == 12 * MiB  # after the cache was released
    assert e.reserved_free == 0
    assert e.largest_free == 0
    assert e.limit == 40 * MiB
    message = str(e)
    for text in (
        "out of memory",
        "tried to allocate 30.00 MiB",
        "12.00 MiB is allocated",
        "limit 40.00 MiB",
        "largest free block",
        "ember_allocator(host)",
    ):
        assert text in message, text
    # The allocator is intact and keeps serving.
    b = a.allocate(20 * MiB)
    assert a.memory_allocated() == 32 * MiB
    del b, keep


def test_oom_message_shows_fragmentation():
    # Reserved-but-free memory too fragmented to use: free every other 2 MiB
    # block of a 20 MiB segment, then ask for 4 MiB under a limit.
    a = ember_allocator.CachingAllocator("host", memory_limit=20 * MiB)
    live = [a.allocate(2 * MiB) for _ in range(10)]
    for b in live[::2]:
        b.free()
    with pytest.raises(ember_allocator.OutOfMemoryError) as info:
        a.allocate(4 * MiB)
    e = info.value
    assert e.reserved == 20 * MiB
    assert e.reserved_free == 10 * MiB
    assert e.largest_free == 2 * MiB
    assert "10.00 MiB is reserved but free (largest free block 2.00 MiB)" in str(e)
    assert "max_split_size or expandable_segments" in str(e)


def test_release_and_retry_succeeds_when_the_cache_was_the_problem():
    a = ember_allocator.CachingAllocator("host", memory_limit=24 * MiB)
    x = a.allocate(12 * MiB)
    del x  # 12 MiB cached, too small for what follows
    y = a.allocate(16 * MiB)  # 12 + 16 > 24: release the cache, retry, succeed
    stats = a.memory_stats()
    assert stats["num_alloc_retries"] == 1
    assert stats["num_ooms"] == 0
    assert stats["num_device_free"] == 1
    assert stats["reserved_bytes.all.current"] == 16 * MiB
    del y


def test_oom_from_the_system():
    a = ember_allocator.CachingAllocator("host")
    with pytest.raises(ember_allocator.OutOfMemoryError, match="tried to allocate 1024.00 TiB"):
        a.allocate(1 << 50)  # more address space than the machine has
    assert a.memory_stats()["num_ooms"] == 1
    with pytest.raises(ember_allocator.OutOfMemoryError):
        a.allocate(1 << 63)  # beyond any address space
    with pytest.raises(ember_allocator.OutOfMemoryError, match="more than any address space"):
        a.allocate(1 << 80)  # does not even fit in 64 bits
    assert a.allocate(100).nbytes == 100  # still working


def test_memory_limit_as_bytes_fraction_or_none(host):
    free, total = host.device_memory()
    assert total > 0 and 0 < free <= total  # host memory as the OS reports it
    a = ember_allocator.CachingAllocator("host", memory_limit=0.25)
    assert a.memory_limit == int(total * 0.25)
    assert a.memory_stats()["memory_limit"] == int(total * 0.25)
    a.set_memory_limit(64 * MiB)
    assert a.memory_limit == 64 * MiB
    a.set_memory_limit(None)
    assert a.memory_limit is None
    with pytest.raises(ValueError, match=re.escape("(0, 1]")):
        a.set_memory_limit(1.5)
    with pytest.raises(ValueError, match=re.escape("(0, 1]")):
        a.set_memory_limit(0.0)
    for bad in (-1, 0, True, "1G"):
        with pytest.raises(ValueError, match="memory_limit"):
            a.set_memory_limit(bad)


def test_a_limit_below_what_is_reserved_stops_growth_only(host):
    keep = [host.allocate(1000), host.allocate(12 * MiB)]
    host.set_memory_limit(4 * MiB)  # less than the 14 MiB reserved
    keep.append(host.allocate(2000))  # from the cache: fine
    with pytest.raises(ember_allocator.OutOfMemoryError):
        host.allocate(3 * MiB)  # needs a new segment
    assert host.memory_reserved() == 14 * MiB  # nothing in use was released


def test_limit_applies_to_small_segments_too():
    a = ember_allocator.CachingAllocator("host", memory_limit=4 * MiB)
    live = [a.allocate(MiB) for _ in range(4)]  # two 2 MiB small segments
    with pytest.raises(ember_allocator.OutOfMemoryError, match="limit 4.00 MiB"):
        a.allocate(MiB)
    assert a.memory_reserved() == 4 * MiB
    del live
