"""ember_core: ember's n-dimensional Tensor, its C kernels and zero-copy interop.

>>> import ember_core as ec
>>> x = ec.tensor([[1.0, 2.0], [3.0, 4.0]])
>>> (x @ x.T).sum().item()
52.0
"""

import builtins as _builtins
import math as _math
from importlib import metadata as _metadata

# The modules that declare ops (their defop declarations fill the op table):
# the Tensor's own (_tensor: views, copies, creation), and the op families of
# _ops (pointwise, shape, indexing, reduction, linalg, random, nn, spectral,
# sparse);
# docs/design.md "Where things are".  Their aliases must not shadow a
# subpackage of ember_core (_base, _tensor, _ops, _interop, _cuda, _codegen).
from ember_core import fft, linalg, sparse
from ember_core._base import dispatch as _dispatch
from ember_core._base import settings as _settings
from ember_core._base.dispatch import OPS, Op, defop, ops_tagged, register_handler, remove_handler
from ember_core._base.lib import lib as _lib_c
from ember_core._base.settings import (
    get_num_interop_threads,
    get_num_threads,
    init_num_threads,
    is_warn_always_enabled,
    set_flush_denormal,
    set_num_interop_threads,
    set_num_threads,
    set_warn_always,
)
from ember_core._interop import numpy as _numpy_interop
from ember_core._interop.dlpack import from_dlpack, to_dlpack  # noqa: F401 - public
from ember_core._interop.numpy import from_numpy, is_tensor

# Indexing, sorting and set ops (advanced indexing, index/scatter/gather family, sort...).
from ember_core._ops.indexing import advanced_index as _advanced_index
from ember_core._ops.indexing import index_ops as _index_ops
from ember_core._ops.indexing import indexing as _idx
from ember_core._ops.linalg import distance as _distance
from ember_core._ops.linalg import geev as _linalg_geev
from ember_core._ops.linalg import lu as _linalg_lu
from ember_core._ops.linalg import products as _linalg
from ember_core._ops.linalg.products import (
    get_float32_matmul_precision,
    set_float32_matmul_precision,
)
from ember_core._ops.nn import activation as _activation
from ember_core._ops.nn import amp as _amp
from ember_core._ops.nn import attention as _attention
from ember_core._ops.nn import conv as _conv
from ember_core._ops.nn import dropout as _dropout
from ember_core._ops.nn import embedding as _embedding
from ember_core._ops.nn import loss as _loss
from ember_core._ops.nn import norm as _norm
from ember_core._ops.nn import pool as _pool
from ember_core._ops.nn import resample as _resample
from ember_core._ops.nn import rnn as _rnn
from ember_core._ops.nn import sampling as _sampling
from ember_core._ops.nn import softmax as _softmax
from ember_core._ops.pointwise import complex as _complex
from ember_core._ops.pointwise import composites as _pointwise_composites
from ember_core._ops.pointwise import elementwise as _ew
from ember_core._ops.pointwise import predicates as _predicates
from ember_core._ops.pointwise import special as _special
from ember_core._ops.random import random as _random
from ember_core._ops.random import random_dist as _random_dist  # gamma, poisson, binomial samplers
from ember_core._ops.random.random import (
    Generator,
    default_generator,
    get_rng_state,
    initial_seed,
    manual_seed,
    seed,
    set_rng_state,
)
from ember_core._ops.reduction import calculus as _calculus
from ember_core._ops.reduction import reduction as _reduction
from ember_core._ops.reduction import sorting as _sorting
from ember_core._ops.reduction import statistics as _statistics
from ember_core._ops.reduction.reduction import return_types
from ember_core._ops.shape import joining as _joining
from ember_core._ops.shape import rearrange as _rearrange
from ember_core._ops.sparse import arithmetic as _sparse_arithmetic
from ember_core._ops.sparse import products as _sparse_products
from ember_core._ops.spectral import stft as _stft
from ember_core._ops.spectral import windows as _windows
from ember_core._tensor import copy as _copy
from ember_core._tensor import creation as _creation
from ember_core._tensor import sparse as _sparse
from ember_core._tensor import storage as _storage
from ember_core._tensor import views as _views
from ember_core._tensor.copy import set_default_tensor_type, typename
from ember_core._tensor.device import (
    are_deterministic_algorithms_enabled,
    device,
    get_default_device,
    get_deterministic_debug_mode,
    is_deterministic_algorithms_warn_only_enabled,
    set_default_device,
    set_deterministic_debug_mode,
    use_deterministic_algorithms,
)
from ember_core._tensor.dtype import (
    bfloat16,
    bool_,
    can_cast,
    complex64,
    complex128,
    dtype,
    finfo,
    float16,
    float32,
    float64,
    get_default_dtype,
    iinfo,
    int8,
    int16,
    int32,
    int64,
    promote_types,
    result_type,
    set_default_dtype,
    uint8,
    uint16,
    uint32,
    uint64,
)
from ember_core._tensor.layout import (
    layout,
    sparse_bsc,
    sparse_bsr,
    sparse_coo,
    sparse_csc,
    sparse_csr,
    strided,
)
from ember_core._tensor.printing import set_printoptions
from ember_core._tensor.storage import (
    TypedStorage,
    UntypedStorage,
    get_allocator,
    is_storage,
    set_allocator,
)
from ember_core._tensor.tensor import Size, Tensor
from ember_core._tensor.views import broadcast_shapes

