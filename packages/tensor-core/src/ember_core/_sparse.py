"""Sparse tensors: the COO and CSR layouts of ``torch.sparse``.

Note [Sparse layouts]
A sparse tensor is a ``SparseTensor`` (COO: an int64 ``indices`` tensor of shape
(sparse_dim, nnz) and a ``values`` tensor of shape (nnz, *dense_dims)) or a
``SparseCsrTensor`` (``crow_indices``, ``col_indices``, ``values``): a subclass
of Tensor that holds its dense component tensors, its dense shape and its dtype,
and leaves the slots of dense memory (``_storage``, ``_stride``, ``_offset``,
``_ptr``, ``_contig``) unset.  An op implementation written for dense tensors
therefore cannot read a sparse tensor as if it were dense: the first read of
one of those slots reaches ``__getattr__``, which raises ``SparseLayoutError``
(an AttributeError and a NotImplementedError) before any kernel runs.  The op's
generated function already catches AttributeError for Note [Argument errors]
(free in CPython while nothing is raised), and hands this one to
``layout_fallback``: the op's sparse implementation from ``SPARSE_IMPLS`` (add,
mul, sum, mm, matmul, addmm, transpose, clone, ...), called with the op's
canonical arguments, or a NotImplementedError naming the op and the layout.
So dense calls pay nothing -- no check on any dense op -- and every op not
written for sparse tensors fails cleanly.

The sparse implementations are written with dense ops on the components (an
``index_add`` for sparse @ dense, ``unique`` for coalescing), so autograd
records them like any program: gradients reach ``values`` (and a sparse
tensor's ``requires_grad``/``grad`` are its values'), and the dense operand of
a product.  Python operators need nothing extra: ``dense + sparse`` is
``add(dense, sparse)``, whose kernel path trips on the sparse operand.
"""

import builtins
import math
import sys

from ember_core import _dispatch, _layout, _printing
from ember_core import _dtype as D
from ember_core._creation import tensor as _as_tensor
from ember_core._creation import zeros
from ember_core._elementwise import is_scalar
from ember_core._embedding import embedding_bag
from ember_core._tensor import Size, Tensor

# The Tensor slots that describe dense memory: a sparse tensor leaves them unset.
_DENSE_SLOTS = frozenset(("_storage", "_stride", "_offset", "_ptr", "_contig"))

# op name -> its implementation for sparse arguments (the op's canonical args)
SPARSE_IMPLS = {}


def _sparse_impl(*names):
    def register(fn):
        for name in names:
            SPARSE_IMPLS[name] = fn
        return fn

    return register


def _not_implemented(op_name, layouts):
    names = ", ".join(sorted({f"ember.{lay.name}" for lay in layouts}))
    return NotImplementedError(
        f"{op_name}: not implemented for layout {names} (sparse tensors support "
        "to_dense, coalesce, sum, add, mul, div, mm/matmul/addmm and a few elementwise ops; "
        "call to_dense() first)"
    )


def _sparse_args(args):
    found = []
    for a in args:
        if isinstance(a, _SparseBase):
            found.append(a)
        elif isinstance(a, (list, tuple)):
            found.extend(x for x in a if isinstance(x, _SparseBase))
    return found


def layout_fallback(op, args):
    """An op's implementation found a sparse argument (Note [Sparse layouts])."""
    sparse = _sparse_args(args)
    impl = SPARSE_IMPLS.get(op.name)
    if impl is None or not sparse:
        raise _not_implemented(op.name, [s.layout for s in sparse] or [_layout.sparse_coo])
    return impl(op.name, *args)


class SparseLayoutError(AttributeError, NotImplementedError):
    """A dense-memory slot of a sparse tensor was read (Note [Sparse layouts])."""

    layout_fallback = staticmethod(layout_fallback)


