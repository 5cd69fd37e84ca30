"""Reductions (sum, mean, prod, max/min, var/std, norm, logsumexp, all/any, ...)
and scans (cumsum, cumprod, cummax/cummin, logcumsumexp)."""

from ember_core._base import shape as _shape
from ember_core._base.dispatch import defop
from ember_core._base.lib import NOGIL_THRESHOLD, check, ffi, lib
from ember_core._base.return_types import return_type
from ember_core._ops.pointwise.complex import as_complex_view, as_real_view
from ember_core._ops.pointwise.elementwise import (
    _tname,
    cast,
    complex_unsupported,
    div,
    isnan,
    logical_not,
    maximum,
    minimum,
    ne,
    not_implemented,
)
from ember_core._ops.shape.joining import cat
from ember_core._tensor import dtype as D
from ember_core._tensor.copy import write_out
from ember_core._tensor.creation import ones
from ember_core._tensor.tensor import Tensor, empty, is_contig


class _ReturnTypes:
    """Named tuples of ops returning (values, indices), as torch.return_types."""

    max = return_type("max", ["values", "indices"])
    min = return_type("min", ["values", "indices"])
    cummax = return_type("cummax", ["values", "indices"])
    cummin = return_type("cummin", ["values", "indices"])
    aminmax = return_type("aminmax", ["min", "max"])
    var_mean = return_type("var_mean", ["var", "mean"], plain_repr=True)  # a tuple in torch
    std_mean = return_type("std_mean", ["std", "mean"], plain_repr=True)


return_types = _ReturnTypes()

R = lib


def _keepdim_view(r, shape, dims):
    # r is fresh and contiguous: give it the keepdim shape in place
    kshape = tuple(1 if d in dims else s for d, s in enumerate(shape))
    r._shape = kshape
    r._stride = _shape.contiguous_strides(kshape)
    return r


_flat_layouts = {}


def _flat_layout(n):
    """The layout of a reduction of n contiguous elements to one (memoised)."""
    lay = _flat_layouts.get(n)
    if lay is None:
        if len(_flat_layouts) > 1024:
            _flat_layouts.clear()
        lay = _flat_layouts[n] = ffi.new("int64_t[]", [n, 1])
    return lay


# Reduction layouts by (shape, strides, dims): building one costs more than
# reducing a small tensor.
_plans = {}


def _plan(x, dims):
    out_dims = [d for d in range(len(x._shape)) if d not in dims]
    out_shape = tuple(x._shape[d] for d in out_dims)
    lay = ffi.new(
        "int64_t[]",
        list(out_shape)
        + list(_shape.contiguous_strides(out_shape))
        + [x._stride[d] for d in out_dims]
        + [x._shape[d] for d in dims]
        + [x._stride[d] for d in dims],
    )
    return out_shape, lay, len(out_dims), len(dims)


def reduce(op, code, x, dims, keepdim, out_dtype, p0=0.0, want_idx=False, out=None):
    """Reduce x over ``dims`` (a tuple of normalised dims) with kernel ``code``."""
    if not x._dtype.base:
        return _reduce_cpu_only(op, code, x, dims, keepdim, out_dtype, p0, want_idx, out)
    nd = len(x._shape)
    if not nd:
        dims = ()  # a 0-d tensor reduces over "dim 0" to itself
    dev = x._storage._device
    fn = (
        x._storage._device._kn
        if x._numel * x._dtype.itemsize > NOGIL_THRESHOLD
        else x._storage._device._k
    ).ec_reduce
    if len(dims) == nd and (x._contig or is_contig(x)):
        # everything of a contiguous tensor: one flat run, a cached layout
        r = empty((), out_dtype, dev)
        idx = empty((), D.int64, dev) if want_idx else None
        n_out, n_red, lay = 0, 1, _flat_layout(x._numel)
    else:
        key = (x._shape, x._stride, dims)
        plan = _plans.get(key)
        if plan is None:
            plan = _plans[key] = _plan(x, dims)
            if len(_plans) > 1024:
                _plans.clear()
        out_shape, lay, n_out, n_red = plan
        r = empty(out_shape, out_dtype, dev)
        idx = empty(out_shape, D.int64, dev) if want_idx else None
    ws = None
    if dev.type != "cpu" and x._numel >= lib.ECU_RED_SPLIT_MIN:
        ws = _workspace(
            dev, dev._k.ec_reduce_workspace(code, x._dtype.code, out_dtype.code, n_out, n_red, lay)
        )
    st = fn(
        code,
        x._dtype.code,
        out_dtype.code,
        n_out,
        n_red,
        lay,
        r._ptr,
        idx._ptr if idx is not None else 0,
        x._ptr,
        p0,
    )
    del ws  # the kernels are queued: the stream-ordered pool keeps the memory from reuse
    if st:
        check(st, op)
    if keepdim:
        r = _keepdim_view(r, x._shape, dims)
        if idx is not None:
            idx = _keepdim_view(idx, x._shape, dims)
    if out is not None:
        if isinstance(out, tuple):
            values_out, idx_out = out
            return write_out(values_out, r, op), write_out(idx_out, idx, op)
        return write_out(out, r, op)
    return (r, idx) if want_idx else r


