"""Index ops: index_select, gather, scatter (and its reductions), index_add/copy/
fill/put, masked_fill/select/scatter, take, take_along_dim, put, nonzero, argwhere,
nonzero_static, and index_reduce (a scatter_reduce along one dim).

All of them are one kernel, ec_index (Note [Index iteration] in csrc/cpu/indexing/index.c),
run over a Plan from _advanced_index: the iteration shape, x's strides over it
(0 along the indexed dim) and the index tensor's strides over it.
"""

import warnings

from ember_core._base import shape as _shape
from ember_core._base.dispatch import defop
from ember_core._base.lib import check, lib
from ember_core._ops.indexing.advanced_index import (
    IndexRuntimeError,
    Plan,
    apply_key,
    count_nonzero_all,
    gather_plan,
    nonzero_matrix,
    plan,
    put_plan,
    run_plan,
)
from ember_core._ops.pointwise.complex import as_real_view
from ember_core._ops.pointwise.elementwise import _tname, add, clamp, div, layout, lt, mul, ternary
from ember_core._ops.shape.joining import cat
from ember_core._tensor import dtype as D
from ember_core._tensor.copy import clone, contiguous, copy_into, resize_, to_dtype_copy
from ember_core._tensor.creation import arange, full
from ember_core._tensor.tensor import Tensor, empty, is_contig, view_of, written

L = lib


# --------------------------------------------------------------- helpers


def _tensor_arg(op, name, x):
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument '{name}' must be Tensor, not {type(x).__name__}")
    return x


def _index_arg(op, index, allow_int32=True):
    """index as int64 (int32 converted); other dtypes raise like PyTorch."""
    _tensor_arg(op, "index", index)
    if index._dtype is D.int64:
        return index
    if allow_int32 and index._dtype is D.int32:
        return to_dtype_copy(index, D.int64)
    raise RuntimeError(f"{op}(): Expected dtype int64 for index, but got {index._dtype}")


def _same_dtype(op, self, src, what="src"):
    if src._dtype is not self._dtype:
        raise RuntimeError(f"{op}(): Expected self.dtype to be equal to {what}.dtype")


def _scalar_tensor(value, dtype, dev):
    return full((), value, dtype=dtype, device=dev)


def _as_1d(t):
    # 0-d tensors index like 1-element vectors
    return view_of(t, (1,), (0,), t._offset, 1, True) if not t._shape else t


def _clone(t):
    return clone(t)


def _dim_plan(x, dim, index, shape):
    """Iterate over ``shape`` (x's shape with dim resized to the index's length);
    a 1-d (or 0-d) index addresses x's dim."""
    p = Plan()
    nd = len(shape)
    p.shape = shape
    p.x_strides = [0 if d == dim else x._stride[d] for d in range(nd)]
    ist = index._stride[0] if index._shape else 0
    p.idx_strides = [[ist if d == dim else 0 for d in range(nd)]]
    p.tensors = [index]
    p.sizes = [x._shape[dim]]
    p.xstrides = [x._stride[dim]]
    p.dims = [dim]
    return p


def _along_plan(x, dim, index):
    """gather/scatter: iterate over index's shape, index addressing x's dim."""
    p = Plan()
    nd = len(index._shape)
    p.shape = index._shape
    p.x_strides = [0 if d == dim else x._stride[d] for d in range(nd)]
    p.idx_strides = [list(index._stride)]
    p.tensors = [index]
    p.sizes = [x._shape[dim]]
    p.xstrides = [x._stride[dim]]
    p.dims = [dim]
    return p


def _check_index_vector(op, index):
    if len(index._shape) > 1:
        raise IndexError(
            f"{op}(): Index is supposed to be a vector, got a tensor of shape {list(index._shape)}"
        )


def _refuse_negative(op, index, x, d):
    """index_select, index_add, index_copy, gather and the scatters take indices in
    [0, size): unlike x[idx] (and index_fill, index_put_, put_, take), PyTorch
    refuses negative ones, which the kernels would wrap.  Indices past the end are
    refused by the kernels themselves."""
    if index._numel and index.min().item() < 0:
        size = x._shape[d] if x._shape else 1
        raise IndexRuntimeError(
            f"{op}(): index out of range in self (index {index.min().item()} is out of bounds "
            f"for dimension {d} with size {size})"
        )


def _norm_dim(op, x, dim):
    return _shape.normalize_dim(dim, len(x._shape), op)


# ------------------------------------------------------------ index_select


