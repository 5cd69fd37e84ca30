"""Convolutions: conv1d/2d/3d, conv_transpose1d/2d/3d, their one core op
``convolution`` with its backward ``convolution_backward``, im2col/col2im
(F.unfold/F.fold) and conv_tbc (conv1d over time-major input).

Note [Plain convolution]
Every convolution here is a "plain" one between an image side (ci channels,
the larger spatial size) and a column side (co channels, the output size of
sliding the kernel over the image), with a weight of shape (co, ci / groups,
k...).  Three kernels cover everything:

    plain forward         image  -> column   (conv forward; transposed backward data)
    plain backward data   column -> image    (conv backward data; transposed forward)
    plain backward weight (image, column) -> weight

A transposed convolution's weight (cin, cout / groups, k...) is exactly the
plain weight with the column side as its input.  Per call, the algorithm is
chosen from the shapes: the direct depthwise kernels when groups == ci, else
im2col + BLAS (pointwise kernels skip im2col), with images running in
parallel when there are several and enough work; a stride-1 backward data
runs as a forward convolution with the flipped weight (``backward_data``).
"""

import warnings

from ember_core._base.dispatch import defop
from ember_core._base.lib import check, lib
from ember_core._cuda import blas as _cuda_blas
from ember_core._ops.nn import spatial as S
from ember_core._ops.nn.resample import constant_pad_nd
from ember_core._ops.pointwise.elementwise import _tname, check_device
from ember_core._tensor import dtype as D
from ember_core._tensor.tensor import Tensor, empty

# Calls doing more multiply-adds than this release the GIL; more than
# _PARALLEL_MACS run images on several threads.
_NOGIL_MACS = 1 << 16
_PARALLEL_MACS = 1 << 20
# Note [Batched GEMM convolution] (csrc/cpu/nn/conv_tmpl.h): on the CPU, outputs of
# fewer than _THIN_L positions share products, enough images for about
# _SIDE_L columns each, within a workspace of _BATCH_ELEMS elements.
_THIN_L = 256
_SIDE_L = 1024
_BATCH_ELEMS = 1 << 23


def _fn(name, macs, dev):
    if dev.type != "cpu":
        _cuda_ready()
    return getattr(dev._kn if macs > _NOGIL_MACS else dev._k, name)


_warned_no_cudnn = []


def _cuda_ready():
    """Note [CUDA convolution without cuDNN] (csrc/cuda/nn_launch.c): the CUDA
    kernels run the same GEMM convolution as the CPU, its products on cuBLAS
    (loaded here); ember says once that cuDNN is not used."""

    if not _cuda_blas.loaded:
        _cuda_blas.load()
    if not _warned_no_cudnn:
        _warned_no_cudnn.append(True)
        warnings.warn(
            "ember: convolutions on CUDA run as im2col + cuBLAS GEMMs (and direct depthwise "
            "kernels); cuDNN is not used yet",
            stacklevel=4,
        )


def _par(p, dev):
    """Images in flight at once: the CPU's threads; one on CUDA (the device
    parallelises within an image, and one column buffer suffices)."""
    return p.par() if dev.type == "cpu" else 1


