"""The sparse implementations of elementwise ops, sums and transposes
(Note [Sparse layouts] in _tensor/sparse.py): each registered for its op's name in
``_tensor.sparse.SPARSE_IMPLS``, called with the op's canonical arguments when the op's
dense implementation met a sparse tensor."""

from ember_core._base import dispatch as _dispatch
from ember_core._ops.pointwise.elementwise import is_scalar
from ember_core._tensor import dtype as D
from ember_core._tensor import layout as _layout
from ember_core._tensor.creation import zeros
from ember_core._tensor.sparse import (
    SparseCsrTensor,
    SparseTensor,
    _cat,
    _coalesce,
    _coo,
    _csr_to_coo,
    _index_tuple,
    _linear_index,
    _not_implemented,
    _rebuild,
    _sparse_args,
    _sparse_impl,
    _SparseBase,
    to_sparse_csr,
)
from ember_core._tensor.tensor import Tensor


def _as_coo(op, x):
    if isinstance(x, SparseCsrTensor):
        return _csr_to_coo(x)
    return x


def _no_out(op, out):
    if out is not None:
        raise NotImplementedError(f"{op}: out= is not supported with sparse tensors")


def _is_number(x):
    return is_scalar(x) or (
        isinstance(x, Tensor) and not isinstance(x, _SparseBase) and x.dim() == 0
    )


def _same_size(op, a, b):
    if tuple(a.shape) != tuple(b.shape):
        raise RuntimeError(
            f"{op}: expected 'self' and 'other' to have same size, but self has size "
            f"{list(a.shape)} while other has size {list(b.shape)} (FYI: dense-sparse "
            "addition does not currently support broadcasting)"
        )


def _add(op, input, other, alpha, out=None):
    _no_out(op, out)
    if isinstance(input, SparseCsrTensor) or isinstance(other, SparseCsrTensor):
        if isinstance(input, _SparseBase) and isinstance(other, _SparseBase):
            r = _add(op, _as_coo(op, input), _as_coo(op, other), alpha)
            return to_sparse_csr(r)
        raise _not_implemented(op, [_layout.sparse_csr])
    if isinstance(input, SparseTensor) and isinstance(other, SparseTensor):
        _same_size(op, input, other)
        if input.sparse_dim() != other.sparse_dim():
            raise RuntimeError(
                f"{op}: expected tensors with the same sparse_dim, got "
                f"{input.sparse_dim()} and {other.sparse_dim()}"
            )
        dt = D.promote_types(input._dtype, other._dtype)
        ov = other._sp_values if alpha == 1 else other._sp_values * alpha
        idx = _cat([input._sp_indices, other._sp_indices], 1)
        vals = _cat([input._sp_values.to(dt), ov.to(dt)], 0)
        r = _coo(idx, vals, input._shape, False)
        both = input._sp_coalesced and other._sp_coalesced
        return _coalesce(r) if both else r
    if isinstance(input, SparseTensor):
        raise RuntimeError(
            f"{op}(sparse, dense) is not supported. Use {op}(dense, sparse) instead."
        )
    # dense + sparse: a dense result
    if not isinstance(input, Tensor):
        raise RuntimeError(
            f"{op}(sparse, dense) is not supported. Use {op}(dense, sparse) instead."
        )
    _same_size(op, input, other)
    dt = D.promote_types(input._dtype, other._dtype)
    v = other._sp_values if alpha == 1 else other._sp_values * alpha
    base = input.to(dt)
    if other._sp_indices.shape[0] == 0:
        return base + v.sum(0) if v.shape[0] else base.clone()
    return base.index_put(_index_tuple(other), v.to(dt), accumulate=True)


@_sparse_impl("add")
def _add_impl(op, input, other, alpha=1, out=None):
    return _add(op, input, other, alpha, out)


@_sparse_impl("sub")
def _sub_impl(op, input, other, alpha=1, out=None):
    return _add(op, input, other, -alpha, out)


@_sparse_impl("add_", "sub_")
def _add_inplace(op, input, other, alpha=1):
    if op == "sub_":
        alpha = -alpha
    r = _add(op, input, other, alpha)
    if isinstance(input, SparseTensor):
        input._sp_indices, input._sp_values = r._sp_indices, r._sp_values
        input._sp_coalesced, input._dtype = r._sp_coalesced, r._dtype
        return input
    if r._dtype is not input._dtype:
        raise RuntimeError(
            f"result type {r._dtype} can't be cast to the desired output type {input._dtype}"
        )
    return input.copy_(r)


