"""Rearranging and building tensors from others: ravel, hsplit/vsplit/dsplit, rot90,
diff, repeat_interleave, diag/diag_embed/diagflat, fill_diagonal_, kron, block_diag,
cartesian_prod, combinations, tril_indices/triu_indices, unravel_index, vander,
resize_as_.

Most are composites of public ops (autograd needs no formula for them: their
gradients come from the ops they call); index builders return integer tensors.
"""

import builtins
import itertools
import operator

import numpy as np

from ember_core._base.dispatch import defop
from ember_core._base.shape import normalize_dim
from ember_core._tensor import dtype as D
from ember_core._tensor.tensor import Tensor


def _pub(name):
    # public ops are looked up when called: this module loads before the table is complete
    import ember_core

    return getattr(ember_core, name)


def _int_tensor(values, device=None):
    import ember_core

    return ember_core.tensor(values, dtype=D.int64, device=device)


# ------------------------------------------------------------------ reshaping


@defop(composite=True)
def ravel(input):
    """The elements as a 1-D tensor (a view when the layout allows, else a copy)."""
    return input.reshape(-1)


@defop(composite=True)
def resize_as_(input, the_template, *, memory_format=None):
    """Resize in place to the template's shape (see resize_)."""
    return input.resize_(tuple(the_template.shape))


def _split_along(op, input, indices_or_sections, dim, min_dims):
    nd = input.dim()
    if nd < min_dims:
        raise RuntimeError(
            f"torch.{op} requires a tensor with at least {min_dims} dimension, but got a tensor "
            f"with {nd} dimensions!"
        )
    if isinstance(indices_or_sections, int):
        size = input.shape[dim]
        if indices_or_sections == 0 or size % indices_or_sections:
            raise RuntimeError(
                f"torch.{op} attempted to split along dimension {dim}, but the size of the "
                f"dimension {size} is not divisible by the split_size {indices_or_sections}!"
            )
    return input.tensor_split(indices_or_sections, dim)


@defop(composite=True)
def hsplit(input, indices_or_sections):
    """tensor_split along dim 1 (dim 0 for 1-D tensors); an int must divide evenly."""
    return _split_along("hsplit", input, indices_or_sections, 1 if input.dim() > 1 else 0, 1)


@defop(composite=True)
def vsplit(input, indices_or_sections):
    return _split_along("vsplit", input, indices_or_sections, 0, 2)


@defop(composite=True)
def dsplit(input, indices_or_sections):
    return _split_along("dsplit", input, indices_or_sections, 2, 3)


@defop(composite=True)
def rot90(input, k=1, dims=(0, 1)):
    """Rotate by 90 degrees k times in the plane of dims (from the first towards the second)."""
    dims = list(dims)
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    nd = input.dim()
    if nd < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {nd}")
    d0, d1 = normalize_dim(dims[0], nd, "rot90"), normalize_dim(dims[1], nd, "rot90")
    if d0 == d1:
        raise RuntimeError(
            f"expected rotation dims to be different, but got dim0 = {d0} and dim1 = {d1}"
        )
    k %= 4
    if k == 1:
        return input.flip([d1]).transpose(d0, d1)
    if k == 2:
        return input.flip([d0, d1])
    if k == 3:
        return input.flip([d0]).transpose(d0, d1)
    return input.clone()


@defop(composite=True)
def diff(input, n=1, dim=-1, prepend=None, append=None):
    """n-th forward difference along dim (after concatenating prepend/append)."""
    nd = input.dim()
    if nd == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    d = normalize_dim(dim, nd, "diff")
    parts = [
        p if p.dim() else p.expand(*input.shape[:d], 1, *input.shape[d + 1 :])
        for p in (prepend, input, append)
        if p is not None
    ]
    x = _pub("cat")(parts, d) if len(parts) > 1 else input
    is_bool = x.dtype is D.bool_
    for _ in range(n):
        length = x.shape[d]
        if length == 0:
            break
        a, b = x.narrow(d, 1, length - 1), x.narrow(d, 0, length - 1)
        x = a.logical_xor(b) if is_bool else a - b
    return x


# ------------------------------------------------------------------ repeating


