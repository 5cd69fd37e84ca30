"""Padding and resampling: pad (constant, reflect, replicate, circular),
interpolate (nearest, nearest-exact, linear, bilinear, bicubic, trilinear,
area), pixel_shuffle and pixel_unshuffle.

Core ops: ``constant_pad_nd`` (its own adjoint with the pads negated),
``_pad_mode`` and the nearest modes gather through index maps (Note [Index
maps] in csrc/cpu/nn/resample.c) whose scatter-add is their backward, and
``_upsample_linear``/``_upsample_bicubic`` with C backward kernels.  Each
backward op is the adjoint of its forward op, so double backward is the
forward op again.
"""

import math

from ember_core._base.dispatch import defop
from ember_core._base.lib import check, lib
from ember_core._ops.nn import pool as _pool
from ember_core._ops.nn import resample_aa as _resample_aa
from ember_core._ops.nn import spatial as S
from ember_core._ops.pointwise.elementwise import _tname
from ember_core._tensor import dtype as D
from ember_core._tensor.copy import copy_into
from ember_core._tensor.creation import full, zeros
from ember_core._tensor.tensor import empty

_NOGIL_ELEMS = 1 << 16


def _fn(name, work, dev):
    return getattr(dev._kn if work > _NOGIL_ELEMS else dev._k, name)


def _ints(seq, op, name):
    if type(seq) is tuple and all(type(v) is int for v in seq):
        return seq  # the common case, checked cheaply
    if not isinstance(seq, (list, tuple)):
        raise TypeError(
            f"{op}(): argument '{name}' must be a tuple of ints, not {type(seq).__name__}"
        )
    return tuple(S.as_int(v, op, name) for v in seq)


def _planes(shape, k):
    n = 1
    for s in shape[:-k] if k else shape:
        n *= s
    return n


# ---------------------------------------------------------------- padding


def _check_pad_length(op, input, pad):
    if len(pad) % 2:
        raise RuntimeError(f"{op}: Length of pad must be even but instead it equals {len(pad)}")
    if len(pad) // 2 > len(input._shape):
        raise RuntimeError(
            f"{op}: Length of pad should be no more than twice the number of dimensions of the "
            f"input. Pad length is {len(pad)} while the input has {len(input._shape)} dimensions."
        )