class _SparseBase(Tensor):
    """What the COO and CSR tensors share: no dense memory, autograd through
    their values, conversions of their components."""

    __slots__ = ()

    def __getattr__(self, name):
        if name in _DENSE_SLOTS:
            where = sys._getframe(1).f_code.co_name
            raise SparseLayoutError(
                f"{where}: not implemented for layout {self.layout} (a sparse tensor has no "
                "dense memory; call to_dense() first)",
                name=name,
                obj=self,
            )
        raise AttributeError(
            f"'{type(self).__name__}' object has no attribute {name!r}", name=name, obj=self
        )

    # -------------------------------------------------------- metadata
    @property
    def device(self):
        return self._sp_values.device

    @property
    def is_cuda(self):
        return self._sp_values.is_cuda

    @property
    def is_cpu(self):
        return self._sp_values.is_cpu

    def get_device(self):
        return self._sp_values.get_device()

    @property
    def is_sparse(self):
        return False

    @property
    def is_sparse_csr(self):
        return False

    def is_contiguous(self, memory_format=None):
        return False

    def storage_offset(self):
        return 0

    def data_ptr(self):
        raise RuntimeError("Cannot access data pointer of Tensor that doesn't have storage")

    const_data_ptr = data_ptr

    def untyped_storage(self):
        raise RuntimeError(f"Cannot access storage of a tensor of layout {self.layout}")

    @property
    def nbytes(self):
        raise RuntimeError(
            "nbytes is not defined for sparse tensors.  If you want the size of the "
            "constituent tensors, add the nbytes of the indices and values.  If you want the "
            "size of the  equivalent dense tensor, multiply numel() by element_size()"
        )

    def numpy(self, *, force=False):
        raise TypeError(
            f"can't convert {_LAYOUT_WORDS[self.layout]} layout tensor to numpy. Use "
            "Tensor.to_dense() first."
        )

    def tolist(self):
        raise RuntimeError("Cannot access data pointer of Tensor that doesn't have storage")

    def item(self):
        if self._numel != 1:
            raise RuntimeError(
                f"a Tensor with {self._numel} elements cannot be converted to Scalar"
            )
        return self.to_dense().item()

    def __repr__(self, *, tensor_contents=None):
        return _sparse_repr(self)

    def __format__(self, spec):
        return object.__format__(self, spec) if spec else repr(self)

    def __deepcopy__(self, memo):
        return self.clone()

    def __reduce_ex__(self, protocol):
        return (_rebuild, (self.layout.name, self._components(), self._shape, self._flags()))

    # -------------------------------------------------------- autograd
    # A sparse tensor's autograd state is its values' (Note [Sparse layouts]).
    @property
    def requires_grad(self):
        return self._sp_values.requires_grad

    @requires_grad.setter
    def requires_grad(self, value):
        self._sp_values.requires_grad_(value)

    def requires_grad_(self, requires_grad=True):
        self._sp_values.requires_grad_(requires_grad)
        return self

    @property
    def grad_fn(self):
        return self._sp_values.grad_fn

    @property
    def is_leaf(self):
        return self._sp_values.is_leaf

    @property
    def grad(self):
        g = self._sp_values.grad
        return None if g is None else self._with_values(g)

    @grad.setter
    def grad(self, value):
        if value is not None and not isinstance(value, type(self)):
            raise TypeError(f"assigned grad of a {self.layout} tensor must have its layout")
        self._sp_values.grad = None if value is None else value._sp_values

    @property
    def data(self):
        return self.detach()

    # -------------------------------------------------------- conversions
    def to(self, *args, **kwargs):
        values = self._sp_values.to(*args, **kwargs)
        if values is self._sp_values:
            return self
        return self._with_values(values, device=values.device)

    def cpu(self, memory_format=None):
        return self.to("cpu")

    def cuda(self, device=None, non_blocking=False, memory_format=None):
        values = self._sp_values.cuda(device, non_blocking)
        return self._with_values(values, device=values.device)

    def type_as(self, other):
        return self.to(other.dtype)

    def type(self, dtype=None, non_blocking=False):
        """PyTorch's legacy type name ('torch.sparse.FloatTensor'), or a conversion."""
        from ember_core._copy import _TYPE_NAMES

        if dtype is None:
            if self.layout is not _layout.sparse_coo:  # (PyTorch has no legacy CSR types)
                raise RuntimeError(f"Unimplemented backend {_LAYOUT_WORDS[self.layout]}CPU")
            cuda = "cuda." if self.is_cuda else ""
            return f"torch.{cuda}sparse.{_TYPE_NAMES[self._dtype]}"
        if isinstance(dtype, str):
            return self._with_values(self._sp_values.type(dtype.replace(".sparse", "")))
        return self.to(getattr(dtype, "dtype", dtype))

    def _nnz(self):
        return self._sp_values.shape[0]

    @property
    def T(self):  # noqa: N802 - PyTorch's name
        return transpose(self, 0, 1) if len(self._shape) == 2 else self

    @property
    def mT(self):  # noqa: N802 - PyTorch's name
        return transpose(self, -2, -1)


