"""Sampling ops: grid_sampler (bilinear, nearest, bicubic; C kernels both ways,
csrc/cpu/nn/sampling.c), affine_grid_generator (a composite of matmuls), max_unpool
(a composite scatter; max_unpool1d/2d/3d take the pooling's geometry) and the
CTC loss (forward-backward in log space in C).

The core ops ``grid_sampler`` and ``_ctc_loss`` have backward ops
(``_grid_sampler_backward``, ``_ctc_loss_backward``) that, as in PyTorch, are
not differentiable themselves.
"""

from ember_core._base.dispatch import defop
from ember_core._base.lib import check
from ember_core._ops.nn import spatial as S
from ember_core._ops.pointwise.elementwise import _tname, where
from ember_core._ops.shape.joining import stack
from ember_core._tensor import dtype as D
from ember_core._tensor.creation import linspace, ones, tensor, zeros
from ember_core._tensor.tensor import Tensor, empty

_NOGIL_ELEMS = 1 << 16

_MODES = {"bilinear": 0, "nearest": 1, "bicubic": 2}
_PADDINGS = {"zeros": 0, "border": 1, "reflection": 2}


def _fn(name, work, dev):
    return getattr(dev._kn if work > _NOGIL_ELEMS else dev._k, name)


def _prod(sizes):
    n = 1
    for s in sizes:
        n *= s
    return n


# -------------------------------------------------------------- grid_sample


def _grid_checks(input, grid, interpolation_mode):
    op = "grid_sampler()"
    S.check_tensor("grid_sampler", input, "input")
    S.check_tensor("grid_sampler", grid, "grid")
    if input._storage._device != grid._storage._device:
        raise RuntimeError(
            f"{op}: expected input and grid to be on same device, but input is on "
            f"{input._storage._device} and grid is on {grid._storage._device}"
        )
    if input._dtype is not grid._dtype:
        raise RuntimeError(
            f"{op}: expected input and grid to have same dtype, but input has "
            f"{input._dtype} and grid has {grid._dtype}"
        )
    ni, ng = len(input._shape), len(grid._shape)
    if ni != ng or ni not in (4, 5):
        raise RuntimeError(
            f"{op}: expected 4D or 5D input and grid with same number of dimensions, but got "
            f"input with sizes {list(input._shape)} and grid with sizes {list(grid._shape)}"
        )
    if input._shape[0] != grid._shape[0]:
        raise RuntimeError(
            f"{op}: expected grid and input to have same batch size, but got input with sizes "
            f"{list(input._shape)} and grid with sizes {list(grid._shape)}"
        )
    k = ni - 2
    if grid._shape[-1] != k:
        raise RuntimeError(
            f"{op}: expected grid to have size {k} in last dimension, but got grid with sizes "
            f"{list(grid._shape)}"
        )
    for i in range(2, ni):
        if input._shape[i] == 0:
            raise RuntimeError(
                f"{op}: expected input to have non-empty spatial dimensions, but input has "
                f"sizes {list(input._shape)} with dimension {i} being empty"
            )
    if interpolation_mode == 2 and k == 3:
        raise RuntimeError(f"{op}: bicubic interpolation only supports 4D input")
    if interpolation_mode not in (0, 1, 2):
        raise RuntimeError(f"{op}: unknown interpolation mode {interpolation_mode!r}")
    dt = input._dtype
    if not dt.is_floating_point:
        name = "grid_sampler_2d_cpu" if k == 2 else "grid_sampler_3d_cpu"
        raise NotImplementedError(f"\"{name}\" not implemented for '{_tname(dt)}'")
    return k


@defop(method=False, autocast="fp32")
def grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners):
    """Sample input (N, C, [D,] H, W) at the normalised grid positions (N, [Do,]
    Ho, Wo, 2 or 3): PyTorch's torch.grid_sampler, with integer modes
    (interpolation 0 bilinear, 1 nearest, 2 bicubic; padding 0 zeros, 1 border,
    2 reflection).  ember.nn.functional.grid_sample takes the names."""
    k = _grid_checks(input, grid, interpolation_mode)
    if padding_mode not in (0, 1, 2):
        raise RuntimeError(f"grid_sampler(): unknown padding mode {padding_mode!r}")
    dtype = input._dtype
    cd = S.compute_dtype(dtype)
    x, g = S.prepared(input, cd), S.prepared(grid, cd)
    n, c = input._shape[:2]
    out = grid._shape[1:-1]
    y = empty((n, c) + out, cd, x._storage._device)
    if y._numel:
        check(
            _fn("ec_grid_sample_forward", y._numel * 4, x._storage._device)(
                cd.code,
                k,
                n,
                c,
                S.int3(input._shape[2:]),
                S.int3(out),
                interpolation_mode,
                padding_mode,
                bool(align_corners),
                x._ptr,
                g._ptr,
                y._ptr,
            ),
            "grid_sampler",
        )
    return S.finish(y, dtype)