def _padded_shape(op, shape, pad):
    out = list(shape)
    for i in range(len(pad) // 2):
        d = len(shape) - 1 - i
        new = shape[d] + pad[2 * i] + pad[2 * i + 1]
        if new < 0:
            raise RuntimeError(
                f"{op}: The input size {shape[d]}, plus negative padding {pad[2 * i]} and "
                f"{pad[2 * i + 1]} resulted in a negative output size, which is invalid. Check "
                f"dimension {d} of your input."
            )
        out[d] = new
    return tuple(out)


@defop(method=False)
def constant_pad_nd(input, pad, value=0):
    """Pad the last len(pad) // 2 dims with `value` (pairs (before, after) from the
    last dim backwards); negative pads crop."""
    op = "constant_pad_nd"
    S.check_tensor(op, input, "input")
    pad = _ints(pad, op, "pad")
    _check_pad_length(op, input, pad)
    shape = _padded_shape(op, input._shape, pad)

    out = full(shape, value, dtype=input._dtype, device=input._storage._device)
    # the overlap of input and output: input cropped by negative pads, placed
    # after positive ones
    src, dst = input, out
    for i in range(len(pad) // 2):
        d = len(shape) - 1 - i
        before, after = pad[2 * i], pad[2 * i + 1]
        if before == 0 and after == 0:
            continue
        keep = input._shape[d] + min(before, 0) + min(after, 0)
        if keep <= 0:
            return out
        src = src.narrow(d, max(-before, 0), keep)
        dst = dst.narrow(d, max(before, 0), keep)
    if src._numel:
        copy_into(dst, src)
    return out


_MAP_KIND = {
    "reflect": lib.EC_MAP_REFLECT,
    "replicate": lib.EC_MAP_REPLICATE,
    "circular": lib.EC_MAP_CIRCULAR,
}


def _maps(specs, dev):
    """Index maps (D, H, W) of Note [Index maps]: specs holds (kind, in, out,
    before, scale, in_double) for each of 1 to 3 trailing dims."""
    specs = [(lib.EC_MAP_REPLICATE, 1, 1, 0, 0.0, 0)] * (3 - len(specs)) + list(specs)
    maps = empty((sum(s[2] for s in specs),), D.int64, dev)
    at = maps._ptr
    for kind, n_in, n_out, before, scale, dbl in specs:
        check(dev._k.ec_index_map(kind, n_in, n_out, before, scale, dbl, at), "index map")
        at += 8 * n_out
    return maps


def _gather(op, x, maps, in_sp, out_sp, k):
    """out[..., o] = x[..., map(o)] over the k trailing dims (any dtype)."""
    xc = x if x._contig else x.contiguous()
    shape = x._shape[: len(x._shape) - k] + out_sp
    y = empty(shape, x._dtype, x._storage._device)
    planes = _planes(x._shape, k)
    check(
        _fn("ec_map_gather", y._numel, maps._storage._device)(
            x._dtype.itemsize, planes, S.int3(in_sp), S.int3(out_sp), maps._ptr, xc._ptr, y._ptr
        ),
        op,
    )
    return y


def _scatter(op, gy, maps, input_size, out_sp, k):
    """The adjoint of _gather: gradients added back at the mapped positions."""
    dtype = gy._dtype
    cd = S.compute_dtype(dtype)
    g = S.prepared(gy, cd)
    gx = empty(tuple(input_size), cd, gy._storage._device)
    planes = _planes(input_size, k)
    check(
        _fn("ec_map_scatter_add", gx._numel + g._numel, maps._storage._device)(
            cd.code,
            planes,
            S.int3(tuple(input_size)[-k:]),
            S.int3(out_sp),
            maps._ptr,
            g._ptr,
            gx._ptr,
        ),
        op,
    )
    return S.finish(gx, dtype)


def _pad_specs(op, shape, pad, mode):
    """Index-map specs, output sizes and crops of the k padded dims.  Circular
    padding wraps around the input as cropped by its negative pads (PyTorch's
    order), so it maps into that cropped view: crops holds (dim, start,
    length) for it."""
    k = len(pad) // 2
    kind = _MAP_KIND[mode]
    specs, out_sp, crops = [], [], []
    for j in range(k):  # j-th padded dim from the front of the trailing k
        d = len(shape) - k + j
        i = k - 1 - j
        before, after = pad[2 * i], pad[2 * i + 1]
        n = shape[d]
        out = n + before + after
        if mode == "reflect" and (before >= n or after >= n):
            raise RuntimeError(
                f"{op}: Padding size should be less than the corresponding input dimension, but "
                f"got: padding ({before}, {after}) at dimension {d} of input {list(shape)}"
            )
        if mode == "circular" and (before > n or after > n):
            raise RuntimeError(
                f"{op}: Padding value causes wrapping around more than once (padding ({before}, "
                f"{after}) at dimension {d} of input {list(shape)})"
            )
        if out < 0:
            raise RuntimeError(
                f"{op}: input {list(shape)} is too small for padding ({before}, {after}) at "
                f"dimension {d}: the output size would be {out}"
            )
        if mode == "circular" and (before < 0 or after < 0):
            start, kept = max(-before, 0), n + min(before, 0) + min(after, 0)
            if kept <= 0 and out > 0:
                raise RuntimeError(
                    f"{op}: Negative padding value is resulting in an empty dimension"
                )
            crops.append((d, start, kept))
            n, before = kept, max(before, 0)
        specs.append((kind, max(n, 1), out, before, 0.0, 0))
        out_sp.append(out)
    return specs, tuple(out_sp), crops


def _check_mode_pad(op, input, pad, mode):
    if mode not in _MAP_KIND:
        raise NotImplementedError(f"{op}: Unrecognised padding mode {mode}")
    k = len(pad) // 2
    if len(pad) % 2 or k not in (1, 2, 3) or len(input._shape) not in (k + 1, k + 2):
        raise NotImplementedError(
            f"Padding size {len(pad)} is not supported for {len(input._shape)}D input tensor.\n"
            "Supported combinations for non-constant padding:\n"
            "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
            "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
            "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)"
        )
    for d in range(len(input._shape) - k, len(input._shape)):
        if input._shape[d] == 0:
            raise RuntimeError(
                f"{op}: Expected a non-empty input in the padded dims, but got input of size "
                f"{list(input._shape)}"
            )
    return k


def _pad_autocast(args):
    # PyTorch lists reflection_pad*/replication_pad* (fp32), not constant/circular.
    return "fp32" if args[2] in ("reflect", "replicate") else None


@defop(method=False, autocast=_pad_autocast)
def _pad_mode(input, pad, mode):
    """Reflect, replicate or circular padding of the last len(pad) // 2 (1 to 3)
    dims."""
    op = f"pad ({mode})"
    S.check_tensor(op, input, "input")
    pad = _ints(pad, op, "pad")
    k = _check_mode_pad(op, input, pad, mode)
    if input._dtype is D.bool_ and mode != "circular":
        raise RuntimeError(f"\"{mode}_pad\" not implemented for 'Bool'")
    specs, out_sp, crops = _pad_specs(op, input._shape, pad, mode)
    if 0 in out_sp:
        return empty(input._shape[:-k] + out_sp, input._dtype, input._storage._device)
    x = input
    for d, start, length in crops:
        x = x.narrow(d, start, length)
    maps = _maps(specs, input._storage._device)
    return _gather(op, x, maps, x._shape[-k:], out_sp, k)


@defop(method=False)
def _pad_mode_backward(grad_output, input_size, pad, mode):
    """The gradient of _pad_mode: each output gradient added to the input element
    it copies."""
    op = f"pad ({mode}) backward"
    pad = _ints(pad, op, "pad")
    input_size = tuple(input_size)
    k = len(pad) // 2
    specs, out_sp, crops = _pad_specs(op, input_size, pad, mode)
    if grad_output._shape != input_size[:-k] + out_sp:
        raise RuntimeError(
            f"{op}: expected grad_output of size {list(input_size[:-k] + out_sp)}, got "
            f"{list(grad_output._shape)}"
        )
    if 0 in out_sp:
        return zeros(input_size, dtype=grad_output._dtype, device=grad_output._storage._device)
    cropped = list(input_size)
    for d, _, length in crops:
        cropped[d] = length
    g = _scatter(
        op, grad_output, _maps(specs, grad_output._storage._device), tuple(cropped), out_sp, k
    )
    if crops:
        # the cropped-away elements get no gradient
        back = [0] * (2 * k)
        for d, start, length in crops:
            i = len(input_size) - 1 - d
            back[2 * i], back[2 * i + 1] = start, input_size[d] - start - length
        g = constant_pad_nd(g, back, 0)
    return g


@defop(composite=True, method=False)
def pad(input, pad, mode="constant", value=None):
    """Pad the last dims (PyTorch's F.pad): pad = (left, right, top, bottom, ...)
    from the last dim backwards; mode 'constant' (with value), 'reflect',
    'replicate' or 'circular'.  Negative pads crop.

    >>> pad(arange(3.0), (1, 2))
    tensor([0., 0., 1., 2., 0., 0.])
    """
    S.check_tensor("pad", input, "input")
    pad = _ints(pad, "pad", "pad")
    if mode == "constant":
        return constant_pad_nd(input, pad, 0 if value is None else value)
    if value is not None and value != 0:
        raise RuntimeError(f'Padding mode "{mode}" doesn\'t take in value argument')
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    if len(pad) // 2 > len(input._shape):
        raise RuntimeError(
            "Padding length should be less than or equal to two times the input dimension"
        )
    if mode not in _MAP_KIND:
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    return _pad_mode(input, pad, mode)


# ------------------------------------------------------------ interpolation

_MODES = ("nearest", "nearest-exact", "linear", "bilinear", "bicubic", "trilinear", "area")
_LINEAR_DIMS = {"linear": 1, "bilinear": 2, "trilinear": 3}


def _scale_list(scales, k):
    """Per-dim user scale factors for the kernels (0: none)."""
    if scales is None:
        return (0.0,) * k
    return tuple(0.0 if s is None else float(s) for s in scales)


def _nearest_specs(input_shape, output_size, scales, exact, dtype):
    k = len(output_size)
    sc = _scale_list(scales, k)
    kind = lib.EC_MAP_NEAREST_EXACT if exact else lib.EC_MAP_NEAREST
    dbl = 1 if dtype is D.float64 else 0
    return [(kind, n, o, 0, s, dbl) for n, o, s in zip(input_shape[-k:], output_size, sc)]


def _check_sizes(op, in_sp, out_sp):
    if any(i < 1 for i in in_sp) or any(o < 1 for o in out_sp):
        raise RuntimeError(
            f"{op}: Input and output sizes should be greater than 0, but got input "
            f"{list(in_sp)} and output {list(out_sp)}"
        )


@defop(method=False)
def _upsample_nearest(input, output_size, scales, exact):
    """Nearest (or nearest-exact) upsampling of the last len(output_size) dims of
    a batched input; scales: the user's scale factors (or None)."""
    op = "upsample_nearest_exact" if exact else "upsample_nearest"
    output_size = tuple(output_size)
    k = len(output_size)
    _check_sizes(op, input._shape[-k:], output_size)
    if input._dtype is D.bool_:
        raise RuntimeError(f"\"{op}\" not implemented for 'Bool'")
    maps = _maps(
        _nearest_specs(input._shape, output_size, scales, exact, input._dtype),
        input._storage._device,
    )
    return _gather(op, input, maps, input._shape[-k:], output_size, k)


@defop(method=False)
def _upsample_nearest_backward(grad_output, input_size, output_size, scales, exact):
    """The gradient of _upsample_nearest."""
    op = "upsample_nearest_backward"
    input_size, output_size = tuple(input_size), tuple(output_size)
    k = len(output_size)
    if grad_output._shape != input_size[:-k] + output_size:
        raise RuntimeError(
            f"{op}: expected grad_output of size {list(input_size[:-k] + output_size)}, got "
            f"{list(grad_output._shape)}"
        )
    maps = _maps(
        _nearest_specs(input_size, output_size, scales, exact, grad_output._dtype),
        grad_output._storage._device,
    )
    return _scatter(op, grad_output, maps, input_size, output_size, k)


def _interp_run(
    op, fname, backward, src, in_sp, out_sp, planes_shape, align_corners, scales, dst_shape
):
    dtype = src._dtype
    if not dtype.is_floating_point:
        raise NotImplementedError(f"\"{op}\" not implemented for '{_tname(dtype)}'")
    cd = S.compute_dtype(dtype)
    s = S.prepared(src, cd)
    dst = empty(dst_shape, cd, src._storage._device)
    k = len(out_sp)
    sc = S._new("double[3]", (0.0,) * (3 - k) + _scale_list(scales, k))
    check(
        _fn(fname, dst._numel + s._numel, s._storage._device)(
            cd.code,
            backward,
            _planes(planes_shape, k),
            S.int3(in_sp),
            S.int3(out_sp),
            bool(align_corners),
            sc,
            s._ptr,
            dst._ptr,
        ),
        op,
    )
    return S.finish(dst, dtype)


@defop(method=False)
def _upsample_linear(input, output_size, align_corners, scales):
    """Linear, bilinear or trilinear interpolation of the last 1-3 dims."""
    output_size = tuple(output_size)
    k = len(output_size)
    op = ("upsample_linear1d", "upsample_bilinear2d", "upsample_trilinear3d")[k - 1]
    _check_sizes(op, input._shape[-k:], output_size)
    return _interp_run(
        op,
        "ec_upsample_linear",
        0,
        input,
        input._shape[-k:],
        output_size,
        input._shape,
        align_corners,
        scales,
        input._shape[:-k] + output_size,
    )


@defop(
    method=False,
)
def _upsample_linear_backward(grad_output, input_size, output_size, align_corners, scales):
    """The gradient of _upsample_linear."""
    input_size, output_size = tuple(input_size), tuple(output_size)
    k = len(output_size)
    op = "upsample_linear_backward"
    if grad_output._shape != input_size[:-k] + output_size:
        raise RuntimeError(
            f"{op}: expected grad_output of size {list(input_size[:-k] + output_size)}, "
            f"got {list(grad_output._shape)}"
        )
    return _interp_run(
        op,
        "ec_upsample_linear",
        1,
        grad_output,
        input_size[-k:],
        output_size,
        input_size,
        align_corners,
        scales,
        input_size,
    )


@defop(method=False)
def _upsample_bicubic(input, output_size, align_corners, scales):
    """Bicubic interpolation (A = -0.75, borders clamped) of the last 2 dims."""
    output_size = tuple(output_size)
    op = "upsample_bicubic2d"
    if len(output_size) != 2:
        raise RuntimeError(f"{op}: expected 2 output sizes, got {list(output_size)}")
    _check_sizes(op, input._shape[-2:], output_size)
    return _interp_run(
        op,
        "ec_upsample_bicubic",
        0,
        input,
        input._shape[-2:],
        output_size,
        input._shape,
        align_corners,
        scales,
        input._shape[:-2] + output_size,
    )


@defop(
    method=False,
)
def _upsample_bicubic_backward(grad_output, input_size, output_size, align_corners, scales):
    """The gradient of _upsample_bicubic."""
    input_size, output_size = tuple(input_size), tuple(output_size)
    op = "upsample_bicubic2d_backward"
    if grad_output._shape != input_size[:-2] + output_size:
        raise RuntimeError(
            f"{op}: expected grad_output of size {list(input_size[:-2] + output_size)}, "
            f"got {list(grad_output._shape)}"
        )
    return _interp_run(
        op,
        "ec_upsample_bicubic",
        1,
        grad_output,
        input_size[-2:],
        output_size,
        input_size,
        align_corners,
        scales,
        input_size,
    )


def _is_int(v):
    try:
        import operator

        operator.index(v)
        return not isinstance(v, bool)
    except TypeError:
        return False


@defop(
    composite=True,
    method=False,
)
def interpolate(
    input,
    size=None,
    scale_factor=None,
    mode="nearest",
    align_corners=None,
    recompute_scale_factor=None,
    antialias=False,
):
    """Resample the spatial dims of a batched (N, C, ...) input to `size` or by
    `scale_factor` (PyTorch's F.interpolate).

    >>> interpolate(ones(1, 1, 2, 2), scale_factor=2, mode="bilinear").shape
    ember.Size([1, 1, 4, 4])
    """
    S.check_tensor("interpolate", input, "input")
    if mode not in _MODES:
        raise NotImplementedError(
            f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {len(input._shape)}D) "
            f"for the modes: nearest | linear | bilinear | bicubic | trilinear | area | "
            f"nearest-exact (got {mode})"
        )
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError(
                "align_corners option can only be set with the interpolating modes: "
                "linear | bilinear | bicubic | trilinear"
            )
    elif align_corners is None:
        align_corners = False
    dim = len(input._shape) - 2
    if dim < 1:
        raise ValueError(
            f"interpolate: expected a batched input (N, C, ...), got {list(input._shape)}"
        )
    output_size = scale_factors = None
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        if isinstance(size, (list, tuple)):
            if len(size) != dim:
                raise ValueError(
                    f"Input and output must have the same number of spatial dimensions, but got "
                    f"input with spatial dimensions of {list(input._shape[2:])} and output size of "
                    f"{list(size)}. Please provide input tensor in (N, C, d1, d2, ...,dK) format "
                    "and output size in (o1, o2, ...,oK) format."
                )
            if not all(_is_int(s) for s in size):
                raise TypeError(
                    "expected size to be one of int or Tuple[int] or Tuple[int, int] or "
                    f"Tuple[int, int, int], but got size with types {[type(s) for s in size]}"
                )
            output_size = [int(s) for s in size]
        else:
            output_size = [S.as_int(size, "interpolate", "size")] * dim
    elif scale_factor is not None:
        if isinstance(scale_factor, (list, tuple)):
            if len(scale_factor) != dim:
                raise ValueError(
                    f"Input and scale_factor must have the same number of spatial dimensions, but "
                    f"got input with spatial dimensions of {list(input._shape[2:])} and "
                    f"scale_factor of shape {list(scale_factor)}. Please provide input tensor in "
                    "(N, C, d1, d2, ...,dK) format and scale_factor in (s1, s2, ...,sK) format."
                )
            scale_factors = [float(s) for s in scale_factor]
        else:
            scale_factors = [float(scale_factor)] * dim
    else:
        raise ValueError("either size or scale_factor should be defined")
    if recompute_scale_factor and size is not None:
        raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
    if mode == "area" and output_size is None:
        recompute_scale_factor = True
    if recompute_scale_factor:
        output_size = [
            math.floor(float(input._shape[i + 2]) * scale_factors[i]) for i in range(dim)
        ]
        scale_factors = None
    if antialias and not (mode in ("bilinear", "bicubic") and len(input._shape) == 4):
        raise ValueError(
            "Anti-alias option is restricted to bilinear and bicubic modes and requires a 4-D "
            "tensor as input"
        )
    if output_size is None:
        output_size = [int(float(n) * s) for n, s in zip(input._shape[2:], scale_factors)]
    output_size = tuple(output_size)
    scales = tuple(scale_factors) if scale_factors is not None else None
    if antialias:
        return _resample_aa.interpolate_antialias(input, output_size, mode, align_corners, scales)
    if mode in ("nearest", "nearest-exact"):
        if dim > 3:
            raise NotImplementedError(
                f"interpolate: {mode} supports 3D, 4D and 5D input, got {dim + 2}D"
            )
        return _upsample_nearest(input, output_size, scales, mode == "nearest-exact")
    if mode == "area":
        return (
            _pool._adaptive_nd(f"adaptive_avg_pool{dim}d", dim, input, output_size, False)
            if dim <= 3
            else _unsupported(input, mode)
        )
    if mode == "bicubic":
        if dim != 2:
            raise NotImplementedError(f"Got {dim + 2}D input, but bicubic mode needs 4D input")
        return _upsample_bicubic(input, output_size, align_corners, scales)
    need = _LINEAR_DIMS[mode]
    if dim != need:
        raise NotImplementedError(f"Got {dim + 2}D input, but {mode} mode needs {need + 2}D input")
    return _upsample_linear(input, output_size, align_corners, scales)


def _unsupported(input, mode):
    raise NotImplementedError(
        f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {len(input._shape)}D) for "
        f"the modes: nearest | linear | bilinear | bicubic | trilinear | area | nearest-exact "
        f"(got {mode})"
    )