def _typed_converter(dtype):
    def convert(self, memory_format=None):
        return self.to(dtype)

    convert.__name__ = dtype.name
    return convert


def _install_converters():
    from ember_core._copy import TYPE_METHODS

    for name, dtype in TYPE_METHODS.items():
        setattr(_SparseBase, name, _typed_converter(dtype))


_install_converters()


class SparseTensor(_SparseBase):
    """A sparse COO tensor (``layout=ember.sparse_coo``): ``indices`` (int64,
    sparse_dim x nnz) and ``values`` (nnz x dense dims); duplicates add up.
    Make one with ``ember.sparse_coo_tensor`` or ``dense.to_sparse()``."""

    __slots__ = ("_sp_indices", "_sp_values", "_sp_coalesced")

    @property
    def layout(self):
        return _layout.sparse_coo

    @property
    def is_sparse(self):
        return True

    def stride(self, dim=None):
        # (PyTorch reports zeros for a COO tensor's strides)
        return 0 if dim is not None else (0,) * len(self._shape)

    def _indices(self):
        return self._sp_indices

    def _values(self):
        return self._sp_values

    def _components(self):
        return (self._sp_indices, self._sp_values)

    def _flags(self):
        return self._sp_coalesced

    def _with_values(self, values, device=None):
        indices = self._sp_indices if device is None else self._sp_indices.to(device)
        return _coo(indices, values, self._shape, self._sp_coalesced)

    def _coalesced_(self, flag):
        """PyTorch's ``_coalesced_``: mark this tensor (un)coalesced, trusting the caller."""
        self._sp_coalesced = bool(flag)
        return self


class SparseCsrTensor(_SparseBase):
    """A sparse CSR matrix (``layout=ember.sparse_csr``): ``crow_indices``
    (rows + 1), ``col_indices`` and ``values`` (nnz each), rows in order."""

    __slots__ = ("_sp_crow", "_sp_col", "_sp_values")

    @property
    def layout(self):
        return _layout.sparse_csr

    @property
    def is_sparse_csr(self):
        return True

    def stride(self, dim=None):
        raise RuntimeError("Sparse CSR tensors do not have strides")

    def _components(self):
        return (self._sp_crow, self._sp_col, self._sp_values)

    def _flags(self):
        return None

    def _with_values(self, values, device=None):
        crow, col = self._sp_crow, self._sp_col
        if device is not None:
            crow, col = crow.to(device), col.to(device)
        return _csr(crow, col, values, self._shape)

    def _rows(self):
        """The row of each stored element (COO row indices)."""
        from ember_core._creation import arange

        counts = self._sp_crow[1:] - self._sp_crow[:-1]
        return arange(self._shape[0], device=self.device).repeat_interleave(counts)


_LAYOUT_WORDS = {_layout.sparse_coo: "Sparse", _layout.sparse_csr: "SparseCsr"}


def _numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def _coo(indices, values, shape, coalesced):
    t = object.__new__(SparseTensor)
    t._shape = tuple(shape)
    t._dtype = values._dtype
    t._numel = _numel(shape)
    t._sp_indices = indices
    t._sp_values = values
    t._sp_coalesced = bool(coalesced)
    return t


def _csr(crow, col, values, shape):
    t = object.__new__(SparseCsrTensor)
    t._shape = tuple(shape)
    t._dtype = values._dtype
    t._numel = _numel(shape)
    t._sp_crow = crow
    t._sp_col = col
    t._sp_values = values
    return t


def _rebuild(layout_name, components, shape, flags):
    if layout_name == "sparse_coo":
        return _coo(components[0], components[1], shape, flags)
    if layout_name == "sparse_csr":
        return _csr(*components, shape)
    raise ValueError(f"unknown sparse layout {layout_name!r}")


def rebuild_sparse(layout, data):
    """PyTorch's ``torch._utils._rebuild_sparse_tensor(layout, data)``: the
    tensor ``torch.save`` writes for a sparse one."""
    name = layout.name if isinstance(layout, _layout.layout) else str(layout)
    if name == "sparse_coo":
        indices, values, size = data[0], data[1], data[2]
        coalesced = data[3] if len(data) > 3 else False
        return _make_coo("_rebuild_sparse_tensor", indices, values, size, coalesced)
    if name == "sparse_csr":
        crow, col, values, size = data
        return _make_csr("_rebuild_sparse_tensor", crow, col, values, size)
    raise NotImplementedError(f"_rebuild_sparse_tensor: layout {name} is not supported by ember")


