"""The caching policy of the C core (pool.c): rounding, segment sizes, best-fit
splitting, merging, reuse from the cache, empty_cache, max_split_size and
expandable segments, checked on real host memory through snapshots and counters."""

import pytest
from helpers import KiB, MiB, blocks, fill, growing_interleaved, holds, round512

import ember_allocator


def test_policy_constants_come_from_c():
    names = ("MIN_BLOCK_SIZE", "SMALL_SIZE", "SMALL_BUFFER", "LARGE_BUFFER")
    names += ("MIN_LARGE_ALLOC", "ROUND_LARGE")
    assert {n: getattr(ember_allocator, n) for n in names} == {
        "MIN_BLOCK_SIZE": 512,
        "SMALL_SIZE": 1 * MiB,
        "SMALL_BUFFER": 2 * MiB,
        "LARGE_BUFFER": 20 * MiB,
        "MIN_LARGE_ALLOC": 10 * MiB,
        "ROUND_LARGE": 2 * MiB,
    }


@pytest.mark.parametrize("nbytes", [0, 1, 511, 512, 513, 1000, 4096, 100_000, MiB - 1, MiB])
def test_requests_round_up_to_512_bytes(host, nbytes):
    block = host.allocate(nbytes)
    info, _ = host.block_info(block.ptr)
    assert info["size"] == round512(nbytes)
    assert info["requested_size"] == nbytes
    stats = host.memory_stats()
    assert stats["allocated_bytes.all.current"] == round512(nbytes)
    assert stats["requested_bytes.all.current"] == nbytes


def test_blocks_are_aligned_and_usable(host):
    live = [host.allocate(n) for n in (1, 700, 4096, 3 * MiB, 13 * MiB)]
    for i, b in enumerate(live):
        assert b.ptr % 512 == 0  # 512 >= the promised 64-byte host alignment
        fill(b.ptr, b.nbytes, i + 1)
    for i, b in enumerate(live):
        assert holds(b.ptr, b.nbytes, i + 1)


@pytest.mark.parametrize(
    "nbytes, segment, pool",
    [
        (1, 2 * MiB, "small"),
        (MiB, 2 * MiB, "small"),  # up to 1 MiB is small
        (MiB + 1, 20 * MiB, "large"),  # 1-10 MiB requests share 20 MiB segments
        (10 * MiB - 513, 20 * MiB, "large"),  # rounds to 10 MiB - 512
        (10 * MiB, 10 * MiB, "large"),  # from 10 MiB: a segment of its own ...
        (11 * MiB + 1, 12 * MiB, "large"),  # ... rounded to 2 MiB
    ],
)
def test_segment_size_by_request(host, nbytes, segment, pool):
    host.allocate(nbytes)
    (seg,) = host.memory_snapshot()
    assert seg["total_size"] == segment
    assert seg["segment_type"] == pool


def test_small_requests_are_carved_from_one_2mib_segment(host):
    live = [host.allocate(100 * KiB) for _ in range(20)]  # 20 * 100 KiB < 2 MiB
    stats = host.memory_stats()
    assert stats["segment.small_pool.current"] == 1
    assert stats["num_device_alloc"] == 1
    (seg,) = host.memory_snapshot()
    addresses = sorted(b.ptr for b in live)
    assert addresses[0] == seg["address"]
    # carved one after another from the start of the segment
    assert [a - seg["address"] for a in addresses] == [i * 100 * KiB for i in range(20)]


def test_small_block_split_leaves_the_rest_free(host):
    b = host.allocate(1000)
    (seg,) = host.memory_snapshot()
    base = seg["address"]
    assert blocks(host) == [
        (base, 0, 1024, "active_allocated"),
        (base, 1024, 2 * MiB - 1024, "inactive"),
    ]
    del b


def test_large_split_keeps_remainders_over_1mib(host):
    a = host.allocate(2 * MiB)
    base = host.memory_snapshot()[0]["address"]
    assert blocks(host) == [
        (base, 0, 2 * MiB, "active_allocated"),
        (base, 2 * MiB, 18 * MiB, "inactive"),
    ]
    del a
    # 19.5 MiB from the cached 20 MiB block: a 0.5 MiB rest is not worth a block
    b = host.allocate(19 * MiB + 512 * KiB)
    assert blocks(host) == [(base, 0, 20 * MiB, "active_allocated")]
    assert host.memory_stats()["allocated_bytes.all.current"] == 20 * MiB
    assert host.memory_stats()["num_device_alloc"] == 1
    del b