# the installed distribution's version (Note [One version], VERSION); none while
# tensor-core's build imports the package from its build directory (Note [Stubs])
try:
    __version__ = _metadata.version("ember-tensor-core")
except _metadata.PackageNotFoundError:
    __version__ = "0+unknown"

# PyTorch's dtype aliases
bool = bool_  # noqa: A001 - the public name is torch.bool
half = float16
float = float32  # noqa: A001
double = float64
long = int64
int = int32  # noqa: A001
short = int16
cfloat = complex64
cdouble = complex128

# math constants, and NumPy's newaxis
pi = _math.pi
e = _math.e
inf = _math.inf
nan = _math.nan
newaxis = None

# --------------------------------------------------------- public functions


def _bound_function(op):
    return op.public and op.function


_public = _dispatch.public_functions()
globals().update({k: v for k, v in _public.items() if _bound_function(_dispatch.OPS[k])})
# Other names of ops (their declarations' ``aliases``, Note [Op table]): the
# function, and below the method and the in-place form, under each alias.
_dispatch.bind_aliases()
for _alias, _target in _dispatch.ALIASES.items():
    if _bound_function(_dispatch.OPS[_target]):
        globals()[_alias] = _public[_target]


def numel(input):
    return input.numel()


# ------------------------------------------------------------ Tensor methods

for _name, _op in OPS.items():
    if _op.method and _op.public and not _name.startswith("_"):
        # the declared method, where PyTorch's takes the parameters in another order
        setattr(Tensor, _name, _op.method if callable(_op.method) else _public[_name])

for _alias, _target in _dispatch.ALIASES.items():
    if hasattr(Tensor, _target) and _dispatch.OPS[_target].method:
        setattr(Tensor, _alias, getattr(Tensor, _target))

Tensor.numpy = _numpy_interop.numpy
Tensor.item = _numpy_interop.item
Tensor.tolist = _numpy_interop.tolist
Tensor.to = _copy.to
Tensor.type = _copy.type_
Tensor.type_as = _copy.type_as
Tensor.cpu = _copy.cpu
Tensor.cuda = _copy.cuda
for _mname, _mdtype in _copy.TYPE_METHODS.items():
    setattr(Tensor, _mname, _copy._converter(_mdtype))
