"""Products with sparse tensors and the sparse softmax (Note [Sparse layouts] in
_tensor/sparse.py): sparse @ dense through embedding_bag's fused kernel, sparse @ sparse
by joining the index lists, addmm; ``torch.sparse``'s mm, addmm, softmax and
log_softmax."""

import builtins
import math

from ember_core._ops.nn.embedding import embedding_bag
from ember_core._ops.sparse.arithmetic import _as_coo, _no_out, _transpose
from ember_core._tensor import dtype as D
from ember_core._tensor.creation import arange, zeros
from ember_core._tensor.sparse import (
    SparseCsrTensor,
    _coalesce,
    _coo,
    _linear_index,
    _not_implemented,
    _sparse_args,
    _sparse_impl,
    _SparseBase,
    _stack_rows,
)


def _spmm(op, s, d):
    """Sparse (n x m, COO or CSR) @ dense (m x k): a dense n x k result,
    each stored element's row of ``d`` scaled and added into its output row."""
    if isinstance(s, SparseCsrTensor):
        rows, cols, vals = s._rows(), s._sp_col, s._sp_values
    else:
        if s._sp_indices.shape[0] != 2 or s._sp_values.dim() != 1:
            raise RuntimeError(
                f"{op}: a sparse matrix must have 2 sparse dims and no dense dims, got "
                f"sparse_dim {s.sparse_dim()} and dense_dim {s.dense_dim()}"
            )
        rows, cols, vals = s._sp_indices[0], s._sp_indices[1], s._sp_values
    if d.dim() != 2:
        raise RuntimeError(f"{op}: expected a 2-D dense matrix, got {d.dim()}-D")
    n, m = s._shape
    if d.shape[0] != m:
        raise RuntimeError(
            f"{op}: mat1 and mat2 shapes cannot be multiplied ({n}x{m} and "
            f"{d.shape[0]}x{d.shape[1]})"
        )
    if vals._dtype is not d._dtype:
        raise RuntimeError(
            f"{op}: expected mat1 and mat2 to have the same dtype, but got: "
            f"{vals._dtype} != {d._dtype}"
        )
    if vals.shape[0] == 0:
        out = zeros((n, d.shape[1]), dtype=d.dtype, device=d.device)
        return out if not (vals.requires_grad or d.requires_grad) else out + (d.sum() * 0)
    if d._dtype.is_floating_point:
        # Each output row is a bag of rows of d weighted by the stored values:
        # embedding_bag's fused kernel (and its derivatives for the weights and the
        # table) runs it in one pass, without an nnz x k temporary.
        if isinstance(s, SparseCsrTensor):
            offsets = s._sp_crow[:-1]
        else:
            if not s._sp_coalesced:  # bags need their elements grouped by row
                order = rows.argsort(stable=True)
                rows, cols, vals = rows[order], cols[order], vals[order]
            counts = rows.bincount(minlength=n)
            offsets = counts.cumsum(0) - counts
        return embedding_bag(d, cols, offsets, False, 0, False, vals, False, None)[0]
    out = zeros((n, d.shape[1]), dtype=d.dtype, device=d.device)
    contrib = d.index_select(0, cols) * vals.unsqueeze(1)
    return out.index_add_(0, rows, contrib)


def _spspmm(op, a, b):
    """Sparse @ sparse: a coalesced sparse product (structural nonzeros kept)."""
    a, b = _coalesce(_as_coo(op, a)), _coalesce(_as_coo(op, b))
    for s in (a, b):
        if s._sp_indices.shape[0] != 2 or s._sp_values.dim() != 1:
            raise RuntimeError(f"{op}: sparse matrices must be 2-D without dense dims")
    n, m = a._shape
    if b._shape[0] != m:
        raise RuntimeError(
            f"{op}: mat1 and mat2 shapes cannot be multiplied ({n}x{m} and "
            f"{b._shape[0]}x{b._shape[1]})"
        )
    k = b._shape[1]
    brow = b._sp_indices[0]  # sorted: b is coalesced
    start = brow.searchsorted(a._sp_indices[1])
    stop = brow.searchsorted(a._sp_indices[1], right=True)
    counts = stop - start
    total = builtins.int(counts.sum().item()) if counts.shape[0] else 0
    if total == 0:
        idx = zeros((2, 0), dtype=D.int64, device=a.device)
        vals = zeros(0, dtype=D.promote_types(a._dtype, b._dtype), device=a.device)
        return _coo(idx, vals, (n, k), True)
    left = arange(counts.shape[0], device=a.device).repeat_interleave(counts)
    offsets = arange(total, device=a.device) - (counts.cumsum(0) - counts).repeat_interleave(counts)
    right = start.repeat_interleave(counts) + offsets
    idx = _stack_rows(a._sp_indices[0][left], b._sp_indices[1][right])
    vals = a._sp_values[left] * b._sp_values[right]
    return _coalesce(_coo(idx, vals, (n, k), False))


def sparse_mm(op, mat1, mat2):
    if isinstance(mat1, _SparseBase) and isinstance(mat2, _SparseBase):
        return _spspmm(op, mat1, mat2)
    if isinstance(mat1, _SparseBase):
        return _spmm(op, mat1, mat2)
    if mat1.dim() != 2:
        raise RuntimeError(f"{op}: expected a 2-D dense matrix, got {mat1.dim()}-D")
    return _spmm(op, _transpose(op, mat2, 0, 1), mat1.t()).t().contiguous()