@defop
def index_select(input, dim, index, *, out=None):
    """The slices of input along dim at the positions in 1-d ``index``.

    >>> import ember_core as ec
    >>> ec.tensor([[1, 2], [3, 4], [5, 6]]).index_select(0, ec.tensor([2, 0]))
    tensor([[5, 6],
            [1, 2]])
    """
    op = "index_select"
    _tensor_arg(op, "input", input)
    index = _index_arg(op, index)
    _check_index_vector(op, index)
    d = _norm_dim(op, input, dim)
    _refuse_negative(op, index, input, d)
    if not input._shape:
        if index._numel != 1:
            raise IndexError(
                "index_select(): Index to scalar can have only 1 value, got "
                f"{index._numel} value(s)"
            )
        x = _as_1d(input)
        r = gather_plan(x, _dim_plan(x, 0, index, (1,)), op).reshape(())
        return _finish_out(op, r, out)
    shape = input._shape[:d] + (index._numel,) + input._shape[d + 1 :]
    try:
        r = gather_plan(input, _dim_plan(input, d, index, shape), op)
    except IndexError as e:  # a RuntimeError in PyTorch 2.13 as well
        raise IndexRuntimeError(str(e)) from None
    return _finish_out(op, r, out)


def _finish_out(op, r, out):
    if out is None:
        return r

    if out._shape != r._shape:
        resize_(out, *r._shape)
    written(out, op)
    copy_into(out, r)
    return out


# ------------------------------------------------------------------ gather


def _check_gather_shapes(op, input, dim, index, src=None):
    nd = len(input._shape)
    if len(index._shape) != nd and not (nd == 0 and len(index._shape) <= 1) and index._numel:
        raise RuntimeError(
            f"{op}(): Index tensor must have the same number of dimensions as input tensor"
        )
    if index._numel == 0 or len(index._shape) != nd:
        return
    for d in range(nd):
        if d != dim and index._shape[d] > input._shape[d]:
            if src is None:
                raise RuntimeError(
                    f"{op}(): Size does not match at dimension {d} expected index "
                    f"{list(index._shape)} "
                    f"to be no larger than self {list(input._shape)} apart from dimension {dim}"
                )
            break
        if src is not None and index._shape[d] > src._shape[d]:
            break
    else:
        return
    raise RuntimeError(
        f"{op}(): Expected index {list(index._shape)} to be no larger than self "
        f"{list(input._shape)} "
        f"apart from dimension {dim} and to be no larger size than src {list(src._shape)}"
    )


@defop
def gather(input, dim, index, *, sparse_grad=False, out=None):
    """out[i][j][k] = input[i][index[i][j][k]][k] (for dim=1); out has index's shape.

    >>> import ember_core as ec
    >>> ec.tensor([[1, 2], [3, 4]]).gather(1, ec.tensor([[0, 0], [1, 0]]))
    tensor([[1, 1],
            [4, 3]])
    """
    op = "gather"
    _tensor_arg(op, "input", input)
    index = _index_arg(op, index)
    d = _norm_dim(op, input, dim)
    _check_gather_shapes(op, input, d, index)
    _refuse_negative(op, index, input, d)
    if not input._shape and index._numel:
        x = _as_1d(input)
        idx = _as_1d(index)
        r = gather_plan(x, _along_plan(x, 0, idx), op)
        r = r.reshape(index._shape)
        return _finish_out(op, r, out)
    r = empty(index._shape, input._dtype, input._storage._device)
    if r._numel:
        run_plan(
            L.EC_INDEX_GET,
            _along_plan(input, d, index),
            input,
            r,
            r._stride,
            op,
            runtime_error=True,
        )
    return _finish_out(op, r, out)


# ----------------------------------------------------------------- scatter

_SCATTER_REDUCE = {"add": L.EC_INDEX_ADD, "multiply": L.EC_INDEX_MUL}
_SCATTER_REDUCE_OPS = {
    "sum": L.EC_INDEX_ADD,
    "mean": L.EC_INDEX_ADD,
    "prod": L.EC_INDEX_MUL,
    "amax": L.EC_INDEX_MAX,
    "amin": L.EC_INDEX_MIN,
}


def _scatter_src(op, self, src, value):
    """The values tensor of a scatter: src (same dtype) or a scalar value."""
    if src is None and value is None:
        raise TypeError(f"{op}(): expected either 'src' or 'value'")
    if isinstance(src, Tensor):
        _same_dtype("scatter", self, src)
        return src
    v = src if value is None else value
    if isinstance(v, Tensor):
        if v._shape:
            raise RuntimeError(f"{op}(): value must be a scalar or a 0-d tensor")
        v = v.item()
    return _scalar_tensor(v, self._dtype, self._storage._device)


