"""Sorting and selection (sort, argsort, msort, topk, kthvalue, median, nanmedian,
mode), set ops (unique, unique_consecutive, isin), binary search (searchsorted,
bucketize) and counting (bincount, histc).

The kernels (csrc/cpu/reduction/sort.c) work on "lines" along one dim; Note [Sort keys] there
says how elements are ordered: stably, NaN as the largest value.
"""

import math

import numpy as np

from ember_core._base import shape as _shape
from ember_core._base.dispatch import defop
from ember_core._base.lib import NOGIL_THRESHOLD, check, ffi, lib
from ember_core._base.return_types import return_type
from ember_core._interop.numpy import from_numpy
from ember_core._interop.numpy import numpy as _as_numpy
from ember_core._ops.indexing.index_ops import _finish_out, nonzero
from ember_core._ops.pointwise.elementwise import _tname as tn
from ember_core._ops.reduction.reduction import _workspace, amax, amin, cumsum, return_types
from ember_core._ops.shape.joining import cat
from ember_core._tensor import dtype as D
from ember_core._tensor.copy import clone, contiguous, copy_into, resize_, to_dtype_copy
from ember_core._tensor.creation import arange, full, ones, tensor, zeros
from ember_core._tensor.tensor import Tensor, empty, written
from ember_core._tensor.views import _view_dtype

L = lib

# torch.return_types for the ops of this module
for _name in ("sort", "topk", "kthvalue", "median", "nanmedian", "mode"):
    setattr(return_types, _name, return_type(_name, ["values", "indices"]))


def _tensor_arg(op, x, name="input"):
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument '{name}' must be Tensor, not {type(x).__name__}")
    return x


def _lines(x, d, *outs):
    """The layout of lines along dim d: batch shape, then the strides of x and of
    each output over the batch dims."""
    dims = [k for k in range(len(x._shape)) if k != d]
    flat = [x._shape[k] for k in dims] + [x._stride[k] for k in dims]
    for o in outs:
        flat.extend(o._stride[k] for k in dims)
    return ffi.new("int64_t[]", flat), len(dims)


def _fn(name, x):
    dev = x._storage._device
    return getattr(dev._kn if x._numel * x._dtype.itemsize > NOGIL_THRESHOLD else dev._k, name)


def _line_workspace(x, lines, n):
    """Note [CUDA sort] (csrc/cuda/sort.cuh): device scratch a CUDA topk,
    kthvalue or mode of long lines needs (None on the CPU, or when none is
    needed); kept alive by the caller until the kernels are queued."""
    dev = x._storage._device
    if dev.type == "cpu":
        return None

    return _workspace(dev, dev._k.ec_sort_workspace(lines, n))


def _reduced_shape(shape, d, keepdim):
    return shape[:d] + ((1,) if keepdim else ()) + shape[d + 1 :]


def _nonempty_dim(op, x, d):
    if x._shape[d] == 0:
        raise IndexError(f"{op}(): Expected reduction dim {d} to have non-zero size.")


def _copy_out(op, result, out):
    """Copy a (values, indices) result into out=(values, indices)."""
    if out is None:
        return result

    if not isinstance(out, (tuple, list)) or len(out) != 2:
        raise TypeError(f"{op}(): out must be a tuple of two tensors (values, indices)")
    for o, r in zip(out, result):
        if o._shape != r._shape:
            resize_(o, *r._shape)
        written(o, op)
        copy_into(o, r)
    return type(result)(*out)


# ------------------------------------------------------------------- sort


def _uint_key(x):
    """An int64 tensor ordered as the wide unsigned integers x are: uint16/32
    widen; uint64's bits are read as int64 with the sign bit flipped."""
    if x._dtype is not D.uint64:
        return x.to(D.int64)

    return _view_dtype(x.contiguous(), D.int64).bitwise_xor(-(2**63))


def sort_lines(x, d, descending, want_values=True):
    """(values, indices) of x sorted along dim d (values None unless wanted)."""
    if not x._dtype.base:
        if x._dtype.is_complex:
            raise RuntimeError("Sort does not support complex dtypes on CPU")
        _, indices = sort_lines(_uint_key(x), d, descending, want_values=False)
        return (x.gather(d, indices) if want_values else None), indices
    dev = x._storage._device
    values = empty(x._shape, x._dtype, dev) if want_values else None
    indices = empty(x._shape, D.int64, dev)
    if x._numel:
        lay, nd = _lines(x, d, values if want_values else indices, indices)
        st = values._stride[d] if want_values else 0
        check(
            _fn("ec_sort", x)(
                x._dtype.code,
                nd,
                lay,
                x._shape[d],
                x._stride[d],
                st,
                indices._stride[d],
                values._ptr if want_values else 0,
                indices._ptr,
                x._ptr,
                int(bool(descending)),
            ),
            "sort",
        )
    return values, indices


