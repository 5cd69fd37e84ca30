"""Joining, splitting and rearranging: cat, stack, split, chunk, flip, roll,
repeat, tile, tril, triu."""

import operator

from ember_core._base import shape as _shape
from ember_core._base.dispatch import defop, star_keyword
from ember_core._base.lib import check
from ember_core._base.shape import normalize_dim
from ember_core._ops.pointwise.elementwise import check_device, layout
from ember_core._tensor import dtype as D
from ember_core._tensor.copy import copy_into, resize_, write_out
from ember_core._tensor.tensor import Tensor, empty, view_of, written
from ember_core._tensor.views import atleast_3d


def _tensors(op, tensors):
    if isinstance(tensors, Tensor):
        raise TypeError(f"{op}(): argument 'tensors' must be tuple of Tensors, not Tensor")
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError(f"{op}(): expected a non-empty list of Tensors")
    for t in tensors:
        if not isinstance(t, Tensor):
            raise TypeError(
                f"{op}(): expected Tensor as element in argument 'tensors', but got {type(t).__name__}"  # noqa: E501 - one string, as PyTorch spells it
            )
    return tensors


@defop(method=False, autocast="promote", aliases=("concat", "concatenate"))
def cat(tensors, dim=0, *, out=None):
    """Concatenate tensors along an existing dim (dtypes promote; legacy empty 1-D
    tensors are skipped)."""
    tensors = _tensors("cat", tensors)
    dev = check_device("cat", *tensors)
    parts = [t for t in tensors if not (len(t._shape) == 1 and t._shape[0] == 0)]
    if not parts:
        dt = D.result_type(*tensors)
        return empty((0,), dt, dev) if out is None else out
    ref = parts[0]
    nd = len(ref._shape)
    if nd == 0:
        raise RuntimeError("zero-dimensional tensor (at position 0) cannot be concatenated")
    d = normalize_dim(dim, nd, "cat")
    for i, t in enumerate(parts):
        if len(t._shape) != nd:
            raise RuntimeError(
                f"Tensors must have same number of dimensions: got {nd} and {len(t._shape)}"
            )
        for k in range(nd):
            if k != d and t._shape[k] != ref._shape[k]:
                raise RuntimeError(
                    f"Sizes of tensors must match except in dimension {d}. Expected size "
                    f"{ref._shape[k]} but got size {t._shape[k]} for tensor number {i} in the list."
                )
    # Skipped legacy empties still take part in type promotion, as in PyTorch.
    dt = D.result_type(*tensors) if len({t._dtype for t in tensors}) > 1 else ref._dtype
    total = sum(t._shape[d] for t in parts)
    shape = ref._shape[:d] + (total,) + ref._shape[d + 1 :]
    if out is not None:
        if out._shape != shape:
            resize_(out, shape)
        written(out, "cat")
        r = out
    else:
        r = empty(shape, dt, dev)
    pos = 0
    for t in parts:
        n = t._shape[d]
        if n:
            dst = view_of(r, t._shape, r._stride, r._offset + pos * r._stride[d])
            copy_into(dst, t)
        pos += n
    return r


concat = concatenate = cat


@defop(method=False, autocast="promote")
def stack(tensors, dim=0, *, out=None):
    """Join tensors of one shape along a new dim."""
    tensors = _tensors("stack", tensors)
    shape = tensors[0]._shape
    for i, t in enumerate(tensors):
        if t._shape != shape:
            raise RuntimeError(
                f"stack expects each tensor to be equal size, but got {list(shape)} at entry 0 "
                f"and {list(t._shape)} at entry {i}"
            )
    d = normalize_dim(dim, len(shape) + 1, "stack")
    return cat([t.unsqueeze(d) for t in tensors], d, out=out)


@defop(method=False, composite=True)
def hstack(tensors):
    tensors = [t.reshape(1) if not t._shape else t for t in _tensors("hstack", tensors)]
    return cat(tensors, 0 if len(tensors[0]._shape) == 1 else 1)


@defop(method=False, composite=True, aliases=("row_stack",))
def vstack(tensors):
    return cat(
        [t.reshape(1, -1) if len(t._shape) < 2 else t for t in _tensors("vstack", tensors)], 0
    )


row_stack = vstack


@defop(method=False, composite=True)
def dstack(tensors):
    return cat([atleast_3d(t) for t in _tensors("dstack", tensors)], 2)