def scatter_into(op, self, dim, index, values, mode, check_src=True):
    """self[..index..] (mode)= values along dim, in place; no version bump."""
    if values._shape and index._shape and len(values._shape) != len(index._shape):
        raise RuntimeError(
            f"{op}(): Index tensor must have the same number of dimensions as src tensor"
        )
    d = _norm_dim(op, self, dim)
    _check_gather_shapes(op, self, d, index, values if (check_src and values._shape) else None)
    if index._numel == 0:
        return self
    _refuse_negative(op, index, self, d)
    x = self
    idx = index if index._storage is not self._storage else _clone(index)
    if not self._shape:
        x = _as_1d(self)
        idx = _as_1d(idx)
        d = 0
    vals = values
    if vals._shape and len(vals._shape) != len(idx._shape):
        vals = _as_1d(vals)
    p = _along_plan(x, d, idx)
    vs = [vals._stride[k] for k in range(len(idx._shape))] if vals._shape else [0] * len(idx._shape)
    if vals._storage is x._storage:
        vals = _clone(vals)
        vs = list(vals._stride) if vals._shape else vs

    run_plan(mode, p, x, vals, vs, op, runtime_error=True)
    return self


def _reduce_mode(op, reduce, values):
    if reduce is None:
        return L.EC_INDEX_PUT
    if reduce not in _SCATTER_REDUCE:
        raise RuntimeError(
            f"{op}(): reduce argument must be either add or multiply, got {reduce!r}"
        )
    if isinstance(values, Tensor) and values._shape:
        warnings.warn(
            "The reduce argument of torch.scatter with Tensor src is deprecated and will be "
            "removed in a future PyTorch release. Use torch.scatter_reduce instead for more "
            "reduction options.",
            UserWarning,
            stacklevel=4,
        )
    return _SCATTER_REDUCE[reduce]


@defop
def scatter(input, dim, index, src=None, value=None, *, reduce=None, out=None):
    """A copy of input with values from src (or a scalar) written at the positions
    ``index`` gives along dim: out[i][index[i][j]] = src[i][j] (dim=1)."""
    op = "scatter"
    index = _index_arg(op, index)
    values = _scatter_src(op, input, src, value)
    mode = _reduce_mode(op, reduce, src)
    r = scatter_into(op, _clone(input), dim, index, values, mode)
    return _finish_out(op, r, out)


@defop(inplace_of="scatter")
def scatter_(input, dim, index, src=None, value=None, *, reduce=None):
    op = "scatter_"
    index = _index_arg(op, index)
    values = _scatter_src(op, input, src, value)
    mode = _reduce_mode(op, reduce, src)
    written(input, op)
    return scatter_into(op, input, dim, index, values, mode)


def _scatter_add_into(op, self, dim, index, src):
    if not self._dtype.is_complex:
        return scatter_into(op, self, dim, index, src, L.EC_INDEX_ADD)
    # complex sums are the parts' sums: scatter the real views, the index repeated
    # for both parts (Note [CPU-only dtypes])

    d = _shape.normalize_dim(dim, len(self._shape), op) if self._shape else 0
    pairs = index._shape + (2,)
    index2 = index.unsqueeze(-1).expand(pairs) if index._shape else index.reshape(1, 1)
    x = self if self._shape else self.reshape(1)
    s = src if src._shape else src.reshape(1)
    scatter_into(op, as_real_view(x), d, index2, as_real_view(s), L.EC_INDEX_ADD)
    return self


@defop
def scatter_add(input, dim, index, src):
    """A copy of input with src added at index along dim (duplicates accumulate)."""
    index = _index_arg("scatter_add", index)
    _same_dtype("scatter_add", input, _tensor_arg("scatter_add", "src", src))
    return _scatter_add_into("scatter_add", _clone(input), dim, index, src)


@defop(inplace_of="scatter_add")
def scatter_add_(input, dim, index, src):
    index = _index_arg("scatter_add_", index)
    _same_dtype("scatter_add_", input, _tensor_arg("scatter_add_", "src", src))
    written(input, "scatter_add_")
    return _scatter_add_into("scatter_add_", input, dim, index, src)


def _identity(reduce, dtype):
    if reduce in ("sum", "mean"):
        return 0
    if reduce == "prod":
        return 1
    if dtype.category == 2:
        return float("-inf") if reduce == "amax" else float("inf")
    if dtype is D.bool_:
        return reduce != "amax"
    return dtype.min if reduce == "amax" else dtype.max


