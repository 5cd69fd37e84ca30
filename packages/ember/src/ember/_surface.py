"""Top-level torch functions and constants that are compositions of ember ops
(so gradients come from the ops they call) or process-wide switches: constants,
asarray/frombuffer, distances, quantiles, renorm, window functions, the
*_scatter family and the view-copy variants, legacy aliases, anomaly and
warning switches.  Tensor methods of the same kind are attached at the end."""

import builtins
import collections
import copy
import functools
import math
import warnings

import numpy as np

import ember_autograd as _ag
import ember_core as ec
import ember_nn.functional as _F

_int, _float, _bool, _range = builtins.int, builtins.float, builtins.bool, builtins.range

__all__ = [
    "adjoint",
    "angle",
    "as_strided_scatter",
    "asarray",
    "bartlett_window",
    "bilinear",
    "blackman_window",
    "chain_matmul",
    "channel_shuffle",
    "conj",
    "conj_physical",
    "cosine_embedding_loss",
    "cosine_similarity",
    "diagonal_scatter",
    "dist",
    "e",
    "frobenius_norm",
    "frombuffer",
    "get_deterministic_debug_mode",
    "get_device",
    "hamming_window",
    "hann_window",
    "hinge_embedding_loss",
    "histogramdd",
    "inf",
    "is_anomaly_check_nan_enabled",
    "is_anomaly_enabled",
    "is_conj",
    "is_inference",
    "is_neg",
    "is_warn_always_enabled",
    "kaiser_window",
    "margin_ranking_loss",
    "nan",
    "nanquantile",
    "newaxis",
    "nonzero_static",
    "nuclear_norm",
    "pairwise_distance",
    "pdist",
    "pi",
    "poisson_nll_loss",
    "quantile",
    "range",
    "real",
    "renorm",
    "resolve_conj",
    "resolve_neg",
    "select_scatter",
    "set_anomaly_enabled",
    "set_default_tensor_type",
    "set_deterministic_debug_mode",
    "set_flush_denormal",
    "set_warn_always",
    "slice_scatter",
    "trapz",
    "triplet_margin_loss",
    "typename",
    "unsafe_chunk",
    "unsafe_split",
    "unsafe_split_with_sizes",
]

# ------------------------------------------------------------------ constants

pi = math.pi
e = math.e
inf = math.inf
nan = math.nan
newaxis = None

# -------------------------------------------------------------- construction


def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=False):
    """A tensor from ``obj`` (array API semantics): shares memory with a tensor or
    a NumPy array when dtype and device allow and ``copy`` is not True; copies
    when it must (``copy=False`` then raises)."""
    if isinstance(obj, ec.Tensor):
        t = obj
    elif isinstance(obj, np.ndarray) and obj.dtype != object:
        t = (
            ec.from_numpy(obj)
            if obj.dtype.kind in "biuf" and obj.dtype.byteorder in "=|<"
            else None
        )
        if t is None:
            if copy is False:
                raise ValueError(f"asarray(): can't alias a NumPy array of dtype {obj.dtype}")
            t = ec.tensor(obj)
            copy = None  # already a copy
    elif hasattr(obj, "__dlpack__") and not isinstance(obj, (list, tuple)):
        t = ec.from_dlpack(obj)
    else:
        if copy is False:
            raise ValueError(f"can't alias Python sequence without copying: {type(obj).__name__}")
        t = ec.tensor(obj, dtype=dtype, device=device)
        copy = None
    needs_conversion = (dtype is not None and t.dtype != dtype) or (
        device is not None and t.device != ec.device(device)
    )
    if needs_conversion:
        if copy is False:
            raise ValueError(
                f"asarray(): can't satisfy dtype={dtype}, device={device} without copying"
            )
        t = t.to(dtype=dtype or t.dtype, device=device or t.device, copy=True)
    elif copy:
        t = t.clone()
    if requires_grad:
        if isinstance(obj, ec.Tensor) and t is obj:
            t = t.detach()
        t.requires_grad_(True)
    return t


