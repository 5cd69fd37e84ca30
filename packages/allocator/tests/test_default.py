"""Process-wide allocators (_default.py): one per device, the EMBER_ALLOC_CONF
settings, and the one-argument fast path tensors use."""

import json
import os
import subprocess
import sys

import pytest
from helpers import MiB

import ember_allocator
from ember_allocator import _default


def test_one_allocator_per_device():
    assert ember_allocator.get_allocator("cpu") is ember_allocator.host_allocator()
    assert ember_allocator.get_allocator("host") is ember_allocator.host_allocator()
    shm = ember_allocator.get_allocator("shm")
    assert shm.kind == "shm" and ember_allocator.get_allocator("shm") is shm
    with pytest.raises(ValueError, match="unknown device 'tpu'"):
        ember_allocator.get_allocator("tpu")


def test_parse_conf():
    assert _default._parse_conf("") == {}
    assert _default._parse_conf(
        "max_split_size_mb:256, expandable_segments:True,memory_limit_mb:512,history:1000"
    ) == {
        "max_split_size": 256 * MiB,
        "expandable_segments": True,
        "memory_limit": 512 * MiB,
        "history": 1000,
    }
    assert _default._parse_conf("memory_fraction:0.5") == {"memory_limit": 0.5}
    assert _default._parse_conf("expandable_segments:false") == {"expandable_segments": False}
    with pytest.raises(ValueError, match="unknown option 'colour'"):
        _default._parse_conf("colour:blue")
    with pytest.raises(ValueError, match="expected key:value"):
        _default._parse_conf("max_split_size_mb")


def test_ember_alloc_conf_configures_the_defaults():
    code = (
        "import json, ember_allocator as ea\n"
        "a = ea.host_allocator()\n"
        "b = a.allocate(3 << 20)\n"
        "s = a.memory_stats()\n"
        "print(json.dumps([s['max_split_size'], s['memory_limit'], s['num_maps'],"
        " len(a.history()) > 0]))\n"
    )
    env = dict(
        os.environ,
        EMBER_ALLOC_CONF="max_split_size_mb:64,expandable_segments:True,"
        "memory_limit_mb:128,history:100",
    )
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert json.loads(out.stdout) == [64 * MiB, 128 * MiB, 1, True]


def test_host_fast_path():
    malloc, free = ember_allocator.host_fast_path()
    default = ember_allocator.host_allocator()
    before = default.memory_allocated()
    ptr = malloc(1000)
    assert ptr and ptr % 512 == 0
    assert default.memory_allocated() == before + 1024
    assert free(ptr) == 0
    assert free(ptr) != 0  # a second free is refused, not corrupting
    assert default.memory_allocated() == before
    assert malloc((1 << 62) + 1) == 0  # failure is a 0 address; allocate() explains it
    with pytest.raises(ember_allocator.OutOfMemoryError):
        default.allocate(1 << 63)


def test_module_level_helpers_take_a_device():
    shm = ember_allocator.get_allocator("shm")
    b = shm.allocate(100)
    assert ember_allocator.memory_stats("shm")["allocation.all.current"] >= 1
    snap = ember_allocator.memory_snapshot("shm")
    assert any(blk["address"] == b.ptr for seg in snap for blk in seg["blocks"])
    del b
    ember_allocator.empty_cache("shm")
    ember_allocator.reset_peak_stats("shm")
    assert ember_allocator.memory_stats("shm")["reserved_bytes.all.peak"] == shm.memory_reserved()