@defop(method=False, composite=True)
def column_stack(tensors):
    return cat(
        [t.reshape(-1, 1) if len(t._shape) < 2 else t for t in _tensors("column_stack", tensors)], 1
    )


@defop(composite=True, aliases=("unsafe_split",))
def split(input, split_size_or_sections, dim=0):
    """Views of consecutive pieces: of one size (the last may be smaller) or of the
    given sizes."""
    d = normalize_dim(dim, len(input._shape), "split")
    size = input._shape[d]
    if (
        isinstance(split_size_or_sections, int)
        or hasattr(split_size_or_sections, "__index__")
        and not isinstance(split_size_or_sections, (list, tuple))
    ):
        step = operator.index(split_size_or_sections)
        if step < 0 or (step == 0 and size != 0):
            raise RuntimeError(
                f"split expects split_size be non-negative, but got split_size={step}"
            )
        if size == 0:
            return (input.narrow(d, 0, 0),)
        return tuple(input.narrow(d, s, min(step, size - s)) for s in range(0, size, step))
    sizes = [operator.index(s) for s in split_size_or_sections]
    if sum(sizes) != size:
        raise RuntimeError(
            f"split_with_sizes expects split_sizes to sum exactly to {size} (input tensor's size "
            f"at dimension {d}), but got split_sizes={sizes}"
        )
    out, pos = [], 0
    for s in sizes:
        out.append(input.narrow(d, pos, s))
        pos += s
    return tuple(out)


@defop(composite=True, aliases=("unsafe_split_with_sizes",))
def split_with_sizes(input, split_sizes, dim=0):
    return split(input, list(split_sizes), dim)