@defop(
    method=False,
    differentiable=False,
)
def _grid_sampler_backward(
    grad_output,
    input,
    grid,
    interpolation_mode,
    padding_mode,
    align_corners,
    output_mask=(True, True),
):
    """(grad_input, grad_grid) of grid_sampler; an entry of output_mask that is
    False gives zeros without computing them."""
    op = "grid_sampler_backward"
    k = _grid_checks(input, grid, interpolation_mode)
    n, c = input._shape[:2]
    out = grid._shape[1:-1]
    if grad_output._shape != (n, c) + out:
        raise RuntimeError(
            f"{op}: expected grad_output of size {[n, c, *out]}, got {list(grad_output._shape)}"
        )
    dtype = input._dtype
    cd = S.compute_dtype(dtype)
    x, g, gy = S.prepared(input, cd), S.prepared(grid, cd), S.prepared(grad_output, cd)
    dev = x._storage._device
    gx = empty(input._shape, cd, dev)
    gg = empty(grid._shape, cd, dev)
    want_x, want_g = bool(output_mask[0]), bool(output_mask[1])
    if not want_x or gy._numel == 0:
        gx.zero_()
    if not want_g or gy._numel == 0:
        gg.zero_()
    if gy._numel and (want_x or want_g):
        check(
            _fn("ec_grid_sample_backward", gy._numel * 8, gy._storage._device)(
                cd.code,
                k,
                n,
                c,
                S.int3(input._shape[2:]),
                S.int3(out),
                interpolation_mode,
                padding_mode,
                bool(align_corners),
                gy._ptr,
                x._ptr,
                g._ptr,
                gx._ptr if want_x else 0,
                gg._ptr if want_g else 0,
            ),
            op,
        )
    return S.finish(gx, dtype), S.finish(gg, dtype)


@defop(
    composite=True,
    method=False,
    autocast="fp32",
)
def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    """Sample input (N, C, H, W) (or 5-D) at grid (N, Ho, Wo, 2) positions in
    [-1, 1] (PyTorch's F.grid_sample).

    >>> grid_sample(ones(1, 1, 2, 2), zeros(1, 1, 1, 2), align_corners=False)
    tensor([[[[1.]]]])
    """
    if mode not in _MODES:
        raise ValueError(
            "nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or "
            f"'bicubic', but got: '{mode}'"
        )
    if padding_mode not in _PADDINGS:
        raise ValueError(
            "nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or "
            f"'reflection', but got: '{padding_mode}'"
        )
    return grid_sampler(input, grid, _MODES[mode], _PADDINGS[padding_mode], bool(align_corners))


# -------------------------------------------------------------- affine_grid


def _linspace_from_neg_one(theta, steps, align_corners):
    if steps <= 1:
        return zeros((1,), dtype=theta._dtype, device=theta._storage._device)
    r = linspace(-1.0, 1.0, steps, dtype=theta._dtype, device=theta._storage._device)
    if not align_corners:
        r = r * ((steps - 1) / steps)
    return r


@defop(composite=True, method=False)
def affine_grid_generator(theta, size, align_corners):
    """The sampling grid (N, H, W, 2) (or (N, D, H, W, 3)) of the affine maps
    theta (N, 2, 3) (or (N, 3, 4)): base coordinates (x, y[, z], 1) times
    theta transposed, one batched matmul (so theta gets its gradient from it)."""

    size = tuple(int(s) for s in size)
    sp = size[2:]
    k = len(sp)
    dev = theta._storage._device
    axes = [_linspace_from_neg_one(theta, s, align_corners) for s in sp]  # (D,) H, W
    coords = []
    for j in range(k):  # x varies along W (the last dim), y along H, z along D
        ax = axes[k - 1 - j]
        shape = [1] * k
        shape[k - 1 - j] = sp[k - 1 - j]
        coords.append(ax.reshape(tuple(shape)).expand(sp))
    coords.append(ones(sp, dtype=theta._dtype, device=dev))
    base = stack(coords, -1).reshape((1, _prod(sp), k + 1))
    grid = base.expand((size[0], _prod(sp), k + 1)).bmm(theta.transpose(1, 2))
    return grid.reshape((size[0],) + sp + (k,))