# Note [CPU-only dtypes] in reductions: complex sums and means reduce the real
# view (view_as_real: the parts are independent sums); products multiply
# pairwise (log2(n) complex multiplications of halves); the predicates and
# counts reduce ``x != 0``; var/std add the parts' variances.  The wide
# unsigned integers sum and multiply in int64, as PyTorch.
def _reduce_cpu_only(op, code, x, dims, keepdim, out_dtype, p0, want_idx, out):
    nd = len(x._shape)
    if not nd:
        dims = ()
    if code in (R.EC_R_ALL, R.EC_R_ANY, R.EC_R_COUNT_NONZERO):
        return reduce(op, code, ne(x, 0), dims, keepdim, out_dtype, p0, want_idx, out)
    if not x._dtype.is_complex:
        if code not in (R.EC_R_SUM, R.EC_R_PROD, R.EC_R_NANSUM):
            raise not_implemented(op, x._dtype)
        return reduce(op, code, cast(x, D.int64), dims, keepdim, out_dtype, p0, want_idx, out)
    if code in (R.EC_R_SUM, R.EC_R_MEAN, R.EC_R_NANSUM) and out_dtype.is_complex:
        real = reduce(op, code, as_real_view(x), dims, keepdim, out_dtype.to_real(), p0)
        r = as_complex_view(real)
    elif code == R.EC_R_PROD and out_dtype.is_complex:
        r = _complex_prod(cast(x, out_dtype), dims, keepdim)
    elif code in (R.EC_R_VAR, R.EC_R_STD):
        rv = as_real_view(x)
        rd = x._dtype.to_real()  # the variance of complex values is real
        parts = [reduce(op, R.EC_R_VAR, rv.select(-1, k), dims, keepdim, rd, p0) for k in (0, 1)]
        r = parts[0] + parts[1]
        if code == R.EC_R_STD:
            r = r.sqrt()
    elif code == R.EC_R_NORM:
        rd = x._dtype.to_real()
        return reduce(op, code, x.abs(), dims, keepdim, rd, p0, want_idx, out)
    else:
        raise complex_unsupported(op, x._dtype)
    if out is not None:
        return write_out(out, r, op)
    return r


def _complex_prod(x, dims, keepdim):
    nd = len(x._shape)
    kept = [d for d in range(nd) if d not in dims]
    out_shape = tuple(x._shape[d] for d in kept)
    y = x.permute(*kept, *dims).reshape(*out_shape, -1)
    n = y._shape[-1]
    if n == 0:
        r = ones(out_shape, dtype=x._dtype)
    else:
        while n > 1:
            h = n // 2
            z = y[..., :h] * y[..., h : 2 * h]
            y = cat([z, y[..., 2 * h :]], -1) if n % 2 else z
            n = y._shape[-1]
        r = y[..., 0].contiguous()
    if keepdim:
        r = _keepdim_view(r, x._shape, tuple(sorted(dims)))
    return r


def _complex_cumprod(x, dim, op):
    """Running products of complex values: log2(n) rounds, each multiplying every
    element by the one 2**k before it (Hillis-Steele)."""

    if not x._shape:
        return x.clone()
    d = _shape.normalize_dim(dim, len(x._shape), op)
    y = x.movedim(d, -1).contiguous()
    n, k = y._shape[-1], 1
    while k < n:
        y = cat([y[..., :k], y[..., k:] * y[..., : n - k]], -1)
        k *= 2
    return y.movedim(-1, d).contiguous()