def frombuffer(buffer, *, dtype, count=-1, offset=0, requires_grad=False):
    """A 1-D tensor over the memory of a Python buffer (shared, not copied)."""
    np_dtype = ec.empty(0, dtype=dtype).numpy().dtype
    mem = memoryview(buffer)
    nbytes = mem.nbytes
    if nbytes == 0:
        raise ValueError("both buffer length (0) and count (-1) must not be 0")
    if offset < 0 or offset >= nbytes:
        raise ValueError(
            f"offset ({offset} bytes) must be non-negative and no greater than buffer length "
            f"({nbytes} bytes) minus 1"
        )
    if count <= 0 and (nbytes - offset) % np_dtype.itemsize:
        raise ValueError(
            f"buffer length ({nbytes - offset} bytes) after offset ({offset} bytes) must be a "
            f"multiple of element size ({np_dtype.itemsize})"
        )
    if mem.readonly:
        warnings.warn(
            "The given buffer is not writable, and PyTorch does not support non-writable "
            "tensors. This means you can write to the underlying (supposedly non-writable) "
            "buffer using the tensor. You may want to copy the buffer to protect its data or "
            "make it writable before converting it to a tensor. This type of warning will be "
            "suppressed for the rest of this program.",
            UserWarning,
            stacklevel=2,
        )
    arr = np.frombuffer(mem, dtype=np_dtype, count=count, offset=offset)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PyTorch's warning above is the one to see
        t = ec.from_numpy(arr)  # shared; a read-only buffer gives a read-only tensor
    if requires_grad:
        t.requires_grad_(True)
    return t


def range(start, end, step=1, *, dtype=None, device=None, requires_grad=False):  # noqa: A001
    """Deprecated: values from start to end *inclusive*, in the default float dtype."""
    warnings.warn(
        "torch.range is deprecated and will be removed in a future release because its "
        "behavior is inconsistent with Python's range builtin. Instead, use torch.arange, "
        "which produces values in [start, end).",
        UserWarning,
        stacklevel=2,
    )
    if step == 0:
        raise RuntimeError("range: step must be nonzero")
    if (end - start) * step < 0:
        raise RuntimeError("upper bound and larger bound inconsistent with step sign")
    n = _int(math.floor((end - start) / step)) + 1
    values = start + step * np.arange(n, dtype=np.float64)
    dt = dtype or ec.get_default_dtype()
    r = ec.tensor(values, dtype=dt, device=device)
    return r.requires_grad_(True) if requires_grad else r


# -------------------------------------------------------------- windows


def _window(name, window_length, periodic, dtype, device, requires_grad, fn):
    if window_length < 0:
        raise RuntimeError(
            f"{name} requires non-negative window_length, got window_length={window_length}"
        )
    dt = dtype or ec.get_default_dtype()
    if not dt.is_floating_point:
        raise RuntimeError(f"{name} expects floating point dtypes, got: {dt}")
    if window_length <= 1:
        r = ec.ones(window_length, dtype=dt, device=device)
    else:
        n_total = window_length + 1 if periodic else window_length
        n = np.arange(window_length, dtype=np.float64)
        r = ec.tensor(fn(n, n_total - 1), dtype=dt, device=device)
    return r.requires_grad_(True) if requires_grad else r


def hann_window(
    window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False
):
    """0.5 - 0.5 cos(2 pi n / (N - 1)); periodic windows use N + 1 points and drop the last."""
    return _window(
        "hann_window",
        window_length,
        periodic,
        dtype,
        device,
        requires_grad,
        lambda n, m: 0.5 - 0.5 * np.cos(2 * np.pi * n / m),
    )


def hamming_window(
    window_length,
    periodic=True,
    alpha=0.54,
    beta=0.46,
    *,
    dtype=None,
    layout=None,
    device=None,
    requires_grad=False,
):
    return _window(
        "hamming_window",
        window_length,
        periodic,
        dtype,
        device,
        requires_grad,
        lambda n, m: alpha - beta * np.cos(2 * np.pi * n / m),
    )


def blackman_window(
    window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False
):
    return _window(
        "blackman_window",
        window_length,
        periodic,
        dtype,
        device,
        requires_grad,
        lambda n, m: 0.42 - 0.5 * np.cos(2 * np.pi * n / m) + 0.08 * np.cos(4 * np.pi * n / m),
    )


