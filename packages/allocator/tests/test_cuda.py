"""CUDA device and pinned host memory (raw_cuda.c).

Tests marked `cuda` need a GPU and are skipped without one (conftest.py).  The
others run anywhere: without a GPU the CUDA kinds must refuse cleanly, and
where the CUDA headers exist the declarations raw_cuda.c uses instead of them
(cuda_decls.h) must match them exactly."""

import os
import pathlib
import shutil
import subprocess

import pytest
from conftest import CUDA_ERROR
from helpers import MiB, growing_interleaved

import ember_allocator

CSRC = pathlib.Path(__file__).resolve().parent.parent / "csrc"


def _cuda_include():
    for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if root and (pathlib.Path(root) / "include" / "cuda.h").exists():
            return pathlib.Path(root) / "include"
    return None


@pytest.mark.skipif(CUDA_ERROR is None, reason="this machine has a CUDA device")
@pytest.mark.parametrize("kind", ["cuda", "pinned"])
def test_without_a_gpu_cuda_kinds_refuse_cleanly(kind):
    with pytest.raises(ember_allocator.UnavailableError, match="CUDA") as info:
        ember_allocator.CachingAllocator(kind)
    assert f"ember_allocator({kind}:0)" in str(info.value)
    with pytest.raises(ember_allocator.UnavailableError):
        ember_allocator.get_allocator("cuda:0")


LAYOUT_CHECK = r"""
#include <stddef.h>
#include <cuda.h>
#include <cuda_runtime_api.h>
#include "cuda_decls.h"
#define SAME_SIZE(a, b) _Static_assert(sizeof(a) == sizeof(b), #a " vs " #b)
#define SAME_OFFSET(a, b, f) _Static_assert(offsetof(a, f) == offsetof(b, f), #a "." #f)
#define SAME_VALUE(a, b) _Static_assert((long long)(a) == (long long)(b), #a " vs " #b)
SAME_SIZE(ea_cudaError_t, cudaError_t);
SAME_SIZE(ea_cudaStream_t, cudaStream_t);
SAME_SIZE(ea_cudaEvent_t, cudaEvent_t);
SAME_SIZE(ea_CUresult, CUresult);
SAME_SIZE(ea_CUdevice, CUdevice);
SAME_SIZE(ea_CUdeviceptr, CUdeviceptr);
SAME_SIZE(ea_CUmemGenericAllocationHandle, CUmemGenericAllocationHandle);
SAME_SIZE(ea_CUmemLocation, CUmemLocation);
SAME_OFFSET(ea_CUmemLocation, CUmemLocation, id);
SAME_SIZE(ea_CUmemAllocationProp, CUmemAllocationProp);
SAME_OFFSET(ea_CUmemAllocationProp, CUmemAllocationProp, requestedHandleTypes);
SAME_OFFSET(ea_CUmemAllocationProp, CUmemAllocationProp, location);
SAME_OFFSET(ea_CUmemAllocationProp, CUmemAllocationProp, win32HandleMetaData);
SAME_OFFSET(ea_CUmemAllocationProp, CUmemAllocationProp, allocFlags);
SAME_SIZE(((ea_CUmemAllocationProp*)0)->allocFlags, ((CUmemAllocationProp*)0)->allocFlags);
SAME_SIZE(ea_CUmemAccessDesc, CUmemAccessDesc);
SAME_OFFSET(ea_CUmemAccessDesc, CUmemAccessDesc, flags);
SAME_VALUE(EA_cudaSuccess, cudaSuccess);
SAME_VALUE(EA_cudaErrorMemoryAllocation, cudaErrorMemoryAllocation);
SAME_VALUE(EA_cudaErrorInsufficientDriver, cudaErrorInsufficientDriver);
SAME_VALUE(EA_cudaErrorNoDevice, cudaErrorNoDevice);
SAME_VALUE(EA_cudaErrorNotReady, cudaErrorNotReady);
SAME_VALUE(EA_cudaEventDisableTiming, cudaEventDisableTiming);
SAME_VALUE(EA_cudaHostAllocDefault, cudaHostAllocDefault);
SAME_VALUE(EA_CUDA_SUCCESS, CUDA_SUCCESS);
SAME_VALUE(EA_CUDA_ERROR_OUT_OF_MEMORY, CUDA_ERROR_OUT_OF_MEMORY);
SAME_VALUE(EA_CU_MEM_ALLOCATION_TYPE_PINNED, CU_MEM_ALLOCATION_TYPE_PINNED);
SAME_VALUE(EA_CU_MEM_LOCATION_TYPE_DEVICE, CU_MEM_LOCATION_TYPE_DEVICE);
SAME_VALUE(EA_CU_MEM_ACCESS_FLAGS_PROT_READWRITE, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
SAME_VALUE(EA_CU_MEM_ALLOC_GRANULARITY_MINIMUM, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
/* the driver entry points raw_cuda.c looks up by name exist under those names */
static void* used[] = {
    (void*)cuInit, (void*)cuMemGetAllocationGranularity, (void*)cuMemAddressReserve,
    (void*)cuMemAddressFree, (void*)cuMemCreate, (void*)cuMemRelease, (void*)cuMemMap,
    (void*)cuMemUnmap, (void*)cuMemSetAccess,
};
void* ea_layout_check(int i) { return used[i]; }
"""


