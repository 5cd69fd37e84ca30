"""Matrix products on CUDA: cuBLAS's loading, its workspaces, and the
switches of ``ember.backends.cuda.matmul`` (Note [cuBLAS] in
csrc/cuda/blas_launch.c).

The launcher ``ecu_matmul`` (the CUDA twin of ``ec_matmul``) is C; this module
finds libcublas (NVIDIA's ``nvidia-cublas`` wheel through cuda-pathfinder, else a
system toolkit by soname) and hands its path to C, allocates a workspace per
(device, stream) from ember_allocator when C asks, and owns the switches the
launcher reads (kept in C, so a product reads them without calling Python).
"""

import os
import re
import threading

from ember_core._base.lib import ffi, last_message, lib
from ember_core._cuda import runtime as _cuda

_lock = threading.Lock()
loaded = False  # read by _linalg on every CUDA product: load() once before the first


def _library_path():
    """The absolute path of the wheel's libcublas (loaded with its libcublasLt by
    cuda-pathfinder), or None to let the C side try the sonames of a system
    toolkit."""
    try:
        from cuda import pathfinder
    except ImportError:
        return None
    try:
        return pathfinder.load_nvidia_dynamic_lib("cublas").abs_path
    except Exception:  # not found there: a toolkit on the library path may still serve
        return None


def load():
    """Open cuBLAS (once); raise saying why it cannot be used."""
    global loaded
    if loaded:
        return
    with _lock:
        if loaded:
            return
        # under the CUDA emulator (EMBER_CUDA_EMULATE=1) the soname finds its
        # cuBLAS first on the library path (Note [Emulated cuBLAS]), never a
        # wheel's real one
        emulated = os.environ.get("EMBER_CUDA_EMULATE") == "1"
        path = None if emulated else _library_path()
        if lib.ecu_blas_load(path.encode() if path else ffi.NULL):
            raise RuntimeError(f"matmul on CUDA: {last_message()}")
        loaded = True


# ------------------------------------------------------------ workspaces

# PyTorch's default workspace: 32 MiB on Hopper and later (where the fastest
# kernels want it), 8 MiB + 128 KiB before.
_LARGE, _SMALL = 4096 * 1024 * 8, 4096 * 1024 * 2 + 16 * 1024 * 8


def parse_workspace_config(text):
    """Bytes asked for by CUBLAS_WORKSPACE_CONFIG (':SIZE_KiB:COUNT' pairs, as
    cuBLAS and PyTorch read it), or None when it is not of that form."""
    pairs = re.fullmatch(r"(?::\d+:\d+)+", text.strip())
    if not pairs:
        return None
    nums = [int(x) for x in text.strip().split(":")[1:]]
    return sum(nums[i] * 1024 * nums[i + 1] for i in range(0, len(nums), 2))


def workspace_size(capability_major):
    conf = os.environ.get("CUBLAS_WORKSPACE_CONFIG")
    if conf:
        size = parse_workspace_config(conf)
        if size is not None:
            return size
    return _LARGE if capability_major >= 9 else _SMALL


def _on_workspace_error(exc_type, exc, tb):
    return lib.EC_ERR_NOMEM


@ffi.def_extern(onerror=_on_workspace_error)
def ecu_py_blas_workspace(device, stream, ptr, nbytes):
    """Called by the C launcher the first time a (device, stream) runs a product."""

    major = ffi.new("int*")
    capability_major = 75  # CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
    _cuda.check(lib.ecu_device_attribute(device, capability_major, major), "cuBLAS workspace")
    size = workspace_size(major[0])
    ptr[0] = _cuda.allocator(device).malloc_ptr(size, stream) if size else 0
    nbytes[0] = size
    return 0


# -------------------------------------------------------------- switches


def _switch(bit, name):
    def get(self):
        return bool(lib.ecu_blas_get_flags() & bit)

    def set(self, value):
        flags = lib.ecu_blas_get_flags()
        lib.ecu_blas_set_flags(flags | bit if value else flags & ~bit)

    return property(get, set, doc=f"ember.backends.cuda.matmul.{name}")


class MatmulSwitches:
    """``ember.backends.cuda.matmul``: how float matrix products run on cuBLAS.

    ``allow_tf32`` (False): float32 products may use TF32 tensor cores (10-bit
    mantissa inputs, float32 accumulation).  ``allow_fp16_reduced_precision_
    reduction`` and ``allow_bf16_reduced_precision_reduction`` (True): float16
    and bfloat16 products may reduce partial sums in their own precision (split
    K); False forces float32 reductions."""

    __slots__ = ()
    allow_tf32 = _switch(lib.ECU_BLAS_ALLOW_TF32, "allow_tf32")
    allow_fp16_reduced_precision_reduction = _switch(
        lib.ECU_BLAS_ALLOW_FP16_REDUCED, "allow_fp16_reduced_precision_reduction"
    )
    allow_bf16_reduced_precision_reduction = _switch(
        lib.ECU_BLAS_ALLOW_BF16_REDUCED, "allow_bf16_reduced_precision_reduction"
    )

    def __repr__(self):
        return (
            f"<ember.backends.cuda.matmul allow_tf32={self.allow_tf32} "
            "allow_fp16_reduced_precision_reduction="
            f"{self.allow_fp16_reduced_precision_reduction} "
            "allow_bf16_reduced_precision_reduction="
            f"{self.allow_bf16_reduced_precision_reduction}>"
        )


matmul = MatmulSwitches()
