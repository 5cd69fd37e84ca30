"""Pooling: max_pool1d/2d/3d (with indices), avg_pool1d/2d/3d,
adaptive_avg_pool1d/2d/3d, adaptive_max_pool1d/2d/3d and fractional_max_pool2d/3d.

The public ops are composites that check their arguments the way PyTorch
does (messages included), make unbatched input batched and call one core op
per kind, generic over 1 to 3 spatial dims of a batched (N, C, spatial...)
input: ``_max_pool``, ``_avg_pool``, ``_adaptive_avg_pool``,
``_adaptive_max_pool``.  Their backward ops (``_max_pool_backward`` scatters by
the saved indices, ``_avg_pool_backward`` spreads, ...) are ops too, each the
adjoint of another op, which makes their own derivatives one line each.
"""

import itertools

import numpy as np

from ember_core._base.dispatch import defop
from ember_core._base.lib import check
from ember_core._interop.numpy import from_numpy
from ember_core._ops.indexing.index_ops import gather
from ember_core._ops.nn import spatial as S
from ember_core._ops.pointwise.elementwise import _tname, isnan, where
from ember_core._ops.random.random import rand
from ember_core._tensor import dtype as D
from ember_core._tensor.tensor import empty

_NOGIL_ELEMS = 1 << 16


def _fn(name, work, dev):
    return getattr(dev._kn if work > _NOGIL_ELEMS else dev._k, name)


def _prod(sizes):
    n = 1
    for s in sizes:
        n *= s
    return n


def _float_input(op, t):
    """The compute dtype for t, refusing bool."""
    if t._dtype is D.bool_:
        raise RuntimeError(f"\"{op}\" not implemented for 'Bool'")
    return S.compute_dtype(t._dtype)


def _batched_core(op, t, k):
    S.check_tensor(op, t, "input")
    if len(t._shape) != k + 2:
        raise RuntimeError(
            f"{op}: expected a batched input of {k + 2} dims (N, C, spatial...), got "
            f"{list(t._shape)}"
        )


