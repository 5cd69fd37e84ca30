"""raw_cuda.c against a stand-in CUDA runtime and driver (fake_cuda.c), so its
code runs on machines without a GPU: device memory, device switching, events
and record_stream, pinned memory, OOM with the device's figures, memory
fractions, and expandable segments through the driver's virtual memory calls.

The CUDA libraries load once per process, so the checks run in a subprocess
whose LD_LIBRARY_PATH finds the stand-ins first."""

import os
import pathlib
import shutil
import subprocess
import sys

import pytest

HERE = pathlib.Path(__file__).resolve().parent

CHECKS = r"""
import ctypes, sys
import ember_allocator as ea

fake = ctypes.CDLL(sys.argv[1])
fake.fake_counter.restype = ctypes.c_int64
fake.fake_counter.argtypes = [ctypes.c_char_p]
counter = lambda name: fake.fake_counter(name.encode())
MiB = 1 << 20

# device memory: allocate, cache, reuse
a = ea.CachingAllocator("cuda", device=1)
b = a.allocate(3 * MiB)
assert b.device == "cuda:1" and b.ptr % 512 == 0
ptr = b.ptr
del b
assert a.allocate(3 * MiB).ptr == ptr
s = a.memory_stats()
assert (s["num_device_alloc"], s["cache_hits"]) == (1, 1), s
assert counter("used") == 20 * MiB  # one 20 MiB segment from "cudaMalloc"
# every call ran on device 1 and switched back to the caller's device 0
assert counter("current_device") == 0 and counter("set_device_calls") > 0
assert a.device_memory() == (256 * MiB - 20 * MiB, 256 * MiB)

# streams: a block used on another stream waits for that stream's event
x = a.allocate(MiB, stream=7)
x_ptr = x.ptr
x.record_stream(8)
del x
y = a.allocate(MiB, stream=7)
assert y.ptr != x_ptr  # stream 8 has not finished
fake.fake_complete(ctypes.c_uint64(8))
z = a.allocate(MiB, stream=7)
assert z.ptr == x_ptr
del y, z

# out of memory: the device's own figures are in the report
try:
    a.allocate(300 * MiB)
except ea.OutOfMemoryError as e:
    assert e.device_total == 256 * MiB, e
    assert "256.00 MiB" in str(e), e
else:
    raise AssertionError("no OOM")
assert a.memory_stats()["num_alloc_retries"] == 1
assert counter("syncs") >= 1  # releasing the cache waits for the streams first

# memory fraction of the device
f = ea.CachingAllocator("cuda", memory_limit=0.25)
assert f.memory_limit == 64 * MiB
keep = f.allocate(40 * MiB)
try:
    f.allocate(30 * MiB)
except ea.OutOfMemoryError as e:
    assert "limit 64.00 MiB" in str(e)
else:
    raise AssertionError("no OOM under the fraction")
del keep, f

# expandable segments through cuMemAddressReserve/cuMemCreate/cuMemMap
e = ea.CachingAllocator("cuda", expandable_segments=True)
p = e.allocate(3 * MiB)
q = e.allocate(5 * MiB)
assert q.ptr == p.ptr + 3 * MiB
ctypes.memset(p.ptr, 1, 8 * MiB)  # the fake maps host pages: they must be there
assert e.memory_reserved() == 8 * MiB and counter("live_handles") == 4
del q
e.empty_cache()
assert e.memory_reserved() == 4 * MiB and counter("live_handles") == 2
assert counter("unmaps") >= 2
del p
e.empty_cache()
assert counter("live_handles") == 0

# pinned host memory
pinned = ea.CachingAllocator("pinned")
h = pinned.allocate(MiB)
ctypes.memset(h.ptr, 7, MiB)
pinned._stress_threads(4, 2000, 2 * MiB)

# a device that does not exist
try:
    ea.CachingAllocator("cuda", device=5)
except ea.AllocatorError as err:
    assert "CUDA device 5 does not exist (this machine has 2)" in str(err), err
else:
    raise AssertionError("device 5 accepted")

del a, e, pinned, h
import gc; gc.collect()
print("ok")
"""


@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler")
def test_raw_cuda_against_a_stand_in_runtime(tmp_path):
    lib = tmp_path / "libcudart.so"
    build = ["cc", "-shared", "-fPIC", "-O1", "-std=c11", "-o", str(lib), str(HERE / "fake_cuda.c")]
    subprocess.run(build, check=True, capture_output=True, text=True)
    # One library under both names: the loader maps it once, so runtime and
    # driver share one device (and the test reads one set of counters).
    (tmp_path / "libcuda.so.1").symlink_to(lib)
    # Only the stand-in may be found, but ember_allocator must stay importable
    # wherever it is installed (PYTHONPATH installs included).
    env = {"LD_LIBRARY_PATH": str(tmp_path), "PATH": "/usr/bin:/bin"}
    if "PYTHONPATH" in os.environ:
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    result = subprocess.run(
        [sys.executable, "-c", CHECKS, str(lib)], env=env, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"