def scatter_reduce_into(op, self, dim, index, src, reduce, include_self):
    if reduce not in _SCATTER_REDUCE_OPS:
        raise RuntimeError(
            f"{op}(): reduce argument must be either sum, prod, mean, amax or amin, got {reduce}"
        )
    index = _index_arg(op, index)
    _same_dtype(op, self, _tensor_arg(op, "src", src))
    if not include_self:
        ident = _scalar_tensor(_identity(reduce, self._dtype), self._dtype, self._storage._device)
        scatter_into(op, self, dim, index, ident, L.EC_INDEX_PUT)
    scatter_into(op, self, dim, index, src, _SCATTER_REDUCE_OPS[reduce])
    if reduce == "mean":
        from ember_core._tensor.creation import full, ones

        count = full(self._shape, 1 if include_self else 0, dtype=self._dtype, device=self.device)
        scatter_into(
            op,
            count,
            dim,
            index,
            ones(index._shape, dtype=self._dtype, device=self.device),
            L.EC_INDEX_ADD,
            check_src=False,
        )
        count = clamp(count, min=1)
        mean = div(self, count, rounding_mode="floor" if self._dtype.category < 2 else None)
        copy_into(self, mean)
    return self


@defop
def scatter_reduce(input, dim, index, src, reduce, *, include_self=True):
    """Reduce src into a copy of input at index along dim with reduce in
    'sum', 'prod', 'mean', 'amax', 'amin' (include_self: whether input's own
    values take part)."""
    return scatter_reduce_into(
        "scatter_reduce", _clone(input), dim, index, src, reduce, include_self
    )


@defop(
    inplace_of="scatter_reduce",
)
def scatter_reduce_(input, dim, index, src, reduce, *, include_self=True):
    written(input, "scatter_reduce_")
    return scatter_reduce_into("scatter_reduce_", input, dim, index, src, reduce, include_self)


# --------------------------------------------------- index_add/copy/fill


def _index_dim_args(op, input, dim, index, source=None):
    index = _index_arg(op, index)
    _check_index_vector(op, index)
    d = _norm_dim(op, input, dim)
    if source is not None:
        _tensor_arg(op, "source", source)
        if source._dtype is not input._dtype:
            raise RuntimeError(
                f"{op}(): self ({_tname(input._dtype)}) and source ({_tname(source._dtype)}) must "
                "have the same scalar type"
            )
        if input._shape:
            ssize = source._shape[d] if len(source._shape) > d else 1
            if ssize != index._numel:
                raise RuntimeError(
                    f"{op}(): Number of indices ({index._numel}) should be equal to "
                    f"source.size(dim): ({ssize}), for dim: {d}"
                )
            expect = input._shape[:d] + (index._numel,) + input._shape[d + 1 :]
            if source._shape != expect and source._numel != _shape.numel(expect):
                raise RuntimeError(
                    f"{op}(): source of shape {list(source._shape)} does not match self of shape "
                    f"{list(input._shape)} with dim {d} of size {index._numel}"
                )
        _refuse_negative(op, index, input, d)  # (index_fill takes negative indices)
    return d, index


def index_into(op, self, dim, index, values, mode, alpha=1.0):
    """Write values along dim at 1-d index positions into self (in place)."""
    x = self if self._shape else _as_1d(self)
    if not self._shape:
        dim = 0
    shape = x._shape[:dim] + (index._numel,) + x._shape[dim + 1 :]
    if _shape.numel(shape) == 0:
        return self
    if values._shape and values._shape != shape:
        values = values.reshape(shape)
    if mode == L.EC_INDEX_ADD and x._dtype.is_complex:
        # complex sums are the parts' sums: the kernels add the real views

        values = values.to(x._dtype)
        if isinstance(alpha, complex):
            values, alpha = values * alpha, 1.0
        values = values.expand(shape).contiguous()
        x, values, shape = as_real_view(x), as_real_view(values), shape + (2,)
    p = _dim_plan(x, dim, index, shape)
    put_plan(x, p, values, mode, op, alpha, runtime_error=True)  # both, as in PyTorch
    return self


@defop
def index_add(input, dim, index, source, *, alpha=1, out=None):
    """A copy of input with alpha * source added at ``index`` along dim."""
    d, index = _index_dim_args("index_add", input, dim, index, source)
    r = index_into("index_add", _clone(input), d, index, source, L.EC_INDEX_ADD, alpha)
    return _finish_out("index_add", r, out)