def pool_output_size(i, k, s, p, d, ceil_mode):
    """PyTorch's pooling_output_shape."""
    o = (i + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (o - 1) * s >= i + p:
        o -= 1
    return o


def _out_sizes(spatial, k, s, p, d, ceil_mode):
    return tuple(pool_output_size(*a, ceil_mode) for a in zip(spatial, k, s, p, d))


# ------------------------------------------------------------- core ops


@defop(method=False)
def _max_pool(input, kernel_size, stride, padding, dilation, ceil_mode):
    """(values, int64 indices) of max pooling a batched input; indices are flat
    positions in each input plane."""
    op = "max_pool"
    k = len(kernel_size)
    _batched_core(op, input, k)
    out = _out_sizes(input._shape[2:], kernel_size, stride, padding, dilation, ceil_mode)
    if any(o < 1 for o in out) or any(i < 1 for i in input._shape[2:]):
        raise RuntimeError(
            f"{op}: output size {list(out)} is too small for input {list(input._shape)}"
        )
    dtype = input._dtype
    cd = _float_input(op, input)
    x = S.prepared(input, cd)
    shape = input._shape[:2] + out
    y = empty(shape, cd, x._storage._device)
    idx = empty(shape, D.int64, x._storage._device)
    geom = S.geometry(input._shape[2:], kernel_size, out, stride, padding, dilation)
    planes = input._shape[0] * input._shape[1]
    check(
        _fn("ec_max_pool_forward", y._numel * _prod(kernel_size), x._storage._device)(
            cd.code, planes, geom, x._ptr, y._ptr, idx._ptr
        ),
        op,
    )
    return S.finish(y, dtype), idx


@defop(method=False)
def _max_pool_backward(grad_output, indices, input_size):
    """The gradient of max pooling: grad_output added at the saved indices of an
    input of size input_size (zeros elsewhere)."""
    op = "max_pool_backward"
    input_size = tuple(input_size)
    if indices._shape != grad_output._shape or indices._dtype is not D.int64:
        raise RuntimeError(
            f"{op}: indices {list(indices._shape)} ({indices._dtype.name}) must be int64 and of "
            f"the size of grad_output {list(grad_output._shape)}"
        )
    if input_size[:2] != grad_output._shape[:2] or len(input_size) != len(grad_output._shape):
        raise RuntimeError(
            f"{op}: grad_output {list(grad_output._shape)} does not match the input size "
            f"{list(input_size)}"
        )
    dtype = grad_output._dtype
    cd = _float_input(op, grad_output)
    gy = S.prepared(grad_output, cd)
    ix = S.prepared(indices, D.int64)
    gx = empty(input_size, cd, gy._storage._device)
    planes = input_size[0] * input_size[1]
    check(
        _fn("ec_index_scatter_add", gx._numel, gy._storage._device)(
            cd.code, planes, _prod(input_size[2:]), _prod(gy._shape[2:]), gy._ptr, ix._ptr, gx._ptr
        ),
        op,
    )
    return S.finish(gx, dtype)


@defop(method=False)
def _max_pool_double_backward(input, indices):
    """input gathered at the indices of max pooling (per plane): the adjoint of
    _max_pool_backward."""
    op = "max_pool_double_backward"
    if indices._shape[:2] != input._shape[:2] or indices._dtype is not D.int64:
        raise RuntimeError(
            f"{op}: indices {list(indices._shape)} ({indices._dtype.name}) do not match input "
            f"{list(input._shape)}"
        )
    dtype = input._dtype
    cd = _float_input(op, input)
    x = S.prepared(input, cd)
    ix = S.prepared(indices, D.int64)
    y = empty(indices._shape, cd, x._storage._device)
    planes = input._shape[0] * input._shape[1]
    check(
        _fn("ec_index_gather", y._numel, x._storage._device)(
            cd.code,
            planes,
            _prod(input._shape[2:]),
            _prod(indices._shape[2:]),
            x._ptr,
            ix._ptr,
            y._ptr,
        ),
        op,
    )
    return S.finish(y, dtype)


def _avg_geom(spatial, kernel_size, stride, padding, ceil_mode):
    out = _out_sizes(spatial, kernel_size, stride, padding, (1,) * len(kernel_size), ceil_mode)
    return out, S.geometry(spatial, kernel_size, out, stride, padding, (1,) * len(kernel_size))


@defop(
    method=False,
)
def _avg_pool(input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):
    """Average pooling of a batched input."""
    op = "avg_pool"
    k = len(kernel_size)
    _batched_core(op, input, k)
    out, geom = _avg_geom(input._shape[2:], kernel_size, stride, padding, ceil_mode)
    if any(o < 1 for o in out):
        raise RuntimeError(
            f"{op}: output size {list(out)} is too small for input {list(input._shape)}"
        )
    dtype = input._dtype
    cd = _float_input(op, input)
    x = S.prepared(input, cd)
    y = empty(input._shape[:2] + out, cd, x._storage._device)
    planes = input._shape[0] * input._shape[1]
    check(
        _fn("ec_avg_pool_forward", y._numel * _prod(kernel_size), x._storage._device)(
            cd.code, planes, geom, bool(count_include_pad), divisor_override or 0, x._ptr, y._ptr
        ),
        op,
    )
    return S.finish(y, dtype)


@defop(
    method=False,
)
def _avg_pool_backward(
    grad_output,
    input_size,
    kernel_size,
    stride,
    padding,
    ceil_mode,
    count_include_pad,
    divisor_override,
):
    """The gradient of average pooling: each output's gradient spread evenly
    over its window."""
    op = "avg_pool_backward"
    input_size = tuple(input_size)
    out, geom = _avg_geom(input_size[2:], kernel_size, stride, padding, ceil_mode)
    if grad_output._shape != input_size[:2] + out:
        raise RuntimeError(
            f"{op}: expected grad_output of size {list(input_size[:2] + out)}, got "
            f"{list(grad_output._shape)}"
        )
    dtype = grad_output._dtype
    cd = _float_input(op, grad_output)
    gy = S.prepared(grad_output, cd)
    gx = empty(input_size, cd, gy._storage._device)
    planes = input_size[0] * input_size[1]
    check(
        _fn(
            "ec_avg_pool_backward", gx._numel + gy._numel * _prod(kernel_size), gy._storage._device
        )(cd.code, planes, geom, bool(count_include_pad), divisor_override or 0, gy._ptr, gx._ptr),
        op,
    )
    return S.finish(gx, dtype)


def _adaptive(op, is_max, input, output_size):
    k = len(output_size)
    _batched_core(op, input, k)
    dtype = input._dtype
    cd = _float_input(op, input)
    x = S.prepared(input, cd)
    shape = input._shape[:2] + tuple(output_size)
    y = empty(shape, cd, x._storage._device)
    idx = empty(shape, D.int64, x._storage._device) if is_max else None
    planes = input._shape[0] * input._shape[1]
    check(
        _fn("ec_adaptive_pool_forward", y._numel + x._numel, x._storage._device)(
            cd.code,
            is_max,
            planes,
            S.int3(input._shape[2:]),
            S.int3(output_size),
            x._ptr,
            y._ptr,
            idx._ptr if idx is not None else 0,
        ),
        op,
    )
    return S.finish(y, dtype), idx


@defop(method=False)
def _adaptive_avg_pool(input, output_size):
    """Adaptive average pooling of a batched input to output_size (a tuple)."""
    return _adaptive("adaptive_avg_pool", 0, input, tuple(output_size))[0]


@defop(method=False)
def _adaptive_avg_pool_backward(grad_output, input_size):
    """The gradient of adaptive average pooling."""
    op = "adaptive_avg_pool_backward"
    input_size = tuple(input_size)
    if len(input_size) != len(grad_output._shape) or input_size[:2] != grad_output._shape[:2]:
        raise RuntimeError(
            f"{op}: grad_output {list(grad_output._shape)} does not match the input size "
            f"{list(input_size)}"
        )
    dtype = grad_output._dtype
    cd = _float_input(op, grad_output)
    gy = S.prepared(grad_output, cd)
    gx = empty(input_size, cd, gy._storage._device)
    planes = input_size[0] * input_size[1]
    check(
        _fn("ec_adaptive_avg_pool_backward", gx._numel + gy._numel, gy._storage._device)(
            cd.code, planes, S.int3(input_size[2:]), S.int3(gy._shape[2:]), gy._ptr, gx._ptr
        ),
        op,
    )
    return S.finish(gx, dtype)


@defop(method=False)
def _adaptive_max_pool(input, output_size):
    """(values, int64 indices) of adaptive max pooling of a batched input."""
    return _adaptive("adaptive_max_pool", 1, input, tuple(output_size))


# --------------------------------------------------- argument checks


def _check_dims(op, input, k, message):
    S.check_tensor(op, input, "input")
    nd = len(input._shape)
    if nd not in (k + 1, k + 2) or any(s == 0 for s in input._shape[nd - k - 1 :]):
        raise RuntimeError(message.format(shape=list(input._shape)))
    return nd == k + 1


def _pool_args(op, input, k, kernel_size, stride, padding, dilation):
    ks = S.pool_param(kernel_size, k, op, "kernel_size")
    if stride is None or (isinstance(stride, (list, tuple)) and len(stride) == 0):
        st = ks
    else:
        st = S.pool_param(stride, k, op, "stride")
    pd = S.pool_param(padding, k, op, "padding")
    dl = S.pool_param(dilation, k, op, "dilation")
    if any(s == 0 for s in st):
        raise RuntimeError(f"{op}: stride should not be zero")
    if any(v <= 0 for v in ks):
        raise RuntimeError(
            f"{op}: kernel size should be greater than zero, but got kernel_size={list(ks)}"
        )
    if any(v < 0 for v in st):
        raise RuntimeError(f"{op}: stride should be greater than zero, but got stride={list(st)}")
    if any(v <= 0 for v in dl):
        raise RuntimeError(
            f"{op}: dilation should be greater than zero, but got dilation={list(dl)}"
        )
    if any(v < 0 for v in pd):
        raise RuntimeError(f"{op}: pad must be non-negative, but got pad={list(pd)}")
    for p, kk, d in zip(pd, ks, dl):
        if p > ((kk - 1) * d + 1) // 2:
            raise RuntimeError(
                f"{op}: pad should be at most half of effective kernel size, but got pad={p}, "
                f"kernel_size={kk} and dilation={d}"
            )
        if p > kk // 2:
            raise RuntimeError(
                f"{op}: pad should be smaller than or equal to half of kernel size, but got "
                f"pad={list(pd)}, kernel_size={list(ks)}"
            )
    return ks, st, pd, dl


def _check_output(op, input, k, out):
    if any(o < 1 for o in out):
        plane = (input._shape[-k - 1],) + tuple(input._shape[-k:])
        raise RuntimeError(
            f"{op}: Given input size: ({'x'.join(map(str, plane))}). Calculated output size: "
            f"({'x'.join(map(str, (plane[0],) + tuple(out)))}). Output size is too small"
        )


_DIMS_MSG = {
    1: "{op}: Expected 2D or 3D (batch mode) tensor with optional 0 dim batch size for input, "
    "but got:{shape}",
    2: "{op}: non-empty 3D or 4D (batch mode) tensor expected for input, but got: {shape}",
    3: "{op}: non-empty 4D or 5D (batch mode) tensor expected for input, but got: {shape}",
}


def _max_pool_nd(op, k, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices):
    unbatched = _check_dims(op, input, k, _DIMS_MSG[k].replace("{op}", op))
    ks, st, pd, dl = _pool_args(op, input, k, kernel_size, stride, padding, dilation)
    out = _out_sizes(input._shape[-k:], ks, st, pd, dl, bool(ceil_mode))
    _check_output(op, input, k, out)
    x = input.unsqueeze(0) if unbatched else input
    values, indices = _max_pool(x, ks, st, pd, dl, bool(ceil_mode))
    if unbatched:
        values, indices = values.squeeze(0), indices.squeeze(0)
    return (values, indices) if return_indices else values


@defop(
    composite=True,
    method=False,
)
def max_pool1d(
    input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False
):
    """1-D max pooling over (N, C, L) or (C, L).

    >>> max_pool1d(arange(6.0).view(1, 1, 6), 2)
    tensor([[[1., 3., 5.]]])
    """
    return _max_pool_nd(
        "max_pool1d", 1, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices
    )


@defop(
    composite=True,
    method=False,
)
def max_pool2d(
    input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False
):
    """2-D max pooling over (N, C, H, W) or (C, H, W); with return_indices, also
    the flat index of each maximum in its input plane."""
    return _max_pool_nd(
        "max_pool2d", 2, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices
    )


@defop(
    composite=True,
    method=False,
    autocast="fp32",
)
def max_pool3d(
    input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False
):
    """3-D max pooling over (N, C, D, H, W) or (C, D, H, W)."""
    return _max_pool_nd(
        "max_pool3d", 3, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices
    )


@defop(
    composite=True,
    method=False,
)
def max_pool1d_with_indices(
    input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False
):
    return max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


@defop(
    composite=True,
    method=False,
)
def max_pool2d_with_indices(
    input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False
):
    return max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


@defop(
    composite=True,
    method=False,
)
def max_pool3d_with_indices(
    input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False
):
    return max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def _avg_pool_nd(
    op, k, input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override
):
    unbatched = _check_dims(op, input, k, _DIMS_MSG[k].replace("{op}", op))
    ks, st, pd, _ = _pool_args(op, input, k, kernel_size, stride, padding, 1)
    if divisor_override is not None:
        divisor_override = S.as_int(divisor_override, op, "divisor_override")
        if divisor_override == 0:
            raise RuntimeError(f"{op}: divisor must be not zero")
    if k == 3 and any(i < kk for i, kk in zip(input._shape[-3:], ks)):
        t, h, w = input._shape[-3:]
        raise RuntimeError(
            f"{op}: input image (T: {t} H: {h} W: {w}) smaller than kernel size (kT: {ks[0]} "
            f"kH: {ks[1]} kW: {ks[2]})"
        )
    out = _out_sizes(input._shape[-k:], ks, st, pd, (1,) * k, bool(ceil_mode))
    _check_output(op, input, k, out)
    x = input.unsqueeze(0) if unbatched else input
    y = _avg_pool(x, ks, st, pd, bool(ceil_mode), bool(count_include_pad), divisor_override)
    return y.squeeze(0) if unbatched else y


@defop(
    composite=True,
    method=False,
)
def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    """1-D average pooling over (N, C, L) or (C, L)."""
    return _avg_pool_nd(
        "avg_pool1d", 1, input, kernel_size, stride, padding, ceil_mode, count_include_pad, None
    )


@defop(
    composite=True,
    method=False,
)
def avg_pool2d(
    input,
    kernel_size,
    stride=None,
    padding=0,
    ceil_mode=False,
    count_include_pad=True,
    divisor_override=None,
):
    """2-D average pooling over (N, C, H, W) or (C, H, W).

    >>> avg_pool2d(ones(1, 1, 4, 4), 2, padding=1, count_include_pad=False).shape
    ember.Size([1, 1, 3, 3])
    """
    return _avg_pool_nd(
        "avg_pool2d",
        2,
        input,
        kernel_size,
        stride,
        padding,
        ceil_mode,
        count_include_pad,
        divisor_override,
    )


@defop(
    composite=True,
    method=False,
    autocast="fp32",
)
def avg_pool3d(
    input,
    kernel_size,
    stride=None,
    padding=0,
    ceil_mode=False,
    count_include_pad=True,
    divisor_override=None,
):
    """3-D average pooling over (N, C, D, H, W) or (C, D, H, W)."""
    return _avg_pool_nd(
        "avg_pool3d",
        3,
        input,
        kernel_size,
        stride,
        padding,
        ceil_mode,
        count_include_pad,
        divisor_override,
    )


def _adaptive_size(op, input, k, output_size):
    if isinstance(output_size, (list, tuple)):
        if len(output_size) not in (1, k):
            raise RuntimeError(f"{op}: output_size must be {k} (got {list(output_size)})")
        sizes = tuple(output_size) * (k if len(output_size) == 1 else 1)
    else:
        sizes = (output_size,) * k
    spatial = input._shape[-k:]
    out = tuple(i if s is None else S.as_int(s, op, "output_size") for s, i in zip(sizes, spatial))
    if any(o < 0 for o in out):
        raise RuntimeError(
            f"{op}: elements of output_size must be greater than or equal to 0 but "
            f"received {list(out)}"
        )
    return out


def _adaptive_nd(op, k, input, output_size, is_max):
    S.check_tensor(op, input, "input")
    nd = len(input._shape)
    if nd not in (k + 1, k + 2):
        raise RuntimeError(
            f"{op}(): Expected {k + 1}D or {k + 2}D tensor, but got {list(input._shape)}"
        )
    for d in range(nd - k, nd):
        if input._shape[d] == 0:
            raise RuntimeError(
                f"{op}(): Expected input to have non-zero size for non-batch dimensions, but "
                f"input has sizes {list(input._shape)} with dimension {d} being empty"
            )
    if not input._dtype.is_floating_point:
        raise NotImplementedError(f"\"{op}\" not implemented for '{_tname(input._dtype)}'")
    out = _adaptive_size(op, input, k, output_size)
    unbatched = nd == k + 1
    x = input.unsqueeze(0) if unbatched else input
    if is_max:
        values, indices = _adaptive_max_pool(x, out)
        if unbatched:
            values, indices = values.squeeze(0), indices.squeeze(0)
        return values, indices
    y = _adaptive_avg_pool(x, out)
    return y.squeeze(0) if unbatched else y


@defop(composite=True, method=False)
def adaptive_avg_pool1d(input, output_size):
    """Average pooling of (N, C, L) or (C, L) to output_size positions."""
    return _adaptive_nd("adaptive_avg_pool1d", 1, input, output_size, False)


@defop(composite=True, method=False)
def adaptive_avg_pool2d(input, output_size):
    """Average pooling of (N, C, H, W) or (C, H, W) to output_size (an int, a pair,
    None keeping the input's size).

    >>> adaptive_avg_pool2d(ones(1, 3, 7, 7), 1).shape
    ember.Size([1, 3, 1, 1])
    """
    return _adaptive_nd("adaptive_avg_pool2d", 2, input, output_size, False)


@defop(composite=True, method=False, autocast="fp32")
def adaptive_avg_pool3d(input, output_size):
    return _adaptive_nd("adaptive_avg_pool3d", 3, input, output_size, False)


@defop(composite=True, method=False)
def adaptive_max_pool1d(input, output_size):
    """(values, indices) of adaptive max pooling of (N, C, L) or (C, L)."""
    return _adaptive_nd("adaptive_max_pool1d", 1, input, output_size, True)


@defop(composite=True, method=False)
def adaptive_max_pool2d(input, output_size):
    """(values, indices) of adaptive max pooling of (N, C, H, W) or (C, H, W)."""
    return _adaptive_nd("adaptive_max_pool2d", 2, input, output_size, True)


@defop(composite=True, method=False, autocast="fp32")
def adaptive_max_pool3d(input, output_size):
    """(values, indices) of adaptive max pooling of (N, C, D, H, W) or (C, D, H, W)."""
    return _adaptive_nd("adaptive_max_pool3d", 3, input, output_size, True)


# ------------------------------------------------------------ fractional max pooling
# Fractional max pooling (Graham, 2014): pooling windows of a fixed size placed at
# pseudo-random, increasing offsets so that any output size can be reached.
#
# The offsets of each (batch, channel) plane come from one sample u in [0, 1) per
# spatial dim, exactly as ATen computes them (in the input's floating type):
#     alpha = (in - k) / (out - 1);  start[i] = int((i + u) * alpha) - int(u * alpha)
# and the last window is pinned to the end of the input.  The pooling scans the
# window offsets, one gather per offset and a running (value, index) maximum in
# ATen's order (a later element wins when greater or NaN); the values are then
# gathered once more at the chosen indices so that the gradient is gather's
# scatter-add.  Indices are flat positions inside each input plane, as in PyTorch.


def _tuple(v, n, name):
    if isinstance(v, (list, tuple)):
        return tuple(v)
    return (v,) * n


def _intervals(samples, in_size, out_size, pool, np_dtype):
    """(..., out_size) int64 window starts from samples (...,) in np_dtype arithmetic."""
    starts = np.empty(samples.shape + (out_size,), dtype=np.int64)
    if out_size > 1:
        alpha = np_dtype(in_size - pool) / np_dtype(out_size - 1)
        s = samples.astype(np_dtype)
        i = np.arange(out_size - 1, dtype=np_dtype)
        starts[..., :-1] = ((i + s[..., None]) * alpha).astype(np.int64) - (s * alpha).astype(
            np.int64
        )[..., None]
    if out_size > 0:
        starts[..., -1] = in_size - pool
    return starts


_DIM_NAMES = {2: ("height", "width"), 3: ("time", "height", "width")}
# which entry of a plane's random sample drives which spatial dim (ATen's order)
_SAMPLE_ORDER = {2: (1, 0), 3: (0, 1, 2)}


def _fractional_max_pool(nd, input, kernel_size, output_size, output_ratio, samples):
    name = f"fractional_max_pool{nd}d"
    if output_size is None and output_ratio is None:
        raise ValueError(f"{name} requires specifying either an output_size or an output_ratio")
    if output_size is None:
        if len(output_ratio) > nd:
            raise ValueError(
                f"{name} requires output_ratio to either be a single Int or tuple of Ints."
            )
        ratio = _tuple(output_ratio, nd, "output_ratio")
        output_size = [int(input.size(-nd + d) * ratio[d]) for d in range(nd)]
    if samples is None:
        n_batch = 1 if input.dim() == nd + 1 else input.size(0)
        samples = rand(n_batch, input.size(-nd - 1), nd, dtype=input.dtype, device=input.device)
    kernel = _tuple(kernel_size, nd, "kernel_size")
    out = _tuple(output_size, nd, "output_size")
    if len(kernel) != nd or len(out) != nd:
        raise RuntimeError(
            f"{name}: kernel_size and output_size must have {nd} elements, got "
            f"{list(kernel)} and {list(out)}"
        )
    if input.dim() not in (nd + 1, nd + 2):
        raise RuntimeError(
            f"{name}(): Expected {nd + 1}D or {nd + 2}D tensor, but got: {list(input.shape)}"
        )
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"{name}: expected a floating-point input, got {input.dtype}")
    batched = input.dim() == nd + 2
    x = input if batched else input.unsqueeze(0)
    n, c = x.shape[0], x.shape[1]
    spatial = tuple(x.shape[2:])
    for d in range(nd):
        if out[d] + kernel[d] - 1 > spatial[d]:
            what = _DIM_NAMES[nd][d]
            prefix = name + ("()" if nd == 2 else "_out()")
            raise RuntimeError(
                f"{prefix}: pool {what} {kernel[d]} too large relative to input {what} {spatial[d]}"
            )
    if samples.dim() != 3 or samples.size(2) != nd:
        raise RuntimeError(
            f"Expect _random_samples.size(2) equals to {nd}; got {samples.size(-1)}."
        )
    if samples.size(0) < n:
        raise RuntimeError("Expect _random_samples.size(0) no less then input batch size.")
    if samples.size(1) != c:
        raise RuntimeError(
            f"Expect _random_samples.size(1) equals to input channel size, got {samples.size(1)} "
            f"and {c}"
        )

    np_dtype = np.float64 if x.dtype == D.float64 else np.float32
    u = samples.detach().cpu().numpy()[:n].astype(np_dtype)
    # flat in-plane index of each window's first element: (n, c, prod(out))
    plane_strides = [int(np.prod(spatial[d + 1 :])) for d in range(nd)]
    base = np.zeros((n, c) + out, dtype=np.int64)
    for d in range(nd):
        starts = _intervals(u[:, :, _SAMPLE_ORDER[nd][d]], spatial[d], out[d], kernel[d], np_dtype)
        shape = (n, c) + tuple(out[e] if e == d else 1 for e in range(nd))
        base = base + starts.reshape(shape) * plane_strides[d]
    base = from_numpy(np.ascontiguousarray(base.reshape(n, c, -1))).to(x.device)
    offsets = [
        sum(o * st for o, st in zip(combo, plane_strides))
        for combo in itertools.product(*(range(k) for k in kernel))
    ]
    flat = x.reshape(n, c, -1)
    # ATen's scan of each window: a later element wins when it is greater or NaN
    # (on the detached values: the scan itself records nothing)
    plane = flat.detach()
    indices = base + offsets[0]
    best = gather(plane, 2, indices)
    for off in offsets[1:]:
        idx = base + off
        v = gather(plane, 2, idx)
        take = (v > best) | isnan(v)
        best = where(take, v, best)
        indices = where(take, idx, indices)
    # the values once more through gather, so that autograd routes the gradient
    values = gather(flat, 2, indices) if flat.requires_grad else best
    values = values.reshape((n, c) + out)
    indices = indices.reshape((n, c) + out)
    if not batched:
        values, indices = values.squeeze(0), indices.squeeze(0)
    return values, indices