def bartlett_window(
    window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False
):
    return _window(
        "bartlett_window",
        window_length,
        periodic,
        dtype,
        device,
        requires_grad,
        lambda n, m: 1 - np.abs(2 * n / m - 1),
    )


def kaiser_window(
    window_length,
    periodic=True,
    beta=12.0,
    *,
    dtype=None,
    layout=None,
    device=None,
    requires_grad=False,
):
    """I0(beta sqrt(1 - ((n - m/2) / (m/2))^2)) / I0(beta)."""

    def kaiser(n, m):
        ratio = np.clip(1 - ((n - m / 2) / (m / 2)) ** 2, 0, None)
        vals = ec.tensor(beta * np.sqrt(ratio), dtype=ec.float64)
        return (ec.i0(vals) / ec.i0(ec.tensor(_float(beta), dtype=ec.float64))).numpy()

    return _window("kaiser_window", window_length, periodic, dtype, device, requires_grad, kaiser)


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


# ---------------------------------------------------- scatter into views


def _scatter_into(input, src, view_of):
    r = input.clone()
    view = view_of(r)
    if tuple(view.shape) != tuple(src.shape):
        raise RuntimeError(
            f"expected src to have a size equal to the slice of self. src size = "
            f"{list(src.shape)}, slice size = {list(view.shape)}"
        )
    view.copy_(src)
    return r


def _slice(t, dim, start, end, step):
    idx = [slice(None)] * t.dim()
    idx[dim] = slice(start, end, step)
    return t[tuple(idx)]


def slice_scatter(input, src, dim=0, start=None, end=None, step=1):
    """input with input[..., start:end:step, ...] (along dim) replaced by src."""
    return _scatter_into(input, src, lambda r: _slice(r, dim, start, end, step))


def select_scatter(input, src, dim, index):
    return _scatter_into(input, src, lambda r: r.select(dim, index))


def diagonal_scatter(input, src, offset=0, dim1=0, dim2=1):
    return _scatter_into(input, src, lambda r: r.diagonal(offset, dim1, dim2))


def as_strided_scatter(input, src, size, stride, storage_offset=None):
    return _scatter_into(input, src, lambda r: r.as_strided(size, stride, storage_offset))


def unsafe_chunk(input, chunks, dim=0):
    return input.chunk(chunks, dim)


def unsafe_split(tensor, split_size_or_sections, dim=0):
    return tensor.split(split_size_or_sections, dim)


def unsafe_split_with_sizes(input, split_sizes, dim=0):
    return input.split(list(split_sizes), dim)


def nonzero_static(input, *, size, fill_value=-1):
    """nonzero() padded with fill_value (or truncated) to exactly ``size`` rows."""
    if size < 0:
        raise RuntimeError(
            f"nonzero_static: 'size' must be an non-negative integer, but got {size}"
        )
    nz = input.nonzero()
    k = nz.shape[0]
    if k >= size:
        return nz[:size].contiguous()
    pad = ec.full((size - k, input.dim()), fill_value, dtype=ec.int64, device=input.device)
    return ec.cat([nz, pad], 0)


# ---------------------------------------------------- *_copy view variants


def _fresh(t):
    """A contiguous copy (never an alias), as the *_copy ops return."""
    return t.contiguous() if not t.is_contiguous() else t.clone()


def _copy_variant(name, view):
    def fn(input, *args, out=None, **kwargs):
        r = view(input, *args, **kwargs)
        r = tuple(_fresh(t) for t in r) if isinstance(r, (tuple, list)) else _fresh(r)
        if out is not None:
            if isinstance(r, tuple):
                for o, t in zip(out, r, strict=True):
                    o.copy_(t)
                return out
            return out.resize_(r.shape).copy_(r)
        return r

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"{name[:-5]}, returning a new tensor instead of a view."
    return fn