def _sort_dim(op, x, dim):
    if not x._shape:
        _shape.normalize_dim(dim, 0, op)
        return None
    return _shape.normalize_dim(dim, len(x._shape), op)


@defop
def sort(input, dim=-1, descending=False, stable=False, *, out=None):
    """(values, indices) of input sorted along dim.  Always stable; NaN sorts as
    the largest value.

    >>> import ember_core as ec
    >>> ec.tensor([3.0, 1.0, 2.0]).sort().indices
    tensor([1, 2, 0])
    """
    _tensor_arg("sort", input)
    d = _sort_dim("sort", input, dim)
    if d is None:
        r = return_types.sort(clone(input), zeros((), dtype=D.int64))
    else:
        r = return_types.sort(*sort_lines(input, d, descending))
    return _copy_out("sort", r, out)


@defop(differentiable=False)
def argsort(input, dim=-1, descending=False, stable=False):
    """The indices that sort input along dim (stable)."""
    _tensor_arg("argsort", input)
    d = _sort_dim("argsort", input, dim)
    if d is None:
        return zeros((), dtype=D.int64)
    return sort_lines(input, d, descending, want_values=False)[1]


@defop(composite=True)
def msort(input):
    """input sorted along its first dim."""
    return sort(input, 0).values


# ------------------------------------------------------------------ topk


