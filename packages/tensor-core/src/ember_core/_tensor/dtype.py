"""dtypes, PyTorch's type promotion rules, the default dtype and machine limits
(finfo, iinfo)."""

import math

import numpy as np

from ember_core._base.lib import lib


class dtype:
    """A tensor element type, e.g. ``ember_core.float32``.

    >>> float32.itemsize, float32.is_floating_point
    (4, True)
    """

    __slots__ = (
        "name",
        "code",
        "itemsize",
        "is_floating_point",
        "is_signed",
        "category",
        "numpy",
        "min",
        "max",
        "is_complex",
        "base",
        "differentiable",
    )

    def __init__(self, name, code, itemsize, category, is_signed, numpy_dtype, lo, hi):
        self.name = name
        self.code = code
        self.itemsize = itemsize
        self.category = category  # 0 bool, 1 integer, 2 floating, 3 complex
        self.is_floating_point = category == 2
        self.is_signed = is_signed
        self.numpy = numpy_dtype
        self.min = lo
        self.max = hi
        self.is_complex = category == 3
        self.differentiable = category >= 2  # autograd's dtypes: floating and complex
        # Note [CPU-only dtypes]: every kernel family and device has the ten base
        # dtypes; the wide unsigned integers and complex dtypes have CPU kernels
        # only, and only where PyTorch has the op (fast paths skip them)
        self.base = code <= lib.EC_FLOAT64

    def __repr__(self):
        return f"ember.{self.name}"

    def __reduce__(self):
        return (_by_name, (self.name,))

    def to_real(self):
        """The real dtype of a complex one's parts (float32 for complex64); others as they are."""
        return _REAL_OF.get(self, self)

    def to_complex(self):
        """The complex dtype whose parts are this float dtype (complex64 for float32)."""
        c = _COMPLEX_OF.get(self)
        if c is None:
            if self is float16:
                raise TypeError(
                    "ember has no complex32 (chalf) dtype: complex numbers with float16 parts "
                    "are not supported; use complex64"
                )
            if self.is_complex:
                return self
            raise RuntimeError(f"Unknown Complex ScalarType for {_torch_name(self)}")
        return c


def _by_name(name):
    return DTYPES_BY_NAME[name]


_i = np.iinfo
bool_ = dtype("bool", lib.EC_BOOL, 1, 0, False, np.dtype(np.bool_), False, True)
uint8 = dtype("uint8", lib.EC_UINT8, 1, 1, False, np.dtype(np.uint8), 0, 255)
int8 = dtype("int8", lib.EC_INT8, 1, 1, True, np.dtype(np.int8), -128, 127)
int16 = dtype(
    "int16", lib.EC_INT16, 2, 1, True, np.dtype(np.int16), _i(np.int16).min, _i(np.int16).max
)
int32 = dtype(
    "int32", lib.EC_INT32, 4, 1, True, np.dtype(np.int32), _i(np.int32).min, _i(np.int32).max
)
int64 = dtype(
    "int64", lib.EC_INT64, 8, 1, True, np.dtype(np.int64), _i(np.int64).min, _i(np.int64).max
)
float16 = dtype("float16", lib.EC_FLOAT16, 2, 2, True, np.dtype(np.float16), -65504.0, 65504.0)
bfloat16 = dtype(
    "bfloat16", lib.EC_BFLOAT16, 2, 2, True, None, -3.3895313892515355e38, 3.3895313892515355e38
)
float32 = dtype(
    "float32",
    lib.EC_FLOAT32,
    4,
    2,
    True,
    np.dtype(np.float32),
    float(np.finfo(np.float32).min),
    float(np.finfo(np.float32).max),
)
float64 = dtype(
    "float64",
    lib.EC_FLOAT64,
    8,
    2,
    True,
    np.dtype(np.float64),
    float(np.finfo(np.float64).min),
    float(np.finfo(np.float64).max),
)

