"""CUDA memory through ember_allocator's pool, with torch.cuda's accounting API.

memory_allocated / memory_reserved / max_memory_allocated /
reset_peak_memory_stats / memory_stats / memory_summary / memory_snapshot /
empty_cache / set_per_process_memory_fraction / mem_get_info; freed blocks are
cached and reused; running out of memory raises ``ember_core.cuda.OutOfMemoryError``
(a RuntimeError, as torch's) with a diagnosis, and is recoverable.
"""

import gc

import pytest

import ember_core as ec

pytestmark = pytest.mark.cuda

MiB = 1 << 20


def _settle():
    gc.collect()
    ec.cuda.synchronize()


def test_memory_allocated_follows_tensors():
    _settle()
    before = ec.cuda.memory_allocated()
    x = ec.empty(MiB, dtype=ec.float32, device="cuda")  # 4 MiB
    assert ec.cuda.memory_allocated() - before == 4 * MiB
    assert ec.cuda.memory_allocated(0) == ec.cuda.memory_allocated("cuda:0")
    assert ec.cuda.memory_reserved() >= ec.cuda.memory_allocated()
    y = ec.empty(1000, dtype=ec.uint8, device="cuda")  # rounded up to 512 bytes
    assert ec.cuda.memory_allocated() - before == 4 * MiB + 1024
    del x, y
    _settle()
    assert ec.cuda.memory_allocated() == before


def test_views_share_memory_and_free_with_the_last_reference():
    _settle()
    before = ec.cuda.memory_allocated()
    x = ec.zeros(MiB, device="cuda")
    v = x[::2]
    del x
    assert ec.cuda.memory_allocated() - before == 4 * MiB
    v.fill_(1)
    del v
    _settle()
    assert ec.cuda.memory_allocated() == before


def test_peak_stats():
    _settle()
    ec.cuda.reset_peak_memory_stats()
    base = ec.cuda.memory_allocated()
    assert ec.cuda.max_memory_allocated() == base
    x = ec.empty(8 * MiB, dtype=ec.uint8, device="cuda")
    del x
    _settle()
    assert ec.cuda.max_memory_allocated() >= base + 8 * MiB
    assert ec.cuda.max_memory_reserved() >= ec.cuda.memory_reserved()
    ec.cuda.reset_peak_memory_stats()
    assert ec.cuda.max_memory_allocated() == ec.cuda.memory_allocated()


def test_memory_stats_summary_snapshot():
    _settle()
    x = ec.empty(3 * MiB, dtype=ec.uint8, device="cuda")
    stats = ec.cuda.memory_stats()
    assert isinstance(stats, dict)
    assert stats["allocated_bytes.all.current"] == ec.cuda.memory_allocated()
    assert stats["reserved_bytes.all.current"] == ec.cuda.memory_reserved()
    assert stats["allocated_bytes.all.peak"] >= stats["allocated_bytes.all.current"]
    assert stats["num_alloc_retries"] >= 0 and stats["num_ooms"] >= 0
    summary = ec.cuda.memory_summary()
    assert isinstance(summary, str) and "allocated" in summary.lower()
    snap = ec.cuda.memory_snapshot()
    assert isinstance(snap, list) and snap, "a segment holds x"
    seg = snap[0]
    assert {"address", "total_size", "blocks"} <= set(seg), seg.keys()
    total = sum(s["total_size"] for s in snap)
    assert total == ec.cuda.memory_reserved()
    del x


def test_freed_blocks_are_cached_and_reused():
    _settle()
    x = ec.empty(5 * MiB, dtype=ec.uint8, device="cuda")
    ptr = x.data_ptr()
    reserved = ec.cuda.memory_reserved()
    del x
    y = ec.empty(5 * MiB, dtype=ec.uint8, device="cuda")
    assert y.data_ptr() == ptr, "the caching allocator should hand the freed block back"
    assert ec.cuda.memory_reserved() == reserved


def test_empty_cache_returns_unused_memory():
    _settle()
    x = ec.empty(256 * MiB, dtype=ec.uint8, device="cuda")
    reserved = ec.cuda.memory_reserved()
    free_before, _ = ec.cuda.mem_get_info()
    del x
    _settle()
    ec.cuda.empty_cache()
    assert ec.cuda.memory_reserved() <= reserved - 256 * MiB
    free_after, _ = ec.cuda.mem_get_info()
    assert free_after >= free_before + 200 * MiB


def test_mem_get_info():
    free, total = ec.cuda.mem_get_info()
    assert 0 < free <= total
    assert total == ec.cuda.get_device_properties(0).total_memory
    assert ec.cuda.mem_get_info(0) == pytest.approx((free, total), rel=0.05)


def test_out_of_memory_is_recoverable():
    _settle()
    total = ec.cuda.get_device_properties(0).total_memory
    keep = ec.arange(1000, device="cuda")
    with pytest.raises(ec.cuda.OutOfMemoryError) as info:
        ec.empty(2 * total, dtype=ec.uint8, device="cuda")
    err = info.value
    assert isinstance(err, RuntimeError)
    text = str(err)
    assert "out of memory" in text.lower(), text
    assert "GiB" in text or "MiB" in text, f"the message should say sizes: {text}"
    # state is intact: old tensors still work, a retry after empty_cache succeeds
    ec.cuda.empty_cache()
    y = ec.ones(16 * MiB, device="cuda")
    assert y.sum().item() == 16 * MiB
    assert keep.sum().item() == sum(range(1000))
    assert ec.cuda.memory_stats()["num_ooms"] >= 1


def test_oom_from_a_fill_of_memory_then_recover():
    """Allocating in chunks until the device is full raises OutOfMemoryError;
    freeing the chunks and empty_cache make room again."""
    _settle()
    chunks = []
    free, _ = ec.cuda.mem_get_info()
    chunk = max(256 * MiB, free // 8)
    with pytest.raises(ec.cuda.OutOfMemoryError):
        for _ in range(64):
            chunks.append(ec.empty(chunk, dtype=ec.uint8, device="cuda"))
    assert len(chunks) >= 4
    chunks.clear()
    _settle()
    ec.cuda.empty_cache()
    z = ec.zeros(chunk, dtype=ec.uint8, device="cuda")
    assert z.sum().item() == 0
    del z
    ec.cuda.empty_cache()


def test_per_process_memory_fraction():
    _settle()
    ec.cuda.empty_cache()
    total = ec.cuda.get_device_properties(0).total_memory
    try:
        ec.cuda.set_per_process_memory_fraction(0.05)
        with pytest.raises(ec.cuda.OutOfMemoryError):
            ec.empty(int(total * 0.1), dtype=ec.uint8, device="cuda")
        small = ec.ones(int(total * 0.01) // 4, device="cuda")
        assert small.is_cuda
        del small
    finally:
        ec.cuda.set_per_process_memory_fraction(1.0)
        ec.cuda.empty_cache()
    big = ec.empty(int(total * 0.1), dtype=ec.uint8, device="cuda")
    assert big.numel() == int(total * 0.1)
    del big
    ec.cuda.empty_cache()
    with pytest.raises((ValueError, RuntimeError)):
        ec.cuda.set_per_process_memory_fraction(1.5)