_COPY_VIEWS = {
    "alias_copy": lambda x: x.view(x.shape),
    "as_strided_copy": lambda x, size, stride, storage_offset=None: x.as_strided(
        size, stride, storage_offset
    ),
    "detach_copy": lambda x: x.detach(),
    "diagonal_copy": lambda x, offset=0, dim1=0, dim2=1: x.diagonal(offset, dim1, dim2),
    "expand_copy": lambda x, size, *, implicit=False: x.expand(size),
    "narrow_copy": lambda x, dim, start, length: x.narrow(dim, start, length),
    "permute_copy": lambda x, dims: x.permute(dims),
    "select_copy": lambda x, dim, index: x.select(dim, index),
    "slice_copy": lambda x, dim=0, start=None, end=None, step=1: _slice(x, dim, start, end, step),
    "split_copy": lambda x, split_size, dim=0: x.split(split_size, dim),
    "split_with_sizes_copy": lambda x, split_sizes, dim=0: x.split(list(split_sizes), dim),
    "squeeze_copy": lambda x, dim=None: x.squeeze() if dim is None else x.squeeze(dim),
    "t_copy": lambda x: x.t(),
    "transpose_copy": lambda x, dim0, dim1: x.transpose(dim0, dim1),
    "unbind_copy": lambda x, dim=0: x.unbind(dim),
    "unfold_copy": lambda x, dimension, size, step: x.unfold(dimension, size, step),
    "unsqueeze_copy": lambda x, dim: x.unsqueeze(dim),
    "view_copy": lambda x, size: x.view(size),
}
for _name, _view in _COPY_VIEWS.items():
    globals()[_name] = _copy_variant(_name, _view)
    __all__.append(_name)

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


# ---------------------------------------------------- real-dtype complex API


def adjoint(input):
    return input.transpose(-2, -1)


def conj(input):
    """Real tensors are their own conjugate (the very tensor, as PyTorch)."""
    return input


def conj_physical(input, *, out=None):
    return out.copy_(input) if out is not None else input


def is_conj(input):
    return False


def is_neg(input):
    return False


def resolve_conj(input):
    return input


def resolve_neg(input):
    return input


def real(input):
    return input


def angle(input, *, out=None):
    """For real input: pi where negative, 0 elsewhere, NaN kept."""
    x = input if input.is_floating_point() else input.to(ec.get_default_dtype())
    r = ec.where(x < 0, ec.full_like(x, math.pi), ec.zeros_like(x))
    r = ec.where(x.isnan(), x, r)
    return out.copy_(r) if out is not None else r


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


# ---------------------------------------------------- process-wide switches


def is_inference(input):
    return input.is_inference()


def get_device(input):
    return input.get_device()


def typename(obj):
    """'torch.FloatTensor' for a tensor, else the object's module.qualname."""
    if isinstance(obj, ec.Tensor):
        return obj.type().replace("ember.", "torch.")
    module, name = "", ""
    if hasattr(obj, "__module__"):
        module = obj.__module__ + "."
    if hasattr(obj, "__qualname__"):
        name = obj.__qualname__
    elif hasattr(obj, "__name__"):
        name = obj.__name__
    else:
        module = obj.__class__.__module__
        module = "" if module in (None, "builtins") else module + "."
        name = obj.__class__.__qualname__
    return module + name


def set_anomaly_enabled(enabled, check_nan=True):
    _ag.set_detect_anomaly(enabled, check_nan)


is_anomaly_enabled = _ag.is_anomaly_enabled
is_anomaly_check_nan_enabled = _ag.is_anomaly_check_nan_enabled

_TENSOR_TYPES = {
    "FloatTensor": ec.float32,
    "DoubleTensor": ec.float64,
    "HalfTensor": ec.float16,
    "BFloat16Tensor": ec.bfloat16,
}


def set_default_tensor_type(t):
    """Deprecated: sets the default floating dtype from a tensor type."""
    warnings.warn(
        "torch.set_default_tensor_type() is deprecated as of PyTorch 2.1, please use "
        "torch.set_default_dtype() and torch.set_default_device() as alternatives.",
        UserWarning,
        stacklevel=2,
    )
    name = t if isinstance(t, str) else getattr(t, "__name__", str(t))
    short = name.rsplit(".", 1)[-1]
    if short not in _TENSOR_TYPES:
        raise TypeError(f"invalid type: '{name}'")
    ec.set_default_dtype(_TENSOR_TYPES[short])


_warn_always = [False]


def set_warn_always(b):
    """Warn every time (not once) for warnings PyTorch issues once per process."""
    _warn_always[0] = _bool(b)