def torch_sparse_data(t):
    """The data ``torch.save`` writes for sparse ``t`` (the inverse of rebuild_sparse)."""
    if isinstance(t, SparseTensor):
        return (t._sp_indices, t._sp_values, Size(t._shape), t._sp_coalesced)
    return (t._sp_crow, t._sp_col, t._sp_values, Size(t._shape))


# ------------------------------------------------------------------- printing


def _sparse_repr(t):
    """PyTorch's layout: the components one per line, then size, nnz, dtype, layout."""
    indent = len("tensor(")
    suffixes = []
    if t.device.type != "cpu":
        suffixes.append(f"device='{t.device}'")
    suffixes += [f"size={tuple(t._shape)}", f"nnz={t._nnz()}"]
    if t._dtype not in (D.get_default_dtype(), D.default_complex_dtype(), D.int64, D.bool_):
        suffixes.append(f"dtype=ember.{t._dtype.name}")
    suffixes.append(f"layout={t.layout}")
    names = ("indices",) if isinstance(t, SparseTensor) else ("crow_indices", "col_indices")
    parts = []
    for name, comp in zip(names + ("values",), t._components()):
        prefix = f"{name}=tensor("
        body = _printing.tensor_body(comp.detach(), indent + len(prefix))
        if comp._numel == 0:
            body += f", size={tuple(comp._shape)}"
        parts.append(prefix + body + ")")
    grad_fn = t.grad_fn
    if grad_fn is not None:
        name = getattr(grad_fn, "name", None)
        name = name() if callable(name) else type(grad_fn).__name__
        suffixes.append(f"grad_fn=<{name}>")
    elif t.requires_grad:
        suffixes.append("requires_grad=True")
    if isinstance(t, SparseTensor):
        out = "tensor(" + (",\n" + " " * indent).join(parts)
        force_newline = True
    else:  # PyTorch prints a CSR tensor's suffixes after its values on one line
        out = "tensor(" + (",\n" + " " * indent).join(parts)
        force_newline = False
    last = len(out) - out.rfind("\n") + 1
    for s in suffixes:
        if force_newline or last + len(s) + 2 > _printing.PRINT_OPTS.linewidth:
            out += ",\n" + " " * indent + s
            last = indent + len(s)
            force_newline = False
        else:
            out += ", " + s
            last += len(s) + 2
    return out + ")"


# ------------------------------------------------------------------ creation


def _index_tensor(op, x, what):
    if not isinstance(x, Tensor):
        x = _as_tensor(x)
        if x._numel == 0:
            x = x.long()
    if isinstance(x, _SparseBase):
        raise TypeError(f"{op}(): {what} must be a dense (strided) tensor")
    if x._dtype is not D.int64:
        if x._dtype.category != 1:
            raise RuntimeError(f"{op}(): {what} must be an int64 tensor, got {x._dtype}")
        x = x.long()
    return x


def _value_tensor(op, x, dtype):
    if not isinstance(x, Tensor):
        return _as_tensor(x, dtype=dtype)
    if isinstance(x, _SparseBase):
        raise TypeError(f"{op}(): values must be a dense (strided) tensor")
    return x if dtype is None or x._dtype is dtype else x.to(dtype)


def _check_size(op, size):
    shape = tuple(int(s) for s in size)
    if any(s < 0 for s in shape):
        raise RuntimeError(f"{op}(): size has a negative dimension: {list(shape)}")
    return shape


