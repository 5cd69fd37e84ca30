"""The reference-counted shared allocator: memory comes from ember_allocator's
shm allocator (stats, limits), and goes back only when every process let go."""

import os
import sys

import numpy as np
import pytest

import ember_allocator
import ember_core as ec
import ember_multiprocessing as mp
from ember_multiprocessing import _shared_memory

sys.path.insert(0, os.path.dirname(__file__))
import helpers  # noqa: E402


def test_blocks_come_from_ember_allocators_shm_allocator(no_leaks):
    alloc = mp.shared_allocator()
    assert alloc.backing is ember_allocator.get_allocator("shm")
    before = alloc.memory_stats()["allocated_bytes.all.current"]
    t = ec.zeros(1000).share_memory_()
    stats = alloc.memory_stats()
    assert stats["allocated_bytes.all.current"] - before >= 4000 + _shared_memory.HEADER
    assert t.data_ptr() % 64 == 0
    del t
    assert alloc.memory_stats()["allocated_bytes.all.current"] == before


def test_memory_limit_covers_shared_memory(no_leaks):
    backing = mp.shared_allocator().backing
    backing.set_memory_limit(64 << 20)
    try:
        with pytest.raises(MemoryError, match="out of memory"):
            ec.zeros(32 << 20).share_memory_()  # 128 MiB
        ok = ec.zeros(1 << 20).share_memory_()  # 4 MiB fits
        assert ok.is_shared()
    finally:
        backing.set_memory_limit(None)


def test_block_waits_until_the_receiver_drops_it(no_leaks):
    alloc = mp.shared_allocator()
    alloc.reap()
    ctx = mp.get_context("fork")
    q, done = ctx.Queue(), ctx.Queue()
    p = ctx.Process(target=helpers.hold, args=(q, done))
    p.start()
    t = ec.ones(1000)
    q.put(t)
    assert done.get(timeout=60) == 1000.0
    del t  # the child still holds its storage over the block
    alloc.reap()
    assert alloc.pending() == 1
    q.put(None)
    p.join(60)
    alloc.reap()
    assert alloc.pending() == 0


def test_shared_memory_context_creates_tensors_in_shared_memory(no_leaks):
    with mp.shared_memory():
        s = ec.empty(4, 4)
        z = ec.zeros(3)
    plain = ec.zeros(3)
    assert s.is_shared() and z.is_shared() and not plain.is_shared()
    owner = s.untyped_storage()._owner
    assert isinstance(owner[1], _shared_memory.SharedBlock)
    ptr = s.data_ptr()
    s.share_memory_()  # already shared: nothing moves
    assert s.data_ptr() == ptr
    np.testing.assert_array_equal(z.numpy(), np.zeros(3))


def test_share_memory_moves_every_view_and_keeps_values(no_leaks):
    base = ec.arange(12.0).reshape(3, 4)
    views = [base[1], base.t(), base[:, 1:3]]
    expected = [v.numpy().copy() for v in views]
    base.share_memory_()
    for v, want in zip(views, expected):
        assert v.is_shared()
        np.testing.assert_array_equal(v.numpy(), want)
    views[0][0] = 100.0
    assert base[1, 0].item() == 100.0


def test_exported_numpy_arrays_keep_their_memory(no_leaks):
    t = ec.arange(6.0)
    a = t.numpy()  # views the old memory
    t.share_memory_()
    t[0] = 42.0
    np.testing.assert_array_equal(a, np.arange(6.0))  # still valid, no longer t's
    assert t[0].item() == 42.0


def test_tensor_made_in_shared_memory_crosses_a_queue_without_a_copy(no_leaks):
    # Created directly in shared memory (no share_memory_ copy when sent): the
    # child's write lands in the very bytes the parent holds.
    with mp.shared_memory():
        t = ec.zeros(1000)
    assert t.is_shared()
    ptr, storage = t.data_ptr(), t.untyped_storage()
    ctx = mp.get_context("fork")
    q, done = ctx.Queue(), ctx.Queue()
    p = ctx.Process(target=helpers.write_first, args=(q, done))
    p.start()
    q.put(t)
    done.get(timeout=60)
    p.join(60)
    assert t.data_ptr() == ptr and t.untyped_storage() is storage  # nothing moved
    assert t[0].item() == 99.0 and float(t[1:].abs().sum()) == 0.0