def is_warn_always_enabled():
    return _warn_always[0]


def set_flush_denormal(mode):
    """Flushing denormals is not available in ember: returns False (as PyTorch
    does on a CPU without the SSE3 support it needs) and changes nothing."""
    return False


_DEBUG_MODES = {"default": 0, "warn": 1, "error": 2}


def set_deterministic_debug_mode(debug_mode):
    import ember

    if isinstance(debug_mode, str):
        if debug_mode not in _DEBUG_MODES:
            raise RuntimeError(
                "invalid value of debug_mode, expected one of `default`, `warn`, `error`, "
                f"but got {debug_mode}"
            )
        debug_mode = _DEBUG_MODES[debug_mode]
    if debug_mode not in (0, 1, 2):
        raise RuntimeError(
            f"invalid value of debug_mode, expected 0, 1, or 2, but got {debug_mode}"
        )
    ember.use_deterministic_algorithms(debug_mode > 0, warn_only=debug_mode == 1)


def get_deterministic_debug_mode():
    import ember

    if not ember.are_deterministic_algorithms_enabled():
        return 0
    return 1 if ember.is_deterministic_algorithms_warn_only_enabled() else 2


# ------------------------------------------------ in-place aliases (top level)

for _alias, _target in [
    ("clip_", "clamp_"),
    ("fix_", "trunc_"),
    ("negative_", "neg_"),
    ("arccos_", "acos_"),
    ("arcsin_", "asin_"),
    ("arctan_", "atan_"),
    ("arccosh_", "acosh_"),
    ("arcsinh_", "asinh_"),
    ("arctanh_", "atanh_"),
]:
    globals()[_alias] = getattr(ec, _target)
    __all__.append(_alias)


# ================================================================ Tensor methods

T = ec.Tensor


def _sum_to_size(self, *size):
    """The sum of self over the dimensions that broadcasting ``size`` to self expands."""
    if len(size) == 1 and isinstance(size[0], (tuple, list, ec.Size)):
        size = tuple(size[0])
    size = tuple(size)
    shape = tuple(self.shape)
    lead = len(shape) - len(size)
    ok = lead >= 0 and all(s == 1 or s == shape[lead + i] for i, s in enumerate(size))
    if not ok:
        raise RuntimeError(
            f"size {{{', '.join(map(str, size))}}} is not expandable to size "
            f"{{{', '.join(map(str, shape))}}}."
        )
    r = self
    if lead:
        r = r.sum(dim=tuple(_range(lead)))
    dims = tuple(i for i, s in enumerate(size) if s == 1 and r.shape[i] != 1)
    if dims:
        r = r.sum(dim=dims, keepdim=True)
    return r


def _new(self, *args, **kwargs):
    """Legacy constructor: an empty/uninitialized tensor of self's dtype and device,
    of the given size, or with the given data."""
    device = kwargs.pop("device", None) or self.device
    if not args:
        return ec.empty(0, dtype=self.dtype, device=device)
    if len(args) == 1 and isinstance(args[0], ec.Size):
        return ec.empty(tuple(args[0]), dtype=self.dtype, device=device)
    if len(args) == 1 and isinstance(args[0], ec.Tensor):
        return args[0].view(args[0].shape)
    if all(isinstance(a, _int) and not isinstance(a, _bool) for a in args):
        return ec.empty(args, dtype=self.dtype, device=device)
    if len(args) == 1:
        return ec.tensor(args[0], dtype=self.dtype, device=device)
    raise TypeError("new(): invalid arguments")


def _apply_(self, callable):
    """Apply a Python function to every element, in place (CPU tensors only)."""
    if self.device.type != "cpu":
        raise TypeError("apply_ is only implemented on CPU tensors")
    vals = [callable(v) for v in self.reshape(-1).tolist()]
    with _ag.no_grad():
        self.copy_(ec.tensor(vals, dtype=self.dtype).reshape(self.shape))
    return self


def _map_(self, tensor, callable):
    if self.device.type != "cpu":
        raise TypeError("map_ is only implemented on CPU tensors")
    other = tensor.expand(self.shape).reshape(-1).tolist()
    vals = [callable(a, b) for a, b in zip(self.reshape(-1).tolist(), other, strict=True)]
    with _ag.no_grad():
        self.copy_(ec.tensor(vals, dtype=self.dtype).reshape(self.shape))
    return self


