"""Elementwise ops: unary, binary (with broadcasting and type promotion) and
ternary, each with its in-place and ``out=`` forms.

The dtype rules are PyTorch's: arithmetic computes in ``result_type`` of the
operands; "float" ops (exp, sin, true division, ...) compute integer inputs in
the default float dtype; comparisons and logical ops return bool; bitwise ops
take integers and bools only.  An in-place op or ``out=`` whose result dtype
cannot be stored (float into int, say) raises.
"""

import math
import numbers

import numpy as np

from ember_core._base import shape as _shape
from ember_core._base.dispatch import OPS, defop
from ember_core._base.lib import check, error, ffi, lib
from ember_core._tensor import dtype as D
from ember_core._tensor.device import CPU
from ember_core._tensor.tensor import Tensor, contiguous_strides, empty, is_contig, written

_new_i64 = ffi.new
_bool = D.bool_


def layout(shape, *strides):
    """The int64 layout array kernels take: shape, then each operand's strides."""
    flat = list(shape)
    for st in strides:
        flat.extend(st)
    return _new_i64("int64_t[]", flat)


def check_device(op, *tensors):
    """The device the op runs on; raises when tensors are on different devices.

    As in PyTorch, a 0-d CPU tensor goes with tensors on any device (it is taken
    as a number: see ``scalar_operands``)."""
    dev = None
    cpu_scalar = None
    for t in tensors:
        if isinstance(t, Tensor):
            d = t._storage._device
            if d is CPU and not t._shape:
                cpu_scalar = d
            elif dev is None:
                dev = d
            elif d is not dev and d != dev:
                raise RuntimeError(
                    f"{op}: Expected all tensors to be on the same device, but found at least "
                    f"two devices, {dev} and {d}!"
                )
    return dev or cpu_scalar


def on_device(x, dev):
    """``x`` itself, or (a 0-d CPU tensor taken as a number) a copy on ``dev``."""
    if x._storage._device is dev:
        return x
    from ember_core._tensor.copy import to_device_copy

    return to_device_copy(x, dev)


def is_scalar(x):
    # np.bool_ is no numbers.Number, but PyTorch takes it as a number
    return isinstance(x, (numbers.Number, np.bool_)) and not isinstance(x, Tensor)


def cast(t, dtype):
    """``t`` in ``dtype`` (itself when it already is)."""
    if t._dtype is dtype:
        return t
    from ember_core._tensor.copy import to_dtype_copy

    return to_dtype_copy(t, dtype)


def prepare_out(out, shape, dtype, op):
    """Check/resize ``out`` for a result of ``shape``; returns (target, needs_copy).

    When ``out`` has another dtype the result is computed in ``dtype`` into a
    temporary and copied (cast) into ``out``.  The write is announced here,
    before any kernel runs, so read-only memory is never touched."""
    if not isinstance(out, Tensor):
        raise TypeError(f"{op}(): argument 'out' must be Tensor, not {type(out).__name__}")
    if out._dtype is not dtype and not D.can_cast(dtype, out._dtype):
        raise RuntimeError(
            f"{op}: result type {_tname(dtype)} can't be cast to the desired output type "
            f"{_tname(out._dtype)}"
        )
    written(out, op)
    if out._shape != shape:
        from ember_core._tensor.copy import resize_out

        resize_out(out, shape, op)
    if out._dtype is not dtype:
        return empty(shape, dtype, out._storage._device), True
    return out, False


def finish_out(out, target, needs_copy, op):
    if needs_copy:
        from ember_core._tensor.copy import copy_into

        copy_into(out, target)
    return out


def _tname(d):
    return D._torch_name(d)


def overlaps(a, b):
    """Whether writing ``a`` elementwise could clobber ``b`` before it is read."""
    if a._storage is not b._storage:
        return False
    # same elements in the same order: elementwise in place is safe
    return not (a._offset == b._offset and a._stride == b._stride and a._shape == b._shape)


# ------------------------------------------------------- dtype support

_BOOL = frozenset({D.bool_})
_INTS = frozenset({D.uint8, D.int8, D.int16, D.int32, D.int64})
_FLOATS = frozenset({D.float16, D.bfloat16, D.float32, D.float64})
_NON_FLOAT = _BOOL | _INTS

# Ops PyTorch has no kernel for on some dtypes carry the fact ``rejects=(PyTorch's
# kernel name, dtypes)`` in their declaration.  Unary ops are checked on their
# input's dtype, binary and ternary ones on the dtype they compute in.  The error
# is PyTorch's: NotImplementedError('"abs_cpu" not implemented for \'Bool\'').
_rejects_of = {}  # op name (in-place names too) -> its rejects fact, memoised


def _rejects(op):
    r = _rejects_of.get(op, False)
    if r is False:
        entry = OPS.get(op)
        if entry is not None and entry.rejects is None and entry.inplace_of:
            entry = OPS.get(entry.inplace_of)
        elif entry is None and op.endswith("_"):
            entry = OPS.get(op[:-1])
        r = _rejects_of[op] = entry.rejects if entry is not None else None
    return r


def not_implemented(op, dtype):
    """PyTorch's error for an op without a kernel for ``dtype``."""
    r = _rejects(op)
    name = r[0] if r else f"{op}_cpu"
    return NotImplementedError(f"\"{name}\" not implemented for '{_tname(dtype)}'")


def _supported(op, dtype):
    r = _rejects(op)
    if r is not None and dtype in r[1]:
        raise not_implemented(op.rstrip("_"), dtype)


# ------------------------------------------------------------------ unary

SAME = 0  # keep the input dtype
FLOAT = 1  # integers compute in the default float dtype
BOOL_OUT = 2  # output is bool
NOT_BOOL = 3  # like SAME, but bool input is an error
INT_ONLY = 4  # integer and bool inputs only
FLOAT_ONLY = 5  # floating point inputs only (activations: PyTorch has no integer kernel)
BOOL_AS_LONG = 6  # like SAME, but bool computes in int64 (square, as pow(x, 2))


def _unary_dtypes(op, rule, xd, code=None):
    r = _rejects(op)
    if r is not None and xd in r[1]:
        raise not_implemented(op.rstrip("_"), xd)
    if not xd.base:
        return _cpu_only_unary(op, rule, xd, code)
    if rule == FLOAT:
        cd = xd if xd.category == 2 else D.get_default_dtype()
        return cd, cd
    if rule == BOOL_OUT:
        return xd, _bool
    if rule == NOT_BOOL and xd is _bool:
        if op.startswith("neg"):
            raise RuntimeError(
                "Negation, the `-` operator, on a bool tensor is not supported. If you are trying "
                "to invert a mask, use the `~` or `logical_not()` operator instead."
            )
        raise RuntimeError(f"{op}: Boolean inputs not supported for {op.rstrip('_')}")
    if rule == BOOL_AS_LONG and xd is _bool:
        return D.int64, D.int64
    if (rule == INT_ONLY and xd.category == 2) or (rule == FLOAT_ONLY and xd.category != 2):
        raise not_implemented(op.rstrip("_"), xd)
    return xd, xd


