"""Allocator benchmarks: ember_allocator vs malloc, NumPy and PyTorch in one run.

    python benchmarks/allocator.py            (make bench)

1. allocate+free pairs from 64 B to 64 MiB: ember's Block API (what Python code
   calls), ember's one-argument fast path (what tensor creation calls), libc
   malloc/free through ctypes, numpy.empty, torch.empty (when installed).
2. Cached vs fresh memory of 1-64 MiB: a fresh system allocation (mmap) plus the
   first touch of every page, against allocating the same size from ember's cache
   (whose pages were touched before).
3. Fragmentation: activations of growing size interleaved with temporaries;
   peak reserved / peak allocated for each allocator setting.
4. CUDA device memory (only where a GPU is visible): ember's cached
   allocate+free pair against cudaMalloc+cudaFree and PyTorch's CUDA caching
   allocator (torch.empty on 'cuda'), and the fragmentation pattern of 3 on the
   device, where expandable segments map physical memory with the driver's
   virtual memory calls.

Targets (issue 2): the Python-level allocate+free pair under 1 us; for sizes
>= 1 MiB, allocation from the cache at least 10x faster than a fresh system
allocation plus first touch.  Medians of repeated runs; the machines are shared,
so only ratios within one run mean much.
"""

import collections
import ctypes
import ctypes.util
import mmap
import sys

import numpy as np

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from _harness import fmt_time, median_time, table, try_import  # noqa: E402

import ember_allocator  # noqa: E402