def _intersect(a, b):
    """Positions of the shared indices of coalesced a and b: (mask over a, index into b)."""
    sd = a._sp_indices.shape[0]
    la, _ = _linear_index(a._sp_indices, a._shape[:sd])
    lb, _ = _linear_index(b._sp_indices, b._shape[:sd])
    if la is None:
        la = zeros(a._sp_values.shape[0], dtype=D.int64)
        lb = zeros(b._sp_values.shape[0], dtype=D.int64)
    pos = lb.searchsorted(la).clamp(max=max(lb.shape[0] - 1, 0))
    hit = lb[pos] == la if lb.shape[0] else la != la
    return hit, pos


@_sparse_impl("mul")
def _mul_impl(op, input, other, out=None):
    _no_out(op, out)
    if isinstance(input, _SparseBase) and _is_number(other):
        return input._with_values(input._sp_values * other)
    if isinstance(other, _SparseBase) and _is_number(input):
        return other._with_values(input * other._sp_values)
    if isinstance(input, SparseCsrTensor) or isinstance(other, SparseCsrTensor):
        raise _not_implemented(op, [_layout.sparse_csr])
    if isinstance(input, SparseTensor) and isinstance(other, SparseTensor):
        _same_size(op, input, other)
        a, b = _coalesce(input), _coalesce(other)
        hit, pos = _intersect(a, b)
        keep = hit.nonzero().reshape(-1)
        idx = a._sp_indices.index_select(1, keep)
        vals = a._sp_values.index_select(0, keep) * b._sp_values.index_select(0, pos[keep])
        return _coo(idx, vals, a._shape, True)
    s, d = (input, other) if isinstance(input, SparseTensor) else (other, input)
    if tuple(d.shape) != tuple(s.shape):
        raise RuntimeError(
            f"{op}: a sparse tensor multiplies a dense one of its own size only, got "
            f"{list(s.shape)} and {list(d.shape)}"
        )
    gathered = d[_index_tuple(s)]
    vals = s._sp_values * gathered if s is input else gathered * s._sp_values
    return _coo(s._sp_indices, vals, s._shape, s._sp_coalesced)


@_sparse_impl("div")
def _div_impl(op, input, other, rounding_mode=None, out=None):
    _no_out(op, out)
    if isinstance(input, _SparseBase) and _is_number(other):
        return input._with_values(input._sp_values.div(other, rounding_mode=rounding_mode))
    if isinstance(input, _SparseBase) and isinstance(other, Tensor):
        raise RuntimeError(
            "Sparse division requires a scalar or zero-dim dense tensor divisor (got shape "
            f"{list(other.shape)} for divisor)"
        )
    raise _not_implemented(op, [s.layout for s in _sparse_args((input, other))])


@_sparse_impl("mul_", "div_")
def _scale_inplace(op, input, other, *rest):
    if not (isinstance(input, _SparseBase) and _is_number(other)):
        raise _not_implemented(op, [s.layout for s in _sparse_args((input, other))])
    getattr(input._sp_values, op)(other, *rest)
    return input


@_sparse_impl("neg")
def _neg_impl(op, input, out=None):
    _no_out(op, out)
    return input._with_values(-input._sp_values)


# Elementwise ops with f(0) == 0: PyTorch runs them on a coalesced tensor's values.
_ZERO_PRESERVING = (
    "abs",
    "asin",
    "asinh",
    "atan",
    "atanh",
    "ceil",
    "deg2rad",
    "erf",
    "erfinv",
    "expm1",
    "floor",
    "frac",
    "log1p",
    "rad2deg",
    "round",
    "sgn",
    "sign",
    "sin",
    "sinh",
    "sqrt",
    "tan",
    "tanh",
    "trunc",
)


@_sparse_impl(*_ZERO_PRESERVING)
def _zero_preserving(op, input, *rest):
    if not isinstance(input, _SparseBase) or (rest and rest[-1] is not None):
        raise _not_implemented(op, [s.layout for s in _sparse_args((input, *rest))])
    s = _coalesce(input) if isinstance(input, SparseTensor) else input
    params = _dispatch.OPS[op].params[1:-1]  # after input, before out
    return s._with_values(_dispatch.public_function(op)(s._sp_values, **dict(zip(params, rest))))


@_sparse_impl("pow")
def _pow_impl(op, input, exponent, out=None):
    _no_out(op, out)
    if isinstance(input, _SparseBase) and is_scalar(exponent) and exponent > 0:
        s = _coalesce(input) if isinstance(input, SparseTensor) else input
        return s._with_values(s._sp_values.pow(exponent))
    raise _not_implemented(op, [s.layout for s in _sparse_args((input, exponent))])


@_sparse_impl("clone")
def _clone_impl(op, input, memory_format=None):
    comps = [c.clone() for c in input._components()]
    return _rebuild(input.layout.name, comps, input._shape, input._flags())