def test_free_neighbours_merge(host):
    a, b, c = (host.allocate(4 * KiB) for _ in range(3))
    base = host.memory_snapshot()[0]["address"]
    rest = (base, 12 * KiB, 2 * MiB - 12 * KiB, "inactive")
    b.free()
    assert blocks(host) == [
        (base, 0, 4 * KiB, "active_allocated"),
        (base, 4 * KiB, 4 * KiB, "inactive"),
        (base, 8 * KiB, 4 * KiB, "active_allocated"),
        rest,
    ]
    a.free()  # merges with b's free block
    assert blocks(host) == [
        (base, 0, 8 * KiB, "inactive"),
        (base, 8 * KiB, 4 * KiB, "active_allocated"),
        rest,
    ]
    c.free()  # merges on both sides: the segment is one free block again
    assert blocks(host) == [(base, 0, 2 * MiB, "inactive")]
    stats = host.memory_stats()
    assert stats["inactive_split.all.current"] == 0
    assert stats["inactive_split_bytes.all.current"] == 0


def test_best_fit_takes_the_smallest_hole_then_the_lowest_address(host):
    sizes = [4, 8, 4, 16, 4, 12, 4, 8, 4]  # KiB; the 4 KiB blocks stay and separate holes
    live = [host.allocate(s * KiB) for s in sizes]
    holes = {i: live[i].ptr for i in (1, 3, 5, 7)}  # 8, 16, 12, 8 KiB
    for i in holes:
        live[i].free()
    hits = host.memory_stats()["cache_hits"]
    taken = [host.allocate(10 * KiB)]
    assert taken[-1].ptr == holes[5]  # 12 KiB: the smallest hole that fits
    taken.append(host.allocate(8 * KiB))
    assert taken[-1].ptr == holes[1]  # two 8 KiB holes: the lower one first
    taken.append(host.allocate(8 * KiB))
    assert taken[-1].ptr == holes[7]
    taken.append(host.allocate(9 * KiB))
    assert taken[-1].ptr == holes[3]  # only the 16 KiB hole is left
    assert host.memory_stats()["cache_hits"] == hits + 4
    assert host.memory_stats()["num_device_alloc"] == 1


def test_reuse_does_not_call_the_raw_allocator_again(host):
    sizes = [512, 3000, 64 * KiB, MiB, 3 * MiB, 12 * MiB, 40 * MiB]
    first = {}
    for n in sizes:  # warm the cache: one segment per size class
        b = host.allocate(n)
        first[n] = b.ptr
        del b
    before = host.memory_stats()
    for _ in range(200):
        for n in sizes:
            b = host.allocate(n)
            assert b.ptr == first[n]  # the very same memory, from the cache
            del b
    after = host.memory_stats()
    assert after["num_device_alloc"] == before["num_device_alloc"]  # no new segment
    assert after["num_device_free"] == before["num_device_free"] == 0
    assert after["cache_hits"] - before["cache_hits"] == 200 * len(sizes)
    assert after["cache_misses"] == before["cache_misses"]
    assert after["reserved_bytes.all.current"] == before["reserved_bytes.all.current"]
    assert after["allocation.all.allocated"] - before["allocation.all.allocated"] == 1400


def test_freed_memory_stays_reserved_until_empty_cache(host):
    b = host.allocate(30 * MiB)
    c = host.allocate(1000)
    del b, c
    stats = host.memory_stats()
    assert stats["allocated_bytes.all.current"] == 0
    assert stats["reserved_bytes.all.current"] == 30 * MiB + 2 * MiB
    host.empty_cache()
    stats = host.memory_stats()
    assert stats["reserved_bytes.all.current"] == 0
    assert stats["segment.all.current"] == 0
    assert stats["num_device_free"] == 2
    assert host.memory_snapshot() == []


def test_empty_cache_keeps_segments_in_use(host):
    keep = host.allocate(1000)
    fill(keep.ptr, keep.nbytes, 7)
    drop = host.allocate(12 * MiB)
    drop.free()
    host.empty_cache()
    (seg,) = host.memory_snapshot()
    assert seg["segment_type"] == "small"
    assert host.memory_stats()["reserved_bytes.all.current"] == 2 * MiB
    assert holds(keep.ptr, keep.nbytes, 7)
    keep.free()
    host.empty_cache()
    assert host.memory_stats()["reserved_bytes.all.current"] == 0


# ------------------------------------------------------------ max_split_size