@defop(composite=True, aliases=("unsafe_chunk",))
def chunk(input, chunks, dim=0):
    """Split into ``chunks`` pieces of ceil(size / chunks) (fewer if they run out)."""
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    d = normalize_dim(dim, len(input._shape), "chunk")
    size = input._shape[d]
    step = max(-(-size // chunks), 1)
    return split(input, step, d)


@defop(composite=True)
def tensor_split(input, indices_or_sections, dim=0):
    d = normalize_dim(dim, len(input._shape), "tensor_split")
    size = input._shape[d]
    if isinstance(indices_or_sections, int):
        n = indices_or_sections
        if n <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {n}")
        if n > max(size, 1 << 20):  # PyTorch fails to allocate the result list
            raise RuntimeError(
                f"tensor_split(): {n} sections of a dimension of size {size} would be mostly "
                "empty tensors, too many to return"
            )
        base, extra = divmod(size, n)
        bounds, pos = [], 0
        for i in range(n - 1):
            pos += base + (1 if i < extra else 0)
            bounds.append(pos)
    else:
        bounds = [int(i) for i in indices_or_sections]
    out, prev = [], 0
    for b in bounds + [size]:
        b = min(max(b, prev), size)
        out.append(input.narrow(d, prev, b - prev))
        prev = b
    return tuple(out)


def _out(out, r, op):
    if out is None:
        return r

    return write_out(out, r, op)


@defop("flip(input, *dims, out=None)", star_keyword="dims", tags=("linear",))
def flip(input, dims, out=None):
    """A copy with the order of elements along dims reversed (x.flip(0, 1),
    x.flip((0, 1)) and x.flip(dims=[0, 1]) alike)."""
    if len(dims) == 1 and dims[0].__class__ is not int:
        dims = dims[0]
    dims = _shape.normalize_dims(dims, len(input._shape), "flip")
    if not input._shape:  # a 0-d tensor reads as 1-element along dim 0/-1
        dims = ()
    stride = list(input._stride)
    offset = input._offset
    for d in dims:
        if input._shape[d] > 1:
            offset += (input._shape[d] - 1) * stride[d]
        stride[d] = -stride[d]
    src = view_of(input, input._shape, tuple(stride), offset, input._numel)
    r = empty(input._shape, input._dtype, input._storage._device)
    copy_into(r, src)
    return _out(out, r, "flip")


@defop(composite=True)
def fliplr(input):
    return flip(input, (1,))


@defop(composite=True)
def flipud(input):
    return flip(input, (0,))


@defop(tags=("linear",))
def roll(input, shifts, dims=None, *, out=None):
    """Rotate elements along dims by shifts (flattened when dims is None)."""
    if out is not None:
        return _out(out, roll(input, shifts, dims), "roll")
    if dims is None:
        return roll(input.reshape(-1), shifts, 0).view(input._shape)
    shifts = (shifts,) if isinstance(shifts, int) else tuple(shifts)
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    if len(shifts) != len(dims):
        raise RuntimeError(
            f"shifts and dimensions must align. shifts: {len(shifts)}, dims:{len(dims)}"
        )
    r = input
    for s, d in zip(shifts, dims):
        d = normalize_dim(d, len(input._shape), "roll")
        size = input._shape[d]
        if size == 0:
            continue
        s %= size
        if s == 0:
            continue
        r = cat([r.narrow(d, size - s, s), r.narrow(d, 0, size - s)], d)
    return r if r is not input else input.clone()


@defop("repeat(input, *sizes)", star_keyword="repeats", tags=("linear",))
def repeat(input, sizes):
    """Tile the tensor: repeat(2, 3) makes each dim that many times as long."""
    sizes = tuple(
        operator.index(s)
        for s in (sizes[0] if len(sizes) == 1 and not isinstance(sizes[0], int) else sizes)
    )
    if len(sizes) < len(input._shape):
        raise RuntimeError(
            "Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor"  # noqa: E501 - one string, as PyTorch spells it
        )
    lead = len(sizes) - len(input._shape)
    if any(r < 0 for r in sizes):  # an error unless it repeats an empty dim (as PyTorch)
        shape = [r * s for r, s in zip(sizes, (1,) * lead + input._shape)]
        bad = [d for d in shape if d < 0]
        if bad:
            raise RuntimeError(
                f"repeat(): Trying to create tensor with negative dimension {bad[0]}: {shape} "
                f"(repeats {list(sizes)})"
            )
        return empty(tuple(shape), input._dtype, input._storage._device)
    src_shape = (1,) * lead + input._shape
    src = input.reshape(src_shape)
    # expand to (r0, s0, r1, s1, ...) then flatten pairs
    exp_shape, exp_stride = [], []
    for r, s, st in zip(sizes, src._shape, src._stride):
        exp_shape += [r, s]
        exp_stride += [0, st]
    out_shape = tuple(r * s for r, s in zip(sizes, src._shape))
    r = empty(out_shape, input._dtype, input._storage._device)
    view = view_of(src, tuple(exp_shape), tuple(exp_stride), src._offset)
    dst = view_of(r, tuple(exp_shape), _shape.contiguous_strides(tuple(exp_shape)), 0)
    copy_into(dst, view)
    return r


@defop("tile(input, *dims)", composite=True, star_keyword="dims")
def tile(input, *dims, **kwargs):
    if kwargs:
        dims = star_keyword("tile", dims, kwargs)
    dims = tuple(dims[0]) if len(dims) == 1 and dims[0].__class__ is not int else dims
    if len(dims) < len(input._shape):
        dims = (1,) * (len(input._shape) - len(dims)) + dims
    return repeat(input, *dims)


def _triangle(op, input, diagonal, upper, out=None):
    if len(input._shape) < 2:
        raise RuntimeError(f"{op}: input tensor must have at least 2 dimensions")
    r = out if out is not None else empty(input._shape, input._dtype, input._storage._device)
    lay = layout(input._shape, r._stride, input._stride)
    check(
        r._storage._device._k.ec_triangle(
            input._dtype.code, len(input._shape), lay, r._ptr, input._ptr, int(diagonal), upper
        ),
        op,
    )
    return r


@defop(tags=("linear", "unchecked-overlap"))
def tril(input, diagonal=0, *, out=None):
    """The lower triangle of the last two dims (others zeroed)."""
    return _out(out, _triangle("tril", input, diagonal, 0), "tril")


@defop(tags=("linear", "unchecked-overlap"))
def triu(input, diagonal=0, *, out=None):
    """The upper triangle of the last two dims (others zeroed)."""
    return _out(out, _triangle("triu", input, diagonal, 1), "triu")


@defop(inplace_of="tril", tags=("unchecked-overlap",))
def tril_(input, diagonal=0):
    written(input, "tril_")
    return _triangle("tril_", input, diagonal, 0, input)


@defop(inplace_of="triu", tags=("unchecked-overlap",))
def triu_(input, diagonal=0):
    written(input, "triu_")
    return _triangle("triu_", input, diagonal, 1, input)