def _make_coo(op, indices, values, size, is_coalesced=None, dtype=None, device=None):
    indices = _index_tensor(op, indices, "indices")
    values = _value_tensor(op, values, dtype)
    if device is not None:
        indices, values = indices.to(device), values.to(device)
    if indices.device != values.device:
        raise RuntimeError(
            f"{op}(): indices and values must be on the same device, got {indices.device} "
            f"and {values.device}"
        )
    if indices.dim() != 2:
        raise RuntimeError(
            f"{op}(): indices must be sparse_dim x nnz, but got: {list(indices.shape)}"
        )
    sparse_dim, nnz = indices.shape
    if values.dim() == 0 or values.shape[0] != nnz:
        raise RuntimeError(
            f"{op}(): indices and values must have the same number of elements (nnz), but "
            f"got indices {list(indices.shape)} and values {list(values.shape)}"
        )
    dense_shape = tuple(values.shape[1:])
    if nnz:
        hi = indices.amax(1).tolist()
        lo = indices.amin(1).tolist()
    else:
        hi, lo = [-1] * sparse_dim, [0] * sparse_dim
    if size is None:
        shape = tuple(h + 1 for h in hi) + dense_shape
    else:
        shape = _check_size(op, size)
        if len(shape) != sparse_dim + len(dense_shape):
            raise RuntimeError(
                f"{op}(): number of dimensions must be sparse_dim ({sparse_dim}) + dense_dim "
                f"({len(dense_shape)}), but got {len(shape)}"
            )
        if tuple(shape[sparse_dim:]) != dense_shape:
            raise RuntimeError(
                f"{op}(): values has incorrect size, expected "
                f"{[nnz, *shape[sparse_dim:]]}, got {list(values.shape)}"
            )
        for d in range(sparse_dim):
            if lo[d] < 0:
                raise RuntimeError(f"{op}(): found negative index {lo[d]} for dim {d}")
            if hi[d] >= shape[d]:
                raise RuntimeError(
                    f"{op}(): size is inconsistent with indices: for dim {d}, size is "
                    f"{shape[d]} but found index {hi[d]}"
                )
    if is_coalesced is None:
        is_coalesced = nnz < 2  # PyTorch's rule: nothing to merge
    return _coo(indices, values, shape, is_coalesced)


@_dispatch.defop(
    "sparse_coo_tensor(indices, values, size=None, *, dtype=None, device=None, "
    "pin_memory=False, requires_grad=False, check_invariants=None, is_coalesced=None)",
    method=False,
    composite=True,
    tags=("creation",),
)
def sparse_coo_tensor(
    indices,
    values,
    size=None,
    *,
    dtype=None,
    device=None,
    pin_memory=False,
    requires_grad=False,
    check_invariants=None,
    is_coalesced=None,
):
    """A sparse COO tensor with ``values`` at ``indices`` (sparse_dim x nnz);
    entries at the same index add up.  ``size`` defaults to the smallest that
    holds the indices.

    >>> import ember_core as ec
    >>> s = ec.sparse_coo_tensor([[0, 1], [2, 0]], [3.0, 4.0], (2, 3))
    >>> s.to_dense().tolist()
    [[0.0, 0.0, 3.0], [4.0, 0.0, 0.0]]
    """
    t = _make_coo("sparse_coo_tensor", indices, values, size, is_coalesced, dtype, device)
    if requires_grad:
        t._sp_values = t._sp_values.detach().requires_grad_()
    return t


def _make_csr(op, crow, col, values, size, dtype=None, device=None):
    crow = _index_tensor(op, crow, "crow_indices")
    col = _index_tensor(op, col, "col_indices")
    values = _value_tensor(op, values, dtype)
    if device is not None:
        crow, col, values = crow.to(device), col.to(device), values.to(device)
    if crow.dim() != 1 or col.dim() != 1 or values.dim() != 1:
        raise RuntimeError(
            f"{op}(): crow_indices, col_indices and values must be 1-D (batched and hybrid "
            f"CSR tensors are not supported), got {list(crow.shape)}, {list(col.shape)}, "
            f"{list(values.shape)}"
        )
    nnz = col.shape[0]
    if values.shape[0] != nnz:
        raise RuntimeError(
            f"{op}(): col_indices and values must have the same length, got {nnz} and "
            f"{values.shape[0]}"
        )
    if crow.shape[0] < 1:
        raise RuntimeError(f"{op}(): crow_indices must have at least one element")
    rows = crow.shape[0] - 1
    cols_hi = col.max().item() + 1 if nnz else 0
    shape = (rows, cols_hi) if size is None else _check_size(op, size)
    if len(shape) != 2:
        raise RuntimeError(f"{op}(): size must have 2 dimensions, got {list(shape)}")
    if shape[0] != rows:
        raise RuntimeError(
            f"{op}(): crow_indices.numel() must be size(0) + 1 = {shape[0] + 1}, but got "
            f"{crow.shape[0]}"
        )
    c = crow.tolist()
    if c[0] != 0 or c[-1] != nnz or any(b < a for a, b in zip(c, c[1:])):
        raise RuntimeError(
            f"{op}(): crow_indices must start at 0, end at nnz ({nnz}) and not decrease, "
            f"got {c[:8]}{'...' if len(c) > 8 else ''}"
        )
    if nnz and (col.min().item() < 0 or cols_hi > shape[1]):
        raise RuntimeError(
            f"{op}(): col_indices must be in [0, {shape[1]}), got values in "
            f"[{col.min().item()}, {cols_hi - 1}]"
        )
    return _csr(crow, col, values, shape)