torch = try_import("torch")
libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
libc.malloc.restype = ctypes.c_void_p
libc.malloc.argtypes = [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [
    ctypes.c_void_p,
    ctypes.c_size_t,
    ctypes.c_int,
    ctypes.c_int,
    ctypes.c_int,
    ctypes.c_long,
]
libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
PAGE = mmap.PAGESIZE
KiB, MiB = 1 << 10, 1 << 20


def size_name(n):
    return f"{n // MiB} MiB" if n >= MiB else f"{n // KiB} KiB" if n >= KiB else f"{n} B"


def touch(ptr, nbytes):
    """Write one byte in every page: the first touch that faults pages in."""
    pages = np.frombuffer((ctypes.c_char * nbytes).from_address(ptr), np.uint8)
    pages[::PAGE] = 1


def pairs():
    default = ember_allocator.host_allocator()
    allocate = default.allocate
    fast_malloc, fast_free = ember_allocator.host_fast_path()
    malloc, free = libc.malloc, libc.free
    empty, uint8 = np.empty, np.uint8
    rows = []
    for n in (64, 512, 4 * KiB, 64 * KiB, MiB, 16 * MiB, 64 * MiB):
        te = median_time(lambda n=n: allocate(n))  # the Block is freed as it is dropped
        tf = median_time(lambda n=n: fast_free(fast_malloc(n)))
        tm = median_time(lambda n=n: free(malloc(n)))
        tn = median_time(lambda n=n: empty(n, uint8))
        tt = median_time(lambda n=n: torch.empty(n, dtype=torch.uint8)) if torch else None
        rows.append(
            [
                size_name(n),
                fmt_time(te),
                fmt_time(tf),
                fmt_time(tm),
                fmt_time(tn),
                fmt_time(tt),
                f"{tn / te:.1f}",
                f"{tt / te:.1f}" if tt else "-",
            ]
        )
    print("\n1. allocate + free pair (median per pair)")
    table(
        rows,
        [
            "size",
            "ember Block",
            "ember fast",
            "malloc",
            "numpy.empty",
            "torch.empty",
            "numpy/ember",
            "torch/ember",
        ],
    )
    return rows


def fresh_vs_cached():
    default = ember_allocator.host_allocator()
    prot, flags = mmap.PROT_READ | mmap.PROT_WRITE, mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS

    def fresh(n):
        ptr = libc.mmap(None, n, prot, flags, -1, 0)
        touch(ptr, n)
        libc.munmap(ptr, n)

    def cached_touch(n):
        block = default.allocate(n)
        touch(block.ptr, n)

    rows, ratios = [], []
    for n in (MiB, 4 * MiB, 16 * MiB, 64 * MiB):
        default.allocate(n)  # warm: the segment is cached with its pages faulted in
        t_fresh = median_time(lambda n=n: fresh(n), repeat=5)
        t_cached = median_time(lambda n=n: default.allocate(n))
        t_cached_touch = median_time(lambda n=n: cached_touch(n), repeat=5)
        ratios.append(t_fresh / t_cached)
        rows.append(
            [
                size_name(n),
                fmt_time(t_fresh),
                fmt_time(t_cached),
                fmt_time(t_cached_touch),
                f"{t_fresh / t_cached:.0f}x",
                f"{t_fresh / t_cached_touch:.1f}x",
            ]
        )
    print("\n2. fresh system memory vs ember's cache (touch = write one byte per page)")
    table(
        rows,
        [
            "size",
            "mmap+touch+munmap",
            "ember cached pair",
            "ember cached+touch",
            "fresh/cached",
            "fresh/cached (both touched)",
        ],
    )
    return ratios


def growing_interleaved(allocator, steps=60):
    keep = collections.deque()
    size = MiB
    for _ in range(steps):
        size = (size * 108 // 100 + 511) // 512 * 512
        x = allocator.allocate(size)
        tmp = allocator.allocate(size // 3)
        keep.append(x)
        del tmp
        if len(keep) > 3:
            keep.popleft()
    s = allocator.memory_stats()
    return s["reserved_bytes.all.peak"], s["allocated_bytes.all.peak"]


def fragmentation(kind="host"):
    rows = []
    settings = [
        ("default", {}),
        ("max_split_size=32 MiB", {"max_split_size": 32 * MiB}),
        ("expandable_segments", {"expandable_segments": True}),
    ]
    result = {}
    for name, options in settings:
        reserved, allocated = growing_interleaved(ember_allocator.CachingAllocator(kind, **options))
        result[name] = reserved / allocated
        rows.append(
            [
                name,
                f"{allocated / MiB:.0f} MiB",
                f"{reserved / MiB:.0f} MiB",
                f"{reserved / allocated:.2f}",
            ]
        )
    heading = "3. fragmentation" if kind == "host" else f"4b. fragmentation of {kind} memory"
    print(f"\n{heading}: growing activations interleaved with temporaries")
    table(rows, ["setting", "peak allocated", "peak reserved", "reserved/allocated"])
    return result


def cuda_runtime():
    """libcudart through ctypes for the raw cudaMalloc/cudaFree row (None if absent)."""
    for name in ("libcudart.so", "libcudart.so.13", "libcudart.so.12"):
        try:
            rt = ctypes.CDLL(name)
        except OSError:
            continue
        rt.cudaMalloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
        rt.cudaFree.argtypes = [ctypes.c_void_p]
        return rt
    return None


def cuda_pairs(device):
    rt = cuda_runtime()
    ptr = ctypes.c_void_p()
    ref = ctypes.byref(ptr)

    def raw(n):
        if rt.cudaMalloc(ref, n) != 0:
            raise MemoryError(f"cudaMalloc({n}) failed")
        rt.cudaFree(ptr)

    use_torch = torch is not None and torch.cuda.is_available()
    rows = []
    for n in (512, 64 * KiB, MiB, 16 * MiB, 64 * MiB):
        device.allocate(n)  # warm the cache
        te = median_time(lambda n=n: device.allocate(n))
        tr = median_time(lambda n=n: raw(n), repeat=5) if rt else None
        tt = None
        if use_torch:
            torch.empty(n, dtype=torch.uint8, device="cuda")
            tt = median_time(lambda n=n: torch.empty(n, dtype=torch.uint8, device="cuda"))
        rows.append(
            [
                size_name(n),
                fmt_time(te),
                fmt_time(tr),
                fmt_time(tt),
                f"{tr / te:.0f}x" if tr else "-",
                f"{tt / te:.1f}" if tt else "-",
            ]
        )
    print("\n4a. CUDA device memory: allocate + free pair (median per pair)")
    table(
        rows,
        ["size", "ember cached", "cudaMalloc+Free", "torch cuda", "raw/ember", "torch/ember"],
    )


def cuda_section():
    try:
        device = ember_allocator.CachingAllocator("cuda")
    except ember_allocator.AllocatorError as e:
        print(f"\n4. CUDA device memory: skipped ({e})")
        return None
    cuda_pairs(device)
    return fragmentation("cuda")


def main():
    version = torch.__version__ if torch else "not installed"
    print(f"ember_allocator benchmarks (torch {version})")
    pair_rows = pairs()
    ratios = fresh_vs_cached()
    frag = fragmentation()
    cuda_frag = cuda_section()
    small_pair = pair_rows[0][1]
    print("\ntargets:")
    print(f"  Python-level allocate+free pair (64 B): {small_pair}  (target < 1 us)")
    print(f"  cached vs fresh+first touch, >= 1 MiB: at least {min(ratios):.0f}x  (target >= 10x)")
    print(
        f"  fragmentation, expandable segments: {frag['expandable_segments']:.2f}  (target <= 1.2)"
    )
    if cuda_frag:
        print(
            "  fragmentation on the GPU, expandable segments: "
            f"{cuda_frag['expandable_segments']:.2f}  (target <= 1.2)"
        )


if __name__ == "__main__":
    main()