def _workspace(dev, nbytes):
    """Note [Reduction workspace] (csrc/cuda/reduce_launch.c): device scratch
    of ``nbytes`` for the next reduction or scan launch of this thread (None
    when it needs none); the caller keeps it alive until the launch is queued."""
    if not nbytes:
        return None
    ws = empty((nbytes,), D.uint8, dev)
    dev._k.ec_set_workspace(ws._ptr, nbytes)
    return ws


def _dims(x, dim, op):
    if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
        return tuple(range(len(x._shape)))  # dim=() reduces everything, as in PyTorch
    return _shape.normalize_dims(dim, len(x._shape), op)


_ALL_DIMS = tuple(tuple(range(n)) for n in range(17))  # every dim of an n-d tensor
_int64 = D.int64


def _sum_dtype(x, dtype):
    if dtype is not None:
        return D.to_dtype(dtype)
    return D.int64 if x._dtype.category < 2 else x._dtype


@defop(tags=("reduction", "linear", "unchecked-overlap"))
def sum(input, dim=None, keepdim=False, *, dtype=None, out=None):
    """Sum over dim(s) (all by default); integers and bools sum to int64."""
    if dim is None and dtype is None:
        # the common call (a loss, x.sum()): what _sum_dtype and _dims give, without
        # their frames (Note [Op overhead] in _ops/pointwise/elementwise.py)
        dt, nd = input._dtype, len(input._shape)
        dims = _ALL_DIMS[nd] if nd < len(_ALL_DIMS) else tuple(range(nd))
        return reduce(
            "sum", R.EC_R_SUM, input, dims, keepdim, _int64 if dt.category < 2 else dt, out=out
        )
    od = _sum_dtype(input, dtype)
    x = cast(input, od) if dtype is not None and od.category == 2 else input
    return reduce("sum", R.EC_R_SUM, x, _dims(input, dim, "sum"), keepdim, od, out=out)


@defop(tags=("reduction", "linear"))
def nansum(input, dim=None, keepdim=False, *, dtype=None):
    if input._dtype.is_complex:
        raise RuntimeError("nansum on CPU does not support complex inputs")
    od = _sum_dtype(input, dtype)
    if input._dtype.category < 2:
        return sum(input, dim, keepdim, dtype=dtype)
    return reduce("nansum", R.EC_R_NANSUM, input, _dims(input, dim, "nansum"), keepdim, od)


def _float_only(op, x, dtype):
    dt = D.to_dtype(dtype) if dtype is not None else x._dtype
    if dt.category < 2:
        raise RuntimeError(
            f"{op}(): could not infer output dtype. Input dtype must be either a floating point "
            f"or complex dtype. Got: {_torch_name(dt)}"
        )
    return dt


def _torch_name(d):
    return _tname(d)


@defop(tags=("reduction", "linear"))
def mean(input, dim=None, keepdim=False, *, dtype=None, out=None):
    """Mean over dim(s); floating point inputs only (or give dtype)."""
    od = _float_only("mean", input, dtype)
    x = cast(input, od)
    return reduce("mean", R.EC_R_MEAN, x, _dims(input, dim, "mean"), keepdim, od, out=out)


@defop(composite=True, tags=("reduction",))
def nanmean(input, dim=None, keepdim=False, *, dtype=None):
    if not input._dtype.is_floating_point:
        raise RuntimeError(
            f"nanmean(): expected input to have floating point or complex dtype but got "
            f"{input._dtype.name}"
        )
    notnan = logical_not(isnan(input))
    return div(nansum(input, dim, keepdim, dtype=dtype), sum(notnan, dim, keepdim))


@defop(autocast="fp32", tags=("reduction", "unchecked-overlap"))
def prod(input, dim=None, keepdim=False, *, dtype=None, out=None):
    """Product over one dim (or all)."""
    od = _sum_dtype(input, dtype)
    x = cast(input, od) if dtype is not None and od.category == 2 else input
    dims = (
        tuple(range(len(input._shape)))
        if dim is None
        else (_shape.normalize_dim(dim, len(input._shape), "prod"),)
    )
    return reduce("prod", R.EC_R_PROD, x, dims, keepdim, od, out=out)