def _map2_(self, x, y, callable):
    if self.device.type != "cpu":
        raise TypeError("map2_ is only implemented on CPU tensors")
    xs = x.expand(self.shape).reshape(-1).tolist()
    ys = y.expand(self.shape).reshape(-1).tolist()
    vals = [callable(a, b, c) for a, b, c in zip(self.reshape(-1).tolist(), xs, ys, strict=True)]
    with _ag.no_grad():
        self.copy_(ec.tensor(vals, dtype=self.dtype).reshape(self.shape))
    return self


def _deepcopy(self, memo):
    """Deep copy keeping views of one storage views of one copied storage (as
    PyTorch), with requires_grad and .grad; only graph leaves can be copied."""
    if not self.is_leaf:
        raise RuntimeError(
            "Only Tensors created explicitly by the user (graph leaves) support the deepcopy "
            "protocol at the moment.  If you were attempting to deepcopy a module, this may be "
            "because of a torch.nn.utils.weight_norm usage, see "
            "https://github.com/pytorch/pytorch/pull/103001"
        )
    if id(self) in memo:
        return memo[id(self)]
    if type(self) is not T:  # subclasses (Parameter...) keep their own protocol
        rv = self.__reduce_ex__(4)
        return copy._reconstruct(self, memo, *rv)
    storage = self.untyped_storage()
    key = ("ember.storage", id(storage))
    flat = memo.get(key)
    with _ag.no_grad():
        if flat is None:
            n = storage.nbytes() // self.element_size()
            flat = self.detach().as_strided((n,), (1,), 0).clone()
            memo[key] = flat
            memo.setdefault(id(memo), []).append(storage)  # keep the id valid
        r = flat.as_strided(tuple(self.shape), tuple(self.stride()), self.storage_offset())
    r.requires_grad_(self.requires_grad)
    if self.grad is not None:
        r.grad = copy.deepcopy(self.grad, memo)
    memo[id(self)] = r
    return r


def _renorm_(self, p, dim, maxnorm):
    return self.copy_(renorm(self, p, dim, maxnorm))


def _reversed(self):
    return self if self.dim() == 0 else self.flip(0)


def _pin_memory(self, device=None):
    raise RuntimeError("Cannot access accelerator device when none is available.")


def _quantile_m(self, q, dim=None, keepdim=False, *, interpolation="linear"):
    return quantile(self, q, dim, keepdim, interpolation=interpolation)


def _nanquantile_m(self, q, dim=None, keepdim=False, *, interpolation="linear"):
    return nanquantile(self, q, dim, keepdim, interpolation=interpolation)


def _heaviside_(self, values):
    return self.copy_(ec.heaviside(self, values))