@_sparse_impl("mm")
def _mm_impl(op, input, mat2, out=None):
    _no_out(op, out)
    return sparse_mm(op, input, mat2)


@_sparse_impl("matmul")
def _matmul_impl(op, input, other, out=None):
    _no_out(op, out)
    if (
        isinstance(input, _SparseBase)
        and len(input._shape) == 2
        and not isinstance(other, _SparseBase)
    ):
        if other.dim() == 1:
            return _spmm(op, input, other.unsqueeze(1)).squeeze(1)
        if other.dim() == 2:
            return _spmm(op, input, other)
    if len(input._shape) == 2 and len(other._shape) == 2:
        return sparse_mm(op, input, other)
    raise _not_implemented(op, [s.layout for s in _sparse_args((input, other))])


@_sparse_impl("addmm")
def _addmm_impl(op, input, mat1, mat2, beta=1, alpha=1, out=None):
    _no_out(op, out)
    if isinstance(input, _SparseBase):
        raise _not_implemented(op + " (sparse input)", [input.layout])
    prod = sparse_mm(op, mat1, mat2)
    if isinstance(prod, _SparseBase):
        prod = prod.to_dense()
    if alpha != 1:
        prod = prod * alpha
    if beta == 0:
        return prod + zeros(input.shape, dtype=prod.dtype) if input.shape != prod.shape else prod
    return prod + (input if beta == 1 else input * beta)


# ------------------------------------------------------------ sparse softmax


def _softmax(op, s, dim, dtype, log):
    s = _coalesce(_as_coo(op, s))
    n = len(s._shape)
    if not -n <= dim < n:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})"
        )
    dim %= n
    values = s._sp_values if dtype is None else s._sp_values.to(dtype)
    sd = s._sp_indices.shape[0]
    if dim >= sd:  # a dense dim: an ordinary softmax of the values
        f = values.log_softmax if log else values.softmax
        return s._with_values(f(dim - sd + 1))
    # the elements stored along ``dim`` with the other indices equal form one group
    others = [d for d in range(sd) if d != dim]
    if others:
        lin, _ = _linear_index(s._sp_indices[others], [s._shape[d] for d in others])
        _, group = lin.unique(return_inverse=True)
    else:
        group = zeros(values.shape[0], dtype=D.int64, device=values.device)
    ng = builtins.int(group.max().item()) + 1 if group.shape[0] else 0
    shape = (ng, *values.shape[1:])
    gidx = group.reshape(-1, *([1] * (values.dim() - 1))).expand(values.shape)
    peak = values.new_full(shape, -math.inf).scatter_reduce(0, gidx, values.detach(), "amax")
    shifted = values - peak.index_select(0, group)
    total = zeros(shape, dtype=values.dtype).index_add_(0, group, shifted.exp())
    if log:
        out = shifted - total.log().index_select(0, group)
    else:
        out = shifted.exp() / total.index_select(0, group)
    return s._with_values(out)


def sparse_softmax(input, dim, dtype=None):
    """torch.sparse.softmax: a softmax over the stored elements along ``dim``
    (the unstored ones count as -inf, so they stay zero)."""
    return _softmax("softmax", input, dim, dtype, False)


def sparse_log_softmax(input, dim, dtype=None):
    """torch.sparse.log_softmax: the log of sparse_softmax."""
    return _softmax("log_softmax", input, dim, dtype, True)


def sparse_addmm(mat, mat1, mat2, *, beta=1, alpha=1):
    """torch.sparse.addmm: beta * mat + alpha * (mat1 @ mat2), mat1 sparse."""
    return _addmm_impl("sparse.addmm", mat, mat1, mat2, beta, alpha)


def sampled_addmm(input, mat1, mat2, *, beta=1.0, alpha=1.0, out=None):
    """torch.sparse.sampled_addmm: beta * input + alpha * (mat1 @ mat2), computed only
    where the CSR matrix ``input`` stores elements (a CSR result)."""
    op = "sampled_addmm"
    _no_out(op, out)
    if not isinstance(input, SparseCsrTensor):
        raise RuntimeError(f"{op}: expected input to be a sparse CSR matrix, got {input.layout}")
    if mat1.dim() != 2 or mat2.dim() != 2 or mat1.shape[1] != mat2.shape[0]:
        raise RuntimeError(
            f"{op}: mat1 and mat2 shapes cannot be multiplied ({list(mat1.shape)} and "
            f"{list(mat2.shape)})"
        )
    if (mat1.shape[0], mat2.shape[1]) != tuple(input.shape):
        raise RuntimeError(
            f"{op}: input has shape {list(input.shape)} but mat1 @ mat2 has shape "
            f"{[mat1.shape[0], mat2.shape[1]]}"
        )
    rows, cols = input._rows(), input._sp_col
    sampled = (mat1.index_select(0, rows) * mat2.t().index_select(0, cols)).sum(1)
    return input._with_values(input._sp_values * beta + sampled * alpha)
