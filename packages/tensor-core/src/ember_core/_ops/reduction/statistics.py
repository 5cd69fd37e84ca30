"""Statistics over a tensor's values: quantile/nanquantile, cov/corrcoef and the
histograms (histogram, histogramdd).

quantile/nanquantile and cov/corrcoef are composites of public ops (their
gradients come from sort/gather and the arithmetic they use); the histograms
count in NumPy on the tensor's memory and are not differentiable, as in PyTorch.
"""

import builtins
import math

import numpy as np

from ember_core._base.dispatch import defop
from ember_core._base.return_types import return_type
from ember_core._interop.numpy import from_numpy
from ember_core._interop.numpy import numpy as _as_numpy
from ember_core._ops.pointwise.elementwise import where
from ember_core._tensor import dtype as D
from ember_core._tensor.creation import full, full_like, linspace, tensor
from ember_core._tensor.tensor import Tensor


def _values(t):
    """A NumPy array of t's values, whatever its autograd state and device (for the
    non-differentiable ops computed in NumPy: their results go back to t's device)."""
    if t._storage._device.type != "cpu":
        t = t.cpu()
    if t._dtype is D.bfloat16:
        t = t.to(D.float32)
    return _as_numpy(t, force=True)


def _float_of(t):
    return t if t.dtype.category >= 2 else t.to(D.get_default_dtype())


# ------------------------------------------------------------------ quantiles

_MODES = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(op, input, q, dim, keepdim, interpolation, ignore_nan):
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be Tensor")
    if input.dtype not in (D.float32, D.float64):
        raise RuntimeError(f"{op}() input tensor must be either float or double dtype")
    if interpolation not in _MODES:
        raise ValueError(
            f"{op}() interpolation must be one of linear, lower, higher, midpoint or nearest. "
            f"Got {interpolation}"
        )
    scalar_q = not isinstance(q, Tensor)
    if scalar_q:
        qt = tensor([builtins.float(q)], dtype=input.dtype, device=input.device)
    else:
        if q.dim() > 1:
            raise RuntimeError(f"{op}() q must be a scalar or 1D tensor")
        if q.dtype != input.dtype:
            raise RuntimeError(f"{op}() q tensor must be same dtype as the input tensor")
        qt = q.reshape(-1)
    if qt.numel() and (bool((qt < 0).any()) or bool((qt > 1).any())):
        raise RuntimeError(f"{op}() q values must be in the range [0, 1]")
    if input.numel() == 0 and dim is None:
        raise RuntimeError(f"{op}() input tensor must be non-empty")
    if dim is None:
        x = input.reshape(-1)
        d = 0
        out_shape = [1] * input.dim() if keepdim else []
    else:
        d = dim % builtins.max(input.dim(), 1)
        x = input if input.dim() else input.reshape(1)
        out_shape = list(input.shape)
        if input.dim():
            if keepdim:
                out_shape[d] = 1
            else:
                del out_shape[d]
    x = x.movedim(d, -1)
    n = x.shape[-1]
    s = x.sort(dim=-1).values  # NaN sorts last
    nan_mask = x.isnan()
    if ignore_nan:
        valid = (~nan_mask).sum(-1, keepdim=True).to(input.dtype)
    else:
        valid = full(x.shape[:-1] + (1,), builtins.float(n), dtype=input.dtype, device=input.device)
    rank = qt * (valid - 1).clamp(min=0)  # (..., nq)
    if interpolation == "lower":
        rank = rank.floor()
    elif interpolation == "higher":
        rank = rank.ceil()
    elif interpolation == "nearest":
        rank = rank.round()
    lo = rank.floor().long().clamp(0, builtins.max(n - 1, 0))
    hi = rank.ceil().long().clamp(0, builtins.max(n - 1, 0))
    vlo = s.gather(-1, lo)
    vhi = s.gather(-1, hi)
    if interpolation == "midpoint":
        r = vlo + (vhi - vlo) * 0.5
    elif interpolation == "linear":
        r = vlo + (vhi - vlo) * (rank - lo.to(input.dtype))
    else:
        r = vlo
    # a row with NaN: quantile gives NaN; nanquantile only when the row is all NaN
    bad = (valid == 0) if ignore_nan else nan_mask.any(-1, keepdim=True)
    r = where(bad, full_like(r, math.nan), r)
    r = r.movedim(-1, 0)  # (nq, ...)
    r = r.reshape([qt.numel()] + out_shape)
    return r[0] if scalar_q else r


