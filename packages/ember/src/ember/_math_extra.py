"""Top-level torch math that composes ember ops (so gradients come from them):
distances and norms, renorm, quantile/nanquantile, trapz, chain_matmul,
histogramdd, gradient, the int-reduction loss forms and the legacy LU
functions."""

import builtins
import collections
import functools
import math
import warnings

import numpy as np

import ember_core as ec
import ember_nn.functional as _F

_int, _float, _range = builtins.int, builtins.float, builtins.range

__all__ = [
    "bilinear",
    "chain_matmul",
    "channel_shuffle",
    "cosine_embedding_loss",
    "cosine_similarity",
    "dist",
    "frobenius_norm",
    "gradient",
    "hinge_embedding_loss",
    "histogramdd",
    "lu",
    "lu_solve",
    "lu_unpack",
    "margin_ranking_loss",
    "nanquantile",
    "nuclear_norm",
    "pairwise_distance",
    "pdist",
    "poisson_nll_loss",
    "quantile",
    "renorm",
    "trapz",
    "triplet_margin_loss",
]


# ----------------------------------------------------------- distances, norms


def dist(input, other, p=2):
    """The p-norm of input - other (broadcast), as a 0-d tensor."""
    return ec.linalg.vector_norm(input - other, ord=p)


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    return _F.cosine_similarity(x1, x2, dim=dim, eps=eps)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    return _F.pairwise_distance(x1, x2, p=p, eps=eps, keepdim=keepdim)


def pdist(input, p=2):
    return _F.pdist(input, p)


def bilinear(input1, input2, weight, bias=None):
    return _F.bilinear(input1, input2, weight, bias)


def channel_shuffle(input, groups):
    return _F.channel_shuffle(input, groups)


def nuclear_norm(input, dim=None, keepdim=False, *, out=None):
    r = ec.linalg.matrix_norm(
        input, "nuc", dim=dim if dim is not None else (-2, -1), keepdim=keepdim
    )
    return out.copy_(r) if out is not None else r


def frobenius_norm(input, dim=(-2, -1), keepdim=False, *, out=None):
    r = ec.linalg.vector_norm(input, 2, dim=dim, keepdim=keepdim)
    return out.copy_(r) if out is not None else r


def renorm(input, p, dim, maxnorm, *, out=None):
    """Each slice along ``dim`` whose p-norm exceeds maxnorm is scaled to norm maxnorm."""
    if not input.dtype.is_floating_point:
        raise RuntimeError(
            f"renorm: expected a floating point or complex tensor as input. Got {_tn(input.dtype)}"
        )
    if p <= 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
    d = dim % max(input.dim(), 1)
    others = [i for i in _range(input.dim()) if i != d]
    norms = ec.linalg.vector_norm(input, p, dim=others, keepdim=True) if others else input.abs()
    factor = ec.where(norms > maxnorm, maxnorm / (norms + 1e-7), ec.ones_like(norms))
    r = input * factor
    return out.copy_(r) if out is not None else r


def _tn(dtype):
    return {"float16": "Half", "bfloat16": "BFloat16"}.get(dtype.name, dtype.name.capitalize())


# ---------------------------------------------------------------- quantiles

_MODES = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(op, input, q, dim, keepdim, interpolation, ignore_nan):
    if not isinstance(input, ec.Tensor):
        raise TypeError(f"{op}(): argument 'input' must be Tensor")
    if input.dtype not in (ec.float32, ec.float64):
        raise RuntimeError(f"{op}() input tensor must be either float or double dtype")
    if interpolation not in _MODES:
        raise ValueError(
            f"{op}() interpolation must be one of linear, lower, higher, midpoint or nearest. "
            f"Got {interpolation}"
        )
    scalar_q = not isinstance(q, ec.Tensor)
    qt = ec.tensor([_float(q)] if scalar_q else q, dtype=input.dtype)
    if not scalar_q:
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
        d = dim % max(input.dim(), 1)
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
        valid = ec.full(x.shape[:-1] + (1,), _float(n), dtype=input.dtype)
    rank = qt * (valid - 1).clamp(min=0)  # (..., nq)
    if interpolation == "lower":
        rank = rank.floor()
    elif interpolation == "higher":
        rank = rank.ceil()
    elif interpolation == "nearest":
        rank = rank.round()
    lo = rank.floor().long().clamp(0, max(n - 1, 0))
    hi = rank.ceil().long().clamp(0, max(n - 1, 0))
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
    r = ec.where(bad, ec.full_like(r, math.nan), r)
    r = r.movedim(-1, 0)  # (nq, ...)
    r = r.reshape([qt.numel()] + out_shape)
    return r[0] if scalar_q else r


def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear", out=None):
    """The q-th quantiles of input along dim (all values when dim is None)."""
    r = _quantile("quantile", input, q, dim, keepdim, interpolation, False)
    return out.resize_(r.shape).copy_(r) if out is not None else r


