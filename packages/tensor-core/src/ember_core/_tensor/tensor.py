"""The Tensor class: storage, shape, strides (in elements), offset and dtype, plus
the autograd slots that ember_core stores but never interprets.

Computations are not defined here: they are ops declared in the op table
(_dispatch.defop) and bound onto Tensor by ember_core/__init__.py.
"""

import operator
import warnings

import ember_allocator
from ember_core._base import autograd_loader as _autograd_loader
from ember_core._base import dispatch as _dispatch
from ember_core._base import shape as _shape
from ember_core._base.lib import _C
from ember_core._tensor import dtype as _dtype
from ember_core._tensor import layout as _layout
from ember_core._tensor import storage as _storage
from ember_core._tensor.device import CPU

_new = object.__new__
_MAX_NUMEL = (1 << 63) - 1

# Strides of contiguous shapes, memoised: computing them in Python costs more
# than the rest of making a small tensor.
_strides_cache = {}


def contiguous_strides(shape):
    st = _strides_cache.get(shape)
    if st is None:
        if len(_strides_cache) > 4096:
            _strides_cache.clear()
        st = _strides_cache[shape] = _shape.contiguous_strides(shape)
    return st


class Tensor:
    """An n-dimensional array of one dtype on one device.

    ``Tensor(data)`` copies data into a float tensor (like ``torch.Tensor``);
    ``Tensor(2, 3)`` makes an uninitialised 2x3 one.  Use ``ember_core.tensor`` to
    infer the dtype.
    """

    __slots__ = (
        "_storage",
        "_shape",
        "_stride",
        "_offset",
        "_dtype",
        "_ptr",
        "_numel",
        "_contig",
        "__dict__",
        "__weakref__",
    )

    # Autograd slots: class-level defaults; ember_autograd sets them per tensor
    # (in the instance dict, created only for tensors that take part).
    _rg = False  # requires_grad
    grad_fn = None
    _base = None  # the tensor this one is a view of (views only)
    _grad = None
    _ag = None  # autograd's own per-tensor record
    _is_param = False

    def __new__(cls, *args, **kwargs):
        from ember_core._tensor import creation as _creation

        if not args:
            return _creation.empty_like_class(cls, (), **kwargs)
        if all(isinstance(a, int) and not isinstance(a, bool) for a in args):
            return _creation.empty_like_class(cls, args, **kwargs)
        if (
            len(args) == 1
            and isinstance(args[0], tuple)
            and all(isinstance(a, int) for a in args[0])
        ):
            return _creation.empty_like_class(cls, args[0], **kwargs)
        if len(args) == 1:
            t = _creation.tensor(
                args[0], dtype=_dtype.get_default_dtype(), device=kwargs.get("device")
            )
            if cls is not Tensor:
                t = t.as_subclass(cls)
            return t
        raise TypeError(f"Tensor(): cannot make a tensor from {args!r}")

    def __init__(self, *args, **kwargs):
        pass

    # ----------------------------------------------------------- metadata

    @property
    def shape(self):
        return Size(self._shape)

    def size(self, dim=None):
        if dim is None:
            return Size(self._shape)
        return self._shape[_shape.normalize_dim(dim, len(self._shape), "size")]

    def stride(self, dim=None):
        if dim is None:
            return self._stride
        return self._stride[_shape.normalize_dim(dim, len(self._shape), "stride")]

    def storage_offset(self):
        return self._offset

    @property
    def dtype(self):
        return self._dtype

    @property
    def device(self):
        return self._storage._device

    @property
    def is_cuda(self):
        return self._storage._device.type == "cuda"

    @property
    def is_cpu(self):
        return self._storage._device.type == "cpu"

    @property
    def is_meta(self):
        return self._storage._device.type == "meta"

    @property
    def is_sparse(self):
        return False

    @property
    def is_quantized(self):
        return False

    @property
    def layout(self):
        return _layout.strided

    @property
    def ndim(self):
        return len(self._shape)

    def dim(self):
        return len(self._shape)

    ndimension = dim

    def numel(self):
        return self._numel

    nelement = numel

    def element_size(self):
        return self._dtype.itemsize

    @property
    def itemsize(self):
        return self._dtype.itemsize

    @property
    def nbytes(self):
        return self._numel * self._dtype.itemsize

    def data_ptr(self):
        return self._ptr

    def untyped_storage(self):
        return self._storage

    def is_contiguous(self, memory_format=None):
        if memory_format is not None:
            from ember_core._tensor import copy as _copy

            return _copy.is_contiguous_as(self, memory_format)
        c = self._contig
        if c is None:
            c = self._contig = _shape.is_contiguous(self._shape, self._stride)
        return c

    def is_floating_point(self):
        return self._dtype.is_floating_point

    def is_complex(self):
        return self._dtype.is_complex

    def is_signed(self):
        return self._dtype.is_signed

    def is_shared(self):
        return self._storage._shared

    def share_memory_(self):
        """Move this tensor's storage into shared memory (once; every view follows),
        so that other processes can map it.  Returns self."""
        _storage.share_(self._storage, tensor=self)
        return self

    def is_pinned(self, device=None):
        """Whether this CPU tensor's memory is page-locked (``pin_memory()``)."""
        if self._storage._device.type != "cpu":
            return False
        from ember_core._cuda import runtime as _cuda

        return _cuda.is_pinned(self._storage)

    def pin_memory(self, device=None):
        """A copy of this CPU tensor in page-locked memory, from which copies to a
        GPU run asynchronously (``.to('cuda', non_blocking=True)``)."""
        from ember_core._cuda import runtime as _cuda

        if self._storage._device.type != "cpu":
            raise RuntimeError(f"cannot pin '{self._storage._device}' memory: only CPU memory")
        if _cuda.is_pinned(self._storage):
            return self
        if not _cuda.is_available():
            raise RuntimeError("Cannot access accelerator device when none is available.")
        r = _cuda.pinned_empty(self._shape, self._dtype)
        from ember_core._tensor.copy import copy_into

        return copy_into(r, self)

    def record_stream(self, stream):
        """Mark this CUDA tensor's memory as used by ``stream``: when freed it is not
        reused until the work queued on that stream so far is done."""
        dev = self._storage._device
        if dev.type != "cuda":
            raise RuntimeError("record_stream: expected a CUDA tensor")
        # memory of another library (DLPack, CUDA arrays) is not the pool's: as PyTorch, no-op
        if self._storage._ptr and isinstance(self._storage, _storage._CudaStorage):
            from ember_core._cuda import runtime as _cuda

            _cuda.allocator(dev.index).record_stream(self._storage._ptr, stream.cuda_stream)

    @property
    def _version(self):
        return self._storage._version

    def get_device(self):
        d = self._storage._device
        return -1 if d.type == "cpu" else d.index

    # ------------------------------------------------------ autograd slots

    @property
    def requires_grad(self):
        return self._rg

    @requires_grad.setter
    def requires_grad(self, value):
        self.requires_grad_(value)

    def requires_grad_(self, requires_grad=True):
        # (ember_autograd replaces this method when it loads: Note [Autograd entry point])
        requires_grad = bool(requires_grad)
        # (the first time only: ember_autograd's form calls this one afterwards)
        if requires_grad and _autograd_loader.loads_now(Tensor, "requires_grad_"):
            return self.requires_grad_(requires_grad)
        if requires_grad and not self._dtype.differentiable:
            raise RuntimeError(
                "only Tensors of floating point and complex dtype can require gradients"
            )
        if self.grad_fn is not None and not requires_grad:
            raise RuntimeError(
                "you can only change requires_grad flags of leaf variables. If you want to use a "
                "computed variable in a subgraph that doesn't require differentiation use "
                "var_no_grad = var.detach()."
            )
        self._rg = requires_grad
        return self

    @property
    def is_leaf(self):
        return self.grad_fn is None

    @property
    def grad(self):
        return self._grad

    @grad.setter
    def grad(self, value):
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError(
                    f"assigned grad expected to be a Tensor or None but got {type(value).__name__}"
                )
            if value._shape != self._shape:
                raise RuntimeError(
                    f"assigned grad has data of a different size: {tuple(value._shape)} vs "
                    f"{tuple(self._shape)}"
                )
            if value._dtype is not self._dtype:
                raise RuntimeError(
                    f"assigned grad has data of a different type: {value._dtype} vs {self._dtype}"
                )
        self._grad = value

    @grad.deleter
    def grad(self):
        self._grad = None

    @property
    def data(self):
        """An alias of this tensor's memory that autograd does not track."""
        return alias(self)

    @data.setter
    def data(self, other):
        if not isinstance(other, Tensor):
            raise TypeError(f"data must be a Tensor, got {type(other).__name__}")
        for slot in (
            "_storage",
            "_shape",
            "_stride",
            "_offset",
            "_dtype",
            "_ptr",
            "_numel",
            "_contig",
        ):
            setattr(self, slot, getattr(other, slot))

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        # (ember_autograd replaces this method when it loads: Note [Autograd entry point])
        if _autograd_loader.loads_now(Tensor, "backward"):
            return self.backward(gradient, retain_graph, create_graph, inputs)
        raise RuntimeError(
            "backward() needs ember_autograd, which records gradients for ember_core: "
            "install it (pip install ember-autograd, or ember)"
        )

    # The rest of ember_autograd's Tensor API, declared here as backward is, so the class
    # (and its stub) names them with or without autograd: the first use loads it (Note
    # [Autograd entry point]); without it, hooks raise and the queries answer as for a
    # tensor no graph knows.
    def register_hook(self, hook):
        if _autograd_loader.loads_now(Tensor, "register_hook"):
            return self.register_hook(hook)
        raise _needs_autograd("register_hook()")

    def register_post_accumulate_grad_hook(self, hook):
        if _autograd_loader.loads_now(Tensor, "register_post_accumulate_grad_hook"):
            return self.register_post_accumulate_grad_hook(hook)
        raise _needs_autograd("register_post_accumulate_grad_hook()")

    def retain_grad(self):
        if _autograd_loader.loads_now(Tensor, "retain_grad"):
            return self.retain_grad()
        raise _needs_autograd("retain_grad()")

    @property
    def retains_grad(self):
        if _autograd_loader.loads_now(Tensor, "retains_grad"):
            return self.retains_grad
        return False

    @property
    def output_nr(self):
        if _autograd_loader.loads_now(Tensor, "output_nr"):
            return self.output_nr
        return 0

    def is_inference(self):
        if _autograd_loader.loads_now(Tensor, "is_inference"):
            return self.is_inference()
        return False

    # ------------------------------------------------------ python protocol

    def __len__(self):
        if not self._shape:
            raise TypeError("len() of a 0-d tensor")
        return self._shape[0]

    def __iter__(self):
        if not self._shape:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    def __bool__(self):
        if self._numel != 1:
            raise RuntimeError(
                f"Boolean value of Tensor with {'no' if self._numel == 0 else 'more than one'} "
                "value is ambiguous"
            )
        return bool(self.item())

    def __int__(self):
        return int(self._scalar("__int__"))

    def __float__(self):
        return float(self._scalar("__float__"))

    def __complex__(self):
        return complex(self._scalar("__complex__"))

    def __index__(self):
        if self._dtype.category != 1 and self._dtype is not _dtype.bool_:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return operator.index(self._scalar("__index__"))

    def _scalar(self, op):
        if self._numel != 1:
            raise ValueError(f"only one element tensors can be converted to Python scalars ({op})")
        return self.item()

    def __hash__(self):
        return id(self)

    def __repr__(self, *, tensor_contents=None):
        from ember_core._tensor import printing as _printing

        return _printing.tensor_repr(self)

    def __format__(self, spec):
        if not self._shape:
            return format(self.item(), spec)
        return object.__format__(self, spec) if spec else repr(self)

    def __reduce_ex__(self, protocol):
        from ember_core._interop import numpy as _interop

        return _interop.reduce_tensor(self, protocol)

    def __array__(self, dtype=None, copy=None):
        from ember_core._interop import numpy as _interop

        return _interop.to_numpy_array(self, dtype, copy)

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        from ember_core._interop import dlpack as _dlpack

        return _dlpack.to_dlpack(
            self, stream=stream, max_version=max_version, dl_device=dl_device, copy=copy
        )

    def __dlpack_device__(self):
        from ember_core._interop import dlpack as _dlpack

        return _dlpack.dlpack_device(self)

    @property
    def __cuda_array_interface__(self):
        """CUDA tensors' memory for CuPy, Numba, ... (CUDA Array Interface v3);
        AttributeError on other devices."""
        from ember_core._interop import dlpack as _dlpack

        return _dlpack.cuda_array_interface(self)

    def __array_namespace__(self, /, *, api_version=None):
        """The array API standard's namespace for ember (``ember_core.array_api``);
        api_version, when given, must be one it supports (ValueError otherwise)."""
        from ember_core import array_api

        if api_version is not None and api_version not in array_api.SUPPORTED_VERSIONS:
            raise ValueError(
                f"__array_namespace__: unsupported api_version {api_version!r}; supported: "
                f"{', '.join(array_api.SUPPORTED_VERSIONS)}"
            )
        return array_api

    def as_subclass(self, cls):
        """The same tensor (shared memory and metadata) as an instance of ``cls``."""
        if not (isinstance(cls, type) and issubclass(cls, Tensor)):
            raise TypeError(f"as_subclass: {cls!r} is not a Tensor subclass")
        t = _new(cls)
        for slot in (
            "_storage",
            "_shape",
            "_stride",
            "_offset",
            "_dtype",
            "_ptr",
            "_numel",
            "_contig",
        ):
            setattr(t, slot, getattr(self, slot))
        return t