def _allclose(self, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    import ember

    return ember.allclose(self, other, rtol, atol, equal_nan)


def _isclose(self, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    import ember

    return ember.isclose(self, other, rtol, atol, equal_nan)


def _equal(self, other):
    import ember

    return ember.equal(self, other)


_METHODS = {
    "sum_to_size": _sum_to_size,
    "new": _new,
    "apply_": _apply_,
    "map_": _map_,
    "map2_": _map2_,
    "dist": dist,
    "renorm": renorm,
    "renorm_": _renorm_,
    "quantile": _quantile_m,
    "nanquantile": _nanquantile_m,
    "heaviside_": _heaviside_,
    "allclose": _allclose,
    "isclose": _isclose,
    "equal": _equal,
    "narrow_copy": globals()["narrow_copy"],
    "nonzero_static": nonzero_static,
    "unsafe_chunk": unsafe_chunk,
    "unsafe_split": unsafe_split,
    "unsafe_split_with_sizes": unsafe_split_with_sizes,
    "adjoint": adjoint,
    "conj": conj,
    "conj_physical": conj_physical,
    "is_conj": is_conj,
    "is_neg": is_neg,
    "resolve_conj": resolve_conj,
    "resolve_neg": resolve_neg,
    "angle": angle,
    "slice_scatter": slice_scatter,
    "select_scatter": select_scatter,
    "diagonal_scatter": diagonal_scatter,
    "as_strided_scatter": as_strided_scatter,
    "__reversed__": _reversed,
    "__deepcopy__": _deepcopy,
    "__long__": lambda self: _int(self),
    "__nonzero__": lambda self: _bool(self),
    "pin_memory": _pin_memory,
    "is_pinned": lambda self, device=None: False,
    "arccosh": ec.acosh,
    "arccosh_": ec.acosh_,
    "arcsinh": ec.asinh,
    "arcsinh_": ec.asinh_,
    "arctanh": ec.atanh,
    "arctanh_": ec.atanh_,
    "arctan2": ec.atan2,
    "arctan2_": T.atan2_,
}
for _name, _fn in _METHODS.items():
    if not hasattr(T, _name):
        setattr(T, _name, _fn)


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


__all__ += ["lu", "lu_solve", "lu_unpack"]
for _name, _fn in {"lu": lu, "lu_solve": lu_solve}.items():
    if not hasattr(T, _name):
        setattr(T, _name, _fn)


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


__all__.append("gradient")


# ------------------------------------------------ small remaining surface


def fill(input, value):
    """A new tensor shaped like input, filled with value (out-of-place fill_)."""
    return input.clone().fill_(value)


def empty_permuted(
    size,
    physical_layout,
    *,
    dtype=None,
    layout=None,
    device=None,
    requires_grad=False,
    pin_memory=False,
):
    """An uninitialized tensor of ``size`` whose memory holds its dimensions in the
    order ``physical_layout`` (outermost first)."""
    size, order = tuple(size), tuple(physical_layout)
    if sorted(order) != list(_range(len(size))):
        raise RuntimeError(
            f"Number of dimensions in size does not match the length of the physical_layout; "
            f"i.e. len(size) = {len(size)} is not equal to len(physical_layout) = {len(order)}"
        )
    phys = ec.empty([size[d] for d in order], dtype=dtype, device=device)
    inverse = [order.index(d) for d in _range(len(size))]
    r = phys.permute(inverse)
    return r.requires_grad_(True) if requires_grad else r


def compiled_with_cxx11_abi():
    return True


def init_num_threads():
    """Nothing to do: ember's thread pool (OpenMP) starts on first use."""


def is_vulkan_available():
    return False


__all__ += [
    "compiled_with_cxx11_abi",
    "empty_permuted",
    "fill",
    "init_num_threads",
    "is_vulkan_available",
]


def _imag(self):
    raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")


def _dim_order(self, *, ambiguity_check=False):
    """Dimensions from outermost to innermost in memory (stride order)."""
    strides = self.stride()
    return tuple(sorted(_range(self.dim()), key=lambda d: (-strides[d], d)))


def _is_set_to(self, tensor):
    return (
        self.untyped_storage().data_ptr() == tensor.untyped_storage().data_ptr()
        and self.storage_offset() == tensor.storage_offset()
        and tuple(self.shape) == tuple(tensor.shape)
        and tuple(self.stride()) == tuple(tensor.stride())
    )


def _new_empty_strided(
    self,
    size,
    stride,
    *,
    dtype=None,
    device=None,
    requires_grad=False,
    layout=None,
    pin_memory=False,
):
    return ec.empty_strided(
        size,
        stride,
        dtype=dtype or self.dtype,
        device=device or self.device,
        requires_grad=requires_grad,
    )


def _storage_method(self):
    from ember._typed_storage import storage

    return storage(self)


for _name, _fn in {
    "real": property(lambda self: self),
    "imag": property(_imag),
    "dim_order": _dim_order,
    "is_set_to": _is_set_to,
    "is_nested": property(lambda self: False),
    "is_sparse_csr": property(lambda self: False),
    "const_data_ptr": lambda self: self.data_ptr(),
    "new_empty_strided": _new_empty_strided,
    "conj_physical_": lambda self: self,
    "storage": _storage_method,
    "__div__": T.__truediv__,
    "__rdiv__": T.__rtruediv__,
    "__idiv__": T.__itruediv__,
}.items():
    if not hasattr(T, _name):
        setattr(T, _name, _fn)
