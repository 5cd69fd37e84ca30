"""ember_core: ember's n-dimensional Tensor, its C kernels and zero-copy interop.

>>> import ember_core as ec
>>> x = ec.tensor([[1.0, 2.0], [3.0, 4.0]])
>>> (x @ x.T).sum().item()
52.0
"""

# nn-conv: convolution, pooling, padding and resampling ops
# nn ops: softmax, normalization, losses, activations, dropout, embedding,
# attention, recurrent cells
# fixes: more shape builders and math (composites of the ops above)
# linalg: torch.linalg (LAPACK) as ember_core.linalg, and the legacy det, svd, qr... ops
# nnk: grid_sample/affine_grid, max_unpool and the CTC loss
from ember_core import (  # noqa: F401 - they fill the op table  # noqa: F401 - register their ops  # noqa: F401 - they fill the op table
    _activation,
    _attention,
    _conv,
    _copy,
    _creation,
    _dispatch,
    _dropout,
    _embedding,
    _interop,
    _loss,
    _math_extra,
    _norm,
    _pool,
    _rearrange,
    _resample,
    _rnn,
    _sampling,  # noqa: E402, F401 - they fill the op table
    _softmax,
    _special,  # surface: torch.special's kernels, i0/polygamma/igamma/mvlgamma
    _views,
    linalg,  # noqa: E402, F401 - public submodule
)

# Indexing, sorting and set ops (advanced indexing, index/scatter/gather family, sort...).
from ember_core import _advanced_index as _advanced_index
from ember_core import _elementwise as _ew
from ember_core import _index_ops as _index_ops
from ember_core import _indexing as _idx
from ember_core import _joining as _joining
from ember_core import _linalg as _linalg
from ember_core import _random as _random
from ember_core import _random_dist as _random_dist  # dist: gamma, poisson, binomial samplers
from ember_core import _reduction as _reduction
from ember_core import _sorting as _sorting
from ember_core._device import device
from ember_core._dispatch import OPS, Op, defop, ops_tagged, register_handler, remove_handler
from ember_core._dlpack import from_dlpack, to_dlpack  # noqa: F401 - public
from ember_core._dtype import (
    bfloat16,
    bool_,
    can_cast,
    dtype,
    float16,
    float32,
    float64,
    get_default_dtype,
    int8,
    int16,
    int32,
    int64,
    promote_types,
    result_type,
    set_default_dtype,
    uint8,
)
from ember_core._interop import from_numpy, is_tensor
from ember_core._lib import lib as _lib_c
from ember_core._math_extra import is_signed
from ember_core._printing import set_printoptions
from ember_core._random import (
    Generator,
    default_generator,
    get_rng_state,
    initial_seed,
    manual_seed,
    seed,
    set_rng_state,
)
from ember_core._reduction import return_types
from ember_core._storage import UntypedStorage, get_allocator, set_allocator
from ember_core._tensor import Size, Tensor

__version__ = "0.1.0"

# PyTorch's dtype aliases
bool = bool_  # noqa: A001 - the public name is torch.bool
half = float16
float = float32  # noqa: A001
double = float64
long = int64
int = int32  # noqa: A001
short = int16

# --------------------------------------------------------- public functions

_public = _dispatch.public_functions()
globals().update({k: v for k, v in _public.items() if _dispatch.OPS[k].public})
# Other names of ops (their declarations' ``aliases``, Note [Op table]): the
# function, and below the method and the in-place form, under each alias.
_dispatch.bind_aliases()
for _alias, _target in _dispatch.ALIASES.items():
    if _dispatch.OPS[_target].public:
        globals()[_alias] = _public[_target]


def set_num_threads(n):
    """Threads used by ember's kernels, OpenMP and BLAS alike."""
    _lib_c.ec_set_num_threads(builtins_int(n))


def get_num_threads():
    return _lib_c.ec_get_num_threads()


def numel(input):
    return input.numel()


import builtins as _builtins  # noqa: E402

builtins_int = _builtins.int

# ------------------------------------------------------------ Tensor methods

_SKIP_METHODS = {"where"}
for _name, _op in OPS.items():
    if _op.method and _op.public and _name not in _SKIP_METHODS and not _name.startswith("_"):
        setattr(Tensor, _name, _public[_name])

for _alias, _target in _dispatch.ALIASES.items():
    if hasattr(Tensor, _target) and _dispatch.OPS[_target].method:
        setattr(Tensor, _alias, getattr(Tensor, _target))


def _where_method(self, condition, other):
    return _ew.where(condition, self, other)


Tensor.where = _where_method
Tensor.numpy = _interop.numpy
Tensor.item = _interop.item
Tensor.tolist = _interop.tolist
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
Tensor.T = property(_views.T)
Tensor.mT = property(_views.mT)
Tensor.H = property(_views.T)
Tensor.mH = property(_views.mT)
Tensor.__getitem__ = _idx.getitem
Tensor.__setitem__ = _idx.setitem


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

# ---------------------------------------------------------------- predicates


def is_floating_point(input):
    return input.is_floating_point()


def is_complex(input):
    return False


# ----------------------------------------------------- memory formats (tc-core)
from ember_core._copy import (  # noqa: E402, F401 - public
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


# surface: Tensor.polygamma(n) and polygamma_(n) take the order after self
def _polygamma_method(self, n):
    return _special.polygamma(n, self)


def _polygamma_inplace_method(self, n):
    return _special.polygamma_(self, n)


Tensor.polygamma = _polygamma_method
Tensor.polygamma_ = _polygamma_inplace_method

# surface: the LU family of torch.linalg (composites over lu_factor)
from ember_core import _linalg_lu  # noqa: E402

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
geqrf = _linalg_lu.geqrf
orgqr = _linalg_lu.householder_product
ormqr = _linalg_lu.ormqr
Tensor.geqrf = _linalg_lu.geqrf
Tensor.orgqr = _linalg_lu.householder_product
Tensor.ormqr = _linalg_lu.ormqr

# CUDA devices, streams, events and memory (ember.cuda re-exports it)
from ember_core import cuda  # noqa: E402

# (`cuda` is a submodule: a star import of ember_core must not shadow the
# importer's own, e.g. the umbrella's ember.cuda)
__all__ = sorted(
    {k for k, v in globals().items() if not k.startswith("_") and k not in ("builtins_int", "cuda")}
)