def unary(op, code, rule, x, out=None, p0=0.0, p1=0.0):
    """Run unary kernel ``code`` on tensor ``x``; returns the result tensor."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(x).__name__}")
    cd, od = _unary_dtypes(op, rule, x._dtype, code)
    if x._dtype is not cd:
        x = cast(x, cd)
    dev = x._storage._device
    if out is None:
        r = empty(x._shape, od, dev)
        k = dev._k
        if x._contig or is_contig(x):
            check(k.ec_unary_contig(code, cd.code, x._numel, r._ptr, x._ptr, p0, p1), op)
        else:
            lay = layout(x._shape, r._stride, x._stride)
            check(k.ec_unary(code, cd.code, len(x._shape), lay, r._ptr, x._ptr, p0, p1), op)
        return r
    target, needs_copy = prepare_out(out, x._shape, od, op)
    if not needs_copy and overlaps(target, x):
        target, needs_copy = empty(x._shape, od, dev), True
    check_device(op, out, x)
    lay = layout(x._shape, target._stride, x._stride)
    check(dev._k.ec_unary(code, cd.code, len(x._shape), lay, target._ptr, x._ptr, p0, p1), op)
    return finish_out(out, target, needs_copy, op)


def unary_(op, code, rule, x, p0=0.0, p1=0.0):
    """In place: x = f(x)."""
    cd, od = _unary_dtypes(op, rule, x._dtype, code)
    if od is not x._dtype:
        raise RuntimeError(
            f"{op}: result type {_tname(od)} can't be cast to the desired output type "
            f"{_tname(x._dtype)}"
        )
    src = x if cd is x._dtype else cast(x, cd)
    lay = layout(x._shape, x._stride, src._stride)
    written(x, op)
    k = x._storage._device._k
    check(k.ec_unary(code, cd.code, len(x._shape), lay, x._ptr, src._ptr, p0, p1), op)
    return x


# Note [CPU-only dtypes] in Python: the complex dtypes run an op where the C
# complex list (csrc/cpu/pointwise/cpu_only_ops.h) has a loop for it -- exactly the ops PyTorch
# has on complex tensors -- and raise PyTorch's error otherwise; the wide
# unsigned integers run the few ops PyTorch 2.3+ has for them.
# unary ops of the wide unsigned integers: float results (computed in the
# default float dtype) and predicates; PyTorch has no other unary kernel
_UINT_UNARY_RULES = (FLOAT, BOOL_OUT)


def complex_unsupported(op, dtype):
    """PyTorch's exception for an op it has no complex kernel for: the op's
    ``complex_error`` fact, else the generic kernel message."""
    name = op.rstrip("_")
    entry = OPS.get(name)
    err = entry.complex_error if entry is not None else None
    if err is None:
        return not_implemented(name, dtype)
    if isinstance(err, tuple):
        return err[0](err[1])
    return NotImplementedError(err)


def _cpu_only_unary(op, rule, xd, code):
    if xd.is_complex:
        if code is None or not lib.ec_unary_has_kernel(code, xd.code):
            raise complex_unsupported(op, xd)
        if rule == BOOL_OUT:
            return xd, _bool
        if code in (lib.EC_U_ABS, lib.EC_U_ANGLE):
            return xd, xd.to_real()
        return xd, xd
    if rule not in _UINT_UNARY_RULES or op.startswith("signbit"):
        raise not_implemented(op.rstrip("_"), xd)
    if rule == BOOL_OUT:
        return D.int64, _bool  # values below 2**64 wrap; nan/inf/zero tests are unaffected
    cd = D.get_default_dtype()
    return cd, cd


# The unary ops of the C kernel's list (csrc/elementwise_ops.h): name (its
# EC_U_ code is lib.EC_U_<NAME>, from the C enum), dtype rule, whether it has an
# in-place form, other names, the dtypes PyTorch has no kernel for, and (where
# PyTorch words it specially) its error for complex inputs.
_NO_COMPLEX_CLAMP = "clamp is not supported for complex types"
_NO_COMPLEX_SIGN = (
    "Unlike NumPy, torch.sign is not intended to support complex numbers. Please use "
    "torch.sgn instead."
)
_NO_BOOL = ("_vml_cpu", _BOOL)
UNARY_OPS = [
    ("neg", NOT_BOOL, True, ("negative",), None),
    ("abs", NOT_BOOL, True, ("absolute",), ("abs_cpu", _BOOL)),
    ("sign", SAME, True, (), None, _NO_COMPLEX_SIGN),
    ("square", BOOL_AS_LONG, True, (), None),
    ("reciprocal", FLOAT, True, (), None),
    ("sqrt", FLOAT, True, (), None),
    ("rsqrt", FLOAT, True, (), None),
    ("exp", FLOAT, True, (), None),
    ("exp2", FLOAT, True, (), None),
    ("expm1", FLOAT, True, (), None),
    ("log", FLOAT, True, (), None),
    ("log2", FLOAT, True, (), None),
    ("log10", FLOAT, True, (), None),
    ("log1p", FLOAT, True, (), None),
    ("sin", FLOAT, True, (), None),
    ("cos", FLOAT, True, (), None),
    ("tan", FLOAT, True, (), None),
    ("asin", FLOAT, True, ("arcsin",), None),
    ("acos", FLOAT, True, ("arccos",), None),
    ("atan", FLOAT, True, ("arctan",), None),
    ("sinh", FLOAT, True, (), None),
    ("cosh", FLOAT, True, (), None),
    ("tanh", FLOAT, True, (), None),
    ("asinh", FLOAT, True, ("arcsinh",), None),
    ("acosh", FLOAT, True, ("arccosh",), None),
    ("atanh", FLOAT, True, ("arctanh",), None),
    ("sigmoid", FLOAT, True, (), None),
    ("relu", NOT_BOOL, True, (), None, _NO_COMPLEX_CLAMP),
    ("silu", FLOAT_ONLY, True, (), ("silu_cpu", _NON_FLOAT)),
    ("erf", FLOAT, True, (), None),
    ("erfc", FLOAT, True, (), None),
    ("erfinv", FLOAT, True, (), None),
    (
        "floor",
        SAME,
        True,
        (),
        ("floor_vml_cpu", _BOOL),
        "floor is not supported for complex inputs",
    ),
    ("ceil", SAME, True, (), ("ceil_vml_cpu", _BOOL), "ceil is not supported for complex inputs"),
    (
        "trunc",
        SAME,
        True,
        ("fix",),
        ("trunc_vml_cpu", _BOOL),
        "trunc is not supported for complex inputs",
    ),
    ("frac", SAME, True, (), ("frac_cpu", _NON_FLOAT)),
    ("lgamma", FLOAT, True, (), None),
    ("digamma", FLOAT, True, (), None),
    (
        "deg2rad",
        FLOAT,
        True,
        (),
        None,
        (RuntimeError, "deg2rad is not supported for complex tensors."),
    ),
    (
        "rad2deg",
        FLOAT,
        True,
        (),
        None,
        (RuntimeError, "rad2deg is not supported for complex tensors."),
    ),
    ("sinc", FLOAT, True, (), None),
    ("mish", FLOAT_ONLY, True, (), ("mish_cpu", _NON_FLOAT)),
    ("selu", FLOAT_ONLY, True, (), ("elu_cpu", _NON_FLOAT)),
    ("hardsigmoid", FLOAT_ONLY, True, (), ("hardsigmoid_cpu", _NON_FLOAT)),
    ("hardswish", FLOAT_ONLY, True, (), ("hardswish_cpu", _NON_FLOAT)),
    ("softsign", FLOAT, False, (), ("abs_cpu", _BOOL)),
    ("logsigmoid", FLOAT_ONLY, False, (), ("log_sigmoid_cpu", _NON_FLOAT)),
    ("isnan", BOOL_OUT, False, (), None),
    ("isinf", BOOL_OUT, False, (), None),
    ("isfinite", BOOL_OUT, False, (), None),
    ("signbit", BOOL_OUT, False, (), None, "signbit is not implemented for complex tensors."),
    ("logical_not", BOOL_OUT, False, (), None),
    ("bitwise_not", INT_ONLY, True, (), ("bitwise_not_cpu", _FLOATS)),
]

# Ops that integers keep as they are (the kernel copies).
_ROUNDING = {"floor", "ceil", "trunc"}


def _make_unary(name, code, rule):
    def impl(input, out=None):  # the public form: (input, *, out=None)
        return unary(name, code, rule, input, out)

    def impl_(input):
        return unary_(name + "_", code, rule, input)

    impl.__name__, impl_.__name__ = name, name + "_"
    return impl, impl_


for _name, _rule, _has_inplace, _aliases, _rejected, *_complex_error in UNARY_OPS:
    _impl, _impl_ = _make_unary(_name, getattr(lib, "EC_U_" + _name.upper()), _rule)
    _doc = f"Elementwise {_name}. See torch.{_name}."
    _diff = _rule not in (BOOL_OUT, INT_ONLY)
    _tags = ("pointwise", "float-result") if _rule == FLOAT else ("pointwise",)
    globals()[_name] = defop(
        f"{_name}(input, *, out=None)",
        doc=_doc,
        differentiable=_diff,
        aliases=_aliases,
        tags=_tags,
        rejects=_rejected,
        complex_error=_complex_error[0] if _complex_error else None,
    )(_impl)
    if _has_inplace:
        globals()[_name + "_"] = defop(
            f"{_name}_(input)",
            inplace_of=_name,
            doc=_doc,
            differentiable=_diff,
            tags=("pointwise",),
        )(_impl_)


def _gelu_mode(op, approximate):
    if approximate == "none":
        return 0.0
    if approximate == "tanh":
        return 1.0
    raise RuntimeError(
        f"{op}: approximate argument must be either none or tanh, got {approximate!r}"
    )


@defop(method=False, rejects=("GeluKernelImpl", _NON_FLOAT), tags=("pointwise",))
def gelu(input, approximate="none", *, out=None):
    """Gaussian error linear unit: x * Phi(x), or its tanh approximation with
    approximate='tanh'."""
    return unary("gelu", lib.EC_U_GELU, FLOAT_ONLY, input, out, _gelu_mode("gelu", approximate))


@defop(inplace_of="gelu", method=False)
def gelu_(input, approximate="none"):
    return unary_("gelu_", lib.EC_U_GELU, FLOAT_ONLY, input, _gelu_mode("gelu_", approximate))


@defop(method=False, rejects=("softplus_cpu", _NON_FLOAT), tags=("pointwise",))
def softplus(input, beta=1.0, threshold=20.0, *, out=None):
    """log(1 + exp(beta * x)) / beta, and x itself where beta * x > threshold."""
    beta, threshold = float(beta), float(threshold)
    return unary("softplus", lib.EC_U_SOFTPLUS, FLOAT_ONLY, input, out, beta, threshold)


@defop(tags=("pointwise",), rejects=("round_vml_cpu", _BOOL))
def round(input, *, decimals=0, out=None):
    """Round half to even; ``decimals`` rounds to that many decimal places."""
    if decimals == 0:
        return unary("round", lib.EC_U_ROUND, SAME, input, out)
    scale, inverse = _pow10(decimals), _pow10(-decimals)
    return mul(unary("round", lib.EC_U_ROUND, SAME, mul(input, scale), None), inverse, out=out)


def _pow10(k):
    try:
        return 10.0**k
    except OverflowError:  # as PyTorch's pow: inf (a huge |decimals| gives NaN, as there)
        return math.inf


@defop(inplace_of="round", tags=("pointwise",))
def round_(input, *, decimals=0):
    if decimals == 0:
        return unary_("round_", lib.EC_U_ROUND, SAME, input)
    return input.copy_(round(input, decimals=decimals))


def _wrap_int(v, dtype):
    """A Python int as ``dtype`` stores it (wrapping, like a C cast)."""
    if dtype is _bool:
        return int(bool(v))
    bits = 8 * dtype.itemsize
    v = int(v) & ((1 << bits) - 1)
    if dtype.is_signed and v >= 1 << (bits - 1):
        v -= 1 << bits
    return v


def _clamp_bounds(op, min, max, dtype):
    if min is None and max is None:
        raise RuntimeError(f"{op}: At least one of 'min' or 'max' must not be None")
    if dtype.category < 2:
        lo = -math.inf if min is None else float(_wrap_int(min, dtype))
        hi = math.inf if max is None else float(_wrap_int(max, dtype))
        return lo, hi
    # a NaN bound makes every element NaN, as in PyTorch (the kernel sees to it)
    lo = -math.inf if min is None else float(min)
    hi = math.inf if max is None else float(max)
    return lo, hi


def _clamp_dtype(input, min, max):
    scalars = [v for v in (min, max) if v is not None]
    return D.result_type(input, *scalars)


@defop(
    rejects=("clamp_cpu", _BOOL),
    complex_error=_NO_COMPLEX_CLAMP,
    aliases=("clip",),
    tags=("pointwise",),
)
def clamp(input, min=None, max=None, *, out=None):
    """Limit values to [min, max]; NaN stays NaN.  Bounds may be tensors."""
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        return _clamp_tensor(input, min, max, out)
    dt = _clamp_dtype(input, min, max)
    lo, hi = _clamp_bounds("clamp", min, max, dt)
    x = cast(input, dt)
    return unary("clamp", lib.EC_U_CLAMP, SAME, x, out, lo, hi)


@defop(inplace_of="clamp", tags=("pointwise",))
def clamp_(input, min=None, max=None):
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        return input.copy_(_clamp_tensor(input, min, max, None))
    dt = _clamp_dtype(input, min, max)
    if dt is not input._dtype and not D.can_cast(dt, input._dtype):
        raise RuntimeError(
            f"clamp_: result type {_tname(dt)} can't be cast to the desired output type "
            f"{_tname(input._dtype)}"
        )
    lo, hi = _clamp_bounds("clamp_", min, max, input._dtype)
    return unary_("clamp_", lib.EC_U_CLAMP, SAME, input, lo, hi)


def _clamp_tensor(input, min, max, out):
    _supported("clamp", D.result_type(*(x for x in (input, min, max) if x is not None)))
    r = input
    if min is not None:
        r = maximum(r, min) if isinstance(min, Tensor) else clamp(r, min=min)
    if max is not None:
        r = minimum(r, max) if isinstance(max, Tensor) else clamp(r, max=max)
    if out is not None:
        out.copy_(r)
        return out
    return r if r is not input else input.clone()


@defop(composite=True)
def clamp_min(input, min):
    return clamp(input, min=min)


@defop(composite=True)
def clamp_max(input, max):
    return clamp(input, max=max)


@defop(composite=True)
def clamp_min_(input, min):
    return clamp_(input, min=min)


@defop(composite=True)
def clamp_max_(input, max):
    return clamp_(input, max=max)


@defop(tags=("pointwise",))
def nan_to_num(input, nan=0.0, posinf=None, neginf=None, *, out=None):
    """Replace NaN and infinities by finite numbers (the dtype's extremes by default)."""
    if input._dtype.category < 2:
        return input.clone() if out is None else out.copy_(input)
    hi = input._dtype.max if posinf is None else posinf
    lo = -input._dtype.max if neginf is None else neginf
    r = unary("nan_to_num", lib.EC_U_NAN_TO_NUM, SAME, input, None, nan, hi)
    if lo != -hi:
        r = where(isneginf(input), lo, r)
    if out is not None:
        return out.copy_(r)
    return r


@defop(inplace_of="logical_not", differentiable=False)
def logical_not_(input):
    """In place: 1 where input is zero, else 0, in input's own dtype."""
    r = unary("logical_not_", lib.EC_U_LOGICAL_NOT, BOOL_OUT, input)
    from ember_core._tensor.copy import copy_into

    written(input, "logical_not_")
    return copy_into(input, r)


@defop(inplace_of="nan_to_num", tags=("pointwise",))
def nan_to_num_(input, nan=0.0, posinf=None, neginf=None):
    return input.copy_(nan_to_num(input, nan, posinf, neginf))


@defop(composite=True, tags=("pointwise",))
def isneginf(input):
    return logical_and(isinf(input), signbit(input))


@defop(composite=True, tags=("pointwise",))
def isposinf(input):
    return logical_and(isinf(input), logical_not(signbit(input)))


@defop(composite=True, tags=("pointwise",))
def positive(input):
    if input._dtype is _bool:
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return input


# ----------------------------------------------------------------- binary

ARITH = 0  # compute in result_type
TRUEDIV = 1  # integer results become the default float
COMPARE = 2  # compute in result_type, output bool
BITWISE = 3  # integers and bool only
FLOATFN = 4  # like TRUEDIV (atan2, copysign, xlogy)
FLOAT_ONLY_BINARY = 5  # compute in result_type, which must be floating (hypot, logaddexp)


def _binary_dtypes(op, kind, a, b, code=None):
    if a.__class__ is Tensor and b.__class__ is Tensor and a._dtype is b._dtype:
        rt = a._dtype  # fast path: same dtype needs no promotion
    else:
        rt = D.result_type(a, b)
    if not rt.base:
        return _cpu_only_binary(op, kind, rt, code)
    if kind == ARITH:
        return rt, rt
    if kind == COMPARE:
        return rt, _bool
    if kind == BITWISE:
        if rt.category == 2 or (rt is _bool and op.startswith("bitwise_") and "shift" in op):
            raise not_implemented(op.rstrip("_"), rt)
        return rt, rt
    if kind == FLOAT_ONLY_BINARY:
        if rt.category != 2:
            raise not_implemented(op.rstrip("_"), rt)
        return rt, rt
    cd = rt if rt.category >= 2 else D.get_default_dtype()
    return cd, cd


# binary ops PyTorch 2.3+ has for the wide unsigned integers (ember's C int
# loops cover them; everything else raises as there)
_UINT_BINARY = frozenset(
    {
        "mul",
        "multiply",
        "div",
        "divide",
        "true_divide",
        "eq",
        "ne",
        "bitwise_and",
        "bitwise_or",
        "bitwise_xor",
        "__and__",
        "__or__",
        "__xor__",
    }
)


def _cpu_only_binary(op, kind, rt, code):
    name = op.rstrip("_")
    if rt.is_complex:
        if kind == BITWISE or code is None or not lib.ec_binary_has_kernel(code, rt.code):
            raise complex_unsupported(op, rt)
        return rt, (_bool if kind == COMPARE else rt)
    if name not in _UINT_BINARY:
        raise not_implemented(name, rt)
    if kind in (TRUEDIV, FLOATFN):
        cd = D.get_default_dtype()
        return cd, cd
    return rt, (_bool if kind == COMPARE else rt)


def _is_complex_number(s):
    return isinstance(s, (complex, np.complexfloating))


def _scalar_args(s, dtype):
    """(double, int64) forms of a Python number for a kernel computing in dtype."""
    if dtype.category >= 2:
        return float(s), 0
    if isinstance(s, (float, np.floating)):
        if s != s or s in (math.inf, -math.inf):
            return 0.0, 0
        s = int(s)
    s = int(s)
    if not -(2**63) <= s < 2**64:
        raise RuntimeError(f"value cannot be converted to type {dtype.name} without overflow: {s}")
    if s >= 2**63:
        s -= 2**64
    return float(s), s


# Note [Broadcast plans]
# Broadcasting works out the result shape and every operand's strides in Python
# (a few microseconds, more than the kernel on small tensors).  The same operand
# geometries recur on every step of a training loop (a bias added to each
# batch, a 0-d zero in a backward formula), so the kernel's layout array is
# computed once per geometry and kept: the key is the operands' (shape, strides),
# the plan (result shape, ndim, layout) with a fresh contiguous result.  The
# cache is bounded; kernels only read layouts.
_plans = {}
_MAX_PLANS = 4096


def _plan(op, *operands):
    """(shape, ndim, layout) of a contiguous result of broadcasting operands
    (tensors); raises like broadcast_shapes when they do not broadcast."""
    shape = _shape.broadcast_shapes(*(t._shape for t in operands), op=op)
    strides = [_shape.broadcast_strides(t._shape, t._stride, shape) for t in operands]
    plan = (shape, len(shape), layout(shape, contiguous_strides(shape), *strides))
    if len(_plans) >= _MAX_PLANS:
        _plans.clear()
    key = ()
    for t in operands:
        key += (t._shape, t._stride)
    _plans[key] = plan
    return plan


_INT64_MIN, _INT64_LIMIT = -(2**63), 2**63


def binary(op, code, kind, a, b, out=None, p0=1.0):
    """Run binary kernel ``code`` on a and b (tensors or one Python number)."""
    # Fast paths (Note [Op overhead]): the common small-tensor cases -- two
    # tensors of one dtype (contiguous and of one shape, or any geometry through a
    # cached plan, Note [Broadcast plans]), or a contiguous tensor and a Python
    # number that does not change its dtype -- skip the general promotion and
    # broadcast machinery below.  They must give exactly its result.
    if out is None and (a.__class__ is Tensor or isinstance(a, Tensor)):  # (or a Parameter)
        dt = a._dtype
        bc = b.__class__
        # the kinds that compute in the operands' own dtype
        same = dt.base and (kind in (ARITH, COMPARE) or (dt.category == 2 and kind != BITWISE))
        if bc is Tensor or (bc is not float and bc is not int and isinstance(b, Tensor)):
            if same and b._dtype is dt and b._storage._device is a._storage._device:
                r_dt = _bool if kind == COMPARE else dt
                if (
                    b._shape == a._shape
                    and (a._contig or is_contig(a))
                    and (b._contig or is_contig(b))
                ):
                    r = empty(a._shape, r_dt, a._storage._device)
                    st = a._storage._device._k.ec_binary_contig(
                        code, dt.code, a._numel, r._ptr, a._ptr, b._ptr, p0
                    )
                else:  # broadcast or strided: a cached plan (Note [Broadcast plans])
                    plan = _plans.get((a._shape, a._stride, b._shape, b._stride))
                    if plan is None:
                        plan = _plan(op, a, b)
                    r = empty(plan[0], r_dt, a._storage._device)
                    st = a._storage._device._k.ec_binary(
                        code, dt.code, plan[1], plan[2], r._ptr, a._ptr, b._ptr, p0
                    )
                if st:
                    raise error(st, op)
                return r
        elif (
            same
            and (a._contig or is_contig(a))
            and (
                (bc is float and dt.category == 2)
                or (bc is int and dt.category and _INT64_MIN <= b < _INT64_LIMIT)
            )
        ):
            dev = a._storage._device
            r = empty(a._shape, _bool if kind == COMPARE else dt, dev)
            si = b if bc is int else 0
            st = dev._k.ec_binary_scalar_contig(
                code, dt.code, a._numel, r._ptr, a._ptr, b, si, 0, p0
            )
            if st:
                raise error(st, op)
            return r
    a_scalar = not isinstance(a, Tensor)
    b_scalar = not isinstance(b, Tensor)
    if a_scalar and b_scalar:
        if op not in _NUMBER_PAIR_OPS or not (is_scalar(a) and is_scalar(b)):
            raise TypeError(f"{op}(): at least one argument must be a Tensor")
        # torch.add(3, 4) is tensor(7): these few ops wrap a number as a 0-d tensor
        from ember_core._tensor.creation import tensor as _tensor_of

        a = _tensor_of(a)
        a_scalar = False
    for x, name in ((a, "input"), (b, "other")):
        if not isinstance(x, Tensor) and not is_scalar(x):
            raise TypeError(
                f"{op}(): argument '{name}' must be Tensor or Number, not {type(x).__name__}"
            )
    cd, od = _binary_dtypes(op, kind, a, b, code)
    if (a_scalar and _is_complex_number(a)) or (b_scalar and _is_complex_number(b)):
        # a complex number goes to the kernel as a 0-d tensor (the scalar path
        # passes a real double)
        from ember_core._tensor.creation import full

        dev = (b if a_scalar else a)._storage._device
        if a_scalar:
            a, a_scalar = full((), a, dtype=cd, device=dev), False
        else:
            b, b_scalar = full((), b, dtype=cd, device=dev), False
    if not (a_scalar or b_scalar) and a._storage._device is not b._storage._device:
        # a 0-d CPU tensor with a tensor on another device is taken as a number
        if b._storage._device is CPU and not b._shape and a._storage._device is not CPU:
            b, b_scalar = b.item(), True
        elif a._storage._device is CPU and not a._shape and b._storage._device is not CPU:
            a, a_scalar = a.item(), True
    if a_scalar or b_scalar:
        t, s = (b, a) if a_scalar else (a, b)
        if t._dtype is not cd:
            t = cast(t, cd)
        sf, si = _scalar_args(s, cd)
        dev = t._storage._device
        if out is None:
            r = empty(t._shape, od, dev)
            if t._contig or is_contig(t):
                check(
                    dev._k.ec_binary_scalar_contig(
                        code, cd.code, t._numel, r._ptr, t._ptr, sf, si, a_scalar, p0
                    ),
                    op,
                )
            else:
                lay = layout(t._shape, r._stride, t._stride)
                check(
                    dev._k.ec_binary_scalar(
                        code, cd.code, len(t._shape), lay, r._ptr, t._ptr, sf, si, a_scalar, p0
                    ),
                    op,
                )
            return r
        target, needs_copy = prepare_out(out, t._shape, od, op)
        if not needs_copy and overlaps(target, t):
            target, needs_copy = empty(t._shape, od, dev), True
        check_device(op, out, t)
        lay = layout(t._shape, target._stride, t._stride)
        check(
            dev._k.ec_binary_scalar(
                code, cd.code, len(t._shape), lay, target._ptr, t._ptr, sf, si, a_scalar, p0
            ),
            op,
        )
        return finish_out(out, target, needs_copy, op)

    dev = check_device(op, a, b)
    if a._dtype is not cd:
        a = cast(a, cd)
    if b._dtype is not cd:
        b = cast(b, cd)
    if (
        out is None
        and a._shape == b._shape
        and (a._contig or is_contig(a))
        and (b._contig or is_contig(b))
    ):
        r = empty(a._shape, od, dev)
        check(dev._k.ec_binary_contig(code, cd.code, a._numel, r._ptr, a._ptr, b._ptr, p0), op)
        return r
    shape = _shape.broadcast_shapes(a._shape, b._shape, op=op)
    sa = _shape.broadcast_strides(a._shape, a._stride, shape)
    sb = _shape.broadcast_strides(b._shape, b._stride, shape)
    if out is None:
        r = empty(shape, od, dev)
        target, needs_copy = r, False
    else:
        target, needs_copy = prepare_out(out, shape, od, op)
        if not needs_copy and (overlaps(target, a) or overlaps(target, b)):
            target, needs_copy = empty(shape, od, dev), True
    if out is not None:
        check_device(op, out, a, b)
    lay = layout(shape, target._stride, sa, sb)
    check(dev._k.ec_binary(code, cd.code, len(shape), lay, target._ptr, a._ptr, b._ptr, p0), op)
    if out is None:
        return target
    return finish_out(out, target, needs_copy, op)


def binary_(op, code, kind, a, b, p0=1.0):
    """In place: a = f(a, b), b broadcast to a's shape."""
    # Fast path (Note [Op overhead]): a contiguous tensor and a distinct one of the
    # same dtype and shape (gradient accumulation, optimizer updates), in a kind
    # that computes and stores in that dtype.
    if a.__class__ is Tensor and b.__class__ is Tensor and (a._contig or is_contig(a)):
        dt = a._dtype
        if (
            b._dtype is dt
            and b._shape == a._shape
            and b._storage is not a._storage
            and dt.base
            and (kind == ARITH or (dt.category == 2 and kind != BITWISE and kind != COMPARE))
            and (b._contig or is_contig(b))
            and b._storage._device is a._storage._device
        ):
            written(a, op)
            st = a._storage._device._k.ec_binary_contig(
                code, dt.code, a._numel, a._ptr, a._ptr, b._ptr, p0
            )
            if st:
                raise error(st, op)
            return a
    cd, od = _binary_dtypes(op, kind, a, b, code)
    if od is not a._dtype and not D.can_cast(od, a._dtype):
        raise RuntimeError(
            f"{op}: result type {_tname(od)} can't be cast to the desired output type "
            f"{_tname(a._dtype)}"
        )
    if od is not a._dtype or (
        isinstance(b, Tensor) and _shape.broadcast_shapes(a._shape, b._shape, op=op) != a._shape
    ):
        if isinstance(b, Tensor) and _shape.broadcast_shapes(a._shape, b._shape, op=op) != a._shape:
            raise RuntimeError(
                f"{op}: output with shape {list(a._shape)} doesn't match the broadcast shape "
                f"{list(_shape.broadcast_shapes(a._shape, b._shape, op=op))}"
            )
        r = binary(op, code, kind, a, b, None, p0)
        from ember_core._tensor.copy import copy_into

        written(a, op)
        copy_into(a, r)
        return a
    if isinstance(b, Tensor) and b._storage._device is not a._storage._device:
        check_device(op, a, b)
        if b._storage._device is CPU and not b._shape:
            b = b.item()
    if isinstance(b, Tensor):
        check_device(op, a, b)
        if b._dtype is not cd:
            b = cast(b, cd)
        if overlaps(a, b):
            b = b.clone()
        sb = _shape.broadcast_strides(b._shape, b._stride, a._shape)
        src = a if a._dtype is cd else cast(a, cd)
        lay = layout(a._shape, a._stride, src._stride, sb)
        written(a, op)
        k = a._storage._device._k
        check(k.ec_binary(code, cd.code, len(a._shape), lay, a._ptr, src._ptr, b._ptr, p0), op)
        return a
    sf, si = _scalar_args(b, cd)
    src = a if a._dtype is cd else cast(a, cd)
    lay = layout(a._shape, a._stride, src._stride)
    written(a, op)
    k = a._storage._device._k
    check(
        k.ec_binary_scalar(code, cd.code, len(a._shape), lay, a._ptr, src._ptr, sf, si, 0, p0), op
    )
    return a


def _no_bool_sub(op, a, b):
    if any(getattr(x, "_dtype", None) is _bool or isinstance(x, bool) for x in (a, b)):
        raise RuntimeError(
            f"{op}: Subtraction, the `-` operator, with a bool tensor is not supported. If "
            "you are trying to invert a mask, use the `~` or `logical_not()` operator instead."
        )


# The binary ops PyTorch also accepts with two Python numbers (torch.mul(3, 4)).
_NUMBER_PAIR_OPS = frozenset({"add", "sub", "mul", "div", "floor_divide"})


def _alpha(op, alpha, a, b):
    if alpha == 1:
        return 1.0
    if isinstance(alpha, float) and D.result_type(a, b).category < 2:
        raise RuntimeError(
            f"{op}: For integral input tensors, argument alpha must not be a floating point number."
        )
    if _is_complex_number(alpha):
        if D.result_type(a, b).category < 3:
            raise RuntimeError(
                f"{op}: For non-complex input tensors, argument alpha must not be a complex number."
            )
        return complex(alpha)
    return float(alpha)


def _scaled(other, alpha):
    """(other, p0) for a kernel whose p0 is a real double: a complex alpha is
    multiplied in first."""
    if alpha.__class__ is complex:
        return mul(other, alpha), 1.0
    return other, alpha


@defop(tags=("pointwise",))
def add(input, other, *, alpha=1, out=None):
    """input + alpha * other, broadcast and promoted."""
    if alpha == 1:  # nearly every call: no helper frames
        p0 = 1.0
    else:
        other, p0 = _scaled(other, _alpha("add", alpha, input, other))
    return binary("add", lib.EC_B_ADD, ARITH, input, other, out, p0)


@defop(inplace_of="add", tags=("pointwise",))
def add_(input, other, *, alpha=1):
    if alpha == 1:
        p0 = 1.0
    else:
        other, p0 = _scaled(other, _alpha("add_", alpha, input, other))
    return binary_("add_", lib.EC_B_ADD, ARITH, input, other, p0)


@defop(aliases=("subtract",), tags=("pointwise",))
def sub(input, other, *, alpha=1, out=None):
    """input - alpha * other."""
    _no_bool_sub("sub", input, other)
    if alpha == 1:
        p0 = 1.0
    else:
        other, p0 = _scaled(other, _alpha("sub", alpha, input, other))
    return binary("sub", lib.EC_B_SUB, ARITH, input, other, out, p0)


@defop(inplace_of="sub", tags=("pointwise",))
def sub_(input, other, *, alpha=1):
    _no_bool_sub("sub_", input, other)
    other, p0 = _scaled(other, _alpha("sub_", alpha, input, other))
    return binary_("sub_", lib.EC_B_SUB, ARITH, input, other, p0)


@defop(tags=("pointwise",))
def rsub(input, other, *, alpha=1):
    """other - alpha * input."""
    _no_bool_sub("rsub", input, other)
    alpha = _alpha("rsub", alpha, input, other)
    if alpha.__class__ is complex:
        return sub(other, mul(input, alpha))
    return binary("rsub", lib.EC_B_RSUB, ARITH, input, other, None, alpha)


@defop(aliases=("multiply",), tags=("pointwise",))
def mul(input, other, *, out=None):
    return binary("mul", lib.EC_B_MUL, ARITH, input, other, out)


@defop(inplace_of="mul", tags=("pointwise",))
def mul_(input, other):
    return binary_("mul_", lib.EC_B_MUL, ARITH, input, other)


def _div_kind(rounding_mode):
    if rounding_mode is None:
        return lib.EC_B_DIV, TRUEDIV
    if rounding_mode == "trunc":
        return lib.EC_B_TRUNC_DIV, ARITH
    if rounding_mode == "floor":
        return lib.EC_B_FLOOR_DIV, ARITH
    raise ValueError(
        f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '{rounding_mode}'"  # noqa: E501 - one string, as PyTorch spells it
    )


def _div_rounding_dtype(mode, a, b):
    rt = D.result_type(a, b)
    if rt is _bool:
        raise NotImplementedError(f"\"div_{mode}_cpu\" not implemented for 'Bool'")


@defop(aliases=("divide",), tags=("pointwise",))
def div(input, other, *, rounding_mode=None, out=None):
    """True division, or rounded with rounding_mode 'trunc' / 'floor'."""
    code, kind = _div_kind(rounding_mode)
    if rounding_mode is not None:
        _div_rounding_dtype(rounding_mode, input, other)
    return binary("div", code, kind, input, other, out)


@defop(inplace_of="div", tags=("pointwise",))
def div_(input, other, *, rounding_mode=None):
    code, kind = _div_kind(rounding_mode)
    if rounding_mode is not None:
        _div_rounding_dtype(rounding_mode, input, other)
    return binary_("div_", code, kind, input, other)


@defop(composite=True)
def true_divide(input, other, *, out=None):
    return div(input, other, out=out)


@defop(composite=True)
def true_divide_(input, other):
    return div_(input, other)


@defop(rejects=("div_floor_cpu", _BOOL), tags=("pointwise",))
def floor_divide(input, other, *, out=None):
    _supported("floor_divide", D.result_type(input, other))
    return binary("floor_divide", lib.EC_B_FLOOR_DIV, ARITH, input, other, out)


@defop(inplace_of="floor_divide", tags=("pointwise",))
def floor_divide_(input, other):
    _supported("floor_divide", D.result_type(input, other))
    return binary_("floor_divide_", lib.EC_B_FLOOR_DIV, ARITH, input, other)


@defop(rejects=("remainder_cpu", _BOOL), tags=("pointwise",))
def remainder(input, other, *, out=None):
    """Python's %: the result takes the divisor's sign."""
    _supported("remainder", D.result_type(input, other))
    return binary("remainder", lib.EC_B_REMAINDER, ARITH, input, other, out)


@defop(inplace_of="remainder", tags=("pointwise",))
def remainder_(input, other):
    _supported("remainder", D.result_type(input, other))
    return binary_("remainder_", lib.EC_B_REMAINDER, ARITH, input, other)


@defop(rejects=("fmod_cpu", _BOOL), tags=("pointwise",))
def fmod(input, other, *, out=None):
    """C's fmod: the result takes the dividend's sign."""
    _supported("fmod", D.result_type(input, other))
    return binary("fmod", lib.EC_B_FMOD, ARITH, input, other, out)


@defop(inplace_of="fmod", tags=("pointwise",))
def fmod_(input, other):
    _supported("fmod", D.result_type(input, other))
    return binary_("fmod_", lib.EC_B_FMOD, ARITH, input, other)


def _pow_scalar_exponent(input, exponent, out):
    # x ** c: a unary kernel, no broadcast machinery; integers need c >= 0
    dt = D.result_type(input, exponent)
    if _is_complex_number(exponent) or not dt.base:
        # a complex exponent, or a complex / wide unsigned input: the binary kernel
        # (or its error)
        return binary("pow", lib.EC_B_POW, ARITH, input, exponent, out)
    if dt.category < 2:
        if exponent < 0:
            raise RuntimeError("Integers to negative integer powers are not allowed.")
        return unary("pow", lib.EC_U_POW_SCALAR, SAME, cast(input, dt), out, float(exponent), 0.0)
    return unary("pow", lib.EC_U_POW_SCALAR, SAME, cast(input, dt), out, float(exponent), 0.0)


@defop(rejects=("pow", _BOOL), tags=("pointwise",))
def pow(input, exponent, *, out=None):
    """input ** exponent (either may be a number)."""
    if not (isinstance(input, Tensor) and is_scalar(exponent)):
        _supported("pow", D.result_type(input, exponent))
    if isinstance(exponent, bool) and isinstance(input, Tensor):
        if input._dtype is _bool:  # x ** True is x, x ** False is all True
            from ember_core._tensor.creation import ones_like

            r = input.clone() if exponent else ones_like(input)
            return r if out is None else out.copy_(r)
        exponent = int(exponent)
    if isinstance(input, Tensor) and is_scalar(exponent) and not isinstance(exponent, bool):
        return _pow_scalar_exponent(input, exponent, out)
    if is_scalar(input) and isinstance(exponent, Tensor):
        dt = D.result_type(input, exponent)
        if dt.category == 2 and not _is_complex_number(input):
            return unary(
                "pow", lib.EC_U_RPOW_SCALAR, SAME, cast(exponent, dt), out, float(input), 0.0
            )
    return binary("pow", lib.EC_B_POW, ARITH, input, exponent, out)


@defop(inplace_of="pow", tags=("pointwise",))
def pow_(input, exponent):
    if isinstance(exponent, Tensor):
        _supported("pow", D.result_type(input, exponent))
    if is_scalar(exponent) and not isinstance(exponent, bool):
        dt = D.result_type(input, exponent)
        if dt is not input._dtype and not D.can_cast(dt, input._dtype):
            raise RuntimeError(
                f"pow_: result type {_tname(dt)} can't be cast to the desired output type "
                f"{_tname(input._dtype)}"
            )
        if dt.category < 2 and exponent < 0:
            raise RuntimeError("Integers to negative integer powers are not allowed.")
        return unary_("pow_", lib.EC_U_POW_SCALAR, SAME, input, float(exponent), 0.0)
    return binary_("pow_", lib.EC_B_POW, ARITH, input, exponent)


@defop(composite=True)
def float_power(input, exponent, *, out=None):
    a = cast(input, D.float64) if isinstance(input, Tensor) else float(input)
    e = cast(exponent, D.float64) if isinstance(exponent, Tensor) else float(exponent)
    return pow(a, e, out=out)


# PyTorch's signatures: ops that take two tensors, never a Python number, and
# ops whose first argument must be a tensor (the operators put it first).
_TENSOR_ONLY = {
    "maximum",
    "minimum",
    "fmax",
    "fmin",
    "atan2",
    "hypot",
    "logaddexp",
    "nextafter",
    "logical_and",
    "logical_or",
    "logical_xor",
}
_TENSOR_FIRST = {"copysign", "eq", "ne", "lt", "le", "gt", "ge"}


def _require_tensors(name, input, other):
    checks = ((input, "input", 1), (other, "other", 2))
    for x, arg, pos in checks if name in _TENSOR_ONLY else checks[:1]:
        if not isinstance(x, Tensor):
            raise TypeError(
                f"{name}(): argument '{arg}' (position {pos}) must be Tensor, "
                f"not {type(x).__name__}"
            )


@defop(composite=True)
def float_power_(input, exponent):
    if input._dtype is not D.float64:
        raise RuntimeError(
            f"the base given to float_power_ has dtype {input._dtype} but the operation's result "
            "requires dtype Double"
        )
    return pow_(input, exponent)


def _binary_family(
    name, code, kind, inplace=True, doc=None, aliases=(), rejects=None, complex_error=None
):
    def impl(input, other, out=None):
        return binary(name, code, kind, input, other, out)

    if name in _TENSOR_ONLY or name in _TENSOR_FIRST:

        def impl(input, other, out=None):  # noqa: F811
            _require_tensors(name, input, other)
            return binary(name, code, kind, input, other, out)

    # comparisons, logical and bitwise results are bool/integer: never differentiable
    diff = kind not in (COMPARE, BITWISE) and name != "nextafter"
    impl.__name__ = name
    tags = ("pointwise", "float-result") if kind in (TRUEDIV, FLOATFN) else ("pointwise",)
    globals()[name] = defop(
        f"{name}(input, other, *, out=None)",
        doc=doc,
        differentiable=diff,
        aliases=aliases,
        tags=tags,
        rejects=rejects,
        complex_error=complex_error,
    )(impl)
    if inplace:

        def impl_(input, other):
            if name in _TENSOR_ONLY and not isinstance(other, Tensor):
                _require_tensors(name + "_", input, other)
            return binary_(name + "_", code, kind, input, other)

        impl_.__name__ = name + "_"
        globals()[name + "_"] = defop(
            f"{name}_(input, other)",
            inplace_of=name,
            doc=doc,
            differentiable=diff,
            tags=("pointwise",),
        )(impl_)


# The binary ops declared as a family: name (EC_B_<NAME> is its kernel code), dtype
# rule, whether it has an in-place form, other names, dtypes without a kernel.
_BINARY_OPS = [
    (
        "maximum",
        ARITH,
        False,
        (),
        None,
        (RuntimeError, "maximum not implemented for complex tensors."),
    ),
    (
        "minimum",
        ARITH,
        False,
        (),
        None,
        (RuntimeError, "minimum not implemented for complex tensors."),
    ),
    ("fmax", ARITH, False, (), None, (RuntimeError, "fmax not implemented for complex tensors.")),
    ("fmin", ARITH, False, (), None, (RuntimeError, "fmin not implemented for complex tensors.")),
    ("atan2", FLOATFN, True, ("arctan2",), None),
    ("hypot", FLOAT_ONLY_BINARY, True, (), ("hypot_cpu", _NON_FLOAT)),
    ("copysign", FLOATFN, True, (), None),
    ("xlogy", FLOATFN, True, (), None),
    ("logaddexp", FLOAT_ONLY_BINARY, False, (), ("logaddexp_cpu", _NON_FLOAT)),
    ("logaddexp2", FLOAT_ONLY_BINARY, False, (), ("logaddexp2_cpu", _NON_FLOAT)),
    ("nextafter", FLOAT_ONLY_BINARY, True, (), ("nextafter_cpu", _NON_FLOAT)),
    ("eq", COMPARE, True, (), None),
    ("ne", COMPARE, True, ("not_equal",), None),
    ("lt", COMPARE, True, ("less",), None),
    ("le", COMPARE, True, ("less_equal",), None),
    ("gt", COMPARE, True, ("greater",), None),
    ("ge", COMPARE, True, ("greater_equal",), None),
    ("logical_and", COMPARE, True, (), None),
    ("logical_or", COMPARE, True, (), None),
    ("logical_xor", COMPARE, True, (), None),
    ("bitwise_and", BITWISE, True, (), ("bitwise_and_cpu", _FLOATS)),
    ("bitwise_or", BITWISE, True, (), ("bitwise_or_cpu", _FLOATS)),
    ("bitwise_xor", BITWISE, True, (), ("bitwise_xor_cpu", _FLOATS)),
    ("bitwise_left_shift", BITWISE, True, (), ("lshift_cpu", _FLOATS | _BOOL)),
    ("bitwise_right_shift", BITWISE, True, (), ("rshift_cpu", _FLOATS | _BOOL)),
]
_KERNEL_NAMES = {"bitwise_left_shift": "LSHIFT", "bitwise_right_shift": "RSHIFT"}
for _name, _kind, _inpl, _aliases, _rejected, *_complex_error in _BINARY_OPS:
    _binary_family(
        _name,
        getattr(lib, "EC_B_" + _KERNEL_NAMES.get(_name, _name.upper())),
        _kind,
        _inpl,
        doc=f"Elementwise {_name}, broadcast. See torch.{_name}.",
        aliases=_aliases,
        rejects=_rejected,
        complex_error=_complex_error[0] if _complex_error else None,
    )


# ---------------------------------------------------------------- ternary


def _ternary_cpu_only(op, a, b, c, out, p0, rt):
    # complex lerp/addcmul/addcdiv as binary kernels (PyTorch has them; the C
    # ternary loops do not); clamp and the wide unsigned integers raise
    name = op.rstrip("_")
    if not rt.is_complex:
        raise not_implemented(name, rt)
    if name == "lerp":
        r = add(a, mul(c, sub(b, a)))
    elif name == "addcmul":
        r = add(a, mul(mul(b, c), p0))
    elif name == "addcdiv":
        r = add(a, mul(div(b, c), p0))
    else:
        raise complex_unsupported(name, rt)
    if out is None:
        return r
    written(out, op)
    from ember_core._tensor.copy import copy_into

    return copy_into(out, r)


def ternary(op, code, a, b, c, out=None, p0=1.0, cond=False):
    """Run a ternary kernel; with cond=True, ``a`` is a bool condition and b, c are
    the values (``where``)."""
    tensors = [x for x in (a, b, c) if isinstance(x, Tensor)]
    dev = check_device(op, *tensors)
    if not cond:
        # lerp's weight may be a float for any input; the inputs decide
        rt = D.result_type(a, b) if op.startswith("lerp") else D.result_type(a, b, c)
        _supported(op.rstrip("_"), rt)
        rt = D.result_type(a, b, c)
        if not rt.base:
            return _ternary_cpu_only(op, a, b, c, out, p0, rt)
    if cond:
        if not isinstance(a, Tensor) or a._dtype is not _bool:
            raise RuntimeError(
                f"{op}: expected condition to be a boolean tensor, but got a tensor with dtype {getattr(a, '_dtype', type(a).__name__)}"  # noqa: E501 - one string, as PyTorch spells it
            )
        cd = D.result_type(b, c)
        od = cd
        ops = [a, b, c]
        dtypes = [_bool, cd, cd]
    else:
        cd = D.result_type(a, b, c)
        od = cd
        ops = [a, b, c]
        dtypes = [cd, cd, cd]
    from ember_core._tensor.creation import full

    conv = []
    for x, dt in zip(ops, dtypes):
        if isinstance(x, Tensor):
            conv.append(on_device(cast(x, dt), dev))
        else:
            conv.append(full((), x, dtype=dt, device=dev))
    shape = _shape.broadcast_shapes(*(x._shape for x in conv), op=op)
    strides = [_shape.broadcast_strides(x._shape, x._stride, shape) for x in conv]
    if out is None:
        target, needs_copy = empty(shape, od, dev), False
    else:
        target, needs_copy = prepare_out(out, shape, od, op)
        if not needs_copy and any(overlaps(target, x) for x in conv):
            target, needs_copy = empty(shape, od, dev), True
    if out is not None:
        check_device(op, out, *conv)
    lay = layout(shape, target._stride, *strides)
    check(
        dev._k.ec_ternary(
            code,
            cd.code,
            len(shape),
            lay,
            target._ptr,
            conv[0]._ptr,
            conv[1]._ptr,
            conv[2]._ptr,
            p0,
        ),
        op,
    )
    if out is None:
        return target
    return finish_out(out, target, needs_copy, op)


def _where_method(self, condition, other):
    """Tensor.where(condition, other): self where condition holds, else other."""
    return where(condition, self, other)


@defop(method=_where_method, tags=("pointwise",))
def where(condition, input=None, other=None, *, out=None):
    """Elements of input where condition is true, else of other.  With only a
    condition, the indices of its non-zero elements (like nonzero(as_tuple=True))."""
    if input is None and other is None:
        from ember_core._ops.indexing.indexing import nonzero

        return nonzero(condition, as_tuple=True)
    if input is None or other is None:
        raise TypeError("where(): expected both input and other, or neither")
    if (  # the common case: a bool mask, two tensors of one dtype (Note [Broadcast plans])
        out is None
        and condition.__class__ is Tensor
        and input.__class__ is Tensor
        and other.__class__ is Tensor
        and condition._dtype is _bool
        and input._dtype is other._dtype
        and condition._storage._device is input._storage._device is other._storage._device
    ):
        plan = _plans.get(
            (
                condition._shape,
                condition._stride,
                input._shape,
                input._stride,
                other._shape,
                other._stride,
            )
        )
        if plan is None:
            plan = _plan("where", condition, input, other)
        dt = input._dtype
        r = empty(plan[0], dt, input._storage._device)
        ptrs = (condition._ptr, input._ptr, other._ptr)
        k = input._storage._device._k
        st = k.ec_ternary(lib.EC_T_WHERE, dt.code, plan[1], plan[2], r._ptr, *ptrs, 1.0)
        if st:
            raise error(st, "where")
        return r
    return ternary("where", lib.EC_T_WHERE, condition, input, other, out, cond=True)


@defop(rejects=("lerp_kernel_tensor", _NON_FLOAT), tags=("pointwise",))
def lerp(input, end, weight, *, out=None):
    """input + weight * (end - input)."""
    return ternary("lerp", lib.EC_T_LERP, input, end, weight, out)


@defop(inplace_of="lerp", tags=("pointwise",))
def lerp_(input, end, weight):
    return ternary("lerp_", lib.EC_T_LERP, input, end, weight, input)


@defop(rejects=("addcmul_cpu_out", _BOOL), tags=("pointwise",))
def addcmul(input, tensor1, tensor2, *, value=1, out=None):
    """input + value * tensor1 * tensor2."""
    return ternary("addcmul", lib.EC_T_ADDCMUL, input, tensor1, tensor2, out, float(value))


@defop(inplace_of="addcmul", tags=("pointwise",))
def addcmul_(input, tensor1, tensor2, *, value=1):
    return ternary("addcmul_", lib.EC_T_ADDCMUL, input, tensor1, tensor2, input, float(value))


@defop(tags=("pointwise",))
def addcdiv(input, tensor1, tensor2, *, value=1, out=None):
    """input + value * tensor1 / tensor2."""
    _integer_addcdiv(tensor1, tensor2)
    return ternary("addcdiv", lib.EC_T_ADDCDIV, input, tensor1, tensor2, out, float(value))


def _integer_addcdiv(tensor1, tensor2):
    if D.result_type(tensor1, tensor2).category < 2:
        raise RuntimeError(
            "Integer division with addcdiv is no longer supported, and in a future release "
            "addcdiv will perform a true division of tensor1 and tensor2."
        )


@defop(inplace_of="addcdiv", tags=("pointwise",))
def addcdiv_(input, tensor1, tensor2, *, value=1):
    _integer_addcdiv(tensor1, tensor2)
    return ternary("addcdiv_", lib.EC_T_ADDCDIV, input, tensor1, tensor2, input, float(value))