# The wide unsigned integers (PyTorch 2.3+: storage, casts, comparisons, bitwise
# ops, a few reductions; most arithmetic raises there and here).
uint16 = dtype("uint16", lib.EC_UINT16, 2, 1, False, np.dtype(np.uint16), 0, 2**16 - 1)
uint32 = dtype("uint32", lib.EC_UINT32, 4, 1, False, np.dtype(np.uint32), 0, 2**32 - 1)
uint64 = dtype("uint64", lib.EC_UINT64, 8, 1, False, np.dtype(np.uint64), 0, 2**64 - 1)
# Complex dtypes: category 3, parts of float32 / float64 (CPU kernels only).
complex64 = dtype("complex64", lib.EC_COMPLEX64, 8, 3, True, np.dtype(np.complex64), None, None)
complex128 = dtype(
    "complex128", lib.EC_COMPLEX128, 16, 3, True, np.dtype(np.complex128), None, None
)
_REAL_OF = {complex64: float32, complex128: float64}
_COMPLEX_OF = {float32: complex64, float64: complex128, bfloat16: complex64}
WIDE_UINTS = (uint16, uint32, uint64)
COMPLEX_DTYPES = (complex64, complex128)

ALL_DTYPES = (
    (bool_, uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64)
    + WIDE_UINTS
    + COMPLEX_DTYPES
)
DTYPES_BY_CODE = {d.code: d for d in ALL_DTYPES}
DTYPES_BY_NAME = {d.name: d for d in ALL_DTYPES}
# PyTorch's aliases.
ALIASES = {
    "half": float16,
    "float": float32,
    "double": float64,
    "long": int64,
    "int": int32,
    "short": int16,
    "bool": bool_,
    "cfloat": complex64,
    "cdouble": complex128,
}
DTYPES_BY_NAME.update(ALIASES)
NUMPY_TO_DTYPE = {d.numpy: d for d in ALL_DTYPES if d.numpy is not None}

# ------------------------------------------------------------- promotion


_TORCH_NAMES = {
    "float32": "Float",
    "float64": "Double",
    "float16": "Half",
    "bfloat16": "BFloat16",
    "int64": "Long",
    "int32": "Int",
    "int16": "Short",
    "int8": "Char",
    "uint8": "Byte",
    "bool": "Bool",
    "uint16": "UInt16",
    "uint32": "UInt32",
    "uint64": "UInt64",
    "complex64": "ComplexFloat",
    "complex128": "ComplexDouble",
}


def _torch_name(d):
    """PyTorch's C++ name of a dtype, as its error messages spell it ('Float')."""
    return _TORCH_NAMES[d.name]


class _PromotionError:
    """What promoting a pair PyTorch refuses gives: raised when looked up."""

    def __init__(self, exc):
        self.exc = exc


def _promote_pair(a, b):
    if a is b:
        return a
    if a in WIDE_UINTS or b in WIDE_UINTS:
        # PyTorch 2.3+ promotes the wide unsigned integers with the real floating
        # dtypes only (to the float)
        if a.category == 2 or b.category == 2:
            return a if a.category == 2 else b
        return _PromotionError(
            RuntimeError(
                "Promotion for uint16, uint32, uint64 types is not supported, attempted to "
                f"promote {_torch_name(a)} and {_torch_name(b)}"
            )
        )
    if a.category == 3 or b.category == 3:
        # complex with anything: complex parts as wide as the wider float involved
        c, o = (a, b) if a.category == 3 else (b, a)
        if o.category == 3 or o.category < 2:
            return c if o.category < 3 or c.itemsize >= o.itemsize else o
        return complex128 if float64 in (o, c.to_real()) else c
    if a.category != b.category:
        return a if a.category > b.category else b
    if a.category == 2:
        if {a, b} == {float16, bfloat16}:
            return float32
        return a if a.itemsize > b.itemsize else b
    if a.category == 1:
        if a.is_signed == b.is_signed:
            return a if a.itemsize > b.itemsize else b
        signed, unsigned = (a, b) if a.is_signed else (b, a)
        # uint8 with a signed type: the signed type if wider, else int16
        if signed.itemsize > unsigned.itemsize:
            return signed
        return int16
    return a


