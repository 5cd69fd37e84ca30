"""What the convolution, pooling and resampling ops share: normalising their size
arguments the way PyTorch does, packing Note [Spatial geometry] (csrc/cpu/nn/spatial.h) for
the C kernels, and running float16/bfloat16/integer inputs through the float
kernels.
"""

import operator

from ember_core._base.lib import ffi
from ember_core._tensor import dtype as D
from ember_core._tensor.copy import to_dtype_copy
from ember_core._tensor.tensor import Tensor, is_contig

_new = ffi.new


def check_tensor(op, t, name, optional=False):
    if t is None and optional:
        return
    if not isinstance(t, Tensor):
        raise TypeError(f"{op}(): argument '{name}' must be Tensor, not {type(t).__name__}")


def as_int(v, op, name):
    try:
        return operator.index(v)
    except TypeError:
        raise TypeError(
            f"{op}(): argument '{name}' must be an int or a tuple of ints, not {v!r}"
        ) from None


def expand(value, n, op, name):
    """An int, or a sequence of 1 or n ints, as a tuple of n ints (PyTorch's
    expand_param_if_needed)."""
    if isinstance(value, Tensor):
        value = value.tolist()
    if isinstance(value, (list, tuple)):
        vals = tuple(as_int(v, op, name) for v in value)
        if len(vals) == 1:
            return vals * n
        if len(vals) != n:
            raise RuntimeError(
                f"{op}: expected {name} to be a single integer value or a list of {n} values "
                f"to match the convolution dimensions, but got {name}={list(vals)}"
            )
        return vals
    return (as_int(value, op, name),) * n


def pool_param(value, n, op, name):
    """A pooling size argument: one int or exactly n of them (PyTorch's pooling
    shape checks allow a 1-tuple too)."""
    if isinstance(value, (list, tuple)):
        vals = tuple(as_int(v, op, name) for v in value)
        if len(vals) == 1:
            vals = vals * n
        if len(vals) != n:
            words = {1: "a single int", 2: "a tuple of two ints", 3: "a tuple of three ints"}
            raise RuntimeError(f"{op}: {name} must either be a single int, or {words[n]}")
    else:
        vals = (as_int(value, op, name),) * n
    for v in vals:  # PyTorch's pooling takes C ints (and so window sizes stay small)
        if not -(1 << 31) <= v < 1 << 31:
            raise RuntimeError(
                f"{op}: {name}={v}: value cannot be converted to type int without overflow"
            )
    return vals


def pad3(sizes, fill=1):
    """(D, H, W) from 1 to 3 trailing sizes (missing leading ones are `fill`)."""
    return (fill,) * (3 - len(sizes)) + tuple(sizes)


def geometry(in_sizes, kernel, out_sizes, stride, padding, dilation):
    """The int64[18] geometry array of Note [Spatial geometry]."""
    return _new(
        "int64_t[18]",
        pad3(in_sizes)
        + pad3(kernel)
        + pad3(out_sizes)
        + pad3(stride)
        + pad3(padding, 0)
        + pad3(dilation),
    )


def int3(sizes, fill=1):
    return _new("int64_t[3]", pad3(sizes, fill))


def fmt(sizes):
    """'(4 x 4)': how PyTorch prints per-channel sizes in its messages."""
    return "(" + " x ".join(str(s) for s in sizes) + ")"


# float16/bfloat16 run through the float32 kernels, as PyTorch computes them in
# float32 too; integers through float64 (exact while values stay below 2**53).
_COMPUTE = {D.float16: D.float32, D.bfloat16: D.float32, D.float32: D.float32, D.float64: D.float64}


def compute_dtype(dtype):
    return _COMPUTE.get(dtype, D.float64)


def prepared(t, dtype):
    """t as a contiguous tensor of dtype (t itself when it already is one)."""
    if t._dtype is not dtype:
        return to_dtype_copy(t, dtype)
    if t._contig or is_contig(t):
        return t
    return t.contiguous()


def finish(t, dtype):
    """A kernel's result back in the caller's dtype."""
    return t if t._dtype is dtype else to_dtype_copy(t, dtype)