_autograd_loader.remember(
    Tensor,
    "requires_grad_",
    "backward",
    "register_hook",
    "register_post_accumulate_grad_hook",
    "retain_grad",
    "retains_grad",
    "output_nr",
    "is_inference",
)


def _needs_autograd(what):
    return RuntimeError(
        f"{what} needs ember_autograd, which records gradients for ember_core: install it "
        "(pip install ember-autograd, or ember)"
    )


class Size(tuple):
    """A tensor's shape: a tuple of ints, printed as ``ember.Size([2, 3])``."""

    __slots__ = ()

    def __repr__(self):
        return f"ember.Size({list(self)})"

    def numel(self):
        n = 1
        for s in self:
            n *= s
        return n

    def __getitem__(self, key):
        item = tuple.__getitem__(self, key)
        return Size(item) if isinstance(key, slice) else item

    def __add__(self, other):
        return Size(tuple.__add__(self, tuple(other)))

    def __radd__(self, other):
        return Size(tuple(other) + tuple(self))


# -------------------------------------------------------------- construction


def make(storage, shape, stride, offset, dtype, numel, contig):
    """A tensor over ``storage`` (nothing copied, nothing checked)."""
    t = _new(Tensor)
    t._storage = storage
    t._shape = shape
    t._stride = stride
    t._offset = offset
    t._dtype = dtype
    t._ptr = storage._ptr + offset * dtype.itemsize
    t._numel = numel
    t._contig = contig
    return t


