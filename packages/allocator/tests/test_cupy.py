"""Serving cupy from ember's allocator (_cupy.py); needs cupy and a GPU."""

import pytest
from helpers import MiB

import ember_allocator

cupy = pytest.importorskip("cupy")
pytestmark = pytest.mark.cuda


def test_cupy_arrays_live_in_embers_cache():
    allocator = ember_allocator.CachingAllocator("cuda")
    previous = cupy.cuda.get_allocator()
    cupy.cuda.set_allocator(ember_allocator.cupy_allocator(allocator))
    try:
        x = cupy.arange(1 << 20, dtype=cupy.float32)
        assert allocator.memory_allocated() >= x.nbytes
        assert float(x.sum()) == float((1 << 20) * ((1 << 20) - 1) / 2)
        ptr = x.data.ptr
        del x
        assert allocator.memory_allocated() == 0
        y = cupy.empty(1 << 20, dtype=cupy.float32)
        assert y.data.ptr == ptr  # reused from ember's cache
        assert allocator.memory_stats()["cache_hits"] >= 1
        del y
    finally:
        cupy.cuda.set_allocator(previous)


# A kernel that keeps its stream busy for about `cycles` GPU clock cycles, so that
# the test controls when work on a real stream completes.
_SPIN = r"""
extern "C" __global__ void spin(long long cycles) {
    long long start = clock64();
    while (clock64() - start < cycles) {}
}
"""


def test_record_stream_on_real_cuda_streams():
    allocator = ember_allocator.CachingAllocator("cuda")
    producer, consumer = cupy.cuda.Stream(non_blocking=True), cupy.cuda.Stream(non_blocking=True)
    spin = cupy.RawKernel(_SPIN, "spin")
    block = allocator.allocate(MiB, stream=producer.ptr)
    ptr = block.ptr
    with consumer:
        spin((1,), (1,), (cupy.int64(2_000_000_000),))  # about a second of GPU time
    block.record_stream(consumer.ptr)  # the consumer still "uses" the block
    del block
    # The consumer has not finished: the block must not be handed out again.
    busy = allocator.allocate(MiB, stream=producer.ptr)
    assert busy.ptr != ptr
    assert allocator.memory_stats()["active_bytes.all.current"] == 2 * MiB
    consumer.synchronize()
    reused = allocator.allocate(MiB, stream=producer.ptr)
    assert reused.ptr == ptr  # its event completed: back in the producer's pool
    other = allocator.allocate(MiB, stream=consumer.ptr)
    assert other.ptr not in (ptr, busy.ptr)  # never across streams