class _PromotionTable(dict):
    """(a, b) -> promoted dtype; a refused pair raises PyTorch's error on lookup."""

    def __getitem__(self, key):
        r = dict.__getitem__(self, key)
        if r.__class__ is _PromotionError:
            raise r.exc
        return r


_PROMOTE = _PromotionTable(((a, b), _promote_pair(a, b)) for a in ALL_DTYPES for b in ALL_DTYPES)


def promote_types(type1, type2):
    """The smallest dtype both ``type1`` and ``type2`` convert to (PyTorch's rules).

    >>> promote_types(uint8, int8)
    ember.int16
    >>> promote_types(complex64, float64)
    ember.complex128
    """
    return _PROMOTE[type1, type2]


class _DefaultDtype:
    value = float32


_default = _DefaultDtype()


def get_default_dtype():
    return _default.value


def default_complex_dtype():
    """complex64 while the default dtype is float32, complex128 with float64."""
    return complex128 if _default.value is float64 else complex64


def set_default_dtype(d):
    if not isinstance(d, dtype) or not d.is_floating_point:
        raise TypeError(f"set_default_dtype: only floating point dtypes are supported, got {d!r}")
    _default.value = d


def _combine(higher, lower):
    # PyTorch's combine_categories: a higher-priority group wins unless a lower
    # one is of a higher category.
    if higher is None:
        return lower
    if lower is None:
        return higher
    if higher.category == 3:
        return higher
    if lower.category == 3:
        # a complex number or 0-d tensor with real tensors: complex parts as
        # wide as the tensors' floats (float16 would need complex32: an error)
        if higher.category == 2:
            return higher.to_complex()
        return lower
    if higher.category == 2:
        return higher
    if higher is bool_ or lower.category == 2:
        return _PROMOTE[higher, lower]
    return higher


def scalar_dtype(value):
    """The dtype a Python number takes in promotion: bool, int64 or the default float."""
    if isinstance(value, bool):
        return bool_
    if isinstance(value, int):
        return int64
    if isinstance(value, float):
        return _default.value
    if isinstance(value, complex):
        return default_complex_dtype()
    # NumPy scalars count as Python numbers (PyTorch reads them as such): np.integer
    # as int, np.floating -- and, as in PyTorch, np.bool_ -- as float.
    if isinstance(value, np.integer):
        return int64
    if isinstance(value, (np.floating, np.bool_)):
        return _default.value
    if isinstance(value, np.complexfloating):
        return default_complex_dtype()
    raise TypeError(f"expected a Tensor or a Python number, got {type(value).__name__}")


def result_type(*operands):
    """The dtype an elementwise op of ``operands`` (tensors and numbers) computes in.

    Dimensioned tensors take precedence over 0-d tensors, which take precedence
    over Python numbers, unless a lower group has a higher category
    (bool < integer < floating).

    >>> import ember_core as ec
    >>> result_type(ec.ones(3, dtype=int32), 2.5)
    ember.float32
    """
    dim = zero = wrapped = None
    for x in operands:
        d = getattr(x, "_dtype", None)
        if d is not None:
            if x._shape:
                dim = d if dim is None else _PROMOTE[dim, d]
            else:
                zero = d if zero is None else _PROMOTE[zero, d]
        elif isinstance(x, dtype):
            dim = x if dim is None else _PROMOTE[dim, x]
        else:
            d = scalar_dtype(x)
            wrapped = d if wrapped is None else _PROMOTE[wrapped, d]
    result = _combine(dim, _combine(zero, wrapped))
    if result is None:
        raise TypeError("result_type: needs at least one operand")
    return result