def _nonempty(op, x, dims):
    if x._numel == 0 and x._shape:
        if len(dims) == len(x._shape) and len(dims) != 1:
            raise RuntimeError(
                f"{op}(): Expected reduction dim to be specified for input.numel() == 0. Specify "
                "the reduction dim with the 'dim' argument."
            )
        for d in dims:
            if x._shape[d] == 0:
                raise IndexError(f"{op}(): Expected reduction dim {d} to have non-zero size.")


def _minmax(op, code, input, dim, keepdim, out):
    if dim is None:
        dims = tuple(range(len(input._shape)))
        _nonempty(op, input, dims)
        return reduce(op, code, input, dims, False, input._dtype)
    d = _shape.normalize_dim(dim, len(input._shape), op)
    _nonempty(op, input, (d,))
    values, indices = reduce(op, code, input, (d,), keepdim, input._dtype, want_idx=True, out=out)
    return getattr(return_types, op)(values, indices)


@defop(tags=("reduction",))
def max(input, dim=None, keepdim=False, *, out=None):
    """The largest element; with dim, (values, indices) along it; with a tensor as
    second argument, the elementwise maximum.  NaN propagates."""
    if isinstance(dim, Tensor):
        return maximum(input, dim, out=out)
    return _minmax("max", R.EC_R_MAX, input, dim, keepdim, out)


@defop(tags=("reduction",))
def min(input, dim=None, keepdim=False, *, out=None):
    """The smallest element; see max."""
    if isinstance(dim, Tensor):
        return minimum(input, dim, out=out)
    return _minmax("min", R.EC_R_MIN, input, dim, keepdim, out)


@defop(tags=("reduction", "unchecked-overlap"))
def amax(input, dim=(), keepdim=False, *, out=None):
    """The largest values over dim(s) (all by default)."""
    dims = _dims(input, dim, "amax")
    _nonempty("amax", input, dims)
    return reduce("amax", R.EC_R_MAX, input, dims, keepdim, input._dtype, out=out)


@defop(tags=("reduction", "unchecked-overlap"))
def amin(input, dim=(), keepdim=False, *, out=None):
    dims = _dims(input, dim, "amin")
    _nonempty("amin", input, dims)
    return reduce("amin", R.EC_R_MIN, input, dims, keepdim, input._dtype, out=out)


@defop(composite=True, tags=("reduction",))
def aminmax(input, *, dim=None, keepdim=False):
    dims = () if dim is None else dim
    return return_types.aminmax(amin(input, dims, keepdim), amax(input, dims, keepdim))


def _arg(op, code, input, dim, keepdim, out=None):
    idx = _arg_index(op, code, input, dim, keepdim)
    return idx if out is None else write_out(out, idx, op)


def _arg_index(op, code, input, dim, keepdim):
    if input._dtype is D.bool_:
        raise RuntimeError(f"{op}(): does not support bool input")
    if dim is None:
        flat = input.reshape(-1)
        _nonempty(op, flat, (0,))
        _, idx = reduce(op, code, flat, (0,), False, input._dtype, want_idx=True)
        if keepdim:
            idx = idx.reshape((1,) * len(input._shape))
        return idx
    d = _shape.normalize_dim(dim, len(input._shape), op)
    _nonempty(op, input, (d,))
    _, idx = reduce(op, code, input, (d,), keepdim, input._dtype, want_idx=True)
    return idx


@defop(differentiable=False, tags=("reduction", "unchecked-overlap"))
def argmax(input, dim=None, keepdim=False, *, out=None):
    """Index of the largest value (of the flattened tensor when dim is None)."""
    return _arg("argmax", R.EC_R_MAX, input, dim, keepdim, out)


@defop(differentiable=False, tags=("reduction", "unchecked-overlap"))
def argmin(input, dim=None, keepdim=False, *, out=None):
    return _arg("argmin", R.EC_R_MIN, input, dim, keepdim, out)


def _correction(op, unbiased, correction):
    if correction is not None and unbiased is not None:
        raise RuntimeError(f"{op}: cannot specify both unbiased and correction")
    if correction is None:
        return 1.0 if unbiased in (None, True) else 0.0
    return float(correction)


def _var_args(dim, unbiased):
    # var(x, True) passes unbiased positionally; var(x, 0) a dim
    if isinstance(dim, bool):
        return None, dim
    return dim, unbiased


