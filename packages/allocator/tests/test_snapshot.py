"""memory_snapshot(), block_info() and the history ring buffer (_snapshot.py,
snapshot.c): every reserved byte appears in exactly one block, the figures agree
with memory_stats(), and events replay the allocator's totals."""

import os

import pytest
from helpers import KiB, MiB

import ember_allocator


def _check_consistent(allocator):
    """The invariants every snapshot must satisfy; returns the snapshot."""
    snap = allocator.memory_snapshot()
    stats = allocator.memory_stats()
    assert sum(seg["total_size"] for seg in snap) == stats["reserved_bytes.all.current"]
    allocated = active = requested = 0
    for seg in snap:
        # blocks tile their segment: contiguous, no gaps, no overlaps
        address = seg["address"]
        for b in seg["blocks"]:
            assert b["address"] == address
            address += b["size"]
        assert address == seg["address"] + seg["total_size"]
        seg_allocated = sum(b["size"] for b in seg["blocks"] if b["state"] == "active_allocated")
        assert seg["allocated_size"] == seg_allocated
        assert seg["active_size"] == sum(
            b["size"] for b in seg["blocks"] if b["state"] != "inactive"
        )
        assert seg["requested_size"] == sum(b["requested_size"] for b in seg["blocks"])
        # free neighbours always merge
        states = [b["state"] for b in seg["blocks"]]
        assert ("inactive", "inactive") not in zip(states, states[1:])
        allocated += seg["allocated_size"]
        active += seg["active_size"]
        requested += seg["requested_size"]
    assert allocated == stats["allocated_bytes.all.current"]
    assert active == stats["active_bytes.all.current"]
    assert requested == stats["requested_bytes.all.current"]
    if not any(s["is_expandable"] for s in snap):  # those list mapped ranges instead
        assert len(snap) == stats["segment.all.current"]
    return snap


def test_snapshot_layout(host):
    a = host.allocate(1000)
    b = host.allocate(12 * MiB)
    snap = _check_consistent(host)
    by_type = {seg["segment_type"]: seg for seg in snap}
    small, large = by_type["small"], by_type["large"]
    assert small["total_size"] == 2 * MiB and large["total_size"] == 12 * MiB
    assert small["blocks"][0] == {
        "address": a.ptr,
        "size": 1024,
        "requested_size": 1000,
        "state": "active_allocated",
        "stream": 0,
    }
    assert small["blocks"][1]["state"] == "inactive"
    assert small["blocks"][1]["requested_size"] == 0
    assert large["blocks"] == [
        {
            "address": b.ptr,
            "size": 12 * MiB,
            "requested_size": 12 * MiB,
            "state": "active_allocated",
            "stream": 0,
        }
    ]
    for seg in snap:
        assert seg["device"] == "cpu"
        assert seg["stream"] == 0
        assert seg["is_expandable"] is False
    assert [seg["address"] for seg in snap] == sorted(seg["address"] for seg in snap)


def test_snapshot_stays_consistent_through_a_workload(host):
    live = {}
    sizes = [100, 5000, 70 * KiB, 900 * KiB, 2 * MiB, 9 * MiB, 15 * MiB]
    for i in range(300):
        n = sizes[(i * 7) % len(sizes)] + i
        live[i] = host.allocate(n)
        if i % 3:
            live.pop((i * 5) % (i + 1), None)
        if i % 50 == 49:
            _check_consistent(host)
            host.empty_cache()
    _check_consistent(host)
    live.clear()
    snap = _check_consistent(host)
    assert all(len(seg["blocks"]) == 1 for seg in snap)  # everything merged back


def test_snapshot_of_expandable_segments_lists_mapped_ranges():
    a = ember_allocator.CachingAllocator("host", expandable_segments=True)
    x = a.allocate(4 * MiB)
    y = a.allocate(4 * MiB)
    z = a.allocate(4 * MiB)
    del y
    a.empty_cache()  # unmaps y's pages: two mapped ranges remain
    snap = _check_consistent(a)
    assert [(s["address"], s["total_size"]) for s in snap] == [(x.ptr, 4 * MiB), (z.ptr, 4 * MiB)]
    assert all(s["is_expandable"] for s in snap)
    del x, z


def test_many_blocks_snapshot(host):
    live = [host.allocate(512) for _ in range(5000)]  # more than the first buffer holds
    snap = _check_consistent(host)
    assert sum(len(seg["blocks"]) for seg in snap) >= 5000
    del live


def test_block_info(host):
    b = host.allocate(3000)
    block, segment = host.block_info(b.ptr + 100)  # any address inside the block
    assert block["address"] == b.ptr and block["size"] == 3072
    assert segment["total_size"] == 2 * MiB and "blocks" not in segment
    assert segment["handle"] == -1
    with pytest.raises(ember_allocator.InvalidPointerError, match="not inside any segment"):
        host.block_info(8)


def test_shm_segments_carry_their_memfd():
    shm = ember_allocator.CachingAllocator("shm")
    b = shm.allocate(1000)
    _, segment = shm.block_info(b.ptr)
    assert segment["handle"] >= 0
    assert os.fstat(segment["handle"]).st_size == 2 * MiB


# ------------------------------------------------------------------ history


def test_history_is_off_by_default(host):
    host.allocate(100)
    assert host.history() == []


def test_history_records_events_with_running_totals(host):
    host.record_history(100)
    a = host.allocate(1000)
    a_ptr = a.ptr
    b = host.allocate(3 * MiB)
    del a
    b.free()
    host.empty_cache()
    events = host.history()
    actions = [e["action"] for e in events]
    assert actions == [
        "segment_alloc",
        "alloc",
        "segment_alloc",
        "alloc",
        "free_requested",
        "free_completed",
        "free_requested",
        "free_completed",
        "segment_free",
        "segment_free",
        "empty_cache",
    ]
    # each event carries the totals right after it: replay them
    allocated = reserved = 0
    for e in events:
        if e["action"] == "alloc":
            allocated += e["size"]
        elif e["action"] == "free_requested":
            allocated -= e["size"]
        elif e["action"] == "segment_alloc":
            reserved += e["size"]
        elif e["action"] == "segment_free":
            reserved -= e["size"]
        assert (e["allocated_bytes"], e["reserved_bytes"]) == (allocated, reserved)
    assert (events[1]["address"], events[1]["size"]) == (a_ptr, 1024)
    assert events[0]["size"] == 2 * MiB
    times = [e["time_ns"] for e in events]
    assert times == sorted(times)


def test_history_is_a_ring_of_the_newest_events(host):
    host.record_history(5)
    for n in range(1, 21):
        host.allocate(n * 512)  # alloc, free_requested, free_completed each
    events = host.history()
    assert len(events) == 5
    assert [e["action"] for e in events] == [
        "free_requested",
        "free_completed",
        "alloc",
        "free_requested",
        "free_completed",
    ]
    assert events[-1]["size"] == 20 * 512
    host.record_history(0)  # off, and cleared
    host.allocate(100)
    assert host.history() == []
    with pytest.raises(ember_allocator.AllocatorError, match="history capacity"):
        host.record_history(-1)


def test_history_records_ooms_and_expandable_maps():
    a = ember_allocator.CachingAllocator(
        "host", expandable_segments=True, memory_limit=8 * MiB, history=1000
    )
    x = a.allocate(4 * MiB)
    with pytest.raises(ember_allocator.OutOfMemoryError):
        a.allocate(6 * MiB)
    actions = [e["action"] for e in a.history()]
    assert actions[:2] == ["segment_map", "alloc"]
    assert actions[-1] == "oom"
    assert a.history()[-1]["size"] == 6 * MiB
    del x
