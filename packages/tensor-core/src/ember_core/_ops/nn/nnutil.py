"""Helpers shared by the nn op modules (_softmax, _norm, _loss, _activation,
_dropout, _embedding, _attention, _rnn).

The nn kernels compute in float32 or float64 on contiguous memory (Note [nn
kernel dtypes] in csrc/cpu/nn/nn.h); ``compute`` prepares an operand for them and
``restore`` gives a result the caller's dtype back.
"""

from ember_core._base.lib import NOGIL_THRESHOLD
from ember_core._cuda import blas as _cuda_blas
from ember_core._tensor import dtype as D
from ember_core._tensor.copy import copy_into
from ember_core._tensor.tensor import Tensor, empty, is_contig

_NATIVE = (D.float32, D.float64)

# reduction names as PyTorch's at::Reduction enum values (torch passes ints to
# the ops it exposes at top level, strings from torch.nn.functional)
REDUCTIONS = {"none": 0, "mean": 1, "sum": 2, 0: 0, 1: 1, 2: 2}


def reduction_code(reduction, op):
    try:
        return REDUCTIONS[reduction]
    except (KeyError, TypeError):
        raise ValueError(f"{op}: {reduction} is not a valid value for reduction") from None


def kernel_dtype(dtype):
    """The dtype a kernel computes a tensor of ``dtype`` in."""
    return dtype if dtype in _NATIVE else D.float32


def compute(t, dtype=None):
    """``t`` as a contiguous tensor in ``dtype`` (default: its kernel dtype)."""
    dt = dtype or (t._dtype if t._dtype in _NATIVE else D.float32)
    if t._dtype is dt and (t._contig or is_contig(t)):
        return t
    r = empty(t._shape, dt, t._storage._device)
    copy_into(r, t)
    return r


def restore(t, dtype):
    """``t`` converted to ``dtype`` (itself when it already is)."""
    if t._dtype is dtype:
        return t
    r = empty(t._shape, dtype, t._storage._device)
    copy_into(r, t)
    return r


def fn(name, nbytes, dev):
    """The kernel ``name`` of device ``dev`` (Note [Kernel interface per device]),
    through its GIL-releasing twin for large calls."""
    return getattr(dev._kn if nbytes > NOGIL_THRESHOLD else dev._k, name)


def gemm_fn(name, nbytes, dev):
    """``fn`` for a kernel whose CUDA launcher runs cuBLAS GEMMs itself (the
    recurrent cells): cuBLAS is loaded first (Note [cuBLAS])."""
    if dev.type != "cpu" and not _cuda_blas.loaded:
        _cuda_blas.load()
    return fn(name, nbytes, dev)


def require_float(op, t, what="input"):
    if not isinstance(t, Tensor):
        raise TypeError(f"{op}(): argument '{what}' must be Tensor, not {type(t).__name__}")
    if not t._dtype.is_floating_point:
        raise RuntimeError(f"{op}: expected a floating point {what}, got {t._dtype.name}")


def ptr(t):
    """Address of an optional tensor (0 for None)."""
    return 0 if t is None else t._ptr


def prod(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def split_at(shape, d):
    """(outer, size, inner) of a contiguous shape around dim d."""
    return prod(shape[:d]), shape[d], prod(shape[d + 1 :])