@defop(tags=("reduction", "unchecked-overlap"))
def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None, out=None):
    """Variance over dim(s) with Bessel's correction by default (correction=1)."""
    dim, unbiased = _var_args(dim, unbiased)
    dt = _float_only("var", input, None)
    c = _correction("var", unbiased, correction)
    return reduce("var", R.EC_R_VAR, input, _dims(input, dim, "var"), keepdim, dt, c, out=out)


@defop(tags=("reduction", "unchecked-overlap"))
def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None, out=None):
    """Standard deviation (see var)."""
    dim, unbiased = _var_args(dim, unbiased)
    dt = _float_only("std", input, None)
    c = _correction("std", unbiased, correction)
    return reduce("std", R.EC_R_STD, input, _dims(input, dim, "std"), keepdim, dt, c, out=out)


@defop(composite=True, tags=("reduction",))
def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    return (
        var(input, dim, unbiased, keepdim, correction=correction),
        mean(input, _var_args(dim, unbiased)[0], keepdim),
    )


@defop(composite=True, tags=("reduction",))
def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    return (
        std(input, dim, unbiased, keepdim, correction=correction),
        mean(input, _var_args(dim, unbiased)[0], keepdim),
    )


@defop(composite=True, tags=("reduction",))
def norm(input, p="fro", dim=None, keepdim=False, dtype=None, *, out=None):
    """torch.norm: a vector norm (p a number, or 'fro' over at most two dims) or
    a matrix norm ('nuc'); see ember_core.linalg.torch_norm."""
    from ember_core import linalg

    return linalg.torch_norm(input, p, dim, keepdim, dtype, out)


@defop(method=False, tags=("reduction", "unchecked-overlap"))
def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):
    """linalg.vector_norm: the ord-norm of the flattened dims."""
    dt = _float_only("linalg.vector_norm", x, dtype)
    xx = cast(x, dt)
    return reduce(
        "vector_norm", R.EC_R_NORM, xx, _dims(x, dim, "vector_norm"), keepdim, dt, float(ord)
    )


@defop(tags=("reduction",))
def logsumexp(input, dim, keepdim=False, *, out=None):
    """log(sum(exp(input))) over dim(s), computed stably."""
    dt = input._dtype if input._dtype.category == 2 else D.get_default_dtype()
    x = cast(input, dt)
    return reduce(
        "logsumexp", R.EC_R_LOGSUMEXP, x, _dims(input, dim, "logsumexp"), keepdim, dt, out=out
    )


def _bool_out(x):
    return D.uint8 if x._dtype is D.uint8 else D.bool_


@defop(differentiable=False, tags=("reduction", "unchecked-overlap"))
def all(input, dim=None, keepdim=False, *, out=None):
    """Whether every element (along dim) is non-zero."""
    return reduce(
        "all", R.EC_R_ALL, input, _dims(input, dim, "all"), keepdim, _bool_out(input), out=out
    )


@defop(differentiable=False, tags=("reduction", "unchecked-overlap"))
def any(input, dim=None, keepdim=False, *, out=None):
    """Whether any element (along dim) is non-zero."""
    return reduce(
        "any", R.EC_R_ANY, input, _dims(input, dim, "any"), keepdim, _bool_out(input), out=out
    )


@defop(differentiable=False, tags=("reduction", "unchecked-overlap"))
def count_nonzero(input, dim=None, *, out=None):
    """The number of non-zero elements (along dim(s))."""
    dims = _dims(input, dim, "count_nonzero")
    return reduce("count_nonzero", R.EC_R_COUNT_NONZERO, input, dims, False, D.int64, out=out)


# ------------------------------------------------------------------- scans