# ---------------------------------------------------------------- max_unpool


@defop(composite=True, method=False)
def max_unpool(input, indices, output_size):
    """The partial inverse of max pooling over the last len(output_size) dims:
    each value placed at its flat index (from max_pool's return_indices) in a
    zero output plane of output_size."""
    out_sp = tuple(int(s) for s in output_size)
    k = len(out_sp)
    op = f"max_unpooling{k}d"
    S.check_tensor(op, input, "input")
    S.check_tensor(op, indices, "indices")
    if indices._dtype is not D.int64:
        raise RuntimeError(
            f"{op}(): elements in indices should be type int64 but got: {indices._dtype}"
        )
    if indices._shape != input._shape:
        raise RuntimeError(
            f"{op}(): Expected shape of indices to be same as that of the input tensor "
            f"({list(input._shape)}) but got indices tensor with shape: {list(indices._shape)}"
        )
    nd = len(input._shape)
    if nd not in (k + 1, k + 2) or any(s == 0 for s in input._shape[1:]):
        raise RuntimeError(
            f"{op}(): Expected {k + 1}d or {k + 2}d tensor with non-zero dimensions for input "
            f"(got {list(input._shape)})"
        )
    if any(s <= 0 for s in out_sp):
        raise RuntimeError(f"{op}(): output_size must be positive, got {list(out_sp)}")

    lead = input._shape[: nd - k]
    vol = _prod(out_sp)
    flat_idx = indices.reshape(lead + (-1,))
    # on the CPU the indices are checked here, with PyTorch's message; a CUDA
    # scatter checks them on the device (raised at the next synchronisation, as
    # PyTorch's CUDA kernel asserts), so unpooling reads nothing back
    if flat_idx._numel and flat_idx._storage._device.type == "cpu":
        lo, hi = int(flat_idx.min()), int(flat_idx.max())
        if lo < 0 or hi >= vol:
            bad = lo if lo < 0 else hi
            raise RuntimeError(
                f"{op}(): Found an invalid max index: {bad} (output volumes are of size "
                f"{'x'.join(map(str, out_sp))})"
            )
    out = zeros(lead + (vol,), dtype=input._dtype, device=input._storage._device)
    out = out.scatter(-1, flat_idx, input.reshape(lead + (-1,)))
    return out.reshape(lead + out_sp)


# torch.nn.functional's forms: the output size from the pooling's geometry


def _unpool_output_size(input, kernel_size, stride, padding, output_size):
    input_size = input.shape
    k = len(kernel_size)
    default_size = [
        (input_size[-k + d] - 1) * stride[d] + kernel_size[d] - 2 * padding[d] for d in range(k)
    ]
    if output_size is None:
        return default_size
    output_size = list(output_size)
    if len(output_size) == k + 2:
        output_size = output_size[2:]
    if len(output_size) != k:
        raise ValueError(
            f"output_size should be a sequence containing {k} or {k + 2} elements, but it has a "
            f"length of '{len(output_size)}'"
        )
    for d in range(k):
        min_size, max_size = default_size[d] - stride[d], default_size[d] + stride[d]
        if not (min_size < output_size[d] < max_size):
            raise ValueError(
                f'invalid output_size "{output_size}" (dim {d} must be between {min_size} and '
                f"{max_size})"
            )
    return [int(s) for s in output_size]


def _ntuple_arg(v, k):
    if isinstance(v, (list, tuple)):
        v = tuple(v)
        return v * k if len(v) == 1 else v
    return (v,) * k


def _max_unpool_nd(k, input, indices, kernel_size, stride, padding, output_size):
    kernel_size = _ntuple_arg(kernel_size, k)
    stride = kernel_size if stride is None else _ntuple_arg(stride, k)
    padding = _ntuple_arg(padding, k)
    out = _unpool_output_size(input, kernel_size, stride, padding, output_size)
    return max_unpool(input, indices, tuple(out))


@defop(composite=True, method=False)
def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of max_pool1d: values placed at their indices (from
    return_indices=True), zeros elsewhere."""
    return _max_unpool_nd(1, input, indices, kernel_size, stride, padding, output_size)


@defop(composite=True, method=False, autocast="fp32")
def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of max_pool2d: values placed at their indices (from
    return_indices=True), zeros elsewhere."""
    return _max_unpool_nd(2, input, indices, kernel_size, stride, padding, output_size)


