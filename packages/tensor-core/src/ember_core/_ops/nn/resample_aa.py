"""Anti-aliased bilinear and bicubic resampling (F.interpolate(..., antialias=True)),
PyTorch's algorithm (after PIL's): separable, one weight matrix per spatial dim.

Output pixel i of a dim resampled by `scale` (input / output size) is centred at
scale * (i + 0.5) and reads every input pixel within `support` of it, weighted by
the filter (triangle for bilinear, Keys cubic with a = -0.5 for bicubic) stretched
by the scale when downsampling, the weights normalised to sum to one.  Both
passes are matrix products, so the gradient is the transposed products.
"""

import numpy as np

# filter support in input pixels at scale 1, and the filter itself
_INTERP_SIZE = {"bilinear": 2, "bicubic": 4}


def _triangle(x):
    x = np.abs(x)
    return np.where(x < 1.0, 1.0 - x, 0.0)


def _cubic(x, a=-0.5):
    x = np.abs(x)
    near = ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0
    far = (((x - 5.0) * x + 8.0) * x - 4.0) * a
    return np.where(x < 1.0, near, np.where(x < 2.0, far, 0.0))


def _area_pixel_scale(in_size, out_size, align_corners, scale_factor):
    if align_corners:
        return (in_size - 1) / (out_size - 1) if out_size > 1 else 0.0
    if scale_factor is not None and scale_factor > 0:
        return 1.0 / scale_factor
    return in_size / out_size


def weight_matrix(mode, in_size, out_size, align_corners, scale_factor, np_dtype):
    """(out_size, in_size) matrix M with out = M @ in along one dim."""
    # ATen computes the scale and weights in the input's floating type
    scale = np_dtype(_area_pixel_scale(in_size, out_size, align_corners, scale_factor))
    half = np_dtype(_INTERP_SIZE[mode] * 0.5)
    support = half * scale if scale >= 1.0 else half
    invscale = np_dtype(1.0) / scale if scale >= 1.0 else np_dtype(1.0)
    filt = _triangle if mode == "bilinear" else _cubic
    m = np.zeros((out_size, in_size), dtype=np_dtype)
    for i in range(out_size):
        center = scale * np_dtype(i + 0.5)
        xmin = max(int(center - support + np_dtype(0.5)), 0)
        xmax = min(int(center + support + np_dtype(0.5)), in_size)
        j = np.arange(xmin, xmax)
        w = filt((j.astype(np_dtype) - center + np_dtype(0.5)) * invscale).astype(np_dtype)
        total = w.sum(dtype=np_dtype)
        if total != 0.0:
            w = w / total
        m[i, xmin:xmax] = w
    return m


def interpolate_antialias(input, output_size, mode, align_corners, scales):
    """Resample a (N, C, H, W) tensor to output_size with anti-aliasing."""
    import ember_core as ec
    from ember_core._ops.nn.resample import _check_sizes

    op = f"_upsample_{mode}2d_aa"
    _check_sizes(op, tuple(input.shape[2:]), tuple(output_size))
    if input.dtype not in (ec.float32, ec.float64):
        raise NotImplementedError(
            f"{op}: anti-aliased resampling is implemented for float32 and float64, got "
            f"{input.dtype}"
        )
    np_dtype = np.float64 if input.dtype == ec.float64 else np.float32
    (h, w), (oh, ow) = tuple(input.shape[2:]), tuple(output_size)
    sh, sw = scales if scales is not None else (None, None)
    mh = ec.from_numpy(weight_matrix(mode, h, oh, align_corners, sh, np_dtype))
    mw = ec.from_numpy(weight_matrix(mode, w, ow, align_corners, sw, np_dtype).T.copy())
    mh, mw = (
        mh.to(device=input.device, dtype=input.dtype),
        mw.to(device=input.device, dtype=input.dtype),
    )
    return ec.matmul(ec.matmul(mh, input), mw)
