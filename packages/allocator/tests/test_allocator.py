"""The Python face of the allocator (_allocator.py): Blocks, freeing by call or by
reference count, double frees and foreign pointers, argument errors."""

import gc
import subprocess
import sys

import pytest
from helpers import MiB, fill, holds

import ember_allocator


def test_block_fields(host):
    b = host.allocate(1000)
    assert isinstance(b, ember_allocator.Block)
    assert b.nbytes == 1000
    assert b.device == "cpu"
    assert b.stream == 0
    assert b.allocator is host
    assert int(b) == b.ptr != 0
    assert not b.freed
    assert f"ptr=0x{b.ptr:x}" in repr(b) and "nbytes=1000" in repr(b)
    b.free()
    assert b.freed and b.ptr == 0
    assert "freed" in repr(b)


def test_last_reference_returns_the_memory(host):
    b = host.allocate(5000)
    ptr = b.ptr
    assert host.memory_allocated() == 5120
    del b
    assert host.memory_allocated() == 0
    assert host.allocate(5000).ptr == ptr  # back in the cache


def test_a_block_in_a_reference_cycle_is_freed_by_the_collector(host):
    class Holder:
        pass

    h = Holder()
    h.me = h
    h.block = host.allocate(100)
    del h
    gc.collect()
    assert host.memory_allocated() == 0


def test_double_free_raises_and_leaves_the_pool_intact(host):
    b = host.allocate(100)
    ptr = b.ptr
    b.free()
    with pytest.raises(ember_allocator.InvalidPointerError, match="already freed"):
        b.free()
    with pytest.raises(ember_allocator.InvalidPointerError, match="already freed"):
        host.free(b)
    with pytest.raises(ember_allocator.InvalidPointerError, match="was not allocated by this"):
        host.free_ptr(ptr)  # the raw address, freed before
    assert host.memory_stats()["allocation.all.freed"] == 1
    c = host.allocate(100)
    assert c.ptr == ptr


def test_foreign_pointers_raise(host):
    other = ember_allocator.CachingAllocator("host")
    b = other.allocate(100)
    with pytest.raises(ember_allocator.InvalidPointerError, match="belongs to"):
        host.free(b)
    with pytest.raises(ember_allocator.InvalidPointerError, match="was not allocated by this"):
        host.free_ptr(b.ptr)
    mine = host.allocate(4096)
    with pytest.raises(ember_allocator.InvalidPointerError):
        host.free_ptr(mine.ptr + 512)  # inside a live block, not its start
    with pytest.raises(ember_allocator.InvalidPointerError):
        host.free_ptr(0x1000)
    assert host.memory_allocated() == 4096 and other.memory_allocated() == 512
    # InvalidPointerError is a ValueError too, so generic handlers catch it
    assert issubclass(ember_allocator.InvalidPointerError, ValueError)


def test_malloc_ptr_and_free_ptr_pair(host):
    ptr = host.malloc_ptr(3 * MiB)
    fill(ptr, 3 * MiB, 9)
    assert holds(ptr, 3 * MiB, 9)
    assert host.memory_allocated() == 3 * MiB
    host.free_ptr(ptr)
    assert host.memory_allocated() == 0


@pytest.mark.parametrize("kind", ["host", "shm", "sim"])
def test_memory_of_every_host_kind_is_usable(kind):
    a = ember_allocator.CachingAllocator(kind)
    blocks = [a.allocate(n) for n in (1, 4096, 2 * MiB, 11 * MiB)]
    for i, b in enumerate(blocks):
        fill(b.ptr, b.nbytes, i + 1)
    for i, b in enumerate(blocks):
        assert holds(b.ptr, b.nbytes, i + 1)


def test_argument_errors(host):
    with pytest.raises(ValueError, match="nbytes must be >= 0"):
        host.allocate(-1)
    with pytest.raises(TypeError, match="nbytes must be an int"):
        host.allocate(1.5)
    with pytest.raises(TypeError, match="nbytes must be an int"):
        host.allocate("100")
    with pytest.raises(ValueError, match="unknown allocator kind 'gpu'"):
        ember_allocator.CachingAllocator("gpu")
    with pytest.raises(ValueError, match="device must be a non-negative int"):
        ember_allocator.CachingAllocator("host", device=-1)
    assert host.memory_stats()["num_ooms"] == 0


def test_default_allocator_blocks(host):
    default = ember_allocator.host_allocator()
    b = default.allocate(777)
    assert (b.nbytes, b.device, b.stream, b.allocator) == (777, "cpu", 0, default)
    ptr = b.ptr
    default.free(b)
    with pytest.raises(ember_allocator.InvalidPointerError):
        default.free(b)
    c = default.allocate(777, stream=5)  # another stream takes the general path
    assert c.stream == 5
    with pytest.raises(ember_allocator.InvalidPointerError, match="belongs to"):
        host.free(c)
    d = default.allocate(777)
    assert d.ptr == ptr
    with pytest.raises(ValueError, match="only a host allocator"):
        ember_allocator.CachingAllocator("shm").make_default()


def test_package_needs_nothing_but_cffi():
    code = "import sys, ember_allocator; print([m for m in ('numpy', 'torch') if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_allocators_are_independent_and_collected():
    a = ember_allocator.CachingAllocator("host")
    b = a.allocate(12 * MiB)
    del a  # the block keeps its allocator alive ...
    fill(b.ptr, b.nbytes, 3)
    assert holds(b.ptr, b.nbytes, 3)
    assert b.allocator.memory_allocated() == 12 * MiB
    del b  # ... and the allocator goes with its last block


def test_format_bytes():
    f = ember_allocator.format_bytes
    assert [f(0), f(1023), f(1536), f(3 * MiB), f(5 << 30)] == [
        "0 B",
        "1023 B",
        "1.50 KiB",
        "3.00 MiB",
        "5.00 GiB",
    ]