Tensor.new_empty = _creation.new_empty
Tensor.new_zeros = _creation.new_zeros
Tensor.new_ones = _creation.new_ones
Tensor.new_full = _creation.new_full
Tensor.new_tensor = _creation.new_tensor
Tensor.new_empty_strided = _creation.new_empty_strided
Tensor.new = _creation.new
Tensor.T = property(_views.T)
Tensor.mT = property(_views.mT)
Tensor.H = property(lambda self: _views.T(self).conj())
Tensor.mH = property(lambda self: _views.mT(self).conj())
Tensor.real = property(_complex.real)
Tensor.imag = property(_complex.imag)
Tensor.is_nested = property(lambda self: False)
Tensor.is_sparse_csr = property(lambda self: False)
Tensor.__getitem__ = _idx.getitem
Tensor.__setitem__ = _idx.setitem
Tensor.const_data_ptr = Tensor.data_ptr
Tensor.dim_order = _copy.dim_order
Tensor.is_set_to = _copy.is_set_to
Tensor.__deepcopy__ = _copy.deepcopy
Tensor.storage = _storage.typed_storage


# ----------------------------------------------------------------- operators


def _scalar_or_tensor(x):
    return isinstance(x, Tensor) or _ew.is_scalar(x)


def _reflected(fn):
    def reflected(self, other):
        if not _scalar_or_tensor(other):
            return NotImplemented
        return fn(other, self)

    return reflected


def _forward(fn):
    def forward(self, other):
        if not _scalar_or_tensor(other):
            return NotImplemented
        return fn(self, other)

    return forward


Tensor.__add__ = _public["add"]
Tensor.__radd__ = _public["add"]
Tensor.__iadd__ = _public["add_"]
Tensor.__sub__ = _public["sub"]
Tensor.__rsub__ = _public["rsub"]
Tensor.__isub__ = _public["sub_"]
Tensor.__mul__ = _public["mul"]
Tensor.__rmul__ = _public["mul"]
Tensor.__imul__ = _public["mul_"]
Tensor.__truediv__ = _public["div"]
Tensor.__rtruediv__ = _reflected(_public["div"])
Tensor.__itruediv__ = _public["div_"]
Tensor.__floordiv__ = _public["floor_divide"]
Tensor.__rfloordiv__ = _reflected(_public["floor_divide"])
Tensor.__ifloordiv__ = _public["floor_divide_"]
Tensor.__mod__ = _public["remainder"]
Tensor.__rmod__ = _reflected(_public["remainder"])
Tensor.__imod__ = _public["remainder_"]
Tensor.__pow__ = _public["pow"]
Tensor.__rpow__ = _reflected(_public["pow"])
Tensor.__ipow__ = _public["pow_"]
Tensor.__matmul__ = _public["matmul"]
Tensor.__rmatmul__ = _reflected(_public["matmul"])
Tensor.__and__ = _public["bitwise_and"]
Tensor.__rand__ = _public["bitwise_and"]
Tensor.__iand__ = _public["bitwise_and_"]
Tensor.__or__ = _public["bitwise_or"]
Tensor.__ror__ = _public["bitwise_or"]
Tensor.__ior__ = _public["bitwise_or_"]
Tensor.__xor__ = _public["bitwise_xor"]
Tensor.__rxor__ = _public["bitwise_xor"]
Tensor.__ixor__ = _public["bitwise_xor_"]
Tensor.__lshift__ = _public["bitwise_left_shift"]
Tensor.__rlshift__ = _reflected(_public["bitwise_left_shift"])
Tensor.__ilshift__ = _public["bitwise_left_shift_"]
Tensor.__rshift__ = _public["bitwise_right_shift"]
Tensor.__rrshift__ = _reflected(_public["bitwise_right_shift"])
Tensor.__irshift__ = _public["bitwise_right_shift_"]
Tensor.__div__ = Tensor.__truediv__  # Python 2's names, which PyTorch keeps
Tensor.__rdiv__ = Tensor.__rtruediv__
Tensor.__idiv__ = Tensor.__itruediv__
Tensor.__invert__ = _public["bitwise_not"]
Tensor.__neg__ = _public["neg"]
Tensor.__pos__ = _public["positive"]
Tensor.__abs__ = _public["abs"]
Tensor.__eq__ = _forward(_public["eq"])
Tensor.__ne__ = _forward(_public["ne"])
Tensor.__lt__ = _forward(_public["lt"])
Tensor.__le__ = _forward(_public["le"])
Tensor.__gt__ = _forward(_public["gt"])
Tensor.__ge__ = _forward(_public["ge"])
Tensor.__hash__ = object.__hash__
Tensor.__array_priority__ = 1000


