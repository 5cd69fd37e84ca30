"""The *_scatter family (a copy of input with one view of it replaced), the
view-copy variants (*_copy), unsafe_chunk/split, nonzero_static, and the
complex-number API on real tensors (conj, resolve_neg, angle...)."""

import math
import warnings

import ember_core as ec

__all__ = [
    "adjoint",
    "alias_copy",
    "angle",
    "as_strided_copy",
    "as_strided_scatter",
    "conj",
    "conj_physical",
    "detach_copy",
    "diagonal_copy",
    "diagonal_scatter",
    "expand_copy",
    "is_conj",
    "is_neg",
    "narrow_copy",
    "nonzero_static",
    "permute_copy",
    "real",
    "resolve_conj",
    "resolve_neg",
    "select_copy",
    "select_scatter",
    "slice_copy",
    "slice_scatter",
    "split_copy",
    "split_with_sizes_copy",
    "squeeze_copy",
    "t_copy",
    "transpose_copy",
    "unbind_copy",
    "unfold_copy",
    "unsafe_chunk",
    "unsafe_split",
    "unsafe_split_with_sizes",
    "unsqueeze_copy",
    "view_copy",
]


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


alias_copy = _copy_variant("alias_copy", lambda x: x.view(x.shape))
as_strided_copy = _copy_variant(
    "as_strided_copy",
    lambda x, size, stride, storage_offset=None: x.as_strided(size, stride, storage_offset),
)
detach_copy = _copy_variant("detach_copy", lambda x: x.detach())
diagonal_copy = _copy_variant(
    "diagonal_copy", lambda x, offset=0, dim1=0, dim2=1: x.diagonal(offset, dim1, dim2)
)
expand_copy = _copy_variant("expand_copy", lambda x, size, *, implicit=False: x.expand(size))
narrow_copy = _copy_variant(
    "narrow_copy", lambda x, dim, start, length: x.narrow(dim, start, length)
)
permute_copy = _copy_variant("permute_copy", lambda x, dims: x.permute(dims))
select_copy = _copy_variant("select_copy", lambda x, dim, index: x.select(dim, index))
slice_copy = _copy_variant(
    "slice_copy", lambda x, dim=0, start=None, end=None, step=1: _slice(x, dim, start, end, step)
)
split_copy = _copy_variant("split_copy", lambda x, split_size, dim=0: x.split(split_size, dim))
split_with_sizes_copy = _copy_variant(
    "split_with_sizes_copy", lambda x, split_sizes, dim=0: x.split(list(split_sizes), dim)
)
squeeze_copy = _copy_variant(
    "squeeze_copy", lambda x, dim=None: x.squeeze() if dim is None else x.squeeze(dim)
)
t_copy = _copy_variant("t_copy", lambda x: x.t())
transpose_copy = _copy_variant("transpose_copy", lambda x, dim0, dim1: x.transpose(dim0, dim1))
unbind_copy = _copy_variant("unbind_copy", lambda x, dim=0: x.unbind(dim))
unfold_copy = _copy_variant(
    "unfold_copy", lambda x, dimension, size, step: x.unfold(dimension, size, step)
)
unsqueeze_copy = _copy_variant("unsqueeze_copy", lambda x, dim: x.unsqueeze(dim))
view_copy = _copy_variant("view_copy", lambda x, size: x.view(size))


# ---------------------------------------------------- real-dtype complex API


def adjoint(input):
    if input.dim() == 0:  # PyTorch returns a 0-d tensor itself, with a deprecation warning
        warnings.warn(
            "adjoint() is deprecated on 0-D tensors. Consider using x.conj().",
            UserWarning,
            stacklevel=2,
        )
        return input
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