@defop(composite=True)
def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):
    """Repeat each element (along dim, or of the flattened input) repeats times;
    repeat_interleave(repeats) with a 1-D integer tensor gives indices 0, 0, 1, ..."""
    if repeats is None:  # torch.repeat_interleave(repeats_tensor)
        counts = input
        if counts.dim() != 1 or counts.dtype.is_floating_point or counts.dtype is D.bool_:
            raise RuntimeError("repeat_interleave only accept 1D vector as repeat")
        return repeat_interleave(
            _pub("arange")(counts.shape[0], device=counts.device),
            counts,
            0,
            output_size=output_size,
        )
    if dim is None:
        input, d = input.reshape(-1), 0
    else:
        d = normalize_dim(dim, input.dim(), "repeat_interleave")
    size = input.shape[d]
    if isinstance(repeats, Tensor):
        if repeats.dtype.is_floating_point or repeats.dtype is D.bool_:
            raise RuntimeError(f"repeats has to be Long or Int tensor, but got {repeats.dtype}")
        if repeats.dim() > 1:
            raise RuntimeError("repeats must be 0-dim or 1-dim tensor")
        values = repeats.detach().cpu().numpy().astype(np.int64)  # sizes are read on the host
        counts = np.broadcast_to(values.reshape(-1), (size,)) if repeats.numel() == 1 else values
    else:
        counts = np.full(size, operator.index(repeats), dtype=np.int64)
    if counts.shape[0] != size:
        raise RuntimeError(
            f"repeats must have the same size as input along dim, but got repeats.size(0) = "
            f"{counts.shape[0]} and input.size({d}) = {size}"
        )
    if (counts < 0).any():
        raise RuntimeError("repeats can not be negative")
    if output_size is not None and int(counts.sum()) != output_size:
        raise RuntimeError(
            f"repeat_interleave: output_size {output_size} does not match the sum of repeats "
            f"{int(counts.sum())}"
        )
    index = _pub("from_numpy")(np.repeat(np.arange(size, dtype=np.int64), counts))
    return input.index_select(d, index.to(input.device))


# ------------------------------------------------------------------ diagonals


@defop(composite=True)
def diag_embed(input, offset=0, dim1=-2, dim2=-1):
    """Matrices (in dims dim1, dim2 of the result) whose offset diagonal holds the last
    dim of input; zeros elsewhere."""
    nd = input.dim() + 1
    d1, d2 = normalize_dim(dim1, nd, "diag_embed"), normalize_dim(dim2, nd, "diag_embed")
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    n = input.shape[-1] + abs(offset) if input.dim() else 1 + abs(offset)
    batch = list(input.shape[:-1])
    shape = []
    for i in range(nd):
        shape.append(n if i in (d1, d2) else batch.pop(0))
    out = _pub("zeros")(shape, dtype=input.dtype, device=input.device)
    out.diagonal(offset, d1, d2).copy_(input)
    return out


@defop(composite=True)
def diag(input, diagonal=0, *, out=None):
    """A 1-D input: the square matrix with it on the given diagonal.  A 2-D input: a
    copy of that diagonal."""
    nd = input.dim()
    if nd == 1:
        r = diag_embed(input, diagonal, 0, 1)
    elif nd == 2:
        r = input.diagonal(diagonal).clone()
    else:
        raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {nd}D")
    if out is not None:
        out.resize_(tuple(r.shape)).copy_(r)
        return out
    return r


@defop(composite=True)
def diagflat(input, offset=0):
    return diag_embed(input.reshape(-1), offset, 0, 1)


@defop(composite=True)
def fill_diagonal_(input, fill_value, wrap=False):
    """Fill the main diagonal (all dims equal index) in place; wrap: for a tall
    matrix, start again every ncols + 1 rows, as NumPy's fill_diagonal."""
    nd = input.dim()
    if nd < 2:
        raise RuntimeError("dimensions must larger than 1")
    shape = tuple(input.shape)
    if nd > 2 and len(set(shape)) != 1:
        raise RuntimeError("all dimensions of input must be of equal length")
    if nd == 2 and wrap and shape[0] > shape[1] + 1:
        rows, cols = shape
        # the diagonal of every (cols + 1)-row block: one strided run through the rows
        step = cols + 1
        for start in range(0, rows, step):
            block = input.narrow(0, start, builtins.min(step, rows - start))
            block.diagonal().fill_(fill_value)
        return input
    view = input
    while view.dim() > 2:  # the all-equal-index diagonal of an n-d cube
        view = view.diagonal(0, 0, 1).movedim(-1, 0)
    view.diagonal().fill_(fill_value)
    return input


# ------------------------------------------------------------------ products of tensors


@defop(composite=True)
def kron(input, other, *, out=None):
    """Kronecker product: blocks input[i] * other, for any number of dims."""
    nd = builtins.max(input.dim(), other.dim())
    a = input.reshape((1,) * (nd - input.dim()) + tuple(input.shape))
    b = other.reshape((1,) * (nd - other.dim()) + tuple(other.shape))
    a_shape, b_shape = tuple(a.shape), tuple(b.shape)
    # interleave: a's dim i, then b's dim i
    a = a.reshape(tuple(itertools.chain.from_iterable((s, 1) for s in a_shape)))
    b = b.reshape(tuple(itertools.chain.from_iterable((1, s) for s in b_shape)))
    r = (a * b).reshape(tuple(x * y for x, y in zip(a_shape, b_shape)))
    if out is not None:
        out.resize_(tuple(r.shape)).copy_(r)
        return out
    return r