def _contains(self, element):
    if isinstance(element, Tensor) or _ew.is_scalar(element):
        return _builtins.bool((self == element).any().item())
    raise RuntimeError(
        f"Tensor.__contains__ only supports Tensor or scalar, but you passed in a {type(element)}."
    )


Tensor.__contains__ = _contains


def _reversed(self):
    return self if self.dim() == 0 else self.flip(0)


Tensor.__reversed__ = _reversed
Tensor.__long__ = Tensor.__int__
Tensor.__nonzero__ = Tensor.__bool__


# ------------------------------------------------------------ memory formats
from ember_core._tensor.copy import (  # noqa: E402, F401 - public
    channels_last,
    channels_last_3d,
    contiguous_format,
    memory_format,
    preserve_format,
)

# The Python array API standard namespace is ember_core.array_api (loaded lazily
# by Tensor.__array_namespace__).


def _to_device(self, dev, /, *, stream=None):
    """The array API's x.to_device(device): this tensor on ``device``."""
    return self.to(dev)


Tensor.to_device = _to_device


# the LU family of torch.linalg (composites over lu_factor), householder_product,
# the tensor inverse/solve and LDL^T: functions of the linalg namespace
for _name in (
    "lu",
    "lu_unpack",
    "lu_solve",
    "tensorinv",
    "tensorsolve",
    "householder_product",
    "ldl_factor",
    "ldl_factor_ex",
    "ldl_solve",
):
    setattr(linalg, _name, getattr(_linalg_lu, _name))
# the general eigendecomposition (geev; complex results)
for _name in ("eig", "eigvals"):
    setattr(linalg, _name, getattr(_linalg_geev, _name))

# CUDA devices, streams, events and memory (ember.cuda re-exports it)
from ember_core import cuda  # noqa: E402


def __getattr__(name):
    # complex32 (chalf) is the one PyTorch dtype ember does not have: say so
    if name in ("complex32", "chalf"):
        raise AttributeError(
            f"ember has no {name} (complex32) dtype: complex numbers with float16 parts are not "
            "supported; use complex64 (ember.cfloat)"
        )
    raise AttributeError(f"module 'ember_core' has no attribute {name!r}")


# (`cuda` is a submodule: a star import of ember_core must not shadow the
# importer's own, e.g. the umbrella's ember.cuda)
__all__ = sorted(
    {k for k, v in globals().items() if not k.startswith("_") and k not in ("cuda", "sparse")}
)


# Note [Generated docstrings] (_codegen/opdoc.py): every op's docstring in PyTorch's layout,
# generated with the stubs when the wheel is built (absent from a source tree).
def _apply_generated_docstrings():
    import json
    import os

    path = os.path.join(os.path.dirname(__file__), "_opdocs.json")
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            for name, doc in json.load(f).items():
                _public[name].__doc__ = doc


_apply_generated_docstrings()

# What the Tensor class holds once ember_core is complete, before ember_autograd (loaded
# later, on demand) patches it: the stubs are generated from this, so they are the same
# whether or not autograd has loaded in the generating process (_codegen/stubgen.py).
_CORE_TENSOR_MEMBERS = dict(vars(Tensor))