@defop(composite=True, method=False, autocast="fp32", tags=("random",))
def fractional_max_pool2d_with_indices(
    input,
    kernel_size,
    output_size=None,
    output_ratio=None,
    return_indices=False,
    _random_samples=None,
):
    """Fractional max pooling over (N, C, H, W) or (C, H, W): (output, indices)."""
    return _fractional_max_pool(2, input, kernel_size, output_size, output_ratio, _random_samples)


@defop(composite=True, method=False, autocast="fp32", tags=("random",))
def fractional_max_pool2d(
    input,
    kernel_size,
    output_size=None,
    output_ratio=None,
    return_indices=False,
    _random_samples=None,
):
    """Fractional max pooling over (N, C, H, W) or (C, H, W).

    >>> ec.fractional_max_pool2d(ec.randn(1, 3, 9, 9), 2, output_size=5).shape
    ember.Size([1, 3, 5, 5])
    """
    out = _fractional_max_pool(2, input, kernel_size, output_size, output_ratio, _random_samples)
    return out if return_indices else out[0]


@defop(composite=True, method=False, autocast="fp32", tags=("random",))
def fractional_max_pool3d_with_indices(
    input,
    kernel_size,
    output_size=None,
    output_ratio=None,
    return_indices=False,
    _random_samples=None,
):
    """Fractional max pooling over (N, C, T, H, W) or (C, T, H, W): (output, indices)."""
    return _fractional_max_pool(3, input, kernel_size, output_size, output_ratio, _random_samples)


@defop(composite=True, method=False, autocast="fp32", tags=("random",))
def fractional_max_pool3d(
    input,
    kernel_size,
    output_size=None,
    output_ratio=None,
    return_indices=False,
    _random_samples=None,
):
    """Fractional max pooling over (N, C, T, H, W) or (C, T, H, W)."""
    out = _fractional_max_pool(3, input, kernel_size, output_size, output_ratio, _random_samples)
    return out if return_indices else out[0]
