"""Argument handling shared by the array API functions: dtypes, devices, axes,
and the standard's type promotion between arrays."""

import builtins

import ember_core as ec
from ember_core._tensor import dtype as D

Array = ec.Tensor


def dtype_arg(dtype):
    """An ember dtype from an array API dtype argument (None stays None)."""
    if dtype is None:
        return None
    if isinstance(dtype, D.dtype):
        return dtype
    raise TypeError(f"expected an ember dtype (e.g. float32), got {dtype!r}")


def device_arg(device):
    """The device of a device argument; ember arrays live on the CPU."""
    if device is None:
        return None
    d = ec.device(device) if not isinstance(device, ec.device) else device
    if d.type != "cpu":
        raise ValueError(
            f"unsupported device {d}: the array API namespace of ember works on the cpu"
        )
    return d


def check_array(x, name="x"):
    if not isinstance(x, Array):
        raise TypeError(f"{name} must be an array (ember Tensor), got {type(x).__name__}")
    return x


def axes_arg(axis, ndim):
    """None, an int or a tuple of ints as a tuple of non-negative axes."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, int):
        axis = (axis,)
    n = ndim if ndim else 1  # a 0-d array takes axis 0 / -1, as in PyTorch and NumPy
    out = []
    for a in axis:
        if not -n <= a < n:
            raise IndexError(f"axis {a} is out of bounds for array of dimension {ndim}")
        out.append(a % n)
    if len(set(out)) != len(out):
        raise ValueError(f"repeated axis in {axis}")
    return tuple(out)


_SIGNED_OF_BITS = {8: D.int8, 16: D.int16, 32: D.int32, 64: D.int64}


def standard_promotion(a, b):
    """The standard's promotion of two dtypes: PyTorch's, except that it promotes
    the unsigned integers wider than uint8 with the other integers (uint16 with
    int16 is int32) where PyTorch refuses; uint64 with a signed integer, and
    integers with floats, have no promotion there."""
    if a is b:
        return a
    if a.category == 1 and b.category == 1 and (a in D.WIDE_UINTS or b in D.WIDE_UINTS):
        if a.is_signed == b.is_signed:
            return a if a.itemsize >= b.itemsize else b
        u, s = (a, b) if not a.is_signed else (b, a)
        if s.itemsize > u.itemsize:
            return s
        if u is D.uint64:
            raise TypeError(f"{u} and {s} have no promoted dtype in the array API standard")
        return _SIGNED_OF_BITS[16 * u.itemsize]
    return D.promote_types(a, b)


def promote(x1, x2):
    """x1 and x2 ready for a binary function under the standard's rules: two
    arrays of different dtypes are converted to their promoted dtype (a 0-d array
    counts like any other, unlike PyTorch's wrapped-number rule); a Python scalar
    is left to take the array's dtype."""
    a1, a2 = isinstance(x1, Array), isinstance(x2, Array)
    if a1 and a2:
        if x1.dtype is not x2.dtype:
            dt = standard_promotion(x1.dtype, x2.dtype)
            x1, x2 = x1.to(dt), x2.to(dt)
        return x1, x2
    if not (a1 or a2):
        raise TypeError("expected at least one array argument")
    scalar = x2 if a1 else x1
    if not isinstance(scalar, (builtins.bool, int, float, complex)):
        raise TypeError(f"expected an array or a Python scalar, got {type(scalar).__name__}")
    return x1, x2