def scan(op, code, x, dim, out_dtype, want_idx=False, out=None):
    if not x._dtype.base:
        if x._dtype.is_complex and code == R.EC_S_CUMSUM and out_dtype.is_complex:
            # the parts' running sums (the appended pair dim is last)
            d = _shape.normalize_dim(dim, len(x._shape), op) if x._shape else 0
            xr = as_real_view(x if x._shape else x.reshape(1))
            r = as_complex_view(scan(op, code, xr, d, out_dtype.to_real()))
            r = r if x._shape else r.reshape(())
            return write_out(out, r, op) if out is not None else r
        if x._dtype.is_complex and code == R.EC_S_CUMPROD and out_dtype.is_complex:
            r = _complex_cumprod(cast(x, out_dtype), dim, op)
            return write_out(out, r, op) if out is not None else r
        if not x._dtype.is_complex and code in (R.EC_S_CUMSUM, R.EC_S_CUMPROD):
            return scan(op, code, cast(x, D.int64), dim, out_dtype, want_idx, out)
        raise (
            complex_unsupported(op, x._dtype)
            if x._dtype.is_complex
            else not_implemented(op, x._dtype)
        )
    nd = len(x._shape)
    if nd == 0:
        x = x.reshape(1)
    d = _shape.normalize_dim(dim, len(x._shape), op)
    dev = x._storage._device
    r = empty(x._shape, out_dtype, dev)
    idx = empty(x._shape, D.int64, dev) if want_idx else None
    lay = ffi.new(
        "int64_t[]",
        list(x._shape)
        + list(r._stride)
        + list(x._stride)
        + list(idx._stride if idx is not None else r._stride),
    )
    ws = None
    if dev.type != "cpu" and x._numel >= lib.ECU_RED_SPLIT_MIN:
        nbytes = dev._k.ec_scan_workspace(
            code, x._dtype.code, out_dtype.code, len(x._shape), d, lay
        )
        ws = _workspace(dev, nbytes)
    check(
        r._storage._device._k.ec_scan(
            code,
            x._dtype.code,
            out_dtype.code,
            len(x._shape),
            d,
            lay,
            r._ptr,
            idx._ptr if idx is not None else 0,
            x._ptr,
        ),
        op,
    )
    del ws  # queued: the stream-ordered pool keeps the memory from reuse
    if nd == 0:
        r = r.reshape(())
        idx = idx.reshape(()) if idx is not None else None
    if out is not None:
        return write_out(out, r, op)
    return (r, idx) if want_idx else r


@defop(tags=("linear",))
def cumsum(input, dim, *, dtype=None, out=None):
    """Cumulative sum along dim (integers accumulate in int64)."""
    od = _sum_dtype(input, dtype)
    return scan("cumsum", R.EC_S_CUMSUM, input, dim, od, out=out)


@defop(inplace_of="cumsum")
def cumsum_(input, dim, *, dtype=None):
    return input.copy_(cumsum(input, dim, dtype=dtype))


@defop
def cumprod(input, dim, *, dtype=None, out=None):
    od = _sum_dtype(input, dtype)
    return scan("cumprod", R.EC_S_CUMPROD, input, dim, od, out=out)


@defop(inplace_of="cumprod")
def cumprod_(input, dim, *, dtype=None):
    return input.copy_(cumprod(input, dim, dtype=dtype))


@defop
def cummax(input, dim):
    v, i = scan("cummax", R.EC_S_CUMMAX, input, dim, input._dtype, want_idx=True)
    return return_types.cummax(v, i)


@defop
def cummin(input, dim):
    v, i = scan("cummin", R.EC_S_CUMMIN, input, dim, input._dtype, want_idx=True)
    return return_types.cummin(v, i)


@defop
def logcumsumexp(input, dim):
    if input._dtype.category != 2:
        raise NotImplementedError(
            f"\"logcumsumexp_out_cpu\" not implemented for '{_tname(input._dtype)}'"
        )
    dt = input._dtype
    return scan("logcumsumexp", R.EC_S_LOGCUMSUMEXP, cast(input, dt), dim, dt)


@defop(composite=True, autocast="fp32", tags=("reduction", "linear"))
def trace(input):
    """Sum of the main diagonal of a matrix."""
    if len(input._shape) != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {len(input._shape)}")
    return sum(input.diagonal())


# ------------------------------------------------ the sum undoing a broadcast


@defop(composite=True, function=False, tags=("reduction", "linear"))
def sum_to_size(input, *size):
    """The sum of input over the dimensions that broadcasting ``size`` to it expands."""
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    shape = tuple(input._shape)
    lead = len(shape) - len(size)
    # (written out: this module's own all/any are ops)
    ok = lead >= 0
    for i, s in enumerate(size):
        ok = ok and (s == 1 or s == shape[lead + i])
    if not ok:
        raise RuntimeError(
            f"size {{{', '.join(map(str, size))}}} is not expandable to size "
            f"{{{', '.join(map(str, shape))}}}."
        )
    r = input
    if lead:
        r = sum(r, tuple(range(lead)))
    dims = tuple(i for i, s in enumerate(size) if s == 1 and r.shape[i] != 1)
    if dims:
        r = sum(r, dims, keepdim=True)
    return r