@defop(inplace_of="index_add")
def index_add_(input, dim, index, source, *, alpha=1):
    """input[..., index[i], ...] += alpha * source[..., i, ...] along dim (repeated
    indices accumulate)."""
    d, index = _index_dim_args("index_add_", input, dim, index, source)
    written(input, "index_add_")
    return index_into("index_add_", input, d, index, source, L.EC_INDEX_ADD, alpha)


@defop(autocast="promote")
def index_copy(input, dim, index, source):
    """A copy of input with the slices of source written at ``index`` along dim."""
    d, index = _index_dim_args("index_copy", input, dim, index, source)
    return index_into("index_copy", _clone(input), d, index, source, L.EC_INDEX_PUT)


@defop(inplace_of="index_copy")
def index_copy_(input, dim, index, source):
    d, index = _index_dim_args("index_copy_", input, dim, index, source)
    written(input, "index_copy_")
    return index_into("index_copy_", input, d, index, source, L.EC_INDEX_PUT)


def _fill_value(op, input, value):
    if isinstance(value, Tensor):
        if value._shape:
            raise RuntimeError(
                f"{op}(): only supports a 0-dimensional value tensor, but got tensor with "
                f"{len(value._shape)} dimension(s)."
            )
        if value._dtype is not input._dtype:
            value = to_dtype_copy(value, input._dtype)
        return value
    return _scalar_tensor(value, input._dtype, input._storage._device)


@defop
def index_fill(input, dim, index, value):
    """A copy of input with the slices at ``index`` along dim set to value."""
    d, index = _index_dim_args("index_fill", input, dim, index)
    v = _fill_value("index_fill", input, value)
    return index_into("index_fill", _clone(input), d, index, v, L.EC_INDEX_PUT)


@defop(inplace_of="index_fill", tags=("unchecked-overlap",))
def index_fill_(input, dim, index, value):
    d, index = _index_dim_args("index_fill_", input, dim, index)
    v = _fill_value("index_fill_", input, value)
    written(input, "index_fill_")
    return index_into("index_fill_", input, d, index, v, L.EC_INDEX_PUT)


# ------------------------------------------------------------- index_put


def _indices_key(op, indices):
    if isinstance(indices, Tensor):
        indices = (indices,)
    if not isinstance(indices, (tuple, list)):
        raise TypeError(f"{op}(): indices must be a tuple of tensors, got {type(indices).__name__}")
    key = []
    for i in indices:
        if i is None:
            key.append(slice(None))
        elif isinstance(i, Tensor):
            key.append(i)
        else:
            raise TypeError(f"{op}(): indices must be tensors or None, got {type(i).__name__}")
    return tuple(key)


def index_put_into(op, self, indices, values, accumulate):
    _tensor_arg(op, "values", values)
    if values._dtype is not self._dtype:
        raise RuntimeError(
            "Index put requires the source and destination dtypes match, got "
            f"{_tname(self._dtype)} for the destination and {_tname(values._dtype)} for the source."
        )
    key = _indices_key(op, indices)
    if len(key) > len(self._shape) and not (len(key) == 1 and not self._shape):
        raise IndexError(
            f"too many indices for tensor of dimension {len(self._shape)} (got {len(key)})"
        )
    if accumulate and self._dtype.is_complex and self._shape:
        # complex sums are the parts' sums: accumulate into the real views

        index_put_into(op, as_real_view(self), indices, as_real_view(values), True)
        return self
    view, idx = apply_key(self, key)
    if not idx:
        if accumulate:
            copy_into(view, add(view, values))
        else:
            copy_into(view, values)
        return self
    p = plan(view, idx, op)
    put_plan(view, p, values, L.EC_INDEX_ADD if accumulate else L.EC_INDEX_PUT, op)
    return self


@defop
def index_put(input, indices, values, accumulate=False):
    """A copy of input with ``input[indices] = values`` (or ``+=`` with accumulate,
    where duplicate indices add up)."""
    return index_put_into("index_put", _clone(input), indices, values, accumulate)


@defop(inplace_of="index_put", tags=("unchecked-overlap",))
def index_put_(input, indices, values, accumulate=False):
    """input[indices] = values in place; indices is a tuple of index tensors (or
    None for a whole dim).  With accumulate, duplicates add up."""
    written(input, "index_put_")
    return index_put_into("index_put_", input, indices, values, accumulate)


# ------------------------------------------------------------------ masks


