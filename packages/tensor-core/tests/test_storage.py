"""Storages and memory: every byte goes back to the allocator when the last
tensor or view of it goes (reference counting alone, no garbage collection
pass), allocator swaps, shared memory."""

import gc

import numpy as np
import pytest

import ember_allocator
import ember_core as ec


def allocated():
    return ember_allocator.memory_stats()["allocated_bytes.all.current"]


@pytest.fixture(autouse=True)
def _no_gc():
    gc.collect()
    gc.disable()  # memory must come back through reference counting alone
    yield
    gc.enable()


def test_memory_returns_when_the_last_reference_goes():
    base = allocated()
    t = ec.empty(1000, 1000)
    assert allocated() >= base + 4_000_000
    del t
    assert allocated() == base


def test_views_keep_the_storage_alive():
    base = allocated()
    t = ec.zeros(256, 256)
    v = t[10:20].T
    w = v.reshape(-1) if v.is_contiguous() else v.unsqueeze(0)
    del t
    assert allocated() > base
    del v
    assert allocated() > base
    assert w.sum().item() == 0
    del w
    assert allocated() == base


def test_temporaries_of_a_computation_are_freed():
    base = allocated()
    x = ec.rand(100, 100)
    y = ((x * 2 + 1).exp().sum(0) @ x.T).relu()
    del x, y
    assert allocated() == base
    stats = ember_allocator.memory_stats()
    assert stats["allocated_bytes.all.peak"] >= 40_000


def test_tensors_in_cycles_are_freed_by_the_collector():
    gc.enable()
    base = allocated()

    class Holder:
        pass

    h = Holder()
    h.t = ec.zeros(1000)
    h.self = h
    del h
    gc.collect()
    assert allocated() == base


def test_storage_metadata():
    t = ec.zeros(3, 4, dtype=ec.float64)
    s = t.untyped_storage()
    assert s.nbytes() == 96 and s.device == ec.device("cpu")
    assert t[1:].untyped_storage() is s
    assert t.data_ptr() == s.data_ptr() and t[1].data_ptr() == s.data_ptr() + 32
    assert t.element_size() == 8 and t.nbytes == 96 and t.itemsize == 8


def test_set_allocator_routes_new_tensors():
    calls = []

    class Counting:
        def __init__(self):
            self.inner = ember_allocator.CachingAllocator("host")

        def allocate(self, nbytes, device, stream):
            calls.append(nbytes)
            return self.inner.allocate(nbytes)

        def free(self, block):
            calls.append(-1)
            self.inner.free(block)

    alloc = Counting()
    ec.set_allocator(alloc)
    try:
        t = ec.ones(10)
        assert calls and calls[0] == 40
        assert t.sum().item() == 10
        del t
        assert calls[-1] == -1
    finally:
        ec.set_allocator(None)
    before = len(calls)
    ec.ones(3)
    assert len(calls) == before


def test_share_memory_moves_storage_and_views_follow():
    gc.enable()
    t = ec.arange(6.0)
    v = t[2:]
    a = t.numpy()  # an exported view must keep the old memory alive
    t.share_memory_()
    assert t.is_shared() and v.is_shared()
    v[0] = 100
    assert t[2].item() == 100
    assert a[2] == 2.0  # NumPy still sees the old (copied) memory
    np.testing.assert_array_equal(t.numpy(), [0, 1, 100, 3, 4, 5])


def test_failed_allocation_counts_one_oom():
    # The fast-path malloc already records the OOM; raising must not allocate again.
    host = ember_allocator.host_allocator()
    host.empty_cache()  # no cached block may serve the request
    before = host.memory_stats()["num_ooms"]
    limit = host.memory_limit
    host.set_memory_limit(host.memory_stats()["reserved_bytes.all.current"] + (1 << 20))
    try:
        with pytest.raises(ember_allocator.OutOfMemoryError):
            ec.empty(64 << 20, dtype=ec.uint8)
    finally:
        host.set_memory_limit(limit)
    assert host.memory_stats()["num_ooms"] == before + 1
    assert ec.empty(64 << 20, dtype=ec.uint8).numel() == 64 << 20