def _empty_py(shape, dtype, dev=CPU):
    """A contiguous uninitialised tensor; ``shape`` must be a tuple of ints.

    The reference of ``empty``, which is C (Note [C empty] in csrc/cpu/runtime/pyfast.c) and
    calls this for every case but a CPU tensor from the default host allocator."""
    n = 1
    for s in shape:
        n *= s
    if dev is not CPU and not dtype.base:
        _cpu_only_dtype(dtype, dev)
    storage = _storage.allocate(n * dtype.itemsize, dev)
    t = _new(Tensor)
    t._storage = storage
    t._shape = shape
    t._stride = contiguous_strides(shape)
    t._offset = 0
    t._dtype = dtype
    t._ptr = storage._ptr
    t._numel = n
    t._contig = True
    return t


def _cpu_only_dtype(dtype, dev):
    # Note [CPU-only dtypes]: no kernel of another device knows these dtypes, so
    # no tensor of them is made there
    raise NotImplementedError(
        f"{dtype} tensors are not implemented for device '{dev}' yet (ember runs complex and "
        "uint16/32/64 tensors on the CPU only); move the data with .cpu()"
    )


def _host_oom(nbytes):
    raise _storage._host_allocator.allocation_error(nbytes)


_C.configure(
    Tensor,
    _storage._HostStorage,
    CPU,
    _storage._allocators,
    (_strides_cache, contiguous_strides),
    ember_allocator.host_fast_path(addresses=True),
    _host_oom,
    _empty_py,
)
empty = _C.empty  # empty(shape, dtype, dev=CPU): what _empty_py does, in C