def test_max_split_size_keeps_oversize_blocks_whole():
    a = ember_allocator.CachingAllocator("host", max_split_size=4 * MiB)
    big = a.allocate(8 * MiB)  # at least max_split_size: takes its 20 MiB segment whole
    big_ptr = big.ptr
    assert a.block_info(big_ptr)[0]["size"] == 20 * MiB
    del big
    stats = a.memory_stats()
    assert stats["oversize_allocations.current"] == 0
    assert stats["oversize_allocations.allocated"] == 1
    assert stats["oversize_segments.current"] == 1
    # A request under max_split_size never takes (and splits) an oversize block.
    small = a.allocate(2 * MiB)
    assert a.memory_stats()["num_device_alloc"] == 2
    assert not (big_ptr <= small.ptr < big_ptr + 20 * MiB)
    # small split its fresh 20 MiB segment (the request is below max_split_size),
    # leaving an oversize 18 MiB rest.  A request over max_split_size takes the
    # best fitting oversize block whole.
    again = a.allocate(19 * MiB)
    assert again.ptr == big_ptr
    assert a.block_info(again.ptr)[0]["size"] == 20 * MiB
    rest = a.allocate(6 * MiB)
    assert rest.ptr == small.ptr + 2 * MiB
    assert a.block_info(rest.ptr)[0]["size"] == 18 * MiB
    stats = a.memory_stats()
    assert stats["num_device_alloc"] == 2
    assert stats["oversize_allocations.current"] == 2
    assert stats["oversize_segments.current"] == 2


def test_max_split_size_does_not_give_far_larger_blocks_to_large_requests():
    a = ember_allocator.CachingAllocator("host", max_split_size=8 * MiB)
    huge = a.allocate(40 * MiB)
    huge_ptr = huge.ptr
    del huge
    b = a.allocate(12 * MiB)  # 40 MiB >= 12 + 20 MiB: too wasteful, a new segment
    assert b.ptr != huge_ptr
    assert a.memory_stats()["num_device_alloc"] == 2
    c = a.allocate(30 * MiB)  # 40 MiB < 30 + 20 MiB: reused, unsplit
    assert c.ptr == huge_ptr
    assert a.block_info(c.ptr)[0]["size"] == 40 * MiB


def test_max_split_size_still_splits_segments_for_requests_below_it():
    # 20 MiB segments are at least max_split_size here, yet a 3 MiB request
    # splits its fresh segment: only requests of max_split_size or more take
    # whole blocks.
    a = ember_allocator.CachingAllocator("host", max_split_size=16 * MiB)
    b = a.allocate(3 * MiB)
    assert a.block_info(b.ptr)[0]["size"] == 3 * MiB
    # The 17 MiB rest is oversize: a 5 MiB request may not split it ...
    c = a.allocate(5 * MiB)
    assert not (b.ptr <= c.ptr < b.ptr + 20 * MiB)
    # ... while a 17 MiB one takes it.
    d = a.allocate(17 * MiB)
    assert d.ptr == b.ptr + 3 * MiB
    assert a.memory_stats()["num_device_alloc"] == 2


def test_max_split_size_is_validated_and_settable(host):
    with pytest.raises(ValueError, match="max_split_size"):
        ember_allocator.CachingAllocator("host", max_split_size=MiB)
    with pytest.raises(ValueError, match="max_split_size"):
        host.set_max_split_size(4096)
    assert host.memory_stats()["max_split_size"] == -1  # unset, as PyTorch reports it
    host.set_max_split_size(32 * MiB)
    assert host.memory_stats()["max_split_size"] == 32 * MiB


# -------------------------------------------------------- expandable segments


def test_expandable_segment_grows_in_place_and_unmaps_free_pages():
    a = ember_allocator.CachingAllocator("host", expandable_segments=True)
    x = a.allocate(3 * MiB)
    y = a.allocate(5 * MiB)
    assert y.ptr == x.ptr + 3 * MiB  # one segment, grown: contiguous addresses
    fill(x.ptr, x.nbytes, 1)
    fill(y.ptr, y.nbytes, 2)
    stats = a.memory_stats()
    assert stats["num_device_alloc"] == 0  # no fixed segments at all
    assert stats["segment.large_pool.current"] == 1
    assert stats["reserved_bytes.all.current"] == 8 * MiB  # pages mapped on demand
    assert stats["num_maps"] == 2
    (seg,) = a.memory_snapshot()
    assert seg["is_expandable"] and seg["total_size"] == 8 * MiB
    del y
    a.empty_cache()  # the free pages go back; the live ones stay
    assert a.memory_stats()["reserved_bytes.all.current"] == 4 * MiB  # 3 MiB in 2 MiB pages
    assert holds(x.ptr, x.nbytes, 1)
    z = a.allocate(6 * MiB)  # maps again after x
    assert z.ptr == x.ptr + 3 * MiB
    fill(z.ptr, z.nbytes, 3)
    assert holds(x.ptr, x.nbytes, 1)


def test_expandable_segments_need_a_kind_that_can_map():
    with pytest.raises(ember_allocator.AllocatorError, match="expandable"):
        ember_allocator.CachingAllocator("shm", expandable_segments=True)


def test_fragmentation_expandable_segments_keep_reserved_within_1_2x_peak():
    fixed = growing_interleaved(ember_allocator.CachingAllocator("host"))
    grown = growing_interleaved(ember_allocator.CachingAllocator("host", expandable_segments=True))
    assert fixed > 2.0  # the pattern does fragment fixed segments ...
    assert grown <= 1.2  # ... and growable segments bound it
