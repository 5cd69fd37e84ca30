"""View ops: new shape/strides/offset over the same storage, nothing copied.

Every primitive op here is declared ``view=True``: its result shares its input's
storage and version counter, and records the input (or the input's own base) as
``_base``.  Also here, written with them: broadcasting (broadcast_tensors,
meshgrid), the copying forms of the views (``*_copy``: a fresh tensor), the
``*_scatter`` ops (a copy of the input with one view of it replaced), and the
complex-number API on real tensors (conj, adjoint, real, resolve_conj...).
"""

import operator
import warnings

from ember_core._base import shape as _shape
from ember_core._base.dispatch import defop, star_keyword
from ember_core._base.shape import normalize_dim
from ember_core._ops.pointwise.complex import view_as_complex, view_as_real
from ember_core._tensor import dtype as D
from ember_core._tensor import tensor as _tensor
from ember_core._tensor.tensor import Tensor, contiguous_strides, is_contig, view_of


def _infer_size(shape, numel, op):
    """Replace a -1 in ``shape`` so the product is numel."""
    known = 1
    for s in shape:
        if s < 0:
            break
        known *= s
    else:  # the common case: every size given
        if known == numel and (numel or all(s < 1 << 63 for s in shape)):
            return tuple(shape)
    shape = list(shape)
    neg = [i for i, s in enumerate(shape) if s == -1]
    if len(neg) > 1:
        raise RuntimeError(f"{op}: only one dimension can be inferred")
    for s in shape:
        if s < -1:
            raise RuntimeError(f"{op}: invalid shape dimension {s}")
    known = 1
    for i, s in enumerate(shape):
        if i not in neg:
            known *= s
    if neg:
        if known == 0 or numel % known:
            raise RuntimeError(f"{op}: shape '{shape}' is invalid for input of size {numel}")
        shape[neg[0]] = numel // known
    elif known != numel:
        raise RuntimeError(f"{op}: shape '{shape}' is invalid for input of size {numel}")
    if numel == 0 and any(s >= 1 << 63 for s in shape):
        raise RuntimeError(f"{op}: shape '{shape}' has a size that does not fit int64")
    return tuple(shape)