def view_of(base, shape, stride, offset, numel=None, contig=None):
    """A view sharing ``base``'s storage (and so its version counter)."""
    if numel is None:
        numel = 1
        for s in shape:
            numel *= s
        if numel > _MAX_NUMEL or (numel == 0 and any(s > _MAX_NUMEL for s in shape)):
            raise RuntimeError(
                f"a view of shape {list(shape)} has {numel} elements, more than int64 can count"
            )
    t = _new(Tensor)
    t._storage = base._storage
    t._shape = shape
    t._stride = stride
    t._offset = offset
    t._dtype = base._dtype
    t._ptr = base._storage._ptr + offset * base._dtype.itemsize
    t._numel = numel
    t._contig = contig
    root = base._base
    t._base = base if root is None else root
    return t


def alias(t):
    """Same memory and metadata, no autograd history (``.data``)."""
    a = _new(Tensor)
    a._storage = t._storage
    a._shape = t._shape
    a._stride = t._stride
    a._offset = t._offset
    a._dtype = t._dtype
    a._ptr = t._ptr
    a._numel = t._numel
    a._contig = t._contig
    return a


def is_contig(t):
    c = t._contig
    if c is None:
        c = t._contig = _shape.is_contiguous(t._shape, t._stride)
    return c


INTERNAL_OVERLAP = (
    "unsupported operation: more than one element of the written-to tensor refers to a single "
    "memory location. Please clone() the tensor before performing the operation."
)