class _Plain:
    """The geometry of one plain convolution (Note [Plain convolution])."""

    __slots__ = (
        "n",
        "ci",
        "co",
        "groups",
        "image",
        "kernel",
        "column",
        "stride",
        "padding",
        "dilation",
        "geom",
        "kvol",
        "L",
        "depthwise",
        "pointwise",
    )

    def __init__(self, n, ci, co, groups, image, kernel, column, stride, padding, dilation):
        self.n, self.ci, self.co, self.groups = n, ci, co, groups
        self.image, self.kernel, self.column = image, kernel, column
        self.stride, self.padding, self.dilation = stride, padding, dilation
        self.geom = S.geometry(image, kernel, column, stride, padding, dilation)
        kvol = 1
        for k in kernel:
            kvol *= k
        L = 1
        for o in column:
            L *= o
        self.kvol, self.L = kvol, L
        self.depthwise = groups == ci
        self.pointwise = (
            all(k == 1 for k in kernel) and all(s == 1 for s in stride) and not any(padding)
        )

    def macs(self):
        return self.n * self.co * self.L * (self.ci // self.groups) * self.kvol

    def par(self):
        """Images run concurrently (one per thread, single-threaded BLAS) when
        there are several and enough work to pay for waking threads."""
        if self.n < 2 or self.macs() < _PARALLEL_MACS:
            return 1
        return max(1, min(lib.ec_get_num_threads(), self.n))

    def col_slot(self):
        return 0 if self.pointwise else self.ci * self.kvol * self.L

    def batch(self, dev):
        """Images per product for the batched kernels (Note [Batched GEMM
        convolution] in csrc/cpu/nn/conv_tmpl.h), or 0 for the per-image ones: on the
        CPU, for a thin output (few positions) of an ungrouped, non-pointwise
        convolution of several images."""
        if (
            dev.type != "cpu"
            or self.groups != 1
            or self.depthwise
            or self.pointwise
            or self.n < 2
            or not 0 < self.L < _THIN_L
        ):
            return 0
        per_image = (self.ci * self.kvol + self.co) * self.L
        nb = min(self.n, max(2, _SIDE_L // self.L), max(1, _BATCH_ELEMS // per_image))
        return nb if nb >= 2 else 0

    def batch_work(self, nb):
        return nb * (self.ci * self.kvol + self.co) * self.L


def _workspace(elems, dtype, dev):
    return empty((max(elems, 1),), dtype, dev)


def plain_forward(p, x, w, bias, y):
    """y (column side) = plain convolution of x (image side); all contiguous, one dtype."""
    dt = x._dtype.code
    bptr = bias._ptr if bias is not None else 0
    if p.depthwise:
        fn = _fn("ec_conv_depthwise_forward", p.macs(), x._storage._device)
        check(fn(dt, p.n, p.ci, p.co, p.geom, x._ptr, w._ptr, bptr, y._ptr), "convolution")
        return y
    nb = p.batch(x._storage._device)
    if nb:
        work = _workspace(p.batch_work(nb), x._dtype, x._storage._device)
        fn = _fn("ec_conv_forward_batched", p.macs(), x._storage._device)
        check(
            fn(dt, p.n, p.ci, p.co, p.geom, x._ptr, w._ptr, bptr, y._ptr, work._ptr, nb),
            "convolution",
        )
        return y
    par = _par(p, x._storage._device)
    work = _workspace(par * p.col_slot(), x._dtype, x._storage._device)
    fn = _fn("ec_conv_forward", p.macs(), x._storage._device)
    check(
        fn(dt, p.n, p.ci, p.co, p.groups, p.geom, x._ptr, w._ptr, bptr, y._ptr, work._ptr, par),
        "convolution",
    )
    return y


def plain_backward_data(p, gy, w, gx):
    """gx (image side) from gy (column side)."""
    dt = gy._dtype.code
    if p.depthwise:
        fn = _fn("ec_conv_depthwise_backward_data", p.macs(), gy._storage._device)
        check(fn(dt, p.n, p.ci, p.co, p.geom, gy._ptr, w._ptr, gx._ptr), "convolution_backward")
        return gx
    nb = p.batch(gy._storage._device)
    if nb:
        work = _workspace(p.batch_work(nb), gy._dtype, gy._storage._device)
        fn = _fn("ec_conv_backward_data_batched", p.macs(), gy._storage._device)
        check(
            fn(dt, p.n, p.ci, p.co, p.geom, gy._ptr, w._ptr, gx._ptr, work._ptr, nb),
            "convolution_backward",
        )
        return gx
    par = _par(p, gy._storage._device)
    work = _workspace(par * p.col_slot(), gy._dtype, gy._storage._device)
    fn = _fn("ec_conv_backward_data", p.macs(), gy._storage._device)
    check(
        fn(dt, p.n, p.ci, p.co, p.groups, p.geom, gy._ptr, w._ptr, gx._ptr, work._ptr, par),
        "convolution_backward",
    )
    return gx


def _as_forward(p):
    """For stride 1, the backward data of p as a plain forward convolution of gy
    with the flipped, transposed weight, padded by d * (k - 1) - p (or None).
    im2col + a deep GEMM beats a shallow GEMM + col2im's scattered adds, and the
    depthwise forward kernel beats its scattering backward."""
    if p.pointwise or any(s != 1 for s in p.stride) or (p.depthwise and p.co != p.ci):
        return None
    pads = tuple(d * (k - 1) - pp for d, k, pp in zip(p.dilation, p.kernel, p.padding))
    if any(v < 0 for v in pads):
        return None
    return _Plain(
        p.n, p.co, p.ci, p.groups, p.column, p.kernel, p.image, p.stride, pads, p.dilation
    )


def _flipped_weight(p, w):
    """w (co, ci / g, k...) as the weight of _as_forward(p): (ci, co / g, k...),
    each group transposed and every kernel dim reversed."""
    g, k = p.groups, len(p.kernel)
    wt = w.reshape((g, p.co // g, p.ci // g) + tuple(p.kernel)).transpose(1, 2)
    wt = wt.flip(tuple(range(3, 3 + k)))
    return wt.reshape((p.ci, p.co // g) + tuple(p.kernel)).contiguous()


def backward_data(p, gy, w, gx):
    """gx (image side) from gy (column side), choosing the algorithm."""
    q = _as_forward(p)
    if q is not None:
        return plain_forward(q, gy, _flipped_weight(p, w), None, gx)
    return plain_backward_data(p, gy, w, gx)


def plain_backward_weight(p, x, gy, gw):
    """gw (co, ci / groups, k...) from x (image side) and gy (column side)."""
    dt = x._dtype.code
    dev = x._storage._device
    if p.depthwise:
        work = _workspace(
            lib.ec_get_num_threads() * p.kvol if dev.type == "cpu" else 1, D.float64, dev
        )
        fn = _fn("ec_conv_depthwise_backward_weight", p.macs(), x._storage._device)
        check(
            fn(dt, p.n, p.ci, p.co, p.geom, x._ptr, gy._ptr, gw._ptr, work._ptr),
            "convolution_backward",
        )
        return gw
    nb = p.batch(dev)
    if nb:
        work = _workspace(p.batch_work(nb), x._dtype, dev)
        fn = _fn("ec_conv_backward_weight_batched", p.macs(), dev)
        check(
            fn(dt, p.n, p.ci, p.co, p.geom, x._ptr, gy._ptr, gw._ptr, work._ptr, nb),
            "convolution_backward",
        )
        return gw
    par = min(_par(p, dev), max(p.n, 1))
    wsize = p.co * (p.ci // p.groups) * p.kvol
    work = _workspace(par * p.col_slot() + (par - 1) * wsize, x._dtype, dev)
    fn = _fn("ec_conv_backward_weight", p.macs(), x._storage._device)
    check(
        fn(dt, p.n, p.ci, p.co, p.groups, p.geom, x._ptr, gy._ptr, gw._ptr, work._ptr, par),
        "convolution_backward",
    )
    return gw


def bias_grad(gy, co):
    """Sum of gy (n, co, ...) over every dim but the channels."""
    n = gy._shape[0]
    L = gy._numel // max(n * co, 1) if n * co else 0
    gb = empty((co,), gy._dtype, gy._storage._device)
    check(
        gy._storage._device._k.ec_conv_bias_grad(gy._dtype.code, n, co, L, gy._ptr, gb._ptr),
        "convolution_backward",
    )
    return gb


# ---------------------------------------------------------------- checks


def _same_dtype(op, input, weight, bias):
    for t, name in ((weight, "weight"), (bias, "bias")):
        if t is not None and t._dtype is not input._dtype:
            raise RuntimeError(
                f"{op}: expected scalar type {_tname(input._dtype)} but found {_tname(t._dtype)} "
                f"(input {list(input._shape)} is {input._dtype.name}, {name} {list(t._shape)} "
                f"is {t._dtype.name})"
            )
    if input._dtype is D.bool_:
        raise RuntimeError(f"\"{op}\" not implemented for 'Bool'")


def _conv_args(
    op, input, weight, bias, stride, padding, dilation, transposed, output_padding, groups
):
    """Check a convolution's arguments (PyTorch's checks and messages); returns
    (k, stride, padding, dilation, output_padding, groups, out channels, output
    spatial size), the size arguments as tuples of k ints."""
    S.check_tensor(op, input, "input")
    S.check_tensor(op, weight, "weight")
    S.check_tensor(op, bias, "bias", optional=True)
    k = len(weight._shape) - 2
    if k < 1 or k > 3:
        raise RuntimeError(
            f"{op}: expected a weight of 3 to 5 dims (out channels, in channels / groups, kernel "
            f"size...), but got weight of size {list(weight._shape)}"
        )
    if len(input._shape) != k + 2:
        raise RuntimeError(
            f"{op}: Expected {k + 2}-dimensional input for {k + 2}-dimensional weight "
            f"{list(weight._shape)}, but got {len(input._shape)}-dimensional input of size "
            f"{list(input._shape)} instead"
        )
    _same_dtype(op, input, weight, bias)
    check_device(op, input, weight, bias)
    stride = S.expand(stride, k, op, "stride")
    padding = S.expand(padding, k, op, "padding")
    dilation = S.expand(dilation, k, op, "dilation")
    output_padding = S.expand(output_padding, k, op, "output_padding")
    groups = S.as_int(groups, op, "groups")
    if any(s <= 0 for s in stride):
        raise RuntimeError(f"{op}: non-positive stride is not supported (stride={list(stride)})")
    if any(p < 0 for p in padding):
        raise RuntimeError(f"{op}: negative padding is not supported (padding={list(padding)})")
    if any(d <= 0 for d in dilation):
        raise RuntimeError(
            f"{op}: dilation should be greater than zero (dilation={list(dilation)})"
        )
    if any(p < 0 for p in output_padding):
        raise RuntimeError(f"{op}: negative output_padding is not supported")
    if groups <= 0:
        raise RuntimeError(f"{op}: non-positive groups is not supported (groups={groups})")
    c_in = input._shape[1]
    wshape = list(weight._shape)
    if weight._shape[0] % groups:
        raise RuntimeError(
            f"{op}: Given groups={groups}, expected weight to be divisible by {groups} at "
            f"dimension 0, but got weight of size [{wshape}] instead"
        )
    if any(s == 0 for s in weight._shape):
        raise RuntimeError(f"{op}: weight of size {wshape} has no elements")
    if transposed:
        if c_in != weight._shape[0]:
            raise RuntimeError(
                f"{op}: Given transposed=1, weight of size {wshape}, expected input"
                f"{list(input._shape)} to have {weight._shape[0]} channels, but got {c_in} "
                "channels instead"
            )
        co = weight._shape[1] * groups
        if any(op_ >= s and op_ >= d for op_, s, d in zip(output_padding, stride, dilation)):
            raise RuntimeError(
                f"{op}: output padding must be smaller than either stride or dilation, but got "
                f"output_padding={list(output_padding)}, stride={list(stride)}, "
                f"dilation={list(dilation)}"
            )
    else:
        if c_in != weight._shape[1] * groups:
            raise RuntimeError(
                f"{op}: Given groups={groups}, weight of size {wshape}, expected input"
                f"{list(input._shape)} to have {weight._shape[1] * groups} channels, but got "
                f"{c_in} channels instead"
            )
        co = weight._shape[0]
    if bias is not None and (len(bias._shape) != 1 or bias._shape[0] != co):
        raise RuntimeError(
            f"{op}: Given weight of size {wshape}, expected bias to be 1-dimensional with {co} "
            f"elements, but got bias of size {list(bias._shape)} instead"
        )
    spatial = input._shape[2:]
    ks = weight._shape[2:]
    if transposed:
        out = tuple(
            (i - 1) * s - 2 * p + d * (kk - 1) + op_ + 1
            for i, s, p, d, kk, op_ in zip(spatial, stride, padding, dilation, ks, output_padding)
        )
        if any(o <= 0 for o in out):
            raise RuntimeError(
                f"{op}: Given input size per channel: {S.fmt(spatial)}. Calculated output size "
                f"per channel: {S.fmt(out)}. Output size is too small"
            )
    else:
        padded = tuple(i + 2 * p for i, p in zip(spatial, padding))
        eff = tuple(d * (kk - 1) + 1 for d, kk in zip(dilation, ks))
        if any(pi < e for pi, e in zip(padded, eff)):
            raise RuntimeError(
                f"{op}: Calculated padded input size per channel: {S.fmt(padded)}. Kernel size: "
                f"{S.fmt(eff)}. Kernel size can't be greater than actual input size"
            )
        out = tuple((pi - e) // s + 1 for pi, e, s in zip(padded, eff, stride))
    return k, stride, padding, dilation, output_padding, groups, co, out


def _plain(input, weight, stride, padding, dilation, transposed, groups, co, out):
    """The plain convolution (Note [Plain convolution]) of a checked call."""
    n = input._shape[0]
    ks = weight._shape[2:]
    if transposed:
        # image side: the output (co channels); column side: the input
        return _Plain(
            n, co, input._shape[1], groups, out, ks, input._shape[2:], stride, padding, dilation
        )
    return _Plain(
        n, input._shape[1], co, groups, input._shape[2:], ks, out, stride, padding, dilation
    )


# ------------------------------------------------------------------- ops


@defop(
    method=False,
    autocast="lower_precision_fp",
)
def convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    """The convolution every conv op reaches (PyTorch's ``torch.convolution``):
    batched input (N, C, spatial...), ``transposed`` for a transposed
    convolution, padding symmetric per dim."""
    op = "convolution"
    k, stride, padding, dilation, output_padding, groups, co, out = _conv_args(
        op, input, weight, bias, stride, padding, dilation, transposed, output_padding, groups
    )
    dtype = input._dtype
    cd = S.compute_dtype(dtype)
    x = S.prepared(input, cd)
    w = S.prepared(weight, cd)
    b = S.prepared(bias, cd) if bias is not None else None
    p = _plain(x, w, stride, padding, dilation, transposed, groups, co, out)
    n = x._shape[0]
    y = empty((n, co) + out, cd, x._storage._device)
    if transposed:
        backward_data(p, x, w, y)
        if b is not None:
            y.add_(b.view((1, co) + (1,) * k))
    else:
        plain_forward(p, x, w, b, y)
    return S.finish(y, dtype)


@defop(
    method=False,
)
def convolution_backward(
    grad_output,
    input,
    weight,
    bias_sizes,
    stride,
    padding,
    dilation,
    transposed,
    output_padding,
    groups,
    output_mask,
):
    """Gradients (input, weight, bias) of ``convolution`` for ``grad_output``;
    an entry of ``output_mask`` that is false gives None there."""
    op = "convolution_backward"
    k, stride, padding, dilation, output_padding, groups, co, out = _conv_args(
        op, input, weight, None, stride, padding, dilation, transposed, output_padding, groups
    )
    S.check_tensor(op, grad_output, "grad_output")
    n = input._shape[0]
    if grad_output._shape != (n, co) + out:
        raise RuntimeError(
            f"{op}: expected grad_output of size {[n, co, *out]}, but got "
            f"{list(grad_output._shape)}"
        )
    if grad_output._dtype is not input._dtype:
        raise RuntimeError(
            f"{op}: grad_output is {grad_output._dtype.name} but input is {input._dtype.name}"
        )
    want_in, want_w, want_b = (bool(m) for m in output_mask)
    dtype = input._dtype
    cd = S.compute_dtype(dtype)
    gy = S.prepared(grad_output, cd)
    p = _plain(input, weight, stride, padding, dilation, transposed, groups, co, out)
    dev = input._storage._device
    gi = gw = gb = None
    if want_in:
        w = S.prepared(weight, cd)
        gi = empty(input._shape, cd, dev)
        if transposed:
            plain_forward(p, gy, w, None, gi)
        else:
            backward_data(p, gy, w, gi)
        gi = S.finish(gi, dtype)
    if want_w:
        x = S.prepared(input, cd)
        gw = empty(weight._shape, cd, dev)
        if transposed:
            plain_backward_weight(p, gy, x, gw)
        else:
            plain_backward_weight(p, x, gy, gw)
        gw = S.finish(gw, weight._dtype)
    if want_b:
        gb = S.finish(bias_grad(gy, co), dtype)
    return gi, gw, gb


# ----------------------------------------------------- public conv ops


def _batched(op, input, k):
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(input).__name__}")
    nd = len(input._shape)
    if nd not in (k + 1, k + 2):
        raise RuntimeError(
            f"Expected {k + 1}D (unbatched) or {k + 2}D (batched) input to {op}, but got input "
            f"of size: {list(input._shape)}"
        )
    return nd == k + 1


def _same_padding(op, input, weight, stride, dilation, k):
    """PyTorch's padding='same': total padding d * (k - 1) per dim, the odd
    extra on the right (padded into the input explicitly)."""
    if any(s != 1 for s in S.expand(stride, k, op, "stride")):
        raise RuntimeError(f"{op}: padding='same' is not supported for strided convolutions")
    dilation = S.expand(dilation, k, op, "dilation")
    ks = weight._shape[2:] if len(weight._shape) == k + 2 else (1,) * k
    left, extra = [], []
    for d, kk in zip(dilation, ks):
        total = d * (kk - 1)
        left.append(total // 2)
        extra.append(total - 2 * (total // 2))
    if any(extra):
        pads = []
        for e in reversed(extra):
            pads += [0, e]

        input = constant_pad_nd(input, pads, 0)
    return input, tuple(left)


def _conv_nd(op, k, input, weight, bias, stride, padding, dilation, groups):
    unbatched = _batched(op, input, k)
    if unbatched:
        input = input.unsqueeze(0)
    if isinstance(padding, str):
        if padding == "valid":
            padding = 0
        elif padding == "same":
            S.check_tensor(op, weight, "weight")
            input, padding = _same_padding(op, input, weight, stride, dilation, k)
        else:
            raise RuntimeError(f"{op}: Invalid padding string: '{padding}'")
    out = convolution(input, weight, bias, stride, padding, dilation, False, 0, groups)
    return out.squeeze(0) if unbatched else out


@defop(
    composite=True,
    method=False,
    autocast="lower_precision_fp",
)
def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-D convolution over (N, C, L) or unbatched (C, L); padding may be 'same'/'valid'.

    >>> conv1d(ones(1, 2, 5), ones(3, 2, 3)).shape
    ember.Size([1, 3, 3])
    """
    return _conv_nd("conv1d", 1, input, weight, bias, stride, padding, dilation, groups)


@defop(
    composite=True,
    method=False,
    autocast="lower_precision_fp",
)
def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-D convolution over (N, C, H, W) or unbatched (C, H, W); padding may be
    'same'/'valid'.

    >>> conv2d(ones(1, 3, 8, 8), ones(4, 3, 3, 3), padding=1).shape
    ember.Size([1, 4, 8, 8])
    """
    return _conv_nd("conv2d", 2, input, weight, bias, stride, padding, dilation, groups)


@defop(
    composite=True,
    method=False,
    autocast="lower_precision_fp",
)
def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """3-D convolution over (N, C, D, H, W) or unbatched (C, D, H, W)."""
    return _conv_nd("conv3d", 3, input, weight, bias, stride, padding, dilation, groups)


def _conv_transpose_nd(
    op, k, input, weight, bias, stride, padding, output_padding, groups, dilation
):
    unbatched = _batched(op, input, k)
    if unbatched:
        input = input.unsqueeze(0)
    if isinstance(padding, str):
        raise RuntimeError(f"{op}: padding must be an int or a tuple of ints, not '{padding}'")
    out = convolution(input, weight, bias, stride, padding, dilation, True, output_padding, groups)
    return out.squeeze(0) if unbatched else out


@defop(
    composite=True,
    method=False,
    autocast="lower_precision_fp",
)
def conv_transpose1d(
    input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1
):
    """Transposed 1-D convolution (the gradient of conv1d with respect to its input)."""
    return _conv_transpose_nd(
        "conv_transpose1d",
        1,
        input,
        weight,
        bias,
        stride,
        padding,
        output_padding,
        groups,
        dilation,
    )


@defop(
    composite=True,
    method=False,
    autocast="lower_precision_fp",
)
def conv_transpose2d(
    input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1
):
    """Transposed 2-D convolution; weight is (in_channels, out_channels / groups, kh, kw).

    >>> conv_transpose2d(ones(1, 4, 3, 3), ones(4, 2, 3, 3), stride=2).shape
    ember.Size([1, 2, 7, 7])
    """
    return _conv_transpose_nd(
        "conv_transpose2d",
        2,
        input,
        weight,
        bias,
        stride,
        padding,
        output_padding,
        groups,
        dilation,
    )


@defop(
    composite=True,
    method=False,
    autocast="lower_precision_fp",
)
def conv_transpose3d(
    input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1
):
    """Transposed 3-D convolution."""
    return _conv_transpose_nd(
        "conv_transpose3d",
        3,
        input,
        weight,
        bias,
        stride,
        padding,
        output_padding,
        groups,
        dilation,
    )


# -------------------------------------------------------- im2col/col2im


def _block_args(op, kernel_size, dilation, padding, stride):
    k = S.pool_param(kernel_size, 2, op, "kernel_size")
    d = S.pool_param(dilation, 2, op, "dilation")
    p = S.pool_param(padding, 2, op, "padding")
    s = S.pool_param(stride, 2, op, "stride")
    if any(v <= 0 for v in k):
        raise RuntimeError(
            f"{op}: kernel size should be greater than zero, but got kernel_size={list(k)}"
        )
    if any(v <= 0 for v in d):
        raise RuntimeError(
            f"{op}: dilation should be greater than zero, but got dilation={list(d)}"
        )
    if any(v < 0 for v in p):
        raise RuntimeError(f"{op}: padding should be non-negative, but got padding={list(p)}")
    if any(v <= 0 for v in s):
        raise RuntimeError(f"{op}: stride should be greater than zero, but got stride={list(s)}")
    return k, d, p, s


def _blocks(op, size, k, d, p, s):
    blocks = tuple(
        (i + 2 * pp - (dd * (kk - 1) + 1)) // ss + 1 for i, kk, dd, pp, ss in zip(size, k, d, p, s)
    )
    if any(b < 1 for b in blocks):
        raise RuntimeError(
            f"{op}: Given input with spatial size {tuple(size)}, kernel_size={tuple(k)}, "
            f"dilation={tuple(d)}, padding={tuple(p)}, calculated shape of the array of sliding "
            f"blocks as {blocks}, but its components must be at least one."
        )
    return blocks


@defop(method=False)
def im2col(input, kernel_size, dilation, padding, stride):
    """Sliding local blocks (PyTorch's F.unfold): (N, C, H, W) -> (N, C * kh * kw, L)."""
    op = "im2col"
    S.check_tensor(op, input, "input")
    nd = len(input._shape)
    if nd not in (3, 4):
        raise RuntimeError(
            f"{op}: Input Error: Only 3D or 4D input Tensors are supported (got {nd}D)"
        )
    k, d, p, s = _block_args(op, kernel_size, dilation, padding, stride)
    x = input if nd == 4 else input.unsqueeze(0)
    n, c, h, w = x._shape
    if c == 0 or h == 0 or w == 0:
        raise RuntimeError(f"{op}: Expected non-empty input (got size {list(input._shape)})")
    blocks = _blocks(op, (h, w), k, d, p, s)
    dtype = input._dtype
    if dtype is D.bool_:
        raise RuntimeError(f"\"{op}\" not implemented for 'Bool'")
    cd = S.compute_dtype(dtype)
    xc = S.prepared(x, cd)
    L = blocks[0] * blocks[1]
    col = empty((n, c * k[0] * k[1], L), cd, x._storage._device)
    geom = S.geometry((h, w), k, blocks, s, p, d)
    fn = (xc._storage._device._kn if col._numel > (1 << 16) else xc._storage._device._k).ec_im2col
    check(fn(cd.code, n, c, geom, xc._ptr, col._ptr), op)
    col = S.finish(col, dtype)
    return col if nd == 4 else col.squeeze(0)


@defop(method=False)
def col2im(input, output_size, kernel_size, dilation, padding, stride):
    """Sum sliding local blocks back into an image (PyTorch's F.fold):
    (N, C * kh * kw, L) -> (N, C, H, W)."""
    op = "col2im"
    S.check_tensor(op, input, "input")
    nd = len(input._shape)
    if nd not in (2, 3):
        raise RuntimeError(
            f"{op}: Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size "
            f"and non-zero dimensions for input, but got: {list(input._shape)}"
        )
    size = S.pool_param(output_size, 2, op, "output_size")
    k, d, p, s = _block_args(op, kernel_size, dilation, padding, stride)
    x = input if nd == 3 else input.unsqueeze(0)
    n, ck, L = x._shape
    kvol = k[0] * k[1]
    if ck % kvol:
        raise RuntimeError(
            f"{op}: Expected size of input's dimension 1 to be divisible by the product of "
            f"kernel_size, but got input.size(1)={ck} and kernel_size={tuple(k)}"
        )
    blocks = _blocks(op, size, k, d, p, s)
    if blocks[0] * blocks[1] != L:
        raise RuntimeError(
            f"{op}: Given output_size={tuple(size)}, kernel_size={tuple(k)}, dilation={tuple(d)}, "
            f"padding={tuple(p)}, stride={tuple(s)}, expected size of input's dimension 2 to "
            f"match the calculated number of sliding blocks {blocks[0]} * {blocks[1]} = "
            f"{blocks[0] * blocks[1]}, but got input.size(2)={L}."
        )
    dtype = input._dtype
    if dtype is D.bool_:
        raise RuntimeError(f"\"{op}\" not implemented for 'Bool'")
    cd = S.compute_dtype(dtype)
    xc = S.prepared(x, cd)
    c = ck // kvol
    img = empty((n, c) + size, cd, x._storage._device)
    geom = S.geometry(size, k, blocks, s, p, d)
    fn = (xc._storage._device._kn if xc._numel > (1 << 16) else xc._storage._device._k).ec_col2im
    check(fn(cd.code, n, c, geom, xc._ptr, img._ptr), op)
    img = S.finish(img, dtype)
    return img if nd == 3 else img.squeeze(0)


@defop(composite=True, method=False, autocast="lower_precision_fp")
def conv_tbc(input, weight, bias, pad=0):
    """1-d convolution over (time, batch, channels) input with a (kernel, in, out)
    weight: conv1d on the (batch, channels, time) view, as PyTorch's conv_tbc."""
    if input.dim() != 3:
        raise RuntimeError("Input must have 3 dims: time, batch, in_channel")
    if weight.dim() != 3:
        raise RuntimeError(
            "Weight tensor must have 3 dims: kernel_width, in_channels, out_channels."
        )
    if bias.dim() != 1:
        raise RuntimeError("Bias must be 1-D")
    if input.size(2) != weight.size(1):
        raise RuntimeError("Input dim 2 (input channels) is not == dim 1 in the weight tensor")
    if weight.size(2) != bias.size(0):
        raise RuntimeError("Bias size must equal dim 2 in the weight tensor (output channels).")
    out = conv1d(input.permute(1, 2, 0), weight.permute(2, 1, 0), bias, 1, pad)
    return out.permute(2, 0, 1)