def _view_strides(old_shape, old_stride, new_shape):
    """Strides giving ``new_shape`` over the same elements without a copy, or None
    (PyTorch's computeStride: dims may merge or split only within runs of
    contiguous dims)."""
    numel = _shape.numel(old_shape)
    if numel == 0:
        return _shape.contiguous_strides(new_shape)
    if not old_shape:
        return tuple(1 for _ in new_shape)
    new_stride = [0] * len(new_shape)
    view_d = len(new_shape) - 1
    chunk_base_stride = old_stride[-1]
    tensor_numel = 1
    view_numel = 1
    for tensor_d in range(len(old_shape) - 1, -1, -1):
        tensor_numel *= old_shape[tensor_d]
        if tensor_d == 0 or (
            old_shape[tensor_d - 1] != 1
            and old_stride[tensor_d - 1] != tensor_numel * chunk_base_stride
        ):
            while view_d >= 0 and (view_numel < tensor_numel or new_shape[view_d] == 1):
                new_stride[view_d] = view_numel * chunk_base_stride
                view_numel *= new_shape[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if tensor_d > 0:
                chunk_base_stride = old_stride[tensor_d - 1]
                tensor_numel = 1
                view_numel = 1
    if view_d != -1:
        return None
    return tuple(new_stride)


def _as_sizes(args, op):
    if len(args) == 1 and args[0].__class__ is not int:
        args = args[0]
    try:
        return tuple([s if s.__class__ is int else operator.index(s) for s in args])
    except TypeError:
        raise TypeError(f"{op}(): size must be a sequence of ints, got {args!r}") from None


@defop("view(input, *shape)", view=True, star_keyword="size", tags=("linear",))
def view(input, shape):
    """The same elements in another shape, sharing memory; raises if the strides
    do not allow it (use reshape).  ``view(dtype)`` reinterprets the bytes."""
    if len(shape) == 1 and isinstance(shape[0], D.dtype):
        return _view_dtype(input, shape[0])
    new = _infer_size(_as_sizes(shape, "view"), input._numel, "view")
    if new == input._shape:
        return view_of(
            input, input._shape, input._stride, input._offset, input._numel, input._contig
        )
    if input._contig or is_contig(input):
        return view_of(input, new, contiguous_strides(new), input._offset, input._numel, True)
    st = _view_strides(input._shape, input._stride, new)
    if st is None:
        raise RuntimeError(
            f"view size is not compatible with input tensor's size and stride (at least one "
            f"dimension spans across two contiguous subspaces). Use .reshape(...) instead. "
            f"(view of shape {list(input._shape)} with strides {list(input._stride)} as {list(new)})"  # noqa: E501 - one string, as PyTorch spells it
        )
    return view_of(input, new, st, input._offset, input._numel)


def _view_dtype(input, dtype):
    old, new = input._dtype.itemsize, dtype.itemsize
    if old == new:
        t = view_of(input, input._shape, input._stride, input._offset, input._numel, input._contig)
        t._dtype = dtype
        return t
    if not input._shape or input._stride[-1] != 1:
        raise RuntimeError(
            f"view(dtype): changing the element size from {old} to {new} needs the last "
            "dimension to be contiguous"
        )
    if (
        (input._shape[-1] * old) % new
        or (input._offset * old) % new
        or any((s * old) % new for s in input._stride[:-1])
    ):
        raise RuntimeError(
            f"view(dtype): the shape/strides do not divide into elements of {new} bytes"
        )
    shape = input._shape[:-1] + (input._shape[-1] * old // new,)
    stride = tuple(s * old // new for s in input._stride[:-1]) + (1,)
    t = view_of(input, shape, stride, input._offset * old // new)
    t._dtype = dtype
    t._ptr = input._storage._ptr + t._offset * new
    return t


@defop(view=True, composite=True)
def view_as(input, other):
    return input.view(other._shape)


@defop("reshape(input, *shape)", composite=True, star_keyword="shape")
def reshape(input, *shape, **kwargs):
    """view() when the strides allow it, else a contiguous copy in the new shape."""
    if kwargs:
        shape = star_keyword("reshape", shape, kwargs)
    new = _infer_size(_as_sizes(shape, "reshape"), input._numel, "reshape")
    if is_contig(input) or _view_strides(input._shape, input._stride, new) is not None:
        return input.view(new)
    return input.contiguous().view(new)


@defop(composite=True)
def reshape_as(input, other):
    return reshape(input, other._shape)


@defop(view=True, tags=("linear",))
def transpose(input, dim0, dim1):
    """Swap two dims (a view)."""
    n = len(input._shape)
    a, b = normalize_dim(dim0, n, "transpose"), normalize_dim(dim1, n, "transpose")
    if a == b or n < 2:
        return view_of(
            input, input._shape, input._stride, input._offset, input._numel, input._contig
        )
    shape, stride = list(input._shape), list(input._stride)
    shape[a], shape[b] = shape[b], shape[a]
    stride[a], stride[b] = stride[b], stride[a]
    return view_of(input, tuple(shape), tuple(stride), input._offset, input._numel)


@defop(composite=True)
def swapaxes(input, axis0, axis1):
    return transpose(input, axis0, axis1)


@defop(composite=True)
def swapdims(input, dim0, dim1):
    return transpose(input, dim0, dim1)


@defop(composite=True)
def t(input):
    """Transpose of a matrix (vectors and scalars are returned as they are)."""
    if len(input._shape) > 2:
        raise RuntimeError(
            f"t() expects a tensor with <= 2 dimensions, but self is {len(input._shape)}D"
        )
    return transpose(input, 0, -1) if len(input._shape) == 2 else input.view(input._shape)


@defop("permute(input, *dims)", view=True, star_keyword="dims", tags=("linear",))
def permute(input, dims):
    """Reorder the dims (a view)."""
    dims = _as_sizes(dims, "permute")
    n = len(input._shape)
    if len(dims) != n:
        raise RuntimeError(
            f"permute(sparse_coo): number of dimensions in the tensor input does not match the "
            f"length of the desired ordering of dimensions i.e. input.dim() = {n} is not equal "
            f"to len(dims) = {len(dims)}"
        )
    dims = [normalize_dim(d, n, "permute") for d in dims]
    if len(set(dims)) != n:
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    shape = tuple(input._shape[d] for d in dims)
    stride = tuple(input._stride[d] for d in dims)
    return view_of(input, shape, stride, input._offset, input._numel)


@defop(composite=True, aliases=("moveaxis",))
def movedim(input, source, destination):
    n = len(input._shape)
    src = [source] if isinstance(source, int) else list(source)
    dst = [destination] if isinstance(destination, int) else list(destination)
    if len(src) != len(dst):
        raise RuntimeError(
            "movedim: Invalid source or destination dims: source and destination must have the same length"  # noqa: E501 - one string, as PyTorch spells it
        )
    src = [normalize_dim(d, n, "movedim") for d in src]
    dst = [normalize_dim(d, n, "movedim") for d in dst]
    order = [None] * n
    for s, d in zip(src, dst):
        order[d] = s
    rest = iter(d for d in range(n) if d not in src)
    order = [o if o is not None else next(rest) for o in order]
    return permute(input, *order)


moveaxis = movedim


@defop("expand(input, *sizes)", view=True, star_keyword="size", tags=("linear",))
def expand(input, sizes):
    """Broadcast size-1 dims to larger sizes (stride 0, no copy); -1 keeps a size."""
    sizes = _as_sizes(sizes, "expand")
    n = len(input._shape)
    if len(sizes) < n:
        raise RuntimeError(
            f"expand: the number of sizes provided ({len(sizes)}) must be greater or equal to "
            f"the number of dimensions in the tensor ({n})"
        )
    lead = len(sizes) - n
    shape, stride = [], []
    for i, s in enumerate(sizes):
        if i < lead:
            if s < 0:
                raise RuntimeError(
                    f"expand: -1 is not allowed in a leading, non-existing dimension {i}"
                )
            shape.append(s)
            stride.append(0)
            continue
        cur, st = input._shape[i - lead], input._stride[i - lead]
        if s == -1:
            s = cur
        elif s < 0:
            raise RuntimeError(
                f"expand: the expanded size {s} at dimension {i} is negative (sizes {list(sizes)})"
            )
        if cur == s:
            shape.append(s)
            stride.append(st)
        elif cur == 1:
            shape.append(s)
            stride.append(0)
        else:
            raise RuntimeError(
                f"expand: The expanded size of the tensor ({s}) must match the existing size "
                f"({cur}) at non-singleton dimension {i}.  Target sizes: {list(sizes)}.  "
                f"Tensor sizes: {list(input._shape)}"
            )
    return view_of(input, tuple(shape), tuple(stride), input._offset)


@defop(composite=True)
def expand_as(input, other):
    return expand(input, other._shape)


@defop(composite=True)
def broadcast_to(input, size):
    return expand(input, tuple(size))


@defop(view=True, tags=("linear",))
def squeeze(input, dim=None):
    """Drop size-1 dims (all, or the given dim(s) when they have size 1)."""
    n = len(input._shape)
    if dim is None:
        keep = [i for i in range(n) if input._shape[i] != 1]
    else:
        dims = _shape.normalize_dims(dim, n, "squeeze")
        keep = [i for i in range(n) if i not in dims or input._shape[i] != 1]
    shape = tuple(input._shape[i] for i in keep)
    stride = tuple(input._stride[i] for i in keep)
    return view_of(input, shape, stride, input._offset, input._numel, input._contig)


@defop(view=True, tags=("linear",))
def unsqueeze(input, dim):
    """Insert a size-1 dim at ``dim``."""
    n = len(input._shape)
    d = normalize_dim(dim, n + 1, "unsqueeze")
    stride_here = input._stride[d] * input._shape[d] if d < n else 1
    shape = input._shape[:d] + (1,) + input._shape[d:]
    stride = input._stride[:d] + (stride_here,) + input._stride[d:]
    return view_of(input, shape, stride, input._offset, input._numel, input._contig)


@defop(composite=True)
def flatten(input, start_dim=0, end_dim=-1):
    """Merge dims start_dim..end_dim into one (a view when possible)."""
    n = len(input._shape)
    if n == 0:
        return input.reshape(1)
    s, e = normalize_dim(start_dim, n, "flatten"), normalize_dim(end_dim, n, "flatten")
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if s == e:
        return input
    merged = 1
    for k in range(s, e + 1):
        merged *= input._shape[k]
    return input.reshape(input._shape[:s] + (merged,) + input._shape[e + 1 :])


@defop(composite=True)
def unflatten(input, dim, sizes):
    """Split dim into ``sizes`` (one of which may be -1)."""
    n = len(input._shape)
    d = normalize_dim(dim, n, "unflatten")
    sizes = _infer_size(tuple(sizes), input._shape[d], "unflatten")
    return input.view(input._shape[:d] + sizes + input._shape[d + 1 :])


@defop(view=True, tags=("linear",))
def narrow(input, dim, start, length):
    """Elements start..start+length of dim (a view)."""
    n = len(input._shape)
    if n == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    d = normalize_dim(dim, n, "narrow")
    size = input._shape[d]
    start = int(start)
    length = int(length)
    if start < 0:
        start += size
    if not 0 <= start <= size:
        raise IndexError(
            f"start out of range (expected to be in range of [{-size}, {size}], but got {start})"
        )
    if length < 0 or start + length > size:
        raise RuntimeError(
            f"narrow(): start ({start}) + length ({length}) exceeds dimension size ({size})."
        )
    shape = input._shape[:d] + (length,) + input._shape[d + 1 :]
    return view_of(input, shape, input._stride, input._offset + start * input._stride[d])


@defop(view=True, tags=("linear",))
def select(input, dim, index):
    """The slice at ``index`` along dim, with that dim removed (a view)."""
    n = len(input._shape)
    if n == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = normalize_dim(dim, n, "select")
    size = input._shape[d]
    i = operator.index(index)
    if not -size <= i < size:
        raise IndexError(f"index {i} is out of bounds for dimension {d} with size {size}")
    if i < 0:
        i += size
    shape = input._shape[:d] + input._shape[d + 1 :]
    stride = input._stride[:d] + input._stride[d + 1 :]
    return view_of(input, shape, stride, input._offset + i * input._stride[d])


@defop(composite=True)
def unbind(input, dim=0):
    """A tuple of every slice along dim."""
    d = normalize_dim(dim, len(input._shape), "unbind")
    return tuple(select(input, d, i) for i in range(input._shape[d]))


@defop(view=True)
def as_strided(input, size, stride, storage_offset=None):
    """A view with arbitrary size/stride/offset over input's storage (checked to stay
    inside it)."""
    shape = _shape.as_shape((size,), "as_strided")
    stride = tuple(int(s) for s in stride)
    if len(stride) != len(shape):
        raise RuntimeError(
            f"as_strided: mismatch in length of strides and shape ({len(stride)} vs {len(shape)})"
        )
    offset = input._offset if storage_offset is None else int(storage_offset)
    if offset < 0:
        raise RuntimeError(f"as_strided: Tensor: invalid storage offset {offset}")
    if all(shape):
        lo = offset + sum((s - 1) * st for s, st in zip(shape, stride) if st < 0)
        hi = offset + sum((s - 1) * st for s, st in zip(shape, stride) if st > 0)
        limit = input._storage._nbytes // input._dtype.itemsize
        if lo < 0 or hi >= limit:
            raise RuntimeError(
                f"setStorage: sizes {list(shape)}, strides {list(stride)}, storage offset {offset}, "  # noqa: E501 - one string, as PyTorch spells it
                f"and itemsize {input._dtype.itemsize} requiring a storage size of "
                f"{(hi + 1) * input._dtype.itemsize} are out of bounds for storage of size "
                f"{input._storage._nbytes}"
            )
    return view_of(input, shape, stride, offset)


@defop(view=True, tags=("linear",))
def diagonal(input, offset=0, dim1=0, dim2=1):
    """The diagonal of dims (dim1, dim2) as a last dim (a view)."""
    n = len(input._shape)
    a, b = normalize_dim(dim1, n, "diagonal"), normalize_dim(dim2, n, "diagonal")
    if a == b:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    sa, sb = input._shape[a], input._shape[b]
    if offset >= 0:
        length = max(min(sa, sb - offset), 0)
        start = offset * input._stride[b] if length else 0
    else:
        length = max(min(sa + offset, sb), 0)
        start = -offset * input._stride[a] if length else 0
    rest = [d for d in range(n) if d not in (a, b)]
    shape = tuple(input._shape[d] for d in rest) + (length,)
    stride = tuple(input._stride[d] for d in rest) + (input._stride[a] + input._stride[b],)
    return view_of(input, shape, stride, input._offset + start)


@defop(view=True, tags=("linear",))
def unfold(input, dimension, size, step):
    """All windows of ``size`` elements, ``step`` apart, along dimension, as a new
    last dim (a view)."""
    n = len(input._shape)
    d = normalize_dim(dimension, n, "unfold") if n else 0
    dim_size = input._shape[d] if n else 1
    if size > dim_size:
        raise RuntimeError(
            f"maximum size for tensor at dimension {d} is {dim_size} but size is {size}"
        )
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    count = (dim_size - size) // step + 1
    if n == 0:
        return view_of(input, (size,), (1,), input._offset)
    shape = input._shape[:d] + (count,) + input._shape[d + 1 :] + (size,)
    stride = (
        input._stride[:d]
        + (input._stride[d] * step,)
        + input._stride[d + 1 :]
        + (input._stride[d],)
    )
    return view_of(input, shape, stride, input._offset)


@defop(view=True, differentiable=False)
def detach(input):
    """The same memory, cut from autograd history (not a view for autograd:
    no ``_base``, as in PyTorch)."""
    return _tensor.alias(input)


@defop(inplace_of="detach", differentiable=False)
def detach_(input):
    return input


@defop(view=True, tags=("linear",))
def alias(input):
    return view_of(input, input._shape, input._stride, input._offset, input._numel, input._contig)


def _at_least_1d(t):
    return t.reshape(1) if not t._shape else t


def _at_least_2d(t):
    while len(t._shape) < 2:
        t = unsqueeze(t, 0)
    return t


def _at_least_3d(t):
    if not t._shape:
        return t.reshape(1, 1, 1)
    if len(t._shape) == 1:
        return t.reshape(1, -1, 1)
    if len(t._shape) == 2:
        return unsqueeze(t, -1)
    return t


def _at_least(fn, name, tensors):
    """PyTorch's atleast_Nd(*tensors): one tensor gives a tensor; several tensors, or
    one list/tuple of them, give a tuple."""
    if len(tensors) == 1 and not isinstance(tensors[0], (list, tuple)):
        return fn(_check_tensor(name, tensors[0]))
    if len(tensors) == 1:
        tensors = tensors[0]
    return tuple(fn(_check_tensor(name, t)) for t in tensors)


def _check_tensor(name, t):
    if not isinstance(t, Tensor):
        raise TypeError(
            f"{name}(): argument 'tensors' must be tuple of Tensors, not {type(t).__name__}"
        )
    return t


@defop("atleast_1d(*tensors)", method=False, composite=True)
def atleast_1d(*tensors):
    return _at_least(_at_least_1d, "atleast_1d", tensors)


@defop("atleast_2d(*tensors)", method=False, composite=True)
def atleast_2d(*tensors):
    return _at_least(_at_least_2d, "atleast_2d", tensors)


@defop("atleast_3d(*tensors)", method=False, composite=True)
def atleast_3d(*tensors):
    return _at_least(_at_least_3d, "atleast_3d", tensors)


def T(self):
    """All dims reversed."""
    n = len(self._shape)
    if n == 2:
        return transpose(self, 0, 1)
    return permute(self, *reversed(range(n)))


def mT(self):
    """Transpose of the last two dims (a batch of matrices)."""
    if len(self._shape) < 2:
        raise RuntimeError(
            "tensor.mT is only supported on matrices or batches of matrices. Got 1-D tensor."
        )
    return transpose(self, -2, -1)


def is_view_tensor(t):
    return isinstance(t, Tensor) and t._base is not None


# -------------------------------------------------- in-place metadata changes


def _restride_(input, v):
    """Give ``input`` the geometry of ``v`` (a view of it): the in-place forms of
    view ops change shape/strides/offset, never data.  Like PyTorch, they count
    as in-place ops (the version counter moves)."""
    input._shape, input._stride, input._offset = v._shape, v._stride, v._offset
    input._ptr, input._numel, input._contig = v._ptr, v._numel, v._contig
    input._storage._version += 1
    return input


@defop(inplace_of="transpose")
def transpose_(input, dim0, dim1):
    return _restride_(input, transpose(input, dim0, dim1))


@defop(composite=True)
def swapaxes_(input, axis0, axis1):
    return transpose_(input, axis0, axis1)


@defop(composite=True)
def swapdims_(input, dim0, dim1):
    return transpose_(input, dim0, dim1)


@defop(composite=True)
def t_(input):
    if len(input._shape) > 2:
        raise RuntimeError(
            f"t_() expects a tensor with <= 2 dimensions, but self is {len(input._shape)}D"
        )
    return transpose_(input, 0, -1)


@defop(inplace_of="squeeze")
def squeeze_(input, dim=None):
    return _restride_(input, squeeze(input, dim))


@defop(inplace_of="unsqueeze")
def unsqueeze_(input, dim):
    return _restride_(input, unsqueeze(input, dim))


@defop(inplace_of="as_strided")
def as_strided_(input, size, stride, storage_offset=None):
    return _restride_(input, as_strided(input, size, stride, storage_offset))


# ------------------------------------------------------------------ broadcasting


def broadcast_shapes(*shapes):
    """The shape tensors of these shapes broadcast to (a shape may be an int)."""
    shapes = [(s,) if isinstance(s, int) else tuple(s) for s in shapes]
    n = max((len(s) for s in shapes), default=0)
    out = [1] * n
    for s in shapes:
        for i, d in enumerate((1,) * (n - len(s)) + s):
            if d == 1:
                continue
            if out[i] != 1 and out[i] != d:
                raise RuntimeError(
                    f"Shape mismatch: objects cannot be broadcast to a single shape.  Mismatch is "
                    f"between {tuple(out)} and {s}"
                )
            out[i] = d
    return _tensor.Size(out)


@defop("broadcast_tensors(*tensors)", method=False, composite=True, tags=("linear",))
def broadcast_tensors(*tensors):
    """Views of the tensors expanded to their common shape."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    shape = broadcast_shapes(*(t.shape for t in tensors))
    return tuple(expand(t, shape) for t in tensors)


@defop(method=False, composite=True, tags=("linear",))
def meshgrid(*tensors, indexing=None):
    """Coordinate grids (views) from 1-D tensors; indexing 'ij' (default) or 'xy'."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing is None:
        warnings.warn(
            "torch.meshgrid: in an upcoming release, it will be required to pass the indexing "
            "argument.",
            UserWarning,
            stacklevel=2,
        )
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise RuntimeError(
            f'torch.meshgrid: indexing must be one of "xy" or "ij", but received: {indexing}'
        )
    for t in tensors:
        if t.dim() > 1:
            raise RuntimeError(
                f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: {t.dim()}D"
            )
    flat = [t.reshape(-1) for t in tensors]
    shape = tuple(t.shape[0] for t in flat)
    n = len(flat)
    grids = [
        expand(t.reshape(tuple(-1 if j == i else 1 for j in range(n))), shape)
        for i, t in enumerate(flat)
    ]
    if indexing == "xy" and n >= 2:  # Cartesian indexing: the first two dims swap places
        grids = [g.transpose(0, 1) for g in grids]
    return tuple(grids)


# ------------------------------------------------------- views made copies: *_copy


def _slice(t, dim, start, end, step):
    idx = [slice(None)] * t.dim()
    idx[dim] = slice(start, end, step)
    return t[tuple(idx)]


def _fresh(t):
    """A contiguous copy (never an alias), as the *_copy ops return."""
    return t.contiguous() if not t.is_contiguous() else t.clone()


def _copied(r, out):
    """The *_copy result: fresh tensors, written into ``out`` when given."""
    if isinstance(r, (tuple, list)):
        r = tuple(_fresh(t) for t in r)
        if out is None:
            return r
        for o, t in zip(out, r, strict=True):
            o.resize_(t.shape).copy_(t)
        return out
    r = _fresh(r)
    return r if out is None else out.resize_(r.shape).copy_(r)


@defop(method=False, composite=True, tags=("linear",))
def alias_copy(input, *, out=None):
    """alias, returning a new tensor instead of a view."""
    return _copied(view(input, tuple(input.shape)), out)


@defop(method=False, composite=True, tags=("linear",))
def as_strided_copy(input, size, stride, storage_offset=None, *, out=None):
    """as_strided, returning a new tensor instead of a view."""
    return _copied(as_strided(input, size, stride, storage_offset), out)


@defop(method=False, composite=True, differentiable=False)
def detach_copy(input, *, out=None):
    """detach, returning a new tensor instead of a view."""
    return _copied(detach(input), out)


@defop(method=False, composite=True, tags=("linear",))
def diagonal_copy(input, offset=0, dim1=0, dim2=1, *, out=None):
    """diagonal, returning a new tensor instead of a view."""
    return _copied(diagonal(input, offset, dim1, dim2), out)


@defop(method=False, composite=True, tags=("linear",))
def expand_copy(input, size, *, implicit=False, out=None):
    """expand, returning a new tensor instead of a view."""
    return _copied(expand(input, tuple(size)), out)


@defop(composite=True, tags=("linear",))
def narrow_copy(input, dim, start, length, *, out=None):
    """narrow, returning a new tensor instead of a view."""
    return _copied(narrow(input, dim, start, length), out)


@defop(method=False, composite=True, tags=("linear",))
def permute_copy(input, dims, *, out=None):
    """permute, returning a new tensor instead of a view."""
    return _copied(permute(input, *dims), out)


@defop(method=False, composite=True, tags=("linear",))
def select_copy(input, dim, index, *, out=None):
    """select, returning a new tensor instead of a view."""
    return _copied(select(input, dim, index), out)


@defop(method=False, composite=True, tags=("linear",))
def slice_copy(input, dim=0, start=None, end=None, step=1, *, out=None):
    """input[..., start:end:step, ...] along dim, as a new tensor."""
    return _copied(_slice(input, dim, start, end, step), out)


@defop(method=False, composite=True, tags=("linear",))
def split_copy(input, split_size, dim=0, *, out=None):
    """split, returning new tensors instead of views."""
    return _copied(input.split(split_size, dim), out)


@defop(method=False, composite=True, tags=("linear",))
def split_with_sizes_copy(input, split_sizes, dim=0, *, out=None):
    """split_with_sizes, returning new tensors instead of views."""
    return _copied(input.split(list(split_sizes), dim), out)


@defop(method=False, composite=True, tags=("linear",))
def squeeze_copy(input, dim=None, *, out=None):
    """squeeze, returning a new tensor instead of a view."""
    return _copied(squeeze(input, dim), out)


@defop(method=False, composite=True, tags=("linear",))
def t_copy(input, *, out=None):
    """t, returning a new tensor instead of a view."""
    return _copied(t(input), out)


@defop(method=False, composite=True, tags=("linear",))
def transpose_copy(input, dim0, dim1, *, out=None):
    """transpose, returning a new tensor instead of a view."""
    return _copied(transpose(input, dim0, dim1), out)


@defop(method=False, composite=True, tags=("linear",))
def unbind_copy(input, dim=0, *, out=None):
    """unbind, returning new tensors instead of views."""
    return _copied(unbind(input, dim), out)


@defop(method=False, composite=True, tags=("linear",))
def view_as_real_copy(input, *, out=None):
    """view_as_real, returning a new tensor instead of a view."""

    return _copied(view_as_real(input), out)


@defop(method=False, composite=True, tags=("linear",))
def view_as_complex_copy(input, *, out=None):
    """view_as_complex, returning a new tensor instead of a view."""

    return _copied(view_as_complex(input), out)


@defop(method=False, composite=True, tags=("linear",))
def unfold_copy(input, dimension, size, step, *, out=None):
    """unfold, returning a new tensor instead of a view."""
    return _copied(unfold(input, dimension, size, step), out)


@defop(method=False, composite=True, tags=("linear",))
def unsqueeze_copy(input, dim, *, out=None):
    """unsqueeze, returning a new tensor instead of a view."""
    return _copied(unsqueeze(input, dim), out)


@defop(method=False, composite=True, tags=("linear",))
def view_copy(input, size, *, out=None):
    """view, returning a new tensor instead of a view."""
    return _copied(input.view(size), out)


# ------------------------------------------------ a view replaced: *_scatter


def _scatter_into(input, src, view_of_copy):
    r = input.clone()
    v = view_of_copy(r)
    if tuple(v.shape) != tuple(src.shape):
        raise RuntimeError(
            f"expected src to have a size equal to the slice of self. src size = "
            f"{list(src.shape)}, slice size = {list(v.shape)}"
        )
    v.copy_(src)
    return r


@defop(composite=True, tags=("linear",))
def slice_scatter(input, src, dim=0, start=None, end=None, step=1):
    """input with input[..., start:end:step, ...] (along dim) replaced by src."""
    return _scatter_into(input, src, lambda r: _slice(r, dim, start, end, step))


@defop(composite=True, tags=("linear",))
def select_scatter(input, src, dim, index):
    """input with input.select(dim, index) replaced by src."""
    return _scatter_into(input, src, lambda r: select(r, dim, index))


@defop(composite=True, tags=("linear",))
def diagonal_scatter(input, src, offset=0, dim1=0, dim2=1):
    """input with input.diagonal(offset, dim1, dim2) replaced by src."""
    return _scatter_into(input, src, lambda r: diagonal(r, offset, dim1, dim2))


@defop(composite=True, tags=("linear",))
def as_strided_scatter(input, src, size, stride, storage_offset=None):
    """input with input.as_strided(size, stride, storage_offset) replaced by src."""
    return _scatter_into(input, src, lambda r: as_strided(r, size, stride, storage_offset))


# ---------------------------- adjoint (the complex API: _ops/pointwise/complex.py)


@defop(composite=True, tags=("linear",))
def adjoint(input):
    """The conjugate transpose of the last two dims (a view for real tensors; complex
    ones are conjugated eagerly, Note [Eager conjugation])."""
    if input.dim() == 0:  # PyTorch returns a 0-d tensor itself, with a deprecation warning
        warnings.warn(
            "adjoint() is deprecated on 0-D tensors. Consider using x.conj().",
            UserWarning,
            stacklevel=2,
        )
        return input
    if input._dtype.is_complex:
        return transpose(input, -2, -1).conj()
    return transpose(input, -2, -1)