@defop("block_diag(*tensors)", method=False, composite=True)
def block_diag(*tensors):
    """The block-diagonal matrix of 0-, 1- or 2-D tensors (dtypes promote)."""
    mats = []
    for i, t in enumerate(tensors):
        if t.dim() > 2:
            raise RuntimeError(
                f"torch.block_diag: Input tensors must have 2 or fewer dimensions. Input {i} "
                f"has {t.dim()} dimensions"
            )
        mats.append(t.reshape(1, -1) if t.dim() < 2 else t)
    if not mats:
        return _pub("empty")(1, 0)
    dt = D.result_type(*mats)
    rows = builtins.sum(m.shape[0] for m in mats)
    cols = builtins.sum(m.shape[1] for m in mats)
    out = _pub("zeros")(rows, cols, dtype=dt, device=mats[0].device)
    r = c = 0
    for m in mats:
        h, w = m.shape
        out[r : r + h, c : c + w] = m
        r, c = r + h, c + w
    return out


@defop("cartesian_prod(*tensors)", method=False, composite=True)
def cartesian_prod(*tensors):
    """Every combination of one element of each 1-D tensor, as rows (itertools.product)."""
    for t in tensors:
        if t.dim() != 1:
            raise RuntimeError(f"Expect a 1D vector, but got shape {list(t.shape)}")
    if len(tensors) == 1:
        return tensors[0]
    sizes = [t.shape[0] for t in tensors]
    n = len(tensors)
    cols = []
    for i, t in enumerate(tensors):
        shape = [1] * n
        shape[i] = sizes[i]
        cols.append(t.reshape(shape).expand(sizes).reshape(-1))
    return _pub("stack")(cols, 1)


@defop(composite=True)
def combinations(input, r=2, with_replacement=False):
    """Rows of r elements, as itertools.combinations (or with replacement)."""
    if input.dim() != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(input.shape)}")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return _pub("empty")(0, dtype=input.dtype, device=input.device)
    pick = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    rows = list(pick(range(input.shape[0]), r))
    if not rows:
        return _pub("empty")(0, r, dtype=input.dtype, device=input.device)
    index = _int_tensor(rows, input.device)
    return input.index_select(0, index.reshape(-1)).reshape(len(rows), r)


# ------------------------------------------------------------------ index builders


def _triangle_indices(op, row, col, offset, dtype, device, lower):
    if row < 0 or col < 0:
        raise RuntimeError(f"{op}: row and col must be non-negative, got row={row}, col={col}")
    r, c = np.indices((row, col)).reshape(2, -1)
    keep = (c - r <= offset) if lower else (c - r >= offset)
    import ember_core

    dt = D.to_dtype(dtype) or D.int64
    return ember_core.tensor(np.stack([r[keep], c[keep]]), dtype=dt, device=device)


@defop(
    method=False,
    differentiable=False,
    composite=True,
)
def tril_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    """2 x N coordinates of the lower triangle of a row x col matrix, row by row."""
    return _triangle_indices("tril_indices", row, col, offset, dtype, device, True)


@defop(
    method=False,
    differentiable=False,
    composite=True,
)
def triu_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    return _triangle_indices("triu_indices", row, col, offset, dtype, device, False)


@defop(method=False, composite=True)
def unravel_index(indices, shape):
    """Flat indices to a tuple of coordinate tensors, one per dim of shape."""
    import ember_core

    if not isinstance(indices, Tensor):
        indices = ember_core.tensor(indices)
    if indices.dtype.is_floating_point or indices.dtype is D.bool_:
        raise TypeError(f"expected 'indices' to be integer dtype, but got {indices.dtype}")
    shape = (
        (operator.index(shape),)
        if not isinstance(shape, (list, tuple, ember_core.Size))
        else tuple(operator.index(s) for s in shape)
    )
    if any(s < 0 for s in shape):
        raise ValueError("'shape' cannot have negative values, but got " + str(tuple(shape)))
    numel = 1
    for s in shape:
        numel *= s
    idx = indices.to(D.int64)
    if idx.numel() and (bool((idx < -numel).any()) or bool((idx >= numel).any())):
        raise ValueError(f"'indices' must be in range [{-numel}, {numel - 1}]")
    idx = _pub("where")(idx < 0, idx + numel, idx)
    coords = []
    for s in reversed(shape):
        coords.append(idx.remainder(s) if s else idx * 0)
        idx = idx.div(s, rounding_mode="floor") if s else idx
    return tuple(reversed(coords))


@defop(method=False, composite=True)
def vander(x, N=None, increasing=False):
    """Columns x**0, x**1, ..., x**(N-1) (reversed unless increasing)."""
    if x.dim() != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x.shape[0] if N is None else N
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    dt = D.int64 if x.dtype.category < 2 else x.dtype
    xs = x.to(dt)
    if n == 0:
        return _pub("empty")(x.shape[0], 0, dtype=dt, device=x.device)
    ones = _pub("ones")(x.shape[0], 1, dtype=dt, device=x.device)
    if n == 1:
        r = ones
    else:
        powers = xs.unsqueeze(1).expand(x.shape[0], n - 1).cumprod(1)
        r = _pub("cat")([ones, powers], 1)
    return r if increasing else r.flip([1])
