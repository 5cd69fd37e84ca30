"""Advanced indexing: ``x[key]`` and ``x[key] = v`` for keys holding integer or
bool tensors (or sequences and NumPy arrays, which become tensors), and the
kernel drivers that index_select, gather, scatter, take, put and friends share.

Note [Advanced index placement]
A key is applied as PyTorch does (``applySlicing``): ints (and 0-d integer
tensors) select, slices slice, None and Python bools add a size-1 dim (a bool
also indexes it with [0] or [], so ``x[False]`` is empty), Ellipsis stands for
the dims no other item consumes; integer tensors, lists and bool masks are
recorded against the dim(s) they index (a k-d mask consumes k dims and becomes
its k coordinate vectors, ``nonzero``).  The basic items give a view; the
recorded index tensors are broadcast together to a shape B, and the result is
the view with the indexed dims replaced by B: in place when they were adjacent,
first when they were separated by a sliced dim.  Negative indices count from
the end; anything out of range is an IndexError naming index, dim and size.

Note [Index keys and dispatch]
A tuple key whose first item is a tensor is wrapped in an ``IndexKey`` before
it reaches the op table, so dispatch handlers (autograd saving the key for the
backward) see one opaque value rather than a tuple of mixed tensors and slices.
Every entry point accepts the wrapper where it accepts a key.
"""

import operator
import warnings

from ember_core._base import shape as _shape
from ember_core._base.lib import NOGIL_THRESHOLD, check, error, ffi, lib
from ember_core._ops.pointwise.complex import as_real_view
from ember_core._ops.pointwise.elementwise import _tname as tn
from ember_core._ops.pointwise.elementwise import add, ternary
from ember_core._ops.reduction.reduction import reduce
from ember_core._tensor import dtype as D
from ember_core._tensor import graph as _graph
from ember_core._tensor.copy import clone, copy_into, to_dtype_copy
from ember_core._tensor.creation import fill_values, full, tensor, zeros
from ember_core._tensor.tensor import Tensor, empty, view_of, written

INDEX_TYPE_ERROR = "tensors used as indices must be long, int, byte or bool tensors"


class IndexKey:
    """A tuple index key kept whole through dispatch (Note [Index keys and dispatch])."""

    __slots__ = ("items",)

    def __init__(self, items):
        self.items = items

    def __repr__(self):
        return f"IndexKey({self.items!r})"


class IndexRuntimeError(IndexError, RuntimeError):
    """An out-of-range index in gather/scatter: a RuntimeError in PyTorch, and an IndexError."""


def check_index(status, op, runtime=False):
    """Raise for a kernel status; ``runtime``: out-of-range indices also raise as
    RuntimeError (gather/scatter do in PyTorch)."""
    if status:
        err = error(status, op)
        if runtime and isinstance(err, IndexError):
            raise IndexRuntimeError(str(err))
        raise err


# ------------------------------------------------------------------ keys


def _sequence_as_tuple(seq):
    # PyTorch's (NumPy's legacy) heuristic: a short list holding tensors,
    # sequences, slices, None or Ellipsis is a tuple of indices.
    if len(seq) >= 32:
        return False
    for item in seq:
        if isinstance(item, (Tensor, list, tuple, slice)) or item is None or item is Ellipsis:
            return True
        if (
            hasattr(item, "__len__")
            and hasattr(item, "__getitem__")
            and not isinstance(item, (str, bytes))
        ):
            return True
    return False


def key_items(key):
    """The items of an index key, as a tuple."""
    if type(key) is IndexKey:
        return key.items
    if isinstance(key, tuple):
        return key
    if isinstance(key, list) and _sequence_as_tuple(key):
        warnings.warn(
            "Using a non-tuple sequence for multidimensional indexing is deprecated; use "
            "x[tuple(seq)] instead of x[seq].",
            UserWarning,
            stacklevel=4,
        )
        return tuple(key)
    return (key,)


