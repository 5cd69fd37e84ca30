"""Shape arithmetic shared by every op: strides, broadcasting, dims."""

import operator
from math import prod

MAX_DIMS = 64


def contiguous_strides(shape):
    """Row-major strides in elements: (2, 3, 4) -> (12, 4, 1)."""
    strides = []
    acc = 1
    for s in reversed(shape):
        strides.append(acc)
        acc *= s if s > 1 else 1
    if strides and strides[-1] >= 1 << 63:
        raise RuntimeError(
            f"a tensor of shape {list(shape)} is too large: its strides overflow int64"
        )
    return tuple(reversed(strides))


def is_contiguous(shape, stride):
    expected = 1
    for s, st in zip(reversed(shape), reversed(stride)):
        if s == 1:
            continue
        if s == 0:
            return True
        if st != expected:
            return False
        expected *= s
    return True


def numel(shape):
    return prod(shape)


_INT64_LIMIT = 1 << 63


def as_shape(args, op):
    """Accept f(2, 3), f((2, 3)), f([2, 3]) or f(torch.Size); ints only, >= 0."""
    if len(args) == 1 and args[0].__class__ is not int:
        a0 = args[0]
        if hasattr(a0, "_shape") and not a0._shape:  # a 0-d integer tensor
            args = (a0.item(),)
        elif hasattr(a0, "__iter__") or not hasattr(a0, "__index__"):
            args = a0  # a sequence (a lone np.int64 and the like is one size)
    try:
        shape = tuple([s if s.__class__ is int else operator.index(s) for s in args])
    except TypeError:
        raise TypeError(
            f"{op}(): size must be a sequence of ints, got {type(args).__name__} {args!r}"
        ) from None
    extent = 1
    for s in shape:
        if s < 0:
            raise RuntimeError(
                f"{op}(): Trying to create tensor with negative dimension {s}: {list(shape)}"
            )
        if s > 1:
            extent *= s
    if extent >= _INT64_LIMIT:  # the outermost stride would not fit int64
        raise RuntimeError(
            f"{op}(): the shape {list(shape)} is too large (its strides overflow int64)"
        )
    if len(shape) > MAX_DIMS:
        raise RuntimeError(f"{op}(): at most {MAX_DIMS} dims are supported, got {len(shape)}")
    return shape


def broadcast_shapes(*shapes, op="broadcast_shapes"):
    """The shape every one of ``shapes`` broadcasts to (NumPy/PyTorch rules)."""
    if len(shapes) == 2:
        a, b = shapes
        if a == b:
            return a
    ndim = max((len(s) for s in shapes), default=0)
    out = [1] * ndim
    for s in shapes:
        offset = ndim - len(s)
        for i, d in enumerate(s):
            o = out[offset + i]
            if o == d or d == 1:
                continue
            if o == 1:
                out[offset + i] = d
            else:
                shown = " and ".join(str(tuple(x)) for x in shapes)
                raise RuntimeError(f"{op}: shapes {shown} cannot be broadcast")
    return tuple(out)


def broadcast_strides(shape, stride, target):
    """Strides that view (shape, stride) as the broadcast shape ``target``."""
    offset = len(target) - len(shape)
    out = [0] * len(target)
    for i, (s, st) in enumerate(zip(shape, stride)):
        out[offset + i] = 0 if s == 1 and target[offset + i] != 1 else st
    return out


def normalize_dim(dim, ndim, op="op"):
    """Wrap a negative dim; 0-d tensors accept dims 0 and -1."""
    n = ndim if ndim > 0 else 1
    try:
        d = operator.index(dim)
    except TypeError:
        raise TypeError(f"{op}(): dim must be an int, got {type(dim).__name__}") from None
    if d < -n or d >= n:
        raise IndexError(
            f"{op}(): Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {d})"  # noqa: E501 - one string, as PyTorch spells it
        )
    return d + n if d < 0 else d


def normalize_dims(dims, ndim, op="op"):
    """A sorted tuple of distinct dims; None means all."""
    if dims is None:
        return tuple(range(ndim))
    if isinstance(dims, int) or hasattr(dims, "__index__"):
        dims = (dims,)
    out = sorted(normalize_dim(d, ndim, op) for d in dims)
    if len(set(out)) != len(out):
        raise RuntimeError(f"{op}(): dim {dims} appears multiple times in the list of dims")
    return tuple(out)
