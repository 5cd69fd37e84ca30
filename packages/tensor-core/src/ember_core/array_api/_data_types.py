"""Data type functions: astype, can_cast, finfo, iinfo, isdtype, result_type."""

import builtins
from dataclasses import dataclass

import numpy as np

from ember_core._tensor import dtype as D
from ember_core.array_api._helpers import (
    Array,
    check_array,
    device_arg,
    dtype_arg,
    standard_promotion,
)


def astype(x, dtype, /, *, copy=True, device=None):
    """x converted to dtype (a new array unless copy=False and nothing changes)."""
    check_array(x)
    dt = dtype_arg(dtype)
    device_arg(device)
    if dt is x.dtype and not copy:
        return x
    return x.to(dt, copy=True)


def _dtype_of(v):
    return v.dtype if isinstance(v, Array) else dtype_arg(v)


def can_cast(from_, to, /):
    """Whether from_ (a dtype or array) promotes to ``to`` under the standard's rules."""
    f, t = _dtype_of(from_), dtype_arg(to)
    if f is t:
        return True
    # the standard's table never crosses kinds, except real to complex floating
    if f.category == 2 and t.category == 3:
        return D.promote_types(f, t) is t
    if f.category != t.category:
        return False
    try:
        return standard_promotion(f, t) is t
    except (TypeError, RuntimeError):
        return False


def result_type(*arrays_and_dtypes):
    """The dtype the standard's promotion gives for arrays, dtypes and Python scalars."""
    dtypes = [_dtype_of(a) for a in arrays_and_dtypes if isinstance(a, (Array, D.dtype))]
    scalars = [a for a in arrays_and_dtypes if not isinstance(a, (Array, D.dtype))]
    if not dtypes:
        raise ValueError("result_type: at least one array or dtype is required")
    dt = dtypes[0]
    for d in dtypes[1:]:
        dt = standard_promotion(dt, d)
    for s in scalars:
        if isinstance(s, builtins.bool):
            continue
        if isinstance(s, int):
            if dt is D.bool_:
                dt = D.int64
        elif isinstance(s, float):
            if dt.category < 2:
                dt = D.get_default_dtype()
        elif isinstance(s, complex):
            if dt.category < 3:
                dt = (dt if dt.category == 2 else D.get_default_dtype()).to_complex()
        else:
            raise TypeError(f"result_type: unsupported operand {s!r}")
    return dt


@dataclass(frozen=True)
class finfo_object:
    bits: int
    eps: float
    max: float
    min: float
    smallest_normal: float
    dtype: D.dtype


@dataclass(frozen=True)
class iinfo_object:
    bits: int
    max: int
    min: int
    dtype: D.dtype


_BFLOAT16 = D.BFLOAT16_LIMITS


def finfo(type, /):
    """Machine limits of a floating dtype (or of an array's dtype); a complex
    dtype's are its parts' (with the complex dtype as ``dtype``)."""
    dt = _dtype_of(type)
    if dt.is_complex:
        f = finfo(dt.to_real())
        return finfo_object(f.bits, f.eps, f.max, f.min, f.smallest_normal, dt)
    if dt.category != 2:
        raise TypeError(f"finfo: {dt} is not a floating point dtype")
    if dt is D.bfloat16:
        return finfo_object(dtype=dt, **_BFLOAT16)
    f = np.finfo(dt.numpy)
    return finfo_object(
        int(f.bits), float(f.eps), float(f.max), float(f.min), float(f.smallest_normal), dt
    )


def iinfo(type, /):
    """Machine limits of an integer dtype (or of an array's dtype)."""
    dt = _dtype_of(type)
    if dt.category != 1:
        raise TypeError(f"iinfo: {dt} is not an integer dtype")
    i = np.iinfo(dt.numpy)
    return iinfo_object(int(i.bits), int(i.max), int(i.min), dt)


_KINDS = {
    "bool": lambda d: d is D.bool_,
    "signed integer": lambda d: d.category == 1 and d.is_signed,
    "unsigned integer": lambda d: d.category == 1 and not d.is_signed,
    "integral": lambda d: d.category == 1,
    "real floating": lambda d: d.category == 2,
    "complex floating": lambda d: d.is_complex,
    "numeric": lambda d: d.category >= 1,
}


def isdtype(dtype, kind):
    """Whether dtype is of ``kind``: a dtype, a kind name ('bool', 'signed integer',
    'unsigned integer', 'integral', 'real floating', 'complex floating',
    'numeric'), or a tuple of those."""
    dt = dtype_arg(dtype)
    if isinstance(kind, tuple):
        return any(isdtype(dt, k) for k in kind)
    if isinstance(kind, D.dtype):
        return dt is kind
    if isinstance(kind, str):
        try:
            return _KINDS[kind](dt)
        except KeyError:
            raise ValueError(f"isdtype: unknown kind {kind!r}") from None
    raise TypeError(
        f"isdtype: kind must be a dtype, a string or a tuple, got {type(kind).__name__}"
    )


__all__ = ["astype", "can_cast", "finfo", "iinfo", "isdtype", "result_type"]