def as_index_tensor(obj):
    """A list, tuple or array used as an index, as a tensor (int64 when empty)."""

    try:
        t = tensor(obj)
    except (TypeError, ValueError, OverflowError) as e:
        raise IndexError(
            f"{INDEX_TYPE_ERROR} (could not convert {type(obj).__name__}: {e})"
        ) from None
    if t._numel == 0 and t._dtype.category == 2:
        t = empty(t._shape, D.int64)
    return t


def _is_mask(t):
    return t._dtype is D.bool_ or t._dtype is D.uint8


def _bool_index(value):
    """The index tensor a Python bool (or 0-d mask) indexes its new size-1 dim with."""

    return zeros((1 if value else 0,), dtype=D.int64)


def _normalize_items(items):
    """Classify key items: ('int', i), ('slice', s), ('none',), ('ellipsis',),
    ('bool', b), ('index', int tensor), ('mask', bool tensor)."""
    out = []
    for k in items:
        if k is None:
            out.append(("none", None))
        elif k is Ellipsis:
            out.append(("ellipsis", None))
        elif isinstance(k, bool):
            out.append(("bool", k))
        elif isinstance(k, slice):
            out.append(("slice", k))
        elif isinstance(k, Tensor):
            out.append(_tensor_item(k))
        elif isinstance(k, (list, tuple)) or (
            hasattr(k, "__array__") and getattr(k, "ndim", 1) > 0
        ):
            out.append(_tensor_item(as_index_tensor(k)))
        else:
            try:
                out.append(("int", operator.index(k)))
            except TypeError:
                raise IndexError(
                    "only integers, slices (`:`), ellipsis (`...`), None and long or byte "
                    f"Variables are valid indices (got {type(k).__name__})"
                ) from None
    return out


def _tensor_item(t):
    if _is_mask(t):
        if not t._shape:
            return ("bool", bool(t.item()))
        if t._dtype is D.uint8:
            warnings.warn(
                "indexing with dtype torch.uint8 is now deprecated, please use a dtype torch.bool "
                "instead.",
                UserWarning,
                stacklevel=5,
            )
        return ("mask", t)
    if t._dtype.category == 2 or t._dtype not in (D.int64, D.int32):
        raise IndexError(INDEX_TYPE_ERROR)
    if not t._shape:
        return ("int", int(t.item()))
    return ("index", t)