def nanquantile(input, q, dim=None, keepdim=False, *, interpolation="linear", out=None):
    """quantile, ignoring NaN values."""
    r = _quantile("nanquantile", input, q, dim, keepdim, interpolation, True)
    return out.resize_(r.shape).copy_(r) if out is not None else r


def trapz(y, x=None, *, dx=None, dim=-1):
    """Alias of trapezoid."""
    if x is not None and not isinstance(x, ec.Tensor):
        return ec.trapezoid(y, dx=x, dim=dim)
    return ec.trapezoid(y, x, dx=dx, dim=dim)


def chain_matmul(*matrices, out=None):
    """Deprecated: the product of the matrices, left to right."""
    warnings.warn(
        "torch.chain_matmul is deprecated and will be removed in a future PyTorch release. "
        "Use torch.linalg.multi_dot instead, which accepts a list of two or more tensors "
        "rather than multiple parameters.",
        UserWarning,
        stacklevel=2,
    )
    if not matrices:
        raise RuntimeError("chain_matmul(): Expected one or more matrices")
    for m in matrices:
        if m.dim() != 2:
            raise RuntimeError(f"Tensor dimension is {m.dim()}, expected 2 instead.")
    r = matrices[0].clone() if len(matrices) == 1 else functools.reduce(ec.mm, matrices)
    return out.copy_(r) if out is not None else r


# --------------------------------------------------- histogramdd

_histogramdd = collections.namedtuple("histogramdd", ["hist", "bin_edges"])


def histogramdd(input, bins=10, range=None, weight=None, density=False):  # noqa: A002
    """A D-dimensional histogram of the points in input's last dimension (NumPy's
    algorithm: right edge of the last bin inclusive)."""
    if not input.dtype.is_floating_point:
        raise RuntimeError(
            f"torch.histogramdd: input tensor and bins tensors should have the same dtype, "
            f"but got input {input.dtype}"
        )
    pts = input.detach().cpu().reshape(-1, input.shape[-1]).numpy()
    dims = pts.shape[1]
    if isinstance(bins, ec.Tensor):
        bins = bins.tolist()
    if isinstance(bins, (list, tuple)) and bins and isinstance(bins[0], ec.Tensor):
        bins = [b.detach().cpu().numpy() for b in bins]
    if isinstance(bins, _int) or (
        isinstance(bins, (list, tuple)) and all(isinstance(b, _int) for b in bins)
    ):
        # equal-width edges computed in the input dtype (ember.linspace), as PyTorch
        counts = [bins] * dims if isinstance(bins, _int) else list(bins)
        edges_in = []
        for i in _range(dims):
            if range is not None:
                lo, hi = _float(range[2 * i]), _float(range[2 * i + 1])
            elif pts.shape[0]:
                lo, hi = _float(pts[:, i].min()), _float(pts[:, i].max())
            else:
                lo = hi = 0.0
            if lo == hi:  # an empty range widens to one unit, as NumPy
                lo, hi = lo - 0.5, hi + 0.5
            edges_in.append(ec.linspace(lo, hi, counts[i] + 1, dtype=input.dtype).numpy())
        bins = [e.astype(np.float64) for e in edges_in]
    w = None if weight is None else weight.detach().cpu().reshape(-1).numpy()
    hist, edges = np.histogramdd(pts, bins=bins, weights=w, density=density)
    return _histogramdd(
        ec.tensor(hist, dtype=input.dtype), [ec.tensor(e, dtype=input.dtype) for e in edges]
    )


# ---------------------------------------------------- losses (enum reduction)
# The top-level forms take the reduction as an int (0 none, 1 mean, 2 sum) and,
# as observed in PyTorch 2.13, default to no reduction.

_REDUCTIONS = {0: "none", 1: "mean", 2: "sum"}


def _reduction(r):
    return _REDUCTIONS[r] if isinstance(r, _int) else r


def cosine_embedding_loss(input1, input2, target, margin=0.0, reduction=0):
    return _F.cosine_embedding_loss(
        input1, input2, target, margin=margin, reduction=_reduction(reduction)
    )


def hinge_embedding_loss(input, target, margin=1.0, reduction=0):
    return _F.hinge_embedding_loss(input, target, margin=margin, reduction=_reduction(reduction))


def margin_ranking_loss(input1, input2, target, margin=0.0, reduction=0):
    return _F.margin_ranking_loss(
        input1, input2, target, margin=margin, reduction=_reduction(reduction)
    )


def poisson_nll_loss(input, target, log_input, full, eps, reduction):
    return _F.poisson_nll_loss(
        input, target, log_input=log_input, full=full, eps=eps, reduction=_reduction(reduction)
    )


def triplet_margin_loss(
    anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False, reduction=0
):
    return _F.triplet_margin_loss(
        anchor,
        positive,
        negative,
        margin=margin,
        p=p,
        eps=eps,
        swap=swap,
        reduction=_reduction(reduction),
    )


# ------------------------------------------------ legacy LU (torch.lu & co.)