@_dispatch.defop(
    "sparse_csr_tensor(crow_indices, col_indices, values, size=None, *, dtype=None, "
    "device=None, pin_memory=False, requires_grad=False, check_invariants=None)",
    method=False,
    composite=True,
    tags=("creation",),
)
def sparse_csr_tensor(
    crow_indices,
    col_indices,
    values,
    size=None,
    *,
    dtype=None,
    device=None,
    pin_memory=False,
    requires_grad=False,
    check_invariants=None,
):
    """A sparse CSR matrix: row i holds ``values[crow[i]:crow[i+1]]`` at columns
    ``col_indices[crow[i]:crow[i+1]]``.

    >>> import ember_core as ec
    >>> s = ec.sparse_csr_tensor([0, 1, 2], [2, 0], [3.0, 4.0], (2, 3))
    >>> s.to_dense().tolist()
    [[0.0, 0.0, 3.0], [4.0, 0.0, 0.0]]
    """
    t = _make_csr("sparse_csr_tensor", crow_indices, col_indices, values, size, dtype, device)
    if requires_grad:
        t._sp_values = t._sp_values.detach().requires_grad_()
    return t


# ------------------------------------------------------------ conversions


def _strided_name(x):
    return "Strided" if not isinstance(x, _SparseBase) else _LAYOUT_WORDS[x.layout]


def _require_coo(op, x):
    if not isinstance(x, SparseTensor):
        raise RuntimeError(
            f"{op} expected sparse coordinate tensor layout but got {_strided_name(x)}"
        )


def _linear_index(indices, shape):
    """Row-major positions of the index columns over the sparse dims ``shape``."""
    strides, acc = [], 1
    for s in reversed(shape):
        strides.append(acc)
        acc *= s
    strides.reverse()
    lin = None
    for d, st in enumerate(strides):
        term = indices[d] * st if st != 1 else indices[d]
        lin = term if lin is None else lin + term
    return lin, strides


def _coo_to_dense(s, dtype=None):
    values = s._sp_values if dtype is None else s._sp_values.to(dtype)
    sd = s._sp_indices.shape[0]
    if values._dtype is D.bool_:  # duplicates combine with "or"
        return _coo_to_dense(s, D.int64 if dtype is None else None).to(D.bool_) != 0
    if sd == 0:
        return values.sum(0) if values.shape[0] else zeros(s._shape, dtype=values.dtype)
    out = zeros(s._shape, dtype=values.dtype, device=values.device)
    if values.shape[0] == 0:
        return out if not values.requires_grad else out + values.sum() * 0
    return out.index_put(tuple(s._sp_indices[d] for d in range(sd)), values, accumulate=True)


@_dispatch.defop(function=False, composite=True)
def to_dense(input, dtype=None, *, masked_grad=None):
    """A dense (strided) tensor of a sparse one's values, duplicates summed; a
    dense tensor is returned as it is.

    >>> import ember_core as ec
    >>> ec.tensor([[0.0, 2.0]]).to_sparse().to_dense().tolist()
    [[0.0, 2.0]]
    """
    if isinstance(input, SparseTensor):
        return _coo_to_dense(input, dtype)
    if isinstance(input, SparseCsrTensor):
        return _coo_to_dense(_csr_to_coo(input), dtype)
    return input if dtype is None else input.to(dtype)


def _dense_to_coo(x, sparse_dim):
    n = x.dim()
    sd = n if sparse_dim is None else sparse_dim
    if not 0 <= sd <= n:
        raise RuntimeError(
            f"to_sparse: sparse_dim argument must be in [0, {n}] but got {sparse_dim}"
        )
    if sd == 0:
        idx = zeros((0, 1), dtype=D.int64, device=x.device)
        return _coo(idx, x.unsqueeze(0), x.shape, True)
    mask = x != 0
    if sd < n:
        mask = mask.reshape(*x.shape[:sd], -1).any(-1)
    idx = mask.nonzero().t().contiguous()
    values = x[tuple(idx[d] for d in range(sd))]
    return _coo(idx, values, x.shape, True)


