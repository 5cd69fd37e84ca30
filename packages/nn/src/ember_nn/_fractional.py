"""Fractional max pooling (Graham, 2014): pooling windows of a fixed size placed at
pseudo-random, increasing offsets so that any output size can be reached.

The offsets of each (batch, channel) plane come from one sample u in [0, 1) per
spatial dim, exactly as ATen computes them (in the input's floating type):
    alpha = (in - k) / (out - 1);  start[i] = int((i + u) * alpha) - int(u * alpha)
and the last window is pinned to the end of the input.  The pooling scans the
window offsets, one gather per offset and a running (value, index) maximum in
ATen's order (a later element wins when greater or NaN); the values are then
gathered once more at the chosen indices so that the gradient is gather's
scatter-add.  Indices are flat positions inside each input plane, as in PyTorch.
"""

import itertools

import numpy as np

import ember_autograd as ag
import ember_core as ec


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
        samples = ec.rand(n_batch, input.size(-nd - 1), nd, dtype=input.dtype, device=input.device)
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

    np_dtype = np.float64 if x.dtype == ec.float64 else np.float32
    u = samples.detach().cpu().numpy()[:n].astype(np_dtype)
    # flat in-plane index of each window's first element: (n, c, prod(out))
    plane_strides = [int(np.prod(spatial[d + 1 :])) for d in range(nd)]
    base = np.zeros((n, c) + out, dtype=np.int64)
    for d in range(nd):
        starts = _intervals(u[:, :, _SAMPLE_ORDER[nd][d]], spatial[d], out[d], kernel[d], np_dtype)
        shape = (n, c) + tuple(out[e] if e == d else 1 for e in range(nd))
        base = base + starts.reshape(shape) * plane_strides[d]
    base = ec.from_numpy(np.ascontiguousarray(base.reshape(n, c, -1))).to(x.device)
    offsets = [
        sum(o * st for o, st in zip(combo, plane_strides))
        for combo in itertools.product(*(range(k) for k in kernel))
    ]
    flat = x.reshape(n, c, -1)
    # ATen's scan of each window: a later element wins when it is greater or NaN
    with ag.no_grad():
        plane = flat.detach()
        indices = base + offsets[0]
        best = ec.gather(plane, 2, indices)
        for off in offsets[1:]:
            idx = base + off
            v = ec.gather(plane, 2, idx)
            take = (v > best) | ec.isnan(v)
            best = ec.where(take, v, best)
            indices = ec.where(take, idx, indices)
    # the values once more through gather, so that autograd routes the gradient
    values = ec.gather(flat, 2, indices) if flat.requires_grad else best
    values = values.reshape((n, c) + out)
    indices = indices.reshape((n, c) + out)
    if not batched:
        values, indices = values.squeeze(0), indices.squeeze(0)
    return values, indices


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


def fractional_max_pool2d(
    input,
    kernel_size,
    output_size=None,
    output_ratio=None,
    return_indices=False,
    _random_samples=None,
):
    """Fractional max pooling over (N, C, H, W) or (C, H, W).

    >>> fractional_max_pool2d(ember.randn(1, 3, 9, 9), 2, output_size=5).shape
    ember.Size([1, 3, 5, 5])
    """
    out = _fractional_max_pool(2, input, kernel_size, output_size, output_ratio, _random_samples)
    return out if return_indices else out[0]


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
