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

import sys

from ember_core._base import dispatch as _dispatch
from ember_core._tensor import dtype as D
from ember_core._tensor import layout as _layout
from ember_core._tensor import printing as _printing
from ember_core._tensor.creation import arange, zeros
from ember_core._tensor.creation import tensor as _as_tensor
from ember_core._tensor.tensor import Size, Tensor

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

    @property
    def is_meta(self):
        return self._sp_values.is_meta

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
        from ember_core._tensor.copy import _TYPE_NAMES

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
        return self.transpose(0, 1) if len(self._shape) == 2 else self

    @property
    def mT(self):  # noqa: N802 - PyTorch's name
        return self.transpose(-2, -1)


def _typed_converter(dtype):
    def convert(self, memory_format=None):
        return self.to(dtype)

    convert.__name__ = dtype.name
    return convert


def _install_converters():
    from ember_core._tensor.copy import TYPE_METHODS

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


def spdiags(diagonals, offsets, shape, layout=None):
    """torch.sparse.spdiags: a sparse matrix of ``shape`` with row i of
    ``diagonals`` on the diagonal ``offsets[i]`` (SciPy's convention: element j of a
    diagonal row lands in column j)."""
    op = "spdiags"
    if not isinstance(diagonals, Tensor) or diagonals.dim() != 2:
        raise RuntimeError(f"{op}: expected a 2-D tensor of diagonals")
    offs = _index_tensor(op, offsets, "offsets")
    if offs.dim() != 1 or offs.shape[0] != diagonals.shape[0]:
        raise RuntimeError(
            f"{op}: expected one offset per row of diagonals, got offsets of shape "
            f"{list(offs.shape)} for diagonals of shape {list(diagonals.shape)}"
        )
    ks = offs.tolist()
    if len(set(ks)) != len(ks):
        raise RuntimeError(f"{op}: Offset array contains duplicate values")
    m, n = _check_size(op, shape)
    rows, cols, vals = [], [], []
    for i, k in enumerate(ks):
        j0, j1 = max(0, k), min(n, m + k, diagonals.shape[1])
        if j1 > j0:
            j = arange(j0, j1, device=diagonals.device)
            rows.append(j - k)
            cols.append(j)
            vals.append(diagonals[i, j0:j1])
    if rows:
        idx = _stack_rows(_cat(rows), _cat(cols))
        values = _cat(vals)
    else:
        idx = zeros((2, 0), dtype=D.int64, device=diagonals.device)
        values = zeros(0, dtype=diagonals.dtype, device=diagonals.device)
    out = _coo(idx, values, (m, n), values.shape[0] < 2)
    if layout in (None, _layout.sparse_coo):
        return out
    if layout is _layout.sparse_csr:
        return to_sparse_csr(out)
    raise NotImplementedError(f"{op}: layout {layout} is not supported")


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
    # (into the fresh zeros in place: no copy of a possibly large dense result)
    return out.index_put_(tuple(s._sp_indices[d] for d in range(sd)), values, accumulate=True)


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
    from ember_core._ops.shape.joining import cat

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
    counts = rows.bincount(minlength=n)
    crow = _cat([zeros(1, dtype=D.int64, device=rows.device), counts.cumsum(0)])
    return _csr(crow, coo._sp_indices[1].contiguous(), coo._sp_values, coo._shape)


def _index_tuple(s):
    """A COO tensor's index rows, as a key for indexing its dense equivalent."""
    return tuple(s._sp_indices[d] for d in range(s._sp_indices.shape[0]))


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
        summed = summed.index_add_(0, inverse, values.long()) != 0
    else:
        summed = zeros((n, *values.shape[1:]), dtype=values.dtype, device=values.device)
        summed = summed.index_add_(0, inverse, values)
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