def can_cast(from_, to):
    """Whether an in-place op may store values of ``from_`` into ``to``: no lowering
    of category (complex -> float, float -> int, int -> bool)."""
    return from_.category <= to.category


def to_dtype(value):
    """Accept an ember dtype, a NumPy dtype, a dtype name or a Python type."""
    if isinstance(value, dtype):
        return value
    if value is None:
        return None
    if value is float:
        return _default.value
    if value is int:
        return int64
    if value is bool:
        return bool_
    if value is complex:
        return default_complex_dtype()
    if isinstance(value, str):
        name = value.removeprefix("ember.").removeprefix("torch.")
        if name in ("complex32", "chalf"):
            raise TypeError(
                "ember has no complex32 (chalf) dtype: complex numbers with float16 parts are "
                "not supported; use complex64"
            )
        try:
            return DTYPES_BY_NAME[name]
        except KeyError:
            raise TypeError(f"unknown dtype name {value!r}") from None
    name = getattr(value, "name", None)  # a torch.dtype-like object or np.dtype
    try:
        return NUMPY_TO_DTYPE[np.dtype(value)]
    except (TypeError, KeyError):
        pass
    if isinstance(name, str) and name in DTYPES_BY_NAME:
        return DTYPES_BY_NAME[name]
    text = str(value)
    if text.startswith("torch."):
        return to_dtype(text)
    raise TypeError(f"cannot interpret {value!r} as an ember dtype")


# ------------------------------------------------------------- machine limits

# bfloat16's limits (NumPy has no bfloat16): 8 exponent bits as float32, 7 mantissa bits
BFLOAT16_LIMITS = dict(
    bits=16,
    eps=2.0**-7,
    max=3.3895313892515355e38,
    min=-3.3895313892515355e38,
    smallest_normal=2.0**-126,
)


class finfo:
    """Machine limits of a floating dtype (the default dtype when none is given).

    >>> finfo(float32).eps
    1.1920928955078125e-07
    """

    def __init__(self, type=None):
        dt = type if type is not None else get_default_dtype()
        if isinstance(dt, dtype) and dt.is_complex:
            dt = dt.to_real()  # as PyTorch: finfo of a complex dtype is its parts'
        if not isinstance(dt, dtype) or not dt.is_floating_point:
            raise TypeError(f"finfo(): argument 'type' must be a floating point dtype, not {dt}")
        if dt is bfloat16:
            info = BFLOAT16_LIMITS
        else:
            f = np.finfo(dt.numpy)
            info = dict(
                bits=int(f.bits),
                eps=float(f.eps),
                max=float(f.max),
                min=float(f.min),
                smallest_normal=float(f.smallest_normal),
            )
        self.dtype = dt
        self.bits = info["bits"]
        self.eps = info["eps"]
        self.max = info["max"]
        self.min = info["min"]
        self.smallest_normal = info["smallest_normal"]
        self.tiny = self.smallest_normal
        # PyTorch: 10 ** -floor(precision in decimal digits)
        self.resolution = 10.0 ** -int(math.floor(-math.log10(self.eps)))

    def __repr__(self):
        return (
            f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, "
            f"eps={self.eps:g}, "
            f"smallest_normal={self.smallest_normal:g}, tiny={self.tiny:g}, "
            f"dtype={self.dtype.name})"
        )


class iinfo:
    """Limits of an integer dtype."""

    def __init__(self, type):
        if not isinstance(type, dtype) or type.category != 1:
            raise TypeError(f"iinfo(): argument 'type' must be an integer dtype, not {type}")
        info = np.iinfo(type.numpy)
        self.dtype, self.bits = type, int(info.bits)
        self.max, self.min = int(info.max), int(info.min)

    def __repr__(self):
        return f"iinfo(min={self.min:g}, max={self.max:g}, dtype={self.dtype.name})"