@defop(composite=True, autocast="fp32", tags=("reduction",))
def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear", out=None):
    """The q-th quantiles of input along dim (all values when dim is None)."""
    r = _quantile("quantile", input, q, dim, keepdim, interpolation, False)
    return out.resize_(r.shape).copy_(r) if out is not None else r


@defop(composite=True, autocast="fp32", tags=("reduction",))
def nanquantile(input, q, dim=None, keepdim=False, *, interpolation="linear", out=None):
    """quantile, ignoring NaN values."""
    r = _quantile("nanquantile", input, q, dim, keepdim, interpolation, True)
    return out.resize_(r.shape).copy_(r) if out is not None else r


# ------------------------------------------------------------------ covariance


@defop(composite=True)
def cov(input, *, correction=1, fweights=None, aweights=None):
    """Covariance of the variables in rows (observations in columns), as numpy.cov."""
    if input.dim() > 2:
        raise RuntimeError(
            f"cov(): expected input to have two or fewer dimensions but "
            f"got an input with {input.dim()} dimensions"
        )
    x = input.reshape(1, -1) if input.dim() < 2 else input
    n = x.shape[1]
    w = None
    if fweights is not None:
        if fweights.dim() > 1 or fweights.numel() != n:
            raise RuntimeError(f"cov(): expected fweights to have one dimension and {n} elements")
        if fweights.dtype.is_floating_point:
            raise RuntimeError(
                f"cov(): expected fweights to have integral dtype but got "
                f"fweights with {fweights.dtype} dtype"
            )
        if bool((fweights < 0).any()):
            raise RuntimeError("cov(): fweights cannot be negative")
        w = fweights
    if aweights is not None:
        if aweights.dim() > 1 or aweights.numel() != n:
            raise RuntimeError(f"cov(): expected aweights to have one dimension and {n} elements")
        if not aweights.dtype.is_floating_point:
            raise RuntimeError(
                f"cov(): expected aweights to have floating point dtype but "
                f"got aweights with {aweights.dtype} dtype"
            )
        if bool((aweights < 0).any()):
            raise RuntimeError("cov(): aweights cannot be negative")
        w = aweights if w is None else w * aweights
    x = _float_of(x)
    if w is None:
        w_sum = builtins.float(n)
        avg = x.mean(1)
    else:
        w_sum = w.sum()
        avg = (x * w).sum(1) / w_sum
    if w is None:
        norm = w_sum - correction
    elif correction == 0:
        norm = w_sum
    elif aweights is None:
        norm = w_sum - correction
    else:
        norm = w_sum - correction * (w * aweights).sum() / w_sum
    if isinstance(norm, Tensor):
        norm = norm.clamp_min(0)
    else:
        norm = builtins.max(norm, 0)
    xm = x - avg.unsqueeze(1)
    xw = xm if w is None else xm * w
    c = xw.matmul(xm.transpose(0, 1)) / norm
    return c.squeeze() if input.dim() < 2 else c


@defop(composite=True)
def corrcoef(input):
    """Pearson correlation coefficients of the rows (clipped to [-1, 1])."""
    c = cov(input)
    if c.dim() == 0:
        return c / c
    d = c.diagonal()
    std = d.sqrt()
    c = c / std.unsqueeze(1)
    c = c / std.unsqueeze(0)
    return c.clamp(-1, 1)


# ------------------------------------------------------------------ histograms

_histogram = return_type("histogram", ["hist", "bin_edges"])