def lu(A, pivot=True, get_infos=False, out=None):
    """Legacy torch.lu: (LU, pivots[, infos]) of the packed factorization."""
    LU, piv, info = ec.linalg.lu_factor_ex(A, pivot=pivot)
    if not get_infos and bool((info != 0).any()):
        ec.linalg.lu_factor(A, pivot=pivot)  # raises PyTorch's singular-matrix error
    return (LU, piv, info) if get_infos else (LU, piv)


def lu_solve(b, LU_data, LU_pivots, *, out=None):
    """Legacy torch.lu_solve (b first)."""
    return ec.linalg.lu_solve(LU_data, LU_pivots, b, out=out)


def lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True, *, out=None):
    return ec.linalg.lu_unpack(LU_data, LU_pivots, unpack_data, unpack_pivots, out=out)


# ------------------------------------------------ torch.gradient


def _gradient_dim(f, d, h, edge_order):
    """Central differences along d (NumPy's second-order scheme, also for
    non-uniform coordinates h, a 1-D tensor), one-sided at the edges."""
    n = f.shape[d]

    def sl(a, b=None):
        return f.narrow(d, a, (n if b is None else b) - a) if b is None or b > a else None

    def shape_1d(t):
        s = [1] * f.dim()
        s[d] = -1
        return t.reshape(s)

    if not isinstance(h, ec.Tensor):
        interior = (sl(2, n) - sl(0, n - 2)) / (2.0 * h)
        if edge_order == 1:
            first = (f.narrow(d, 1, 1) - f.narrow(d, 0, 1)) / h
            last = (f.narrow(d, n - 1, 1) - f.narrow(d, n - 2, 1)) / h
        else:
            first = (
                -1.5 * f.narrow(d, 0, 1) + 2.0 * f.narrow(d, 1, 1) - 0.5 * f.narrow(d, 2, 1)
            ) / h
            last = (
                0.5 * f.narrow(d, n - 3, 1)
                - 2.0 * f.narrow(d, n - 2, 1)
                + 1.5 * f.narrow(d, n - 1, 1)
            ) / h
        return ec.cat([first, interior, last], d)
    x = h.to(f.dtype)
    dx = x[1:] - x[:-1]
    hl, hr = shape_1d(dx[:-1]), shape_1d(dx[1:])
    interior = (
        hl * hl * sl(2, n) - hr * hr * sl(0, n - 2) + (hr * hr - hl * hl) * sl(1, n - 1)
    ) / (hl * hr * (hl + hr))
    if edge_order == 1:
        first = (f.narrow(d, 1, 1) - f.narrow(d, 0, 1)) / dx[0]
        last = (f.narrow(d, n - 1, 1) - f.narrow(d, n - 2, 1)) / dx[-1]
    else:
        d1, d2 = dx[0], dx[1]
        a = -(2.0 * d1 + d2) / (d1 * (d1 + d2))
        b = (d1 + d2) / (d1 * d2)
        c = -d1 / (d2 * (d1 + d2))
        first = a * f.narrow(d, 0, 1) + b * f.narrow(d, 1, 1) + c * f.narrow(d, 2, 1)
        d1, d2 = dx[-2], dx[-1]
        a = d2 / (d1 * (d1 + d2))
        b = -(d2 + d1) / (d1 * d2)
        c = (2.0 * d2 + d1) / (d2 * (d1 + d2))
        last = a * f.narrow(d, n - 3, 1) + b * f.narrow(d, n - 2, 1) + c * f.narrow(d, n - 1, 1)
    return ec.cat([first, interior, last], d)


def gradient(input, *, spacing=1, dim=None, edge_order=1):
    """Estimate the gradient of a function sampled on a grid, one tensor per
    dimension (NumPy's np.gradient): central differences inside, first- or
    second-order one-sided differences at the edges."""
    if edge_order not in (1, 2):
        raise RuntimeError("torch.gradient only supports edge_order=1 and edge_order=2.")
    if dim is None:
        dims = list(_range(input.dim()))
    elif isinstance(dim, _int):
        dims = [dim]
    else:
        dims = list(dim)
    dims = [d % max(input.dim(), 1) for d in dims]
    if isinstance(spacing, (list, tuple)):
        if len(spacing) != len(dims):
            raise RuntimeError(
                f"torch.gradient expected spacing to be unspecified, a scalar or it's spacing "
                f"and dim arguments to have the same length, but got a spacing argument of "
                f"length {len(spacing)} and a dim argument of length {len(dims)}."
            )
        hs = list(spacing)
    else:
        hs = [spacing] * len(dims)
    for d in dims:
        if input.shape[d] < edge_order + 1:
            raise RuntimeError(
                "torch.gradient expected each dimension size to be at least edge_order+1"
            )
    f = input if input.is_floating_point() else input.to(ec.get_default_dtype())
    out = []
    for d, h in zip(dims, hs, strict=True):
        if isinstance(h, ec.Tensor) and h.dim() == 0:
            h = h.item()
        out.append(_gradient_dim(f, d, h, edge_order))
    return tuple(out)