# ------------------------------------------------------------ pixel shuffle


@defop(composite=True, method=False)
def pixel_shuffle(input, upscale_factor):
    """(*, C * r * r, H, W) -> (*, C, H * r, W * r).

    >>> pixel_shuffle(ones(1, 8, 2, 3), 2).shape
    ember.Size([1, 2, 4, 6])
    """
    op = "pixel_shuffle"
    S.check_tensor(op, input, "input")
    r = S.as_int(upscale_factor, op, "upscale_factor")
    nd = len(input._shape)
    if nd < 3:
        raise RuntimeError(
            f"pixel_shuffle expects input to have at least 3 dimensions, but got input with {nd} "
            "dimension(s)"
        )
    if r <= 0:
        raise RuntimeError(f"pixel_shuffle expects a positive upscale_factor, but got {r}")
    c, h, w = input._shape[-3:]
    if c % (r * r):
        raise RuntimeError(
            "pixel_shuffle expects its input's 'channel' dimension to be divisible by the square "
            f"of upscale_factor, but input.size(-3)={c} is not divisible by {r * r}"
        )
    lead = input._shape[:-3]
    b = len(lead)
    x = input.reshape(lead + (c // (r * r), r, r, h, w))
    x = x.permute(*range(b), b, b + 3, b + 1, b + 4, b + 2)
    return x.reshape(lead + (c // (r * r), h * r, w * r))


@defop(composite=True, method=False)
def pixel_unshuffle(input, downscale_factor):
    """(*, C, H * r, W * r) -> (*, C * r * r, H, W), the inverse of pixel_shuffle."""
    op = "pixel_unshuffle"
    S.check_tensor(op, input, "input")
    r = S.as_int(downscale_factor, op, "downscale_factor")
    nd = len(input._shape)
    if nd < 3:
        raise RuntimeError(
            f"pixel_unshuffle expects input to have at least 3 dimensions, but got input with {nd} "
            "dimension(s)"
        )
    if r <= 0:
        raise RuntimeError(f"pixel_unshuffle expects a positive downscale_factor, but got {r}")
    c, h, w = input._shape[-3:]
    if h % r:
        raise RuntimeError(
            f"pixel_unshuffle expects height to be divisible by downscale_factor, but "
            f"input.size(-2)={h} is not divisible by {r}"
        )
    if w % r:
        raise RuntimeError(
            f"pixel_unshuffle expects width to be divisible by downscale_factor, but "
            f"input.size(-1)={w} is not divisible by {r}"
        )
    lead = input._shape[:-3]
    b = len(lead)
    x = input.reshape(lead + (c, h // r, r, w // r, r))
    x = x.permute(*range(b), b, b + 2, b + 4, b + 1, b + 3)
    return x.reshape(lead + (c * r * r, h // r, w // r))


@defop(composite=True, method=False, aliases=("native_channel_shuffle",))
def channel_shuffle(input, groups):
    """(N, C, *) with its C channels shuffled in ``groups`` groups."""
    if groups <= 0:
        raise RuntimeError(
            f"Number of groups to divide channels in must be positive. Value of groups:{groups}"
        )
    if input.dim() <= 2:
        raise RuntimeError(
            f"channel_shuffle expects input with > 2 dims, but got input with sizes "
            f"{list(input.shape)}"
        )
    n, c = input.shape[0], input.shape[1]
    if c % groups:
        raise RuntimeError(
            f"Number of channels must be divisible by groups. Got {c} channels and {groups} groups."
        )
    rest = tuple(input.shape[2:])
    return input.reshape((n, groups, c // groups) + rest).transpose(1, 2).reshape(input.shape)
