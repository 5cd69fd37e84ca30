"""Element-wise functions of the array API standard.

Binary functions convert their operands first (see _helpers.promote): arrays by
the standard's dtype promotion, Python scalars to the other operand's dtype, so
PyTorch's rules for 0-d tensors and wrapped numbers never come into play.
"""

import ember_core as ec
from ember_core._tensor import dtype as D
from ember_core.array_api._helpers import Array, check_array, promote


def _remainder(x1, x2):
    """PyTorch's remainder, with a zero result signed like the divisor as the
    standard (and Python's %) has it: remainder(0.0, -inf) is -0.0."""
    r = ec.remainder(x1, x2)
    if r.dtype.category == 2:
        r = ec.where(r == 0, ec.copysign(ec.zeros((), dtype=r.dtype), x2), r)
    return r


# standard name -> ember function
_UNARY = {
    "abs": ec.abs,
    "acos": ec.acos,
    "acosh": ec.acosh,
    "asin": ec.asin,
    "asinh": ec.asinh,
    "atan": ec.atan,
    "atanh": ec.atanh,
    "bitwise_invert": ec.bitwise_not,
    "ceil": ec.ceil,
    "cos": ec.cos,
    "cosh": ec.cosh,
    "exp": ec.exp,
    "expm1": ec.expm1,
    "floor": ec.floor,
    "isfinite": ec.isfinite,
    "isinf": ec.isinf,
    "isnan": ec.isnan,
    "log": ec.log,
    "log1p": ec.log1p,
    "log2": ec.log2,
    "log10": ec.log10,
    "logical_not": ec.logical_not,
    "negative": ec.neg,
    "reciprocal": ec.reciprocal,
    "round": ec.round,
    "sign": ec.sign,
    "signbit": ec.signbit,
    "sin": ec.sin,
    "sinh": ec.sinh,
    "square": ec.square,
    "sqrt": ec.sqrt,
    "tan": ec.tan,
    "tanh": ec.tanh,
    "trunc": ec.trunc,
}

_BINARY = {
    "add": ec.add,
    "atan2": ec.atan2,
    "bitwise_and": ec.bitwise_and,
    "bitwise_left_shift": ec.bitwise_left_shift,
    "bitwise_or": ec.bitwise_or,
    "bitwise_right_shift": ec.bitwise_right_shift,
    "bitwise_xor": ec.bitwise_xor,
    "copysign": ec.copysign,
    "divide": ec.div,
    "equal": ec.eq,
    "floor_divide": ec.floor_divide,
    "greater": ec.gt,
    "greater_equal": ec.ge,
    "hypot": ec.hypot,
    "less": ec.lt,
    "less_equal": ec.le,
    "logaddexp": ec.logaddexp,
    "logical_and": ec.logical_and,
    "logical_or": ec.logical_or,
    "logical_xor": ec.logical_xor,
    "maximum": ec.maximum,
    "minimum": ec.minimum,
    "multiply": ec.mul,
    "nextafter": ec.nextafter,
    "not_equal": ec.ne,
    "pow": ec.pow,
    "remainder": _remainder,
    "subtract": ec.sub,
}


def _make_unary(name, fn):
    def unary(x, /):
        return fn(check_array(x))

    unary.__name__ = unary.__qualname__ = name
    unary.__doc__ = f"The array API's {name}(x): ember_core.{fn.__name__} element-wise."
    return unary


def _make_binary(name, fn):
    def binary(x1, x2, /):
        x1, x2 = promote(x1, x2)
        # a Python scalar becomes a 0-d array of the other operand's dtype
        if not isinstance(x1, Array):
            x1 = ec.full((), x1, dtype=_scalar_dtype(x1, x2.dtype))
            if x1.dtype is not x2.dtype:
                x2 = x2.to(x1.dtype)
        elif not isinstance(x2, Array):
            x2 = ec.full((), x2, dtype=_scalar_dtype(x2, x1.dtype))
            if x2.dtype is not x1.dtype:
                x1 = x1.to(x2.dtype)
        return fn(x1, x2)

    binary.__name__ = binary.__qualname__ = name
    binary.__doc__ = f"The array API's {name}(x1, x2): ember_core.{fn.__name__} with broadcasting."
    return binary


def _scalar_dtype(s, dtype):
    if isinstance(s, complex) and not dtype.is_complex:
        return (dtype if dtype.category == 2 else D.get_default_dtype()).to_complex()
    if isinstance(s, float) and dtype.category < 2:
        return D.get_default_dtype()
    if isinstance(s, int) and not isinstance(s, bool) and dtype is D.bool_:
        return D.int64
    return dtype


for _name, _fn in _UNARY.items():
    globals()[_name] = _make_unary(_name, _fn)
for _name, _fn in _BINARY.items():
    globals()[_name] = _make_binary(_name, _fn)


def positive(x, /):
    """+x (a copy)."""
    return check_array(x).clone()


def conj(x, /):
    """The complex conjugate (x itself for real arrays)."""
    return ec.conj(check_array(x))


def real(x, /):
    """The real part (x itself for real arrays)."""
    return ec.real(check_array(x))


def imag(x, /):
    """The imaginary part (zeros for real arrays)."""
    x = check_array(x)
    return ec.imag(x) if x.dtype.is_complex else ec.zeros_like(x)


def clip(x, /, min=None, max=None):
    """x with values below min raised to min and above max lowered to max; the
    result keeps x's dtype."""
    check_array(x)
    if min is None and max is None:
        return x.clone()
    r = ec.clamp(x, min, max)
    return r if r.dtype is x.dtype else r.to(x.dtype)


__all__ = sorted(list(_UNARY) + list(_BINARY) + ["clip", "conj", "imag", "positive", "real"])