def apply_key(t, key):
    """Apply the basic items of ``key`` as a view; returns (view, indices) where
    indices maps dims of the view to int64 index tensors (masks expanded)."""
    items = _normalize_items(key_items(key))
    ndim = len(t._shape)
    specified = 0
    ellipses = 0
    for kind, v in items:
        if kind in ("int", "slice", "index"):
            specified += 1
        elif kind == "mask":
            specified += len(v._shape)
        elif kind == "ellipsis":
            ellipses += 1
    if ellipses > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if specified > ndim:
        raise IndexError(f"too many indices for tensor of dimension {ndim}")
    src_shape, src_stride = t._shape, t._stride
    shape, stride = [], []
    offset = t._offset
    recorded = []  # (first dim in the view, kind, tensor)
    d = 0
    for kind, v in items:
        if kind == "int":
            size = src_shape[d]
            if not -size <= v < size:
                raise IndexError(f"index {v} is out of bounds for dimension {d} with size {size}")
            offset += (v + size if v < 0 else v) * src_stride[d]
            d += 1
        elif kind == "slice":
            size = src_shape[d]
            step = 1 if v.step is None else operator.index(v.step)
            if step <= 0:
                raise ValueError("step must be greater than zero")
            start, stop, _ = slice(v.start, v.stop, step).indices(size)
            length = max(0, (stop - start + step - 1) // step)
            if length:
                offset += start * src_stride[d]
            shape.append(length)
            stride.append(src_stride[d] * step)
            d += 1
        elif kind == "none":
            shape.append(1)
            stride.append(0)
        elif kind == "bool":
            recorded.append((len(shape), "index", _bool_index(v)))
            shape.append(1)
            stride.append(0)
        elif kind == "ellipsis":
            n = ndim - specified
            shape.extend(src_shape[d : d + n])
            stride.extend(src_stride[d : d + n])
            d += n
        elif kind == "mask":
            k = len(v._shape)
            for j in range(k):
                if v._shape[j] != src_shape[d + j]:
                    raise IndexError(
                        f"The shape of the mask {list(v._shape)} at index {j} does not match the "
                        f"shape of the indexed tensor {list(src_shape)} at index {d + j}"
                    )
            recorded.append((len(shape), "mask", v))
            shape.extend(src_shape[d : d + k])
            stride.extend(src_stride[d : d + k])
            d += k
        else:
            recorded.append((len(shape), "index", v))
            shape.append(src_shape[d])
            stride.append(src_stride[d])
            d += 1
    shape.extend(src_shape[d:])
    stride.extend(src_stride[d:])
    view = view_of(t, tuple(shape), tuple(stride), offset)
    indices = {}
    for pos, kind, v in recorded:
        if kind == "mask":
            for j, col in enumerate(nonzero_columns(v)):
                indices[pos + j] = col
        else:
            indices[pos] = v if v._dtype is D.int64 else _to_int64(v)
    return view, indices


def _to_int64(t):
    return to_dtype_copy(t, D.int64)


# ------------------------------------------------------------- nonzero


def count_nonzero_all(t):
    if t._numel == 0:
        return 0

    r = reduce("nonzero", lib.EC_R_COUNT_NONZERO, t, tuple(range(len(t._shape))), False, D.int64)
    if r._storage._device.type != "cpu":  # the count is read on the host
        return int(r.item())
    if _graph._active is not None:  # Note [Capture and replay]: a data-dependent size
        _graph.host_read("counting nonzero elements (a data-dependent output shape)")
    return int(ffi.cast("int64_t*", r._ptr)[0])


def nonzero_matrix(t, transposed=False):
    """int64 coordinates of t's non-zero elements: (n, ndim), or (ndim, n) contiguous
    when ``transposed`` (rows are then the per-dim index vectors)."""
    n = count_nonzero_all(t)
    nd = len(t._shape)
    out = empty((nd, n) if transposed else (n, nd), D.int64, t._storage._device)
    st_n, st_d = (1, n) if transposed else (nd, 1)
    lay = ffi.new("int64_t[]", list(t._shape) + list(t._stride))
    check(
        out._storage._device._k.ec_nonzero(t._dtype.code, nd, lay, out._ptr, st_n, st_d, t._ptr, n),
        "nonzero",
    )
    return out


def nonzero_columns(t):
    """The index vectors (one contiguous int64 tensor per dim) of t's non-zero elements."""
    m = nonzero_matrix(t, transposed=True)
    n = m._shape[1]
    return [view_of(m, (n,), (1,), d * n, n, True) for d in range(len(t._shape))]


# ------------------------------------------------------ index iteration


class Plan:
    """Where an advanced index puts things (Note [Advanced index placement]):
    the result shape, x's strides over it, and each index's strides over it."""

    __slots__ = ("shape", "x_strides", "tensors", "idx_strides", "sizes", "xstrides", "dims")


def plan(view, indices, op="index"):
    """A Plan for indexing ``view`` with {dim: int64 tensor}."""
    positions = sorted(indices)
    tensors = [indices[p] for p in positions]
    shapes = [t._shape for t in tensors]
    try:
        bshape = _shape.broadcast_shapes(*shapes, op=op)
    except RuntimeError:
        shown = ", ".join(str(list(s)) for s in shapes)
        raise IndexError(
            f"shape mismatch: indexing tensors could not be broadcast together with shapes {shown}"
        ) from None
    shape, stride = view._shape, view._stride
    taken = set(positions)
    rest = [d for d in range(len(shape)) if d not in taken]
    adjacent = positions[-1] - positions[0] == len(positions) - 1
    if adjacent:
        before = [d for d in rest if d < positions[0]]
        after = [d for d in rest if d > positions[0]]
    else:
        before, after = [], rest
    nb = len(bshape)
    p = Plan()
    p.shape = tuple([shape[d] for d in before] + list(bshape) + [shape[d] for d in after])
    p.x_strides = [stride[d] for d in before] + [0] * nb + [stride[d] for d in after]
    at = len(before)
    lead, tail = [0] * at, [0] * len(after)
    p.idx_strides = [
        lead + _shape.broadcast_strides(t._shape, t._stride, bshape) + tail for t in tensors
    ]
    p.tensors = tensors
    p.sizes = [shape[d] for d in positions]
    p.xstrides = [stride[d] for d in positions]
    p.dims = positions
    return p


def run_plan(mode, p, x, values, values_strides, op, alpha=1.0, runtime_error=False):
    """Run ec_index for plan ``p`` over x with values (read or written)."""
    nd = len(p.shape)
    flat = list(p.shape) + list(values_strides) + p.x_strides
    for st in p.idx_strides:
        flat.extend(st)
    lay = ffi.new("int64_t[]", flat)
    ptrs = ffi.new("ec_ptr[]", [t._ptr for t in p.tensors])
    n = 1
    for s in p.shape:
        n *= s
    fn = (
        values._storage._device._kn
        if n * x._dtype.itemsize > NOGIL_THRESHOLD
        else values._storage._device._k
    ).ec_index
    check_index(
        fn(
            mode,
            x._dtype.code,
            nd,
            lay,
            values._ptr,
            x._ptr,
            len(p.tensors),
            ptrs,
            ffi.new("int64_t[]", p.sizes),
            ffi.new("int64_t[]", p.xstrides),
            ffi.new("int64_t[]", p.dims),
            float(alpha),
        ),
        op,
        runtime_error,
    )


def gather_plan(view, p, op="index"):
    """A new contiguous tensor: view indexed by plan p."""
    out = empty(p.shape, view._dtype, view._storage._device)
    if out._numel:
        run_plan(lib.EC_INDEX_GET, p, view, out, out._stride, op)
    return out


def put_plan(view, p, values, mode, op, alpha=1.0, runtime_error=False):
    """Write values (broadcast to the plan's shape) through plan p into view."""
    if values._shape != p.shape:
        try:
            target = _shape.broadcast_shapes(values._shape, p.shape, op=op)
        except RuntimeError:
            target = None
        if target != p.shape:
            raise RuntimeError(
                f"shape mismatch: value tensor of shape {list(values._shape)} cannot be broadcast "
                f"to indexing result of shape {list(p.shape)}"
            )

    if values._storage is view._storage:
        values = clone(values)
    # an index read from the memory being written (x[x] = v) would change under the kernel
    p.tensors = [clone(t) if t._storage is view._storage else t for t in p.tensors]
    vs = _shape.broadcast_strides(values._shape, values._stride, p.shape)
    n = 1
    for s in p.shape:
        n *= s
    if n:
        run_plan(mode, p, view, values, vs, op, alpha, runtime_error)


# ------------------------------------------------------- get and set


def index(t, key):
    """t[key] for a key with advanced items (Note [Advanced index placement])."""
    items = key_items(key)
    if len(items) == 1 and isinstance(items[0], Tensor) and items[0]._dtype is D.bool_:
        mask = items[0]
        if mask._shape == t._shape and mask._shape:  # x[mask]: one pass, no index tensors
            return masked_select_flat(t, mask)
    view, indices = apply_key(t, key)
    if not indices:
        return view
    if len(indices) == 1 and len(view._shape) == 1 and 0 in indices:
        return _index_1d(view, indices[0])
    return gather_plan(view, plan(view, indices))


def masked_select_flat(t, mask):
    """The elements of t where mask (same shape, bool) is true, in row-major order."""
    n = count_nonzero_all(mask)
    out = empty((n,), t._dtype, t._storage._device)
    if n:
        lay = ffi.new("int64_t[]", list(t._shape) + list(t._stride) + list(mask._stride))
        check(
            out._storage._device._k.ec_masked_select(
                t._dtype.code, len(t._shape), lay, out._ptr, t._ptr, mask._ptr
            ),
            "index",
        )
    return out


def _index_1d(view, idx):
    # x[idx] on a 1-d view: the result takes idx's shape
    p = Plan()
    p.shape = idx._shape
    p.x_strides = [0] * len(idx._shape)
    p.idx_strides = [list(idx._stride)]
    p.tensors = [idx]
    p.sizes = [view._shape[0]]
    p.xstrides = [view._stride[0]]
    p.dims = [0]
    return gather_plan(view, p)


def _value_tensor(value, dtype, dev):
    if isinstance(value, Tensor):
        return value
    return full((), value, dtype=dtype, device=dev)


def index_put(t, key, value):
    """t[key] = value for a key with advanced items."""

    items = key_items(key)
    # x[mask] = scalar (or 0-d tensor), the mask covering x's leading dims: masked fill
    if len(items) == 1 and isinstance(items[0], Tensor) and _is_mask(items[0]) and items[0]._shape:
        mask = items[0]
        if (not isinstance(value, Tensor) or not value._shape) and mask._shape == t._shape[
            : len(mask._shape)
        ]:
            masked_fill_into(t, mask, value)
            return
    view, indices = apply_key(t, key)
    if not indices:
        written(view, "__setitem__")
        if isinstance(value, Tensor):
            copy_into(view, value)
        else:
            fill_values(view, value)
        return
    if isinstance(value, Tensor):
        if value._dtype is not t._dtype:
            if value._shape:
                raise RuntimeError(
                    "Index put requires the source and destination dtypes match, got "
                    f"{_tname(t._dtype)} for the destination and {_tname(value._dtype)} for the "
                    "source."
                )

            value = to_dtype_copy(value, t._dtype)
    else:
        value = _value_tensor(value, t._dtype, t._storage._device)
    p = plan(view, indices)
    written(t, "index_put_")
    put_plan(view, p, value, lib.EC_INDEX_PUT, "index_put_")


def accumulate_key(t, key, values):
    """t[key] += values, repeated indices accumulating (no version bump: t is fresh)."""
    if t._dtype.is_complex and t._shape:
        # complex sums are the parts' sums: accumulate into the real views, the key
        # followed by the whole pair dim

        pair_key = (key if isinstance(key, tuple) else (key,)) + (slice(None),)
        accumulate_key(as_real_view(t), pair_key, as_real_view(values.to(t._dtype)))
        return
    view, indices = apply_key(t, key)
    if not indices:
        copy_into(view, add(view, values))
        return
    put_plan(view, plan(view, indices), values, lib.EC_INDEX_ADD, "index_put_")


def _tname(d):
    return tn(d)


def masked_fill_into(t, mask, value):
    """t[mask] = value in place, the mask covering t's leading dims (counts as t's write)."""

    k = len(mask._shape)
    if mask._shape != t._shape[:k]:
        raise IndexError(
            f"The shape of the mask {list(mask._shape)} does not match the shape of the indexed "
            f"tensor {list(t._shape)}"
        )
    if k < len(t._shape):
        extra = len(t._shape) - k
        mask = view_of(mask, mask._shape + (1,) * extra, mask._stride + (0,) * extra, mask._offset)
    if mask._dtype is not D.bool_:
        mask = to_dtype_copy(mask, D.bool_)
    v = _value_tensor(value, t._dtype, t._storage._device)
    if v._dtype is not t._dtype:
        v = to_dtype_copy(v, t._dtype)
    ternary("masked_fill_", lib.EC_T_WHERE, mask, v, t, out=t, cond=True)