@defop(composite=True, method=False, autocast="fp32")
def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of max_pool3d: values placed at their indices (from
    return_indices=True), zeros elsewhere."""
    return _max_unpool_nd(3, input, indices, kernel_size, stride, padding, output_size)


# ------------------------------------------------------------------- CTC loss


def _lengths(v, name):
    """Lengths as an int64 tensor of one dim (from a tensor or ints)."""

    if isinstance(v, Tensor):
        if v._dtype.is_floating_point or v._dtype is D.bool_:
            raise RuntimeError(f"ctc_loss(): {name} must be integral")
        return S.prepared(v.reshape((-1,)), D.int64)
    if isinstance(v, int):
        v = (v,)
    return tensor([int(s) for s in v], dtype=D.int64)


def _ctc_prepare(log_probs, targets, input_lengths, target_lengths, blank):
    op = "ctc_loss_cpu"
    S.check_tensor("ctc_loss", log_probs, "log_probs")
    S.check_tensor("ctc_loss", targets, "targets")
    if len(log_probs._shape) != 3:
        raise RuntimeError(
            f"ctc_loss(): expected log_probs of 3 dims (T, N, C), got {list(log_probs._shape)}"
        )
    if not log_probs._dtype.is_floating_point:
        raise NotImplementedError(
            f"\"ctc_loss_cpu\" not implemented for '{_tname(log_probs._dtype)}'"
        )
    if targets._dtype.is_floating_point or targets._dtype is D.bool_:
        raise RuntimeError(
            f"ctc_loss(): expected targets of an integer dtype, got {targets._dtype}"
        )
    tmax, n, c = log_probs._shape
    dev = log_probs._storage._device
    if targets._storage._device != dev:
        raise RuntimeError(
            f"ctc_loss(): expected log_probs and targets on the same device, but log_probs is "
            f"on {dev} and targets on {targets._storage._device}"
        )
    if not (0 <= blank < c):
        raise RuntimeError("blank must be in label range")
    il, tl = _lengths(input_lengths, "input_lengths"), _lengths(target_lengths, "target_lengths")
    if il._numel != n:
        raise RuntimeError("input_lengths must be of size batch_size")
    if tl._numel != n:
        raise RuntimeError("target_lengths must be of size batch_size")
    tls = tl.tolist()
    smax = max(tls, default=0)
    if len(targets._shape) == 1:
        offs, pos = [], 0
        for t in tls:
            offs.append(pos)
            pos += t
        if targets._shape[0] < pos:
            raise RuntimeError(
                f"Expected tensor to have size {pos} at dimension 0, but got size "
                f"{targets._shape[0]} for argument #2 'targets' (while checking arguments for "
                f"{op})"
            )
        tg = S.prepared(targets, D.int64)
        s_stride = 0
    elif len(targets._shape) == 2:
        if targets._shape[0] != n:
            raise RuntimeError(
                f"Expected tensor to have size {n} at dimension 0, but got size "
                f"{targets._shape[0]} for argument #2 'targets' (while checking arguments for "
                f"{op})"
            )
        if targets._shape[1] < smax:
            raise RuntimeError(
                f"Expected tensor to have size at least {smax} at dimension 1, but got size "
                f"{targets._shape[1]} for argument #2 'targets' (while checking arguments for "
                f"{op})"
            )
        tg = S.prepared(targets, D.int64)
        s_stride = targets._shape[1]
        offs = [b * s_stride for b in range(n)]
    else:
        raise RuntimeError(
            f"ctc_loss(): expected targets of 1 or 2 dims, got {list(targets._shape)}"
        )
    for v in il.tolist():
        if v > tmax:
            raise RuntimeError(
                f"Expected input_lengths to have value at most {tmax}, but got value {v} (while "
                f"checking arguments for {op})"
            )
        if v < 0:
            raise RuntimeError(f"ctc_loss(): input_lengths must be non-negative, got {v}")
    if any(t < 0 for t in tls):
        raise RuntimeError("ctc_loss(): target_lengths must be non-negative")

    # the kernels read offsets and lengths where they run (on CUDA, device
    # arrays; target values out of range raise at the next synchronisation there)
    off = tensor(offs, dtype=D.int64, device=dev)
    return tmax, n, c, smax, tg, off, il.to(dev), tl.to(dev)


@defop(
    method=False,
)
def _ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, zero_infinity=False):
    """(neg_log_likelihood (N), log_alpha (N, T, 2 S + 1)) of the CTC loss of
    log_probs (T, N, C); targets padded (N, S) or concatenated (sum of
    target_lengths)."""
    tmax, n, c, smax, tg, off, il, tl = _ctc_prepare(
        log_probs, targets, input_lengths, target_lengths, blank
    )
    dtype = log_probs._dtype
    cd = S.compute_dtype(dtype)
    lp = S.prepared(log_probs, cd)
    dev = lp._storage._device
    nll = empty((n,), cd, dev)
    la = empty((n, tmax, 2 * smax + 1), cd, dev)
    check(
        _fn("ec_ctc_loss_forward", la._numel * 4, lp._storage._device)(
            cd.code,
            tmax,
            n,
            c,
            smax,
            lp._ptr,
            tg._ptr,
            tg._numel,
            off._ptr,
            il._ptr,
            tl._ptr,
            blank,
            la._ptr,
            nll._ptr,
        ),
        "ctc_loss",
    )
    return S.finish(nll, dtype), S.finish(la, dtype)


@defop(
    method=False,
    differentiable=False,
)
def _ctc_loss_backward(
    grad,
    log_probs,
    targets,
    input_lengths,
    target_lengths,
    neg_log_likelihood,
    log_alpha,
    blank,
    zero_infinity=False,
):
    """The gradient of _ctc_loss w.r.t. log_probs, PyTorch's (Note [CTC in log
    space], csrc/cpu/nn/sampling_tmpl.h): grad (N,) or one value for all."""
    tmax, n, c, smax, tg, off, il, tl = _ctc_prepare(
        log_probs, targets, input_lengths, target_lengths, blank
    )
    dtype = log_probs._dtype
    cd = S.compute_dtype(dtype)
    lp = S.prepared(log_probs, cd)
    la = S.prepared(log_alpha, cd)
    z = S.prepared(neg_log_likelihood, cd)
    if la._shape != (n, tmax, 2 * smax + 1) or z._shape != (n,):
        raise RuntimeError(
            f"ctc_loss_backward: log_alpha {list(la._shape)} or neg_log_likelihood "
            f"{list(z._shape)} do not match log_probs {list(log_probs._shape)}"
        )
    g = S.prepared(grad.reshape((-1,)), cd)
    if g._numel not in (1, n):
        raise RuntimeError(f"ctc_loss_backward: grad of {g._numel} values for a batch of {n}")
    out = empty((tmax, n, c), cd, lp._storage._device)
    check(
        _fn("ec_ctc_loss_backward", out._numel * 4, lp._storage._device)(
            cd.code,
            tmax,
            n,
            c,
            smax,
            lp._ptr,
            tg._ptr,
            tg._numel,
            off._ptr,
            il._ptr,
            tl._ptr,
            blank,
            la._ptr,
            z._ptr,
            g._ptr,
            1 if g._numel == n and n > 1 else 0,
            bool(zero_infinity),
            out._ptr,
        ),
        "ctc_loss_backward",
    )
    return S.finish(out, dtype)


_REDUCTIONS = {"none": 0, "mean": 1, "sum": 2, 0: 0, 1: 1, 2: 2}


@defop(
    composite=True,
    method=False,
    autocast="fp32",
)
def ctc_loss(
    log_probs,
    targets,
    input_lengths,
    target_lengths,
    blank=0,
    reduction="mean",
    zero_infinity=False,
):
    """Connectionist Temporal Classification loss of log_probs (T, N, C) (or (T,
    C) unbatched) against targets; 'mean' divides each loss by its target
    length (at least 1) before averaging over the batch.  reduction: 'none',
    'mean', 'sum' (or PyTorch's enum 0, 1, 2)."""

    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    code = _REDUCTIONS[reduction]
    S.check_tensor("ctc_loss", log_probs, "log_probs")
    batched = len(log_probs._shape) == 3
    lp = log_probs if batched else log_probs.unsqueeze(1)
    res = _ctc_loss(lp, targets, input_lengths, target_lengths, blank, zero_infinity)[0]
    if zero_infinity:
        res = where(res == float("inf"), res.new_zeros(()), res)
    if code == 1:
        tl = _lengths(target_lengths, "target_lengths").to(res.device).to(res.dtype)
        tl = tl.clamp_min(1)
        return (res / tl).mean()
    if code == 2:
        return res.sum()
    return res if batched else res.squeeze(0)