def _bool_mask(op, mask):
    _tensor_arg(op, "mask", mask)
    if mask._dtype is not D.bool_:
        raise RuntimeError(
            f"{op} only supports boolean masks, but got mask with dtype "
            f"{'unsigned char' if mask._dtype is D.uint8 else mask._dtype.name}"
        )
    return mask


def _mask_to(op, mask, shape):
    """mask broadcast to shape (it must broadcast there)."""
    if mask._shape == shape:
        return mask
    try:
        target = _shape.broadcast_shapes(mask._shape, shape, op=op)
    except RuntimeError:
        target = None
    if target != shape:
        raise RuntimeError(
            f"{op}: the shape of the mask {list(mask._shape)} must be broadcastable to the "
            "shape of "
            f"the tensor {list(shape)}"
        )
    st = _shape.broadcast_strides(mask._shape, mask._stride, shape)
    return view_of(mask, shape, tuple(st), mask._offset)


def _masked_value(op, input, value):
    if isinstance(value, Tensor):
        if value._shape:
            raise RuntimeError(
                f"{op} only supports a 0-dimensional value tensor, but got tensor with "
                f"{len(value._shape)} dimension(s)."
            )
        if value._dtype is not input._dtype:
            value = to_dtype_copy(value, input._dtype)
        return value
    return _scalar_tensor(value, input._dtype, input._storage._device)


@defop
def masked_fill(input, mask, value):
    """A copy of input (broadcast with mask) with value where mask is True."""
    _tensor_arg("masked_fill", "input", input)
    mask = _bool_mask("masked_fill_", mask)
    shape = _shape.broadcast_shapes(input._shape, mask._shape, op="masked_fill")

    r = empty(shape, input._dtype, input._storage._device)
    copy_into(r, input)
    v = _masked_value("masked_fill_", input, value)
    return ternary("masked_fill", L.EC_T_WHERE, mask, v, r, out=r, cond=True)


@defop(inplace_of="masked_fill", tags=("unchecked-overlap",))
def masked_fill_(input, mask, value):
    mask = _bool_mask("masked_fill_", mask)
    _mask_to("masked_fill_", mask, input._shape)
    v = _masked_value("masked_fill_", input, value)
    return ternary("masked_fill_", L.EC_T_WHERE, mask, v, input, out=input, cond=True)


@defop(tags=("nondeterministic-output-shape",))
def masked_select(input, mask, *, out=None):
    """The elements of input (broadcast with mask) where mask is True, as a 1-d tensor."""
    op = "masked_select"
    _tensor_arg(op, "input", input)
    _tensor_arg(op, "mask", mask)
    if mask._dtype is not D.bool_:
        raise RuntimeError(f"{op}: expected BoolTensor for mask")
    shape = _shape.broadcast_shapes(input._shape, mask._shape, op=op)
    m = _mask_to(op, mask, shape)
    xst = _shape.broadcast_strides(input._shape, input._stride, shape)
    n = count_nonzero_all(m)
    r = empty((n,), input._dtype, input._storage._device)
    if n:
        lay = layout(shape, xst, m._stride)
        check(
            r._storage._device._k.ec_masked_select(
                input._dtype.code, len(shape), lay, r._ptr, input._ptr, m._ptr
            ),
            op,
        )
    return _finish_out(op, r, out)


def masked_scatter_into(op, self, mask, source):
    mask = _tensor_arg(op, "mask", mask)
    if mask._dtype is not D.bool_:
        raise RuntimeError(f"{op}: expected BoolTensor for mask")
    _tensor_arg(op, "source", source)
    if source._dtype is not self._dtype:
        raise RuntimeError(
            f"{op}: expected self and source to have same dtypes but got {_tname(self._dtype)} and "
            f"{_tname(source._dtype)}"
        )
    m = _mask_to(op, mask, self._shape)
    if m._storage is self._storage:  # the writes would change the mask under the kernel
        m = _clone(m)

    src = contiguous(source)
    if src._storage is self._storage:
        src = _clone(src)
    lay = layout(self._shape, self._stride, m._stride)
    check(
        self._storage._device._k.ec_masked_scatter(
            self._dtype.code, len(self._shape), lay, self._ptr, m._ptr, src._ptr, src._numel
        ),
        op,
    )
    return self


@defop
def masked_scatter(input, mask, source):
    """A copy of input (broadcast with mask) with source's elements, in order, where
    mask is True."""
    shape = _shape.broadcast_shapes(
        input._shape, _tensor_arg("masked_scatter", "mask", mask)._shape, op="masked_scatter"
    )

    r = empty(shape, input._dtype, input._storage._device)
    copy_into(r, input)
    return masked_scatter_into("masked_scatter", r, mask, source)


