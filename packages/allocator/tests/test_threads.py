"""Many threads allocating and freeing at once, with every byte accounted for at
the end.  Python threads take turns at the GIL between calls; the C threads of
_stress_threads call the allocator truly at the same time, so its mutex is
what keeps the pool consistent there."""

import random
import threading

import pytest
from helpers import KiB, MiB, fill, holds

import ember_allocator


def _assert_all_returned(allocator, allocations):
    stats = allocator.memory_stats()
    for key in ("allocation", "allocated_bytes", "active", "active_bytes", "requested_bytes"):
        assert stats[f"{key}.all.current"] == 0, key
    assert stats["allocation.all.allocated"] == stats["allocation.all.freed"] == allocations
    assert stats["allocated_bytes.all.allocated"] == stats["allocated_bytes.all.freed"]
    # every reserved byte is in a free block, and the free blocks merged back
    snap = allocator.memory_snapshot()
    assert sum(seg["total_size"] for seg in snap) == stats["reserved_bytes.all.current"]
    for seg in snap:
        assert [b["state"] for b in seg["blocks"]] == ["inactive"]


def test_python_threads_allocating_and_freeing(host):
    n_threads, steps = 8, 400
    errors = []
    start = threading.Barrier(n_threads)

    def work(seed):
        rng = random.Random(seed)
        live = []
        try:
            start.wait()
            for step in range(steps):
                if live and rng.random() < 0.5:
                    block, byte = live.pop(rng.randrange(len(live)))
                    if not holds(block.ptr, block.nbytes, byte):
                        errors.append(f"thread {seed}: a live block was overwritten")
                    block.free()
                else:
                    n = rng.choice([rng.randrange(1, 4 * KiB), rng.randrange(1, 2 * MiB)])
                    block = host.allocate(n)
                    byte = (seed * 31 + step) % 251 + 1
                    fill(block.ptr, n, byte)
                    live.append((block, byte))
            for block, byte in live:
                if not holds(block.ptr, block.nbytes, byte):
                    errors.append(f"thread {seed}: a live block was overwritten")
                block.free()
        except Exception as e:  # reported below, not lost in the thread
            errors.append(repr(e))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    allocations = host.memory_stats()["allocation.all.allocated"]
    assert allocations >= n_threads * steps // 2
    _assert_all_returned(host, allocations)


@pytest.mark.parametrize(
    "kind, options, streams",
    [
        ("host", {}, 1),
        ("host", {"max_split_size": 4 * MiB}, 1),
        ("host", {"expandable_segments": True}, 1),
        ("sim", {}, 4),
        ("shm", {}, 2),
    ],
)
def test_c_threads_hammering_one_allocator(kind, options, streams):
    a = ember_allocator.CachingAllocator(kind, **options)
    threads, iterations = 8, 3000
    a._stress_threads(threads, iterations, max_bytes=3 * MiB, streams=streams, seed=7)
    stats = a.memory_stats()
    # each step frees or allocates; each thread frees what it still holds
    assert stats["allocation.all.allocated"] > threads * iterations // 3
    _assert_all_returned(a, stats["allocation.all.allocated"])
    assert stats["cache_hits"] > stats["cache_misses"]


def test_stress_threads_arguments_are_checked(host):
    with pytest.raises(ember_allocator.AllocatorError, match="stress_threads"):
        host._stress_threads(threads=0)