@_dispatch.defop(function=False, composite=True)
def to_sparse(input, sparse_dim=None, *, layout=None, blocksize=None, dense_dim=None):
    """This tensor in a sparse layout (COO by default; ``layout=ember.sparse_csr``):
    its nonzero elements (or nonzero slices over the first ``sparse_dim`` dims).

    >>> import ember_core as ec
    >>> ec.tensor([[0.0, 2.0], [3.0, 0.0]]).to_sparse().indices().tolist()
    [[0, 1], [1, 0]]
    """
    if blocksize is not None:
        raise NotImplementedError("to_sparse: blocked layouts (blocksize) are not supported")
    if layout is None or layout is _layout.sparse_coo:
        if dense_dim is not None:
            if sparse_dim is not None:
                raise RuntimeError("to_sparse: give sparse_dim or dense_dim, not both")
            sparse_dim = input.dim() - dense_dim
        if isinstance(input, SparseTensor):
            if sparse_dim not in (None, input.sparse_dim()):
                raise RuntimeError(
                    "to_sparse: conversion from Sparse to Sparse with sparse_dim argument "
                    f"!= self.sparse_dim() is not supported (got {sparse_dim})"
                )
            return input
        if isinstance(input, SparseCsrTensor):
            return _csr_to_coo(input)
        return _dense_to_coo(input, sparse_dim)
    if layout is _layout.sparse_csr:
        return to_sparse_csr(input, dense_dim)
    if layout is _layout.strided:
        return to_dense(input)
    raise NotImplementedError(f"to_sparse: layout {layout} is not supported")


@_dispatch.defop(function=False, composite=True)
def to_sparse_coo(input):
    """This tensor as a sparse COO tensor (``to_sparse()``)."""
    return to_sparse(input)


def _csr_to_coo(s):
    idx = _stack_rows(s._rows(), s._sp_col)
    return _coo(idx, s._sp_values, s._shape, True)


def _stack_rows(*rows):
    return rows[0].unsqueeze(0) if len(rows) == 1 else _cat([r.unsqueeze(0) for r in rows])


def _cat(ts, dim=0):
    from ember_core._joining import cat

    return cat(ts, dim)


@_dispatch.defop(function=False, composite=True)
def to_sparse_csr(input, dense_dim=None):
    """This 2-D tensor as a sparse CSR matrix.

    >>> import ember_core as ec
    >>> ec.tensor([[0.0, 2.0], [3.0, 0.0]]).to_sparse_csr().crow_indices().tolist()
    [0, 1, 2]
    """
    if isinstance(input, SparseCsrTensor):
        return input
    if dense_dim not in (None, 0):
        raise NotImplementedError("to_sparse_csr: hybrid CSR tensors are not supported")
    if input.dim() != 2:
        raise RuntimeError(
            f"to_sparse_csr: only 2-D tensors can be converted to the SparseCsr layout, got "
            f"{input.dim()}-D (batched CSR tensors are not supported)"
        )
    coo = input.coalesce() if isinstance(input, SparseTensor) else _dense_to_coo(input, 2)
    if coo.dense_dim():
        raise NotImplementedError("to_sparse_csr: hybrid CSR tensors are not supported")
    rows = coo._sp_indices[0]
    n = coo._shape[0]
    counts = zeros(n, dtype=D.int64, device=rows.device).index_add(0, rows, rows * 0 + 1)
    crow = _cat([zeros(1, dtype=D.int64, device=rows.device), counts.cumsum(0)])
    return _csr(crow, coo._sp_indices[1].contiguous(), coo._sp_values, coo._shape)