@defop(inplace_of="masked_scatter")
def masked_scatter_(input, mask, source):
    _mask_to("masked_scatter_", _tensor_arg("masked_scatter_", "mask", mask), input._shape)
    if _tensor_arg("masked_scatter_", "source", source)._numel < count_nonzero_all(
        _mask_to("masked_scatter_", mask, input._shape)
    ):
        raise RuntimeError("masked_scatter_: Number of elements of source < number of ones in mask")
    written(input, "masked_scatter_")
    return masked_scatter_into("masked_scatter_", input, mask, source)


# ------------------------------------------------------------- take, put


def _flat(t):
    """t as a 1-d view of its elements in row-major order (a contiguous copy if needed)."""

    c = contiguous(t)
    return view_of(c, (c._numel,), (1,), c._offset, c._numel, True)


@defop
def take(input, index):
    """input treated as 1-d, at ``index``; the result has index's shape."""
    index = _index_arg("take", index)
    x = _flat(input)
    p = Plan()
    p.shape = index._shape
    p.x_strides = [0] * len(index._shape)
    p.idx_strides = [list(index._stride)]
    p.tensors = [index]
    p.sizes = [x._numel]
    p.xstrides = [1]
    p.dims = [0]
    return gather_plan(x, p, "take")


@defop(composite=True)
def take_along_dim(input, indices, dim=None, *, out=None):
    """Values of input at ``indices`` along dim (input and indices broadcast in the
    other dims); with dim None, of the flattened input."""
    op = "take_along_dim"
    indices = _index_arg(op, indices)
    if dim is None:
        r = take(input, indices.reshape(-1))
        return _finish_out(op, r, out)
    d = _norm_dim(op, input, dim)
    if len(indices._shape) != len(input._shape):
        raise RuntimeError(
            f"{op}(): input and indices should have the same number of dimensions, but got "
            f"{len(input._shape)} dimensions for input, and {len(indices._shape)} dimensions "
            "for indices"
        )
    xs = list(input._shape)
    is_ = list(indices._shape)
    xs[d] = is_[d] = 1
    b = _shape.broadcast_shapes(tuple(xs), tuple(is_), op=op)
    xshape = b[:d] + (input._shape[d],) + b[d + 1 :]
    ishape = b[:d] + (indices._shape[d],) + b[d + 1 :]
    x = input.expand(xshape) if input._shape != xshape else input
    idx = indices.expand(ishape) if indices._shape != ishape else indices
    if idx._numel:
        # indices in [-size, 0) count from the end, as in PyTorch; others raise
        # (PyTorch 2.13 wraps any index modulo the size, pytorch#196106)
        size = input._shape[d]
        lo, hi = idx.min().item(), idx.max().item()
        if lo < -size or hi >= size:
            raise IndexRuntimeError(
                f"{op}(): index {lo if lo < -size else hi} is out of bounds for dimension {d} "
                f"with size {size}"
            )
        if lo < 0:
            idx = add(idx, mul(lt(idx, 0), size))
    return _finish_out(op, gather(x, d, idx), out)


def _arange2(like):
    return arange(2, dtype=like._dtype, device=like._storage._device)


def put_into(op, self, index, source, accumulate):
    index = _index_arg(op, index)
    _tensor_arg(op, "source", source)
    if source._numel != index._numel:
        raise IndexError(
            f"{op}(): Expected source and index to have the same number of elements, but got "
            f"source.numel() = {source._numel}, index.numel() = {index._numel}"
        )
    if source._dtype is not self._dtype:
        raise RuntimeError(
            f"{op}(): self ({_tname(self._dtype)}) and source ({_tname(source._dtype)}) must have "
            "the same scalar type"
        )
    if index._numel == 0:
        return self
    if accumulate and self._dtype.is_complex:
        # complex sums are the parts' sums: element k's parts are reals 2k and 2k+1
        # of the real view of a contiguous copy

        flat = self.reshape(-1).contiguous()
        k = index.reshape(-1)
        k = k + (k < 0).to(k._dtype) * flat._numel  # negative indices count from the end
        pairs = (k * 2).unsqueeze(-1) + _arange2(k)
        put_into(op, as_real_view(flat), pairs, as_real_view(source.reshape(-1)), True)
        if flat._storage is not self._storage:
            copy_into(self, flat.reshape(self._shape))
        return self
    contig = is_contig(self)
    x = (
        view_of(self, (self._numel,), (1,), self._offset, self._numel, True)
        if contig
        else _flat(self)
    )
    idx = index.reshape(-1)
    src = source.reshape(-1)
    p = Plan()
    p.shape = idx._shape
    p.x_strides = [0]
    p.idx_strides = [list(idx._stride)]
    p.tensors = [idx]
    p.sizes = [x._numel]
    p.xstrides = [1]
    p.dims = [0]
    put_plan(x, p, src, L.EC_INDEX_ADD if accumulate else L.EC_INDEX_PUT, op)
    if not contig:
        copy_into(self, x.reshape(self._shape))
    return self