# Ops that PyTorch 2.13 runs without the internal-overlap check (their kernels are
# not TensorIterator ops that check, or reduce into out=) carry the tag
# "unchecked-overlap": writing them through an expanded tensor is allowed there,
# so it is here.  Checked with a zero-stride destination against torch in
# tests/test_fuzz_overlap.py.
# ... of which these warn that the use is deprecated (PyTorch's words)
_OVERLAP_DEPRECATED = {
    op: f"Use of {op} on expanded tensors is deprecated. Please clone() the tensor before "
    f"performing this operation. This also applies to advanced indexing e.g. {example}"
    for op, example in (
        ("masked_fill_", "tensor[mask] = scalar"),
        ("index_fill_", "tensor[mask] = scalar"),
        ("index_put_", "tensor[indices] = tensor"),
    )
}


def written(t, op):
    """Every in-place write goes through here, before any kernel runs: it refuses
    read-only memory and tensors whose elements share memory, and bumps the
    storage's version counter (seen by every view).

    Note [Internal overlap]
    A written-to tensor in which two elements are one memory location (an
    expanded view, a zero stride from as_strided or a NumPy array) would have
    its op applied once per element: x.expand(3, 4).add_(1) adds 3.  As in
    PyTorch (has_internal_overlap), a dim of size > 1 with stride 0 is refused
    (in a tensor with elements); other aliasing layouts are "too hard" to prove
    and are accepted, as PyTorch does, and so are the ops PyTorch runs unchecked
    (tagged "unchecked-overlap").  A tensor known to be contiguous cannot alias itself
    (a 0 stride there is on a dim of size 1), so the common case costs one test.
    """
    storage = t._storage
    if storage._readonly:
        raise RuntimeError(
            f"{op}: the tensor's memory is read-only (it views a non-writable NumPy array "
            "or DLPack capsule); copy it with .clone() first"
        )
    if t._contig is not True and 0 in t._stride and t._numel > 1:
        _check_internal_overlap(t, op)
    storage._version += 1


def _check_internal_overlap(t, op):
    for size, stride in zip(t._shape, t._stride):
        if stride == 0 and size > 1:
            entry = _dispatch.OPS.get(op)
            if entry is None or "unchecked-overlap" not in entry.tags:
                raise RuntimeError(INTERNAL_OVERLAP)
            if op in _OVERLAP_DEPRECATED:
                warnings.warn(_OVERLAP_DEPRECATED[op], UserWarning, stacklevel=4)
            return