def _pair_out(op, out):
    if not (isinstance(out, (tuple, list)) and len(out) == 2):
        raise TypeError(f"{op}(): argument 'out' must be a tuple of 2 Tensors, not {out!r}")
    for o in out:
        if not isinstance(o, Tensor):
            raise TypeError(
                f"{op}(): argument 'out' must be a tuple of 2 Tensors, not {type(o).__name__}"
            )


@defop(composite=True, differentiable=False)
def histogram(input, bins=100, *, range=None, weight=None, density=False, out=None):  # noqa: A002
    """(hist, bin_edges): counts (or weights, or a density) per bin, as numpy.histogram."""
    if not input.dtype.is_floating_point:
        raise RuntimeError(
            f"torch.histogram: input tensor and bins tensors should have the same dtype, but got "
            f"input {input.dtype}"
        )
    x = _values(input).reshape(-1)
    w = None if weight is None else _values(weight).reshape(-1)
    b = _values(bins) if isinstance(bins, Tensor) else bins
    if isinstance(b, int) and b <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {b} for dimension 0")
    rng = None if range is None else (builtins.float(range[0]), builtins.float(range[1]))
    if rng is None and not isinstance(b, np.ndarray) and x.size == 0:
        rng = (0.0, 0.0)
    hist, edges = np.histogram(x, bins=b, range=rng, weights=w, density=density)
    dt = input.dtype
    dev = input.device
    r = _histogram(
        from_numpy(np.ascontiguousarray(hist)).to(dev, dt),
        from_numpy(np.ascontiguousarray(edges)).to(dev, dt),
    )
    if out is not None:
        _pair_out("histogram", out)
        out[0].resize_(tuple(r.hist.shape)).copy_(r.hist)
        out[1].resize_(tuple(r.bin_edges.shape)).copy_(r.bin_edges)
        return _histogram(out[0], out[1])
    return r


_histogramdd = return_type("histogramdd", ["hist", "bin_edges"])


@defop(method=False, composite=True, differentiable=False)
def histogramdd(input, bins=10, range=None, weight=None, density=False):  # noqa: A002
    """A D-dimensional histogram of the points in input's last dimension (NumPy's
    algorithm: right edge of the last bin inclusive)."""
    if not input.dtype.is_floating_point:
        raise RuntimeError(
            f"torch.histogramdd: input tensor and bins tensors should have the same dtype, "
            f"but got input {input.dtype}"
        )
    pts = _values(input.detach()).reshape(-1, input.shape[-1])
    dims = pts.shape[1]
    if isinstance(bins, Tensor):
        bins = bins.tolist()
    if isinstance(bins, (list, tuple)) and bins and isinstance(bins[0], Tensor):
        bins = [_values(b.detach()) for b in bins]
    if isinstance(bins, int) or (
        isinstance(bins, (list, tuple)) and all(isinstance(b, int) for b in bins)
    ):
        # equal-width edges computed in the input dtype (linspace), as PyTorch
        counts = [bins] * dims if isinstance(bins, int) else list(bins)
        edges_in = []
        for i in builtins.range(dims):
            if range is not None:
                lo, hi = builtins.float(range[2 * i]), builtins.float(range[2 * i + 1])
            elif pts.shape[0]:
                lo, hi = builtins.float(pts[:, i].min()), builtins.float(pts[:, i].max())
            else:
                lo = hi = 0.0
            if lo == hi:  # an empty range widens to one unit, as NumPy
                lo, hi = lo - 0.5, hi + 0.5
            edges_in.append(_values(linspace(lo, hi, counts[i] + 1, dtype=input.dtype)))
        bins = [e.astype(np.float64) for e in edges_in]
    w = None if weight is None else _values(weight.detach()).reshape(-1)
    hist, edges = np.histogramdd(pts, bins=bins, weights=w, density=density)
    dt, dev = input.dtype, input.device
    return _histogramdd(
        tensor(hist, dtype=dt, device=dev), [tensor(e, dtype=dt, device=dev) for e in edges]
    )