@defop
def topk(input, k, dim=-1, largest=True, sorted=True, *, out=None):
    """The k largest (or smallest) elements along dim and their indices, sorted by
    default; NaN counts as the largest value, ties go to the lower index."""
    op = "topk"
    _tensor_arg(op, input)
    d = _sort_dim(op, input, dim)
    k = int(k)
    n = input._shape[d] if d is not None else 1
    if k < 0 or k > n:
        raise RuntimeError("selected index k out of range")
    if d is None:
        if k == 1:
            return _copy_out(op, return_types.topk(clone(input), zeros((), dtype=D.int64)), out)
        return _copy_out(
            op, return_types.topk(empty((0,), input._dtype), zeros((0,), dtype=D.int64)), out
        )
    shape = input._shape[:d] + (k,) + input._shape[d + 1 :]
    dev = input._storage._device
    values = empty(shape, input._dtype, dev)
    indices = empty(shape, D.int64, dev)
    if values._numel:
        lay, nd = _lines(input, d, values, indices)
        ws = _line_workspace(input, values._numel // k, n)  # noqa: F841 (kept for the launch)
        check(
            _fn("ec_topk", input)(
                input._dtype.code,
                nd,
                lay,
                n,
                k,
                input._stride[d],
                values._stride[d],
                indices._stride[d],
                values._ptr,
                indices._ptr,
                input._ptr,
                int(bool(largest)),
                int(bool(sorted)),
            ),
            op,
        )
    return _copy_out(op, return_types.topk(values, indices), out)


# ------------------------------------------------- kthvalue, median, mode


def _select_lines(op, x, d, k, mode, keepdim):
    shape = _reduced_shape(x._shape, d, True)
    dev = x._storage._device
    values = empty(shape, x._dtype, dev)
    indices = empty(shape, D.int64, dev)
    if values._numel:
        lay, nd = _lines(x, d, values, indices)
        ws = _line_workspace(x, values._numel, x._shape[d])  # noqa: F841 (kept for the launch)
        check(
            _fn("ec_kthvalue", x)(
                x._dtype.code,
                nd,
                lay,
                x._shape[d],
                k,
                x._stride[d],
                0,
                0,
                values._ptr,
                indices._ptr,
                x._ptr,
                mode,
            ),
            op,
        )
    if not keepdim:
        rs = _reduced_shape(x._shape, d, False)
        values, indices = values.reshape(rs), indices.reshape(rs)
    return values, indices


@defop
def kthvalue(input, k, dim=-1, keepdim=False, *, out=None):
    """The k-th smallest element (k from 1) along dim and its index."""
    op = "kthvalue"
    _tensor_arg(op, input)
    x = input if input._shape else input.reshape(1)
    d = _shape.normalize_dim(dim, len(input._shape), op)
    k = int(k)
    if x._shape[d] and not 1 <= k <= x._shape[d]:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {d}")
    _nonempty_dim(op, x, d)
    v, i = _select_lines(op, x, d, k - 1, L.EC_KTH_VALUE, keepdim or not input._shape)
    if not input._shape:
        v, i = v.reshape(()), i.reshape(())
    return _copy_out(op, return_types.kthvalue(v, i), out)


def _median(op, mode, input, dim, keepdim, out):
    _tensor_arg(op, input)
    if dim is None:
        x = input.reshape(-1)
        if x._numel == 0:
            # nan, or what a nan becomes in an integer dtype (as PyTorch on x86)
            dt = input._dtype
            empty_value = math.nan if dt.is_floating_point else dt.min if dt.itemsize >= 4 else 0
            return full((), empty_value, dtype=dt)
        v, _ = _select_lines(op, x, 0, (x._numel - 1) // 2, mode, False)
        return v
    x = input if input._shape else input.reshape(1)
    d = _shape.normalize_dim(dim, len(input._shape), op)
    _nonempty_dim(op, x, d)
    n = x._shape[d]
    v, i = _select_lines(op, x, d, (n - 1) // 2, mode, keepdim or not input._shape)
    if not input._shape:
        v, i = v.reshape(()), i.reshape(())
    return _copy_out(op, getattr(return_types, op)(v, i), out)


@defop
def median(input, dim=None, keepdim=False, *, out=None):
    """The lower median (of all elements, or along dim with its index); NaN if
    any element is NaN."""
    return _median("median", L.EC_KTH_MEDIAN, input, dim, keepdim, out)


@defop
def nanmedian(input, dim=None, keepdim=False, *, out=None):
    """median ignoring NaN values (NaN only when every element is NaN)."""
    return _median("nanmedian", L.EC_KTH_NANMEDIAN, input, dim, keepdim, out)


@defop
def mode(input, dim=-1, keepdim=False):
    """The most frequent value along dim (the smallest of equally frequent ones)
    and the index of its last occurrence."""
    op = "mode"
    _tensor_arg(op, input)
    x = input if input._shape else input.reshape(1)
    d = _shape.normalize_dim(dim, len(input._shape), op)
    _nonempty_dim(op, x, d)
    shape = _reduced_shape(x._shape, d, True)
    dev = x._storage._device
    values = empty(shape, x._dtype, dev)
    indices = empty(shape, D.int64, dev)
    if values._numel:
        lay, nd = _lines(x, d, values, indices)
        ws = _line_workspace(x, values._numel, x._shape[d])  # noqa: F841 (kept for the launch)
        check(
            _fn("ec_mode", x)(
                x._dtype.code,
                nd,
                lay,
                x._shape[d],
                x._stride[d],
                0,
                0,
                values._ptr,
                indices._ptr,
                x._ptr,
            ),
            op,
        )
    if not input._shape:
        return return_types.mode(values.reshape(()), indices.reshape(()))
    if not keepdim:
        rs = _reduced_shape(x._shape, d, False)
        values, indices = values.reshape(rs), indices.reshape(rs)
    return return_types.mode(values, indices)


# ------------------------------------------------------------------ unique


def _runs(n, starts_mask):
    """From a mask of run starts over n items: each item's run id and each run's length."""

    ids = cumsum(starts_mask, 0) - 1
    starts = nonzero(starts_mask, as_tuple=True)[0]
    if starts._numel:
        ends = cat([starts[1:], full((1,), n, dtype=D.int64, device=starts_mask.device)])
    else:
        ends = starts
    return ids, ends - starts


def _consecutive(op, x, sort_first, return_inverse, return_counts, dim):
    """unique (sort_first) or unique_consecutive of x, flat or along dim."""

    if dim is None:
        flat = x.reshape(-1)
        n = flat._numel
        if sort_first:
            vals, perm = sort_lines(flat, 0, False)
        else:
            vals, perm = flat, None
        starts = ones((n,), dtype=D.bool_, device=x.device)
        if n > 1:
            starts[1:] = vals[1:] != vals[:-1]
        uniq = vals[starts]
        inv_shape = x._shape
    else:
        d = _shape.normalize_dim(dim, len(x._shape), op)
        moved = x.movedim(d, 0)
        n = moved._shape[0]
        rows = moved.reshape(n, -1)
        perm = None
        if sort_first and n > 1:
            perm = _lexsort_rows(rows)
            rows = rows.index_select(0, perm)
        starts = ones((n,), dtype=D.bool_, device=x.device)
        if n > 1 and rows._shape[1]:
            starts[1:] = (rows[1:] != rows[:-1]).any(1)
        elif n > 1:
            starts[1:] = False
        uniq = rows[starts].reshape((-1,) + moved._shape[1:]).movedim(0, d)
        inv_shape = (n,)
    outs = [uniq]
    if return_inverse or return_counts:
        ids, counts = _runs(n, starts)
        if return_inverse:
            if perm is not None:
                inv = zeros((n,), dtype=D.int64, device=x.device)
                inv.index_copy_(0, perm, ids)
            else:
                inv = ids
            outs.append(inv.reshape(inv_shape))
        if return_counts:
            outs.append(counts)
    return outs[0] if len(outs) == 1 else tuple(outs)


def _lexsort_rows(rows):
    """The stable permutation sorting the rows of a 2-d tensor lexicographically."""
    n, m = rows._shape
    perm = None
    for c in reversed(range(m)):
        col = rows.select(1, c)
        if perm is not None:
            col = col.index_select(0, perm)
        _, order = sort_lines(col.contiguous(), 0, False, want_values=False)
        perm = order if perm is None else perm.index_select(0, order)
    if perm is None:
        perm = arange(n, device=rows.device)
    return perm


@defop(differentiable=False, tags=("nondeterministic-output-shape",))
def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """The distinct values of input (sorted), and optionally the inverse indices
    (where each element went) and the counts; with dim, the distinct slices.

    >>> import ember_core as ec
    >>> ec.unique(ec.tensor([2, 1, 2]), return_counts=True)
    (tensor([1, 2]), tensor([1, 2]))
    """
    _tensor_arg("unique", input)
    return _consecutive("unique", input, True, return_inverse, return_counts, dim)


@defop(differentiable=False, tags=("nondeterministic-output-shape",))
def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    """input with each run of equal consecutive values (or slices along dim) kept once."""
    _tensor_arg("unique_consecutive", input)
    return _consecutive("unique_consecutive", input, False, return_inverse, return_counts, dim)


# ---------------------------------------------------------- searchsorted


def _searchsorted(op, seq, values, out_int32, right, side, sorter):
    _tensor_arg(op, seq, "sorted_sequence")
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"{op}(): side can only be 'left' or 'right' but got {side}")
        if right and side == "left":
            raise RuntimeError(
                f"{op}(): side and right can't be set to opposites, got side of left while "
                "right was True"
            )
        right = side == "right"
    scalar = not isinstance(values, Tensor)
    if scalar:
        values = full((), values, dtype=D.result_type(seq, values))
    if seq._shape == ():
        raise RuntimeError(
            f"{op}(): boundaries tensor should have positive dimension, but got 0 dimension"
        )
    if len(seq._shape) > 1 and (values._shape[:-1] != seq._shape[:-1] or not values._shape):
        raise RuntimeError(
            f"{op}(): boundaries tensor should be 1 dimension or the first N-1 dimensions of "
            "boundaries tensor and input value tensor must match, but we got boundaries tensor "
            f"{list(seq._shape)} "
            f"and input value tensor {list(values._shape)}"
        )
    dt = D.promote_types(seq._dtype, values._dtype)
    s = contiguous(to_dtype_copy(seq, dt) if seq._dtype is not dt else seq)
    v = contiguous(to_dtype_copy(values, dt) if values._dtype is not dt else values)
    srt = None
    if sorter is not None:
        _tensor_arg(op, sorter, "sorter")
        if sorter._shape != seq._shape:
            raise RuntimeError(
                f"{op}(): boundary and sorter must have the same size, but got boundary "
                f"tensor {list(seq._shape)} and got sorter tensor {list(sorter._shape)}"
            )
        if sorter._dtype is not D.int64:
            raise RuntimeError(
                f"{op}(): sorter must be a tensor of long dtype but got dtype {sorter._dtype}"
            )
        srt = contiguous(sorter)
    nseq = s._shape[-1]
    r = empty(values._shape, D.int32 if out_int32 else D.int64, values._storage._device)
    if len(s._shape) == 1:
        rows, nval, seq_rs = 1, v._numel, 0
    else:
        nval = v._shape[-1]
        rows = v._numel // nval if nval else 0
        seq_rs = nseq
    if r._numel:
        check(
            s._storage._device._k.ec_searchsorted(
                dt.code,
                rows,
                nseq,
                s._ptr,
                seq_rs,
                nval,
                v._ptr,
                r._ptr,
                int(bool(out_int32)),
                int(bool(right)),
                srt._ptr if srt is not None else 0,
                seq_rs,
            ),
            op,
        )
    return r


@defop(
    differentiable=False,
)
def searchsorted(
    sorted_sequence, input, *, out_int32=False, right=False, side=None, out=None, sorter=None
):
    """Where each value of input would be inserted into sorted_sequence (along its
    last dim) to keep it sorted: the first such place, or the last with right=True.

    >>> import ember_core as ec
    >>> ec.searchsorted(ec.tensor([1, 3, 5]), ec.tensor([3, 4]))
    tensor([1, 2])
    """
    r = _searchsorted("searchsorted", sorted_sequence, input, out_int32, right, side, sorter)
    if out is not None:
        return _finish_out("searchsorted", r, out)
    return r


@defop(differentiable=False)
def bucketize(input, boundaries, *, out_int32=False, right=False, out=None):
    """The index of the bucket of 1-d ``boundaries`` each value of input falls in."""
    _tensor_arg("bucketize", boundaries, "boundaries")
    if len(boundaries._shape) != 1:
        raise RuntimeError(
            "bucketize(): boundaries tensor must be 1 dimension, but got "
            f"dim({len(boundaries._shape)})"
        )
    r = _searchsorted("bucketize", boundaries, input, out_int32, right, None, None)
    if out is not None:
        return _finish_out("bucketize", r, out)
    return r


# --------------------------------------------------------------- counting


@defop(differentiable=False)
def bincount(input, weights=None, minlength=0):
    """Counts of each value 0..max(input) of a 1-d non-negative integer tensor
    (sums of ``weights`` instead, when given); at least minlength bins."""

    op = "bincount"
    _tensor_arg(op, input)
    if len(input._shape) != 1 or input._dtype.category != 1:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    minlength = int(minlength)
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    if weights is not None:
        _tensor_arg(op, weights, "weights")
        if len(weights._shape) != 1 or weights._shape[0] != input._shape[0]:
            raise RuntimeError("weights should be 1-d and have the same length as input")
    n = input._numel
    if n and amin(input).item() < 0:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    nbins = max(int(amax(input).item()) + 1 if n else 0, minlength)
    x = contiguous(input if input._dtype is D.int64 else to_dtype_copy(input, D.int64))
    if weights is None:
        out_dt = D.int64
        w = None
    else:
        out_dt = weights._dtype if weights._dtype in (D.float32, D.float64) else D.float64
        w = contiguous(weights)
    r = zeros((nbins,), dtype=out_dt, device=input._storage._device)
    if n:
        check(
            x._storage._device._k.ec_bincount(
                n,
                x._ptr,
                w._ptr if w is not None else 0,
                w._dtype.code if w is not None else 0,
                r._ptr,
                out_dt.code,
                nbins,
            ),
            op,
        )
    return r


@defop(differentiable=False, tags=("unchecked-overlap",))
def histc(input, bins=100, min=0, max=0, *, out=None):
    """Histogram of input in ``bins`` equal bins over [min, max] (the data's range
    when both are 0); elements outside are ignored."""

    op = "histc"
    _tensor_arg(op, input)
    if input._dtype.category != 2:
        raise NotImplementedError(f"\"histogram_cpu\" not implemented for '{_tname(input._dtype)}'")
    bins = int(bins)
    if bins <= 0:
        raise RuntimeError("torch.histc: bins must be > 0")
    lo, hi = float(min), float(max)
    if lo == hi and input._numel:
        lo, hi = amin(input).item(), amax(input).item()
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise RuntimeError(f"torch.histc: range of [{lo}, {hi}] is not finite")
    if lo > hi:
        raise RuntimeError("torch.histc: max must be larger than min")
    x = contiguous(input)
    r = zeros((bins,), dtype=input._dtype, device=input._storage._device)
    check(_fn("ec_histc", x)(x._dtype.code, x._numel, x._ptr, r._ptr, bins, lo, hi), op)
    if out is not None:
        return _finish_out(op, r, out)
    return r


def _tname(d):
    return tn(d)


# ------------------------------------------------------------------ membership


@defop(method=False, composite=True, differentiable=False)
def isin(elements, test_elements, *, assume_unique=False, invert=False):
    """Whether each element of elements is in test_elements (a bool tensor of elements' shape)."""
    if not isinstance(elements, Tensor) and not isinstance(test_elements, Tensor):
        raise TypeError("isin(): at least one of elements and test_elements must be a Tensor")
    e = elements if isinstance(elements, Tensor) else tensor(elements)
    t = test_elements if isinstance(test_elements, Tensor) else tensor(test_elements)

    def values(x):
        x = x.cpu() if x._storage._device.type != "cpu" else x
        return _as_numpy(x.to(D.float32) if x._dtype is D.bfloat16 else x, force=True)

    r = np.isin(values(e), values(t).reshape(-1), assume_unique=assume_unique, invert=invert)
    return from_numpy(np.ascontiguousarray(r)).reshape(tuple(e.shape)).to(e.device)
