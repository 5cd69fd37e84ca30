"""ember.cuda.nvtx (torch.cuda.nvtx): NVTX ranges and marks, which Nsight Systems and
other CUDA profilers show on their timelines.

The calls go to NVIDIA's NVTX library, loaded at first use: the ``nvidia-nvtx``
wheel's ``libnvtx3interop.so.1`` (``pip install nvidia-nvtx``), a CUDA toolkit's
``libnvToolsExt.so.1``, or the file named by ``$EMBER_NVTX_LIBRARY``.  Without a
profiler attached they cost next to nothing and return NVTX's own codes (a
negative depth).  Without the library they raise, as PyTorch's do in a build
without CUDA.
"""

import contextlib
import ctypes
import ctypes.util
import glob
import os
import sys

__all__ = ["mark", "range", "range_end", "range_pop", "range_push", "range_start"]

_lib = []  # the loaded library, once


def _candidates():
    env = os.environ.get("EMBER_NVTX_LIBRARY")
    if env:
        yield env
    for root in sys.path:
        for pattern in ("nvidia/cu*/lib/libnvtx3interop.so*", "nvidia/nvtx/lib/libnvToolsExt.so*"):
            yield from sorted(glob.glob(os.path.join(root, pattern)))
    for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if home:
            yield from sorted(glob.glob(os.path.join(home, "lib64", "libnvToolsExt.so*")))
    found = ctypes.util.find_library("nvToolsExt")
    if found:
        yield found


def _nvtx():
    if _lib:
        return _lib[0]
    tried = []
    for path in _candidates():
        try:
            lib = ctypes.CDLL(path)
        except OSError as exc:
            tried.append(f"{path}: {exc}")
            continue
        for name in ("nvtxRangePushA", "nvtxMarkA", "nvtxRangeStartA"):
            getattr(lib, name).argtypes = [ctypes.c_char_p]
        lib.nvtxRangePushA.restype = ctypes.c_int
        lib.nvtxRangePop.restype = ctypes.c_int
        lib.nvtxRangeStartA.restype = ctypes.c_uint64
        lib.nvtxRangeEnd.argtypes = [ctypes.c_uint64]
        _lib.append(lib)
        return lib
    detail = "; ".join(tried) if tried else "no NVTX library found"
    raise RuntimeError(
        "NVTX functions not installed: ember.cuda.nvtx needs NVIDIA's NVTX library "
        f"(pip install nvidia-nvtx, or a CUDA toolkit; {detail})"
    )


def _bytes(msg):
    return str(msg).encode("utf-8", "replace")


def range_push(msg):
    """Open a nested range named ``msg``; returns its depth (negative: no profiler)."""
    return _nvtx().nvtxRangePushA(_bytes(msg))


def range_pop():
    """Close the innermost range; returns the depth it had."""
    return _nvtx().nvtxRangePop()


def range_start(msg):
    """Start a range that may end on another thread; returns its id for range_end."""
    return _nvtx().nvtxRangeStartA(_bytes(msg))


def range_end(range_id):
    _nvtx().nvtxRangeEnd(ctypes.c_uint64(range_id))


def mark(msg):
    """An instantaneous event named ``msg``."""
    _nvtx().nvtxMarkA(_bytes(msg))


@contextlib.contextmanager
def range(msg, *args, **kwargs):
    """``with ember.cuda.nvtx.range("step {}", i):`` -- a range around the block
    (``msg.format(*args, **kwargs)``)."""
    range_push(msg.format(*args, **kwargs))
    try:
        yield
    finally:
        range_pop()