@_sparse_impl("zeros_like", "empty_like")
def _zeros_like_impl(op, input, dtype=None, device=None, requires_grad=False, memory_format=None):
    """An empty sparse tensor of ``input``'s shape and layout (no stored elements)."""
    if not isinstance(input, SparseTensor):
        raise _not_implemented(op, [input.layout])
    v = input._sp_values
    dt = v.dtype if dtype is None else dtype
    dev = v.device if device is None else device
    idx = zeros((input._sp_indices.shape[0], 0), dtype=D.int64, device=dev)
    vals = zeros((0, *v.shape[1:]), dtype=dt, device=dev, requires_grad=requires_grad)
    return _coo(idx, vals, input._shape, True)


@_sparse_impl("copy_")
def _copy_impl(op, input, src, non_blocking=False):
    """sparse.copy_(sparse): this tensor takes a copy of src's elements (in its dtype)."""
    if not (isinstance(input, SparseTensor) and isinstance(src, SparseTensor)):
        raise RuntimeError(
            "copy_() between dense and sparse Tensors is not implemented! Found self layout = "
            f"{input.layout} and src layout = {src.layout}"
        )
    if tuple(input.shape) != tuple(src.shape):
        raise RuntimeError(
            f"copy_(): sparse tensors of sizes {list(input.shape)} and {list(src.shape)} differ"
        )
    device = input._sp_values.device
    input._sp_indices = src._sp_indices.to(device, copy=True)
    input._sp_values = src._sp_values.detach().to(device, input._dtype, copy=True)
    input._sp_coalesced = src._sp_coalesced
    return input


@_sparse_impl("detach")
def _detach_impl(op, input):
    return input._with_values(input._sp_values.detach())


def sparse_sum(input, dim=None, dtype=None):
    """torch.sparse.sum: the sum over ``dim`` (all dims by default); a dense
    tensor when every sparse dim is summed, else a coalesced sparse one."""
    s = _as_coo("sum", input)
    if not isinstance(s, SparseTensor):
        raise RuntimeError("sparse.sum: expected a sparse tensor")
    values = s._sp_values if dtype is None else s._sp_values.to(dtype)
    if dim is None:
        return values.sum()
    n = len(s._shape)
    dims = [dim] if isinstance(dim, int) else list(dim)
    norm = []
    for d in dims:
        if not -n <= d < n:
            raise IndexError(
                f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {d})"
            )
        norm.append(d % n)
    if len(set(norm)) != len(norm):
        raise RuntimeError(f"sum: dim {dims} appears multiple times in the list of dims")
    sd = s._sp_indices.shape[0]
    dense = sorted(d - sd + 1 for d in norm if d >= sd)
    if dense:
        values = values.sum(dense)
    keep = [d for d in range(sd) if d not in norm]
    if not keep:
        return values.sum(0)
    idx = s._sp_indices[keep]
    shape = [s._shape[d] for d in keep] + [s._shape[d] for d in range(sd, n) if d not in norm]
    return _coalesce(_coo(idx, values, shape, False))


@_sparse_impl("sum")
def _sum_impl(op, input, dim=None, keepdim=False, dtype=None, out=None):
    _no_out(op, out)
    if keepdim:
        raise NotImplementedError("sum: keepdim=True is not supported for sparse tensors")
    if dim is not None and not isinstance(dim, int) and len(dim) == 0:
        dim = None
    return sparse_sum(input, dim, dtype)


def _transpose(op, s, d0, d1):
    n = len(s._shape)
    for d in (d0, d1):
        if not -n <= d < n:
            raise IndexError(
                f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {d})"
            )
    a, b = d0 % n, d1 % n
    if a == b:
        return s
    if isinstance(s, SparseCsrTensor):
        if {a, b} != {0, 1}:
            raise _not_implemented(op, [_layout.sparse_csr])
        return to_sparse_csr(_transpose(op, _csr_to_coo(s), 0, 1))
    sd = s._sp_indices.shape[0]
    shape = list(s._shape)
    shape[a], shape[b] = shape[b], shape[a]
    if a < sd and b < sd:
        order = list(range(sd))
        order[a], order[b] = order[b], order[a]
        return _coo(s._sp_indices[order], s._sp_values, shape, False)
    if a >= sd and b >= sd:
        v = s._sp_values.transpose(a - sd + 1, b - sd + 1)
        return _coo(s._sp_indices, v, shape, s._sp_coalesced)
    raise RuntimeError(f"{op}(): cannot transpose a sparse dim with a dense dim")


@_sparse_impl("transpose")
def _transpose_impl(op, input, dim0, dim1):
    return _transpose(op, input, dim0, dim1)


def transpose(s, d0, d1):
    return _transpose("transpose", s, d0, d1)


@_sparse_impl("t")
def _t_impl(op, input):
    if len(input._shape) > 2:
        raise RuntimeError(
            f"t() expects a tensor with <= 2 dimensions, but self is {len(input._shape)}D"
        )
    return _transpose(op, input, 0, 1) if len(input._shape) == 2 else input