@pytest.mark.skipif(_cuda_include() is None, reason="no CUDA headers (cuda.h) on this machine")
@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler")
def test_cuda_declarations_match_the_cuda_headers(tmp_path):
    if not (CSRC / "cuda_decls.h").exists():
        pytest.skip("the package sources (csrc/) are not next to the tests")
    source = tmp_path / "layout_check.c"
    source.write_text(LAYOUT_CHECK)
    cmd = ["cc", "-std=c11", "-Werror", "-fsyntax-only", f"-I{_cuda_include()}", f"-I{CSRC}"]
    result = subprocess.run([*cmd, str(source)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


# ------------------------------------------------------------ on a GPU only


@pytest.mark.cuda
def test_device_memory_allocate_free_reuse():
    a = ember_allocator.CachingAllocator("cuda")
    b = a.allocate(3 * MiB)
    assert b.device == "cuda:0" and b.ptr % 512 == 0
    ptr = b.ptr
    del b
    assert a.allocate(3 * MiB).ptr == ptr
    stats = a.memory_stats()
    assert stats["num_device_alloc"] == 1 and stats["cache_hits"] == 1
    free, total = a.device_memory()
    assert 0 < free <= total


@pytest.mark.cuda
def test_device_oom_reports_the_device():
    a = ember_allocator.CachingAllocator("cuda")
    total = a.device_memory()[1]
    with pytest.raises(ember_allocator.OutOfMemoryError, match="free of"):
        a.allocate(2 * total)
    assert a.memory_stats()["num_ooms"] == 1


@pytest.mark.cuda
def test_device_memory_fraction():
    a = ember_allocator.CachingAllocator("cuda", memory_limit=0.01)
    total = a.device_memory()[1]
    assert a.memory_limit == int(total * 0.01)
    with pytest.raises(ember_allocator.OutOfMemoryError):
        a.allocate(total // 50)


@pytest.mark.cuda
def test_device_streams_and_record_stream():
    a = ember_allocator.CachingAllocator("cuda")
    b = a.allocate(MiB, stream=0)
    b.record_stream(1)  # the legacy default stream handle, always valid
    del b
    a.synchronize()
    assert a.memory_stats()["active_bytes.all.current"] == 0


@pytest.mark.cuda
def test_device_expandable_segments():
    try:
        a = ember_allocator.CachingAllocator("cuda", expandable_segments=True)
    except ember_allocator.AllocatorError as e:
        pytest.skip(f"no CUDA virtual memory management: {e}")
    x = a.allocate(3 * MiB)
    y = a.allocate(5 * MiB)
    assert y.ptr == x.ptr + 3 * MiB
    assert a.memory_stats()["num_maps"] >= 1
    del y
    a.empty_cache()
    assert a.memory_reserved() < 8 * MiB
    del x


@pytest.mark.cuda
def test_pinned_host_memory():
    import ctypes

    a = ember_allocator.CachingAllocator("pinned")
    b = a.allocate(MiB)
    ctypes.memset(b.ptr, 7, MiB)  # host-accessible
    assert ctypes.string_at(b.ptr, 4) == b"\x07" * 4
    ptr = b.ptr
    del b
    assert a.allocate(MiB).ptr == ptr


@pytest.mark.cuda
def test_device_threads():
    ember_allocator.CachingAllocator("pinned")._stress_threads(4, 2000, MiB)


@pytest.mark.cuda
def test_device_fragmentation_expandable_segments_keep_reserved_within_1_2x_peak():
    try:
        grown = ember_allocator.CachingAllocator("cuda", expandable_segments=True)
    except ember_allocator.AllocatorError as e:
        pytest.skip(f"no CUDA virtual memory management: {e}")
    fixed = growing_interleaved(ember_allocator.CachingAllocator("cuda"))
    assert fixed > 2.0  # cudaMalloc'd segments fragment under this pattern ...
    assert growing_interleaved(grown) <= 1.2  # ... segments grown by mapping do not
