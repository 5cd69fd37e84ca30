"""The C kernels: loading, status checks, and GIL-releasing entry points.

Op modules call ``lib`` functions directly (a Python wrapper per kernel would
double the cost of small ops); every status they get back goes through
``check``, the one place C statuses become Python exceptions.
"""

import ctypes
import os

import scipy_openblas32

# Note [BLAS threads] (blas.c): OpenBLAS runs every call on the calling thread;
# ember splits large products over its own OpenMP threads.  OpenBLAS's pool,
# left unused, should not spin either: a short timeout (2^4 cycles) makes its
# threads sleep at once.  Read when OpenBLAS loads; a value the user set is kept.
os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")

# Note [Idle threads wait passively]: ember's kernels (GEMMs included) run on
# OpenMP's threads.  With GNU OpenMP's default policy idle workers spin after
# each parallel region, taking the cores from the Python thread (and from any
# other pool), and small ops stall for milliseconds.  Idle OpenMP threads
# therefore sleep, unless the user chose a policy.  This must be set before
# libgomp loads.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

# The extension finds OpenBLAS through an rpath relative to site-packages;
# loading it first also covers installs where that relative path differs.
_openblas = ctypes.CDLL(
    os.path.join(scipy_openblas32.get_lib_dir(), scipy_openblas32.get_library(True)),
    mode=ctypes.RTLD_GLOBAL,
)
_openblas.scipy_openblas_set_num_threads(1)  # Note [BLAS threads]

import ember_core._C as _C  # noqa: E402
from ember_core._C import ffi, lib  # noqa: E402

# the CPython-level fast paths join the module once (Note [C empty] in csrc/cpu/runtime/pyfast.c)
if not hasattr(_C, "empty") and lib.ec_py_install() != 0:
    raise ImportError("ember_core._C: its CPython functions could not be installed")


class ZeroDivisionRuntimeError(RuntimeError, ZeroDivisionError):
    """Integer division by zero (a RuntimeError as in PyTorch, and a ZeroDivisionError)."""


def last_message():
    return ffi.string(lib.ec_last_message()).decode("utf-8", "replace")


class DeviceIndexError(RuntimeError, IndexError):
    """An index out of range found by a CUDA kernel and reported at a later
    synchronisation (Note [Device-side errors] in csrc/cuda/runtime.c): a
    RuntimeError like PyTorch's device-side assert, and an IndexError like the
    check of the CPU kernels."""


# runtime.c's message for errors a kernel recorded in the device's error word
_DEVICE_ERROR_PREFIX = "CUDA kernel error"


def error(status, op):
    if status == lib.EC_ERR_CUDA_COMPILE:  # the compile callback raised (see _cuda/runtime.py)
        from ember_core._cuda import runtime as _cuda

        cause = _cuda.take_pending_error()
        err = RuntimeError(f"{op}: its CUDA kernel could not be compiled or loaded: {cause}")
        err.__cause__ = cause
        return err
    detail = last_message()
    if status == lib.EC_ERR_ZERO_DIV:
        return ZeroDivisionRuntimeError(f"{op}: ZeroDivisionError: {detail}")
    if status == lib.EC_ERR_INDEX:
        if detail.startswith(_DEVICE_ERROR_PREFIX):
            return DeviceIndexError(f"{op}: {detail}")
        return IndexError(f"{op}: {detail}")
    if status == lib.EC_ERR_NOMEM:
        return MemoryError(f"{op}: {detail}")
    if status == lib.EC_ERR_DTYPE:  # no kernel for a dtype: PyTorch's NotImplementedError
        import re

        from ember_core._tensor.dtype import DTYPES_BY_CODE

        # the kernels count dtypes by code: name them
        detail = re.sub(
            r"dtype code (\d+)",
            lambda m: f"dtype {getattr(DTYPES_BY_CODE.get(int(m[1])), 'name', m[1])}",
            detail,
        )
        return NotImplementedError(f"{op}: {detail}")
    return RuntimeError(f"{op}: {detail}")


def check(status, op):
    """Raise the exception for a non-zero kernel status."""
    if status:
        raise error(status, op)


def _nogil(name):
    # A call through a cffi function pointer goes through libffi, which releases
    # the GIL; the direct lib call does not (see csrc/build.py).  ~1 us slower, so
    # only worth it for long-running calls.
    fn = getattr(lib, name)
    return ffi.cast(ffi.typeof(fn), ffi.addressof(lib, name))


class _NoGil:
    """Lazily built GIL-releasing twins of lib functions: ``nogil.ec_copy(...)``."""

    def __getattr__(self, name):
        fn = _nogil(name)
        setattr(self, name, fn)
        return fn


nogil = _NoGil()

# Calls on more elements than this release the GIL.
NOGIL_THRESHOLD = 1 << 18

int64_array = ffi.new