def _coalesce(s):
    if s._sp_coalesced:
        return s
    indices, values = s._sp_indices, s._sp_values
    sd, nnz = indices.shape
    if nnz < 2:
        return _coo(indices, values, s._shape, True)
    lin, strides = _linear_index(indices, s._shape[:sd])
    if lin is None:  # no sparse dims: every element lands on the one position
        lin = zeros(nnz, dtype=D.int64, device=values.device)
    uniq, inverse = lin.unique(sorted=True, return_inverse=True)
    n = uniq.shape[0]
    if values._dtype is D.bool_:
        summed = zeros((n, *values.shape[1:]), dtype=D.int64, device=values.device)
        summed = summed.index_add(0, inverse, values.long()) != 0
    else:
        summed = zeros((n, *values.shape[1:]), dtype=values.dtype, device=values.device)
        summed = summed.index_add(0, inverse, values)
    rows = [(uniq // st) % s._shape[d] for d, st in enumerate(strides)]
    new_indices = _stack_rows(*rows) if rows else zeros((0, n), dtype=D.int64)
    return _coo(new_indices, summed, s._shape, True)


@_dispatch.defop(function=False, composite=True)
def coalesce(input):
    """This sparse COO tensor with its indices sorted and duplicates summed.

    >>> import ember_core as ec
    >>> s = ec.sparse_coo_tensor([[1, 0, 1]], [1.0, 2.0, 3.0], (2,))
    >>> s.coalesce().values().tolist()
    [2.0, 4.0]
    """
    _require_coo("coalesce", input)
    return _coalesce(input)


@_dispatch.defop(function=False, composite=True)
def is_coalesced(input):
    """Whether this sparse COO tensor is known to be coalesced (sorted, no duplicates)."""
    _require_coo("is_coalesced", input)
    return input._sp_coalesced


@_dispatch.defop(function=False, composite=True)
def indices(input):
    """The indices (sparse_dim x nnz) of a coalesced sparse COO tensor."""
    _require_coo("indices", input)
    if not input._sp_coalesced:
        raise RuntimeError(
            "Cannot get indices on an uncoalesced tensor, please call .coalesce() first"
        )
    return input._sp_indices


@_dispatch.defop(function=False, composite=True)
def values(input):
    """The values of a coalesced sparse COO tensor, or of a CSR tensor."""
    if isinstance(input, SparseCsrTensor):
        return input._sp_values
    if not isinstance(input, SparseTensor):
        raise RuntimeError("values expected sparse tensor layout but got Strided")
    if not input._sp_coalesced:
        raise RuntimeError(
            "Cannot get values on an uncoalesced tensor, please call .coalesce() first"
        )
    return input._sp_values


def _require_csr(op, x):
    if not isinstance(x, SparseCsrTensor):
        raise RuntimeError(
            f"{op} expected sparse row compressed tensor layout but got {_strided_name(x)}"
        )


@_dispatch.defop(function=False, composite=True)
def crow_indices(input):
    """The compressed row pointers (rows + 1) of a CSR tensor."""
    _require_csr("crow_indices", input)
    return input._sp_crow


@_dispatch.defop(function=False, composite=True)
def col_indices(input):
    """The column of each stored element of a CSR tensor."""
    _require_csr("col_indices", input)
    return input._sp_col


@_dispatch.defop(function=False, composite=True)
def sparse_dim(input):
    """The number of sparse dims (0 for a dense tensor)."""
    if isinstance(input, SparseTensor):
        return input._sp_indices.shape[0]
    return 2 if isinstance(input, SparseCsrTensor) else 0


@_dispatch.defop(function=False, composite=True)
def dense_dim(input):
    """The number of dense dims (all of a dense tensor's)."""
    if isinstance(input, _SparseBase):
        return input._sp_values.dim() - 1
    return input.dim()


@_dispatch.defop(function=False, composite=True)
def sparse_mask(input, mask):
    """A sparse COO tensor with the indices of sparse ``mask`` and the values of
    this tensor there.

    >>> import ember_core as ec
    >>> m = ec.sparse_coo_tensor([[1]], [True], (3,))
    >>> ec.tensor([5.0, 6.0, 7.0]).sparse_mask(m).to_dense().tolist()
    [0.0, 6.0, 0.0]
    """
    if not isinstance(mask, SparseTensor):
        raise RuntimeError(
            f"sparse_mask expects mask to be a sparse COO tensor, got layout {mask.layout}"
        )
    if isinstance(input, _SparseBase):
        input = to_dense(input)
    if tuple(input.shape) != tuple(mask.shape):
        raise RuntimeError(
            f"sparse_mask(): operands have incompatible sizes; self has size "
            f"{list(input.shape)} but mask has size {list(mask.shape)}"
        )
    return _coo(mask._sp_indices, input[_index_tuple(mask)], mask._shape, mask._sp_coalesced)


# ------------------------------------------- sparse implementations of ops


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


def _index_tuple(s):
    return tuple(s._sp_indices[d] for d in range(s._sp_indices.shape[0]))


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


# ------------------------------------------------------------------ products


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
    return out.index_add(0, rows, contrib)


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
    from ember_core._creation import arange

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
    total = zeros(shape, dtype=values.dtype).index_add(0, group, shifted.exp())
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
