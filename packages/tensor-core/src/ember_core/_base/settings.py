"""Process-wide settings of the CPU runtime: the kernels' threads (OpenMP and
BLAS alike), the inter-op threads, denormal flushing and warn-always."""

import builtins

from ember_core._base.lib import lib


def set_num_threads(n):
    """Threads used by ember's kernels, OpenMP and BLAS alike."""
    lib.ec_set_num_threads(builtins.int(n))


def get_num_threads():
    return lib.ec_get_num_threads()


def init_num_threads():
    """Nothing to do: ember's thread pool (OpenMP) starts on first use."""


# ember runs ops one at a time on the calling thread (no inter-op pool); the number
# is kept for get_num_interop_threads.
_interop_threads = [1]


def set_num_interop_threads(n):
    if not isinstance(n, int) or n < 1:
        raise RuntimeError("Number of inter-op threads must be positive")
    _interop_threads[0] = n


def get_num_interop_threads():
    return _interop_threads[0]


def set_flush_denormal(mode):
    """Flushing denormals is not available in ember: returns False (as PyTorch
    does on a CPU without the SSE3 support it needs) and changes nothing."""
    return False


_warn_always = [False]


def set_warn_always(b):
    """Warn every time (not once) for warnings PyTorch issues once per process
    (TypedStorage's deprecation warning)."""
    _warn_always[0] = builtins.bool(b)


def is_warn_always_enabled():
    return _warn_always[0]
