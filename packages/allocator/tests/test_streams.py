"""Per-stream pools and record_stream, on the simulated device ('sim'): host
memory whose streams run asynchronously, so an event recorded on a stream only
completes when the test says so (sim_complete) or on a synchronize."""

import pytest
from helpers import KiB, MiB, blocks

import ember_allocator

S1, S2, S3 = 11, 22, 33


def test_a_freed_block_goes_back_to_its_own_streams_pool(sim):
    a = sim.allocate(64 * KiB, stream=S1)
    ptr = a.ptr
    del a
    b = sim.allocate(64 * KiB, stream=S2)  # another stream: not the cached block
    assert b.ptr != ptr
    assert sim.memory_stats()["num_device_alloc"] == 2
    c = sim.allocate(64 * KiB, stream=S1)  # its own stream: reused
    assert c.ptr == ptr
    streams = {seg["stream"] for seg in sim.memory_snapshot()}
    assert streams == {S1, S2}
    assert b.stream == S2 and c.stream == S1


def test_record_stream_delays_reuse_until_the_other_stream_is_done(sim):
    a = sim.allocate(64 * KiB, stream=S1)
    ptr = a.ptr
    a.record_stream(S2)  # e.g. a kernel on S2 still reads it
    del a
    (seg,) = sim.memory_snapshot()
    assert seg["blocks"][0]["state"] == "active_pending_free"
    stats = sim.memory_stats()
    assert stats["allocated_bytes.all.current"] == 0  # freed by the user ...
    assert stats["active_bytes.all.current"] == 64 * KiB  # ... not yet reusable
    b = sim.allocate(64 * KiB, stream=S1)
    assert b.ptr == ptr + 64 * KiB  # S2 has not finished: not handed out again
    sim.sim_complete(S2)
    c = sim.allocate(64 * KiB, stream=S1)  # the event completed: reused
    assert c.ptr == ptr
    assert sim.memory_stats()["active_bytes.all.current"] == 128 * KiB


def test_a_block_waits_for_every_stream_it_was_used_on(sim):
    a = sim.allocate(4 * KiB, stream=S1)
    ptr = a.ptr
    a.record_stream(S2)
    a.record_stream(S3)
    a.record_stream(S2)  # recorded once per stream
    del a
    sim.sim_complete(S2)
    keep = [sim.allocate(4 * KiB, stream=S1)]
    assert keep[-1].ptr != ptr  # S3 still pending
    sim.sim_complete(S3)
    keep.append(sim.allocate(4 * KiB, stream=S1))
    assert keep[-1].ptr == ptr


def test_work_queued_after_the_free_does_not_delay_reuse(sim):
    a = sim.allocate(4 * KiB, stream=S1)
    ptr = a.ptr
    a.record_stream(S2)
    del a  # the event is recorded now, at the free
    sim.sim_complete(S2)
    other = sim.allocate(4 * KiB, stream=S2)  # new work on S2 after the free
    other.record_stream(S3)
    assert sim.allocate(4 * KiB, stream=S1).ptr == ptr


def test_record_stream_on_its_own_stream_changes_nothing(sim):
    a = sim.allocate(4 * KiB, stream=S1)
    ptr = a.ptr
    a.record_stream(S1)
    del a
    assert sim.memory_snapshot()[0]["blocks"][0]["state"] == "inactive"
    assert sim.allocate(4 * KiB, stream=S1).ptr == ptr


def test_synchronize_and_empty_cache_complete_pending_frees(sim):
    a = sim.allocate(3 * MiB, stream=S1)
    a.record_stream(S2)
    del a
    sim.synchronize()
    assert sim.memory_stats()["active_bytes.all.current"] == 0
    assert sim.memory_stats()["num_sync_all_streams"] == 1
    b = sim.allocate(MiB, stream=S1)
    b.record_stream(S3)
    del b
    sim.empty_cache()  # waits for the streams, then returns every segment
    stats = sim.memory_stats()
    assert stats["reserved_bytes.all.current"] == 0
    assert stats["active.all.current"] == 0


def test_pending_blocks_merge_with_their_neighbours_once_done(sim):
    a, b = sim.allocate(4 * KiB, stream=S1), sim.allocate(4 * KiB, stream=S1)
    base = sim.memory_snapshot()[0]["address"]
    b.record_stream(S2)
    del a, b
    assert [state for *_, state in blocks(sim)] == [
        "inactive",
        "active_pending_free",
        "inactive",
    ]
    sim.sim_complete(S2)
    sim.allocate(0, stream=S3)  # any allocation processes completed events
    assert [b for b in blocks(sim) if b[0] == base] == [(base, 0, 2 * MiB, "inactive")]


def test_record_stream_errors(sim, host):
    a = sim.allocate(100)
    ptr = a.ptr
    a.free()
    with pytest.raises(ember_allocator.InvalidPointerError, match="record_stream"):
        sim.record_stream(ptr, S2)  # freed
    with pytest.raises(ember_allocator.InvalidPointerError, match="record_stream"):
        sim.record_stream(ptr + 512, S2)  # never handed out
    with pytest.raises(TypeError, match="stream"):
        sim.allocate(100, stream="fast")
    # Without asynchronous streams (host memory) record_stream is accepted and
    # has nothing to wait for.
    h = host.allocate(100)
    ptr = h.ptr
    h.record_stream(S2)
    del h
    assert host.allocate(100).ptr == ptr


class _Stream:
    """Anything with an int `.ptr` (cupy) or `.cuda_stream` (torch) is a stream."""

    def __init__(self, **attrs):
        self.__dict__.update(attrs)


def test_stream_objects(sim):
    a = sim.allocate(100, stream=_Stream(ptr=S1))
    b = sim.allocate(100, stream=_Stream(cuda_stream=S2))
    assert (a.stream, b.stream) == (S1, S2)
    assert sim.allocate(100).stream == 0  # None is the default stream
