"""Serving cupy from ember's allocator (_cupy.py); needs cupy and a GPU."""

import pytest

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