@defop(inplace_of="put")
def put_(input, index, source, accumulate=False):
    """input treated as 1-d: input[index] = source (+= with accumulate), in place."""
    written(input, "put_")
    return put_into("put_", input, index, source, accumulate)


@defop
def put(input, index, source, accumulate=False):
    """A copy of input with put_ applied."""
    return put_into("put", _clone(input), index, source, accumulate)


# --------------------------------------------------------------- nonzero


@defop(differentiable=False, tags=("nondeterministic-output-shape",))
def nonzero(input, *, out=None, as_tuple=False):
    """Indices of the non-zero elements: an (n, ndim) int64 tensor, or with
    as_tuple one 1-d tensor per dim (a 0-d input counts as 1-d).

    >>> import ember_core as ec
    >>> ec.tensor([[0, 1], [2, 0]]).nonzero()
    tensor([[0, 1],
            [1, 0]])
    """
    _tensor_arg("nonzero", "input", input)
    if as_tuple:
        x = input if input._shape else _as_1d(input)
        m = nonzero_matrix(x, transposed=True)
        n = m._shape[1]
        return tuple(view_of(m, (n,), (1,), d * n, n, True) for d in range(len(x._shape)))
    r = nonzero_matrix(input)
    return _finish_out("nonzero", r, out)


@defop(differentiable=False, tags=("nondeterministic-output-shape",))
def argwhere(input):
    """Indices of the non-zero elements, (n, ndim) (nonzero())."""
    return nonzero_matrix(_tensor_arg("argwhere", "input", input))


# ------------------------------------------------------------------ reductions by index


_INDEX_REDUCE = ("prod", "mean", "amax", "amin")


@defop(composite=True)
def index_reduce(input, dim, index, source, reduce, *, include_self=True):
    """Reduce source's slices into input's slices index[i] along dim (prod, mean, amax, amin)."""
    if reduce not in _INDEX_REDUCE:
        raise RuntimeError(
            f"index_reduce(): Expected reduce to be one of prod, mean, "
            f"amax or amin but got {reduce}."
        )
    d = _shape.normalize_dim(dim, max(input.dim(), 1), "index_reduce")
    if index.dim() > 1:
        raise IndexError("index_reduce_(): Index is supposed to be a vector")
    if source.dim() and index.numel() != source.shape[d]:
        raise IndexError(
            f"index_reduce_(): Number of indices ({index.numel()}) should be equal to "
            f"source.size(dim) ({source.shape[d]})"
        )
    size = input.shape[d] if input.dim() else 1
    lo, hi = (int(index.min()), int(index.max())) if index.numel() else (0, 0)
    if lo < 0 or hi >= size:
        bad = lo if lo < 0 else hi
        raise IndexError(
            f"index_reduce(): index out of range in self (index {bad} is out of bounds for "
            f"dimension {d} with size {size})"
        )
    shape = [-1 if i == d else 1 for i in range(source.dim())]
    idx = index.reshape(shape).expand(tuple(source.shape))
    return input.scatter_reduce(d, idx, source, reduce, include_self=include_self)


@defop(composite=True, inplace_of="index_reduce")
def index_reduce_(input, dim, index, source, reduce, *, include_self=True):
    return input.copy_(index_reduce(input, dim, index, source, reduce, include_self=include_self))


# ------------------------------------------------------------------ nonzero, padded


@defop(composite=True, differentiable=False)
def nonzero_static(input, *, size, fill_value=-1):
    """nonzero() padded with fill_value (or truncated) to exactly ``size`` rows."""
    if size < 0:
        raise RuntimeError(
            f"nonzero_static: 'size' must be an non-negative integer, but got {size}"
        )
    nz = nonzero(input)
    k = nz.shape[0]
    if k >= size:
        return nz[:size].contiguous()
    pad = full((size - k, input.dim()), fill_value, dtype=D.int64, device=input.device)
    return cat([nz, pad], 0)
