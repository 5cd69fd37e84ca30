import ember_allocator


def test_allocate_and_free_returns_memory_to_cache():
    a = ember_allocator.CachingAllocator("host")
    block = a.allocate(1000)
    assert block.ptr % ember_allocator._lib.HOST_ALIGNMENT == 0
    assert a.memory_stats()["allocated_bytes.all.current"] == 1024
    del block
    stats = a.memory_stats()
    assert stats["allocated_bytes.all.current"] == 0
    assert stats["reserved_bytes.all.current"] == ember_allocator.SMALL_BUFFER
