"""Input recipes for every entry of the derivative table (_derivatives.py).

Each Case says how to call one op: ``fn(ns, *tensors)`` where ``ns`` is
``ember_core`` (or ``torch`` in parity tests), and which tensors to feed it
(``T`` specs: shape, value range, dtype, contiguity, requires_grad).  Elementwise
ops get their variants generated (plain, broadcast, non-contiguous, 0-d, in
place on a non-leaf), so a new elementwise op needs one line here.

test_derivatives.py runs gradcheck/gradgradcheck over every case and fails
when an entry of the table has no case; the parity tests run the same cases
against PyTorch.
"""

import dataclasses
import importlib.util
import zlib

import numpy as np

import ember_core as ec

# ------------------------------------------------------------------- specs


@dataclasses.dataclass(frozen=True)
class T:
    """One tensor argument: shape, value range [lo, hi), dtype, layout."""

    shape: tuple = (2, 3)
    lo: float = -2.0
    hi: float = 2.0
    dtype: str = "float64"  # or "float32", "complex128", "int64", "bool"
    grad: bool = True
    noncontig: bool = False
    away_from_zero: bool = False  # |x| >= lo-ish: keeps kinks at 0 out of reach
    values: tuple = None  # exact values (nested tuples), overrides the range

    def with_(self, **kw):
        return dataclasses.replace(self, **kw)


@dataclasses.dataclass
class Case:
    op: str  # the derivative-table entry this exercises
    name: str
    fn: object  # fn(ns, *tensors)
    inputs: tuple
    gradgrad: bool = True
    torch_fn: object = None  # when torch spells the call differently
    eps: float = 1e-6
    atol: float = 1e-5
    rtol: float = 1e-3
    parity: bool = True
    gradcheck: bool = True  # False where finite differences are meaningless (ties)
    needs: str = None  # an ember_core module the forward needs (skip until it lands)
    forward: bool = True  # False: forward mode refuses it (real results of complex values)

    def skip_reason(self):
        if self.needs and importlib.util.find_spec(f"ember_core.{self.needs}") is None:
            return f"ember_core.{self.needs} is not there yet"
        return None

    @property
    def id(self):
        return f"{self.op}-{self.name}"

    def call(self, ns, tensors, torch=False):
        fn = self.torch_fn if torch and self.torch_fn is not None else self.fn
        return fn(ns, *tensors)


def make_values(spec, rng):
    """The NumPy values of a spec (float64 or the spec's dtype)."""
    if spec.values is not None:
        return np.array(spec.values, dtype=_np_dtype(spec.dtype))
    if spec.dtype == "bool":
        return rng.random(spec.shape) > 0.5
    if spec.dtype == "int64":
        return rng.integers(int(spec.lo), int(spec.hi), size=spec.shape)
    v = rng.uniform(spec.lo, spec.hi, size=spec.shape)
    if spec.away_from_zero:
        v = np.where(np.abs(v) < 0.2, np.sign(v + 1e-9) * 0.2 + v, v)
    if spec.dtype == "complex128":  # the imaginary parts from the same range
        v = v + 1j * rng.uniform(spec.lo, spec.hi, size=spec.shape)
    return np.asarray(v, dtype=_np_dtype(spec.dtype))


def _np_dtype(name):
    return {
        "float64": np.float64,
        "float32": np.float32,
        "complex128": np.complex128,
        "int64": np.int64,
        "bool": np.bool_,
    }[name]


def rng_for(case):
    return np.random.default_rng(zlib.crc32(case.id.encode()))


def build(ns, spec, values, requires_grad=True):
    """A leaf tensor of library ``ns`` holding ``values`` laid out as ``spec`` says
    (non-contiguous: every other element of a twice-as-wide buffer)."""
    dtype = getattr(ns, spec.dtype if spec.dtype != "bool" else "bool")
    if spec.noncontig and values.ndim:
        wide = np.zeros(values.shape[:-1] + (values.shape[-1] * 2,), dtype=values.dtype)
        wide[..., ::2] = values
        t = ns.tensor(wide, dtype=dtype)[..., ::2]
        assert not t.is_contiguous()
    else:
        t = ns.tensor(values, dtype=dtype)
    if requires_grad and spec.grad and spec.dtype.startswith(("float", "complex")):
        t.requires_grad_(True)
    return t


# ----------------------------------------------------------- elementwise


def _method(name, *const, **kwargs):
    def fn(ns, *ts):
        return getattr(ts[0], name)(*ts[1:], *const, **kwargs)

    return fn


def _inplace(name, *const, **kwargs):
    def fn(ns, *ts):
        return getattr(ts[0] * 1, name + "_")(*ts[1:], *const, **kwargs)

    return fn


CASES = []


def add(op, name, fn, inputs, **kw):
    CASES.append(Case(op, name, fn, tuple(inputs), **kw))


def _tag(kwargs):
    return "".join(f"{k}={v}-" for k, v in kwargs.items())


def _prefixed(prefix):
    def add_(op, name, fn, inputs, **kw):
        add(op, prefix + name, fn, inputs, **kw)

    return add_


def _functional(name, inplace=False):
    """torch.nn.functional.<name> (ops that are not Tensor methods in torch)."""

    def fn(ns, x):
        f = getattr(ns.nn.functional, name)
        return f(x * 1, inplace=True) if inplace else f(x)

    return fn


def unary(
    op, spec=T(), inplace=True, const=(), kwargs=None, functional=False, inplace_parity=True, **kw
):
    """Plain, non-contiguous, 0-d and (if the op has one) in-place variants."""
    kwargs = kwargs or {}
    fn = _method(op, *const, **kwargs)
    add = _prefixed(_tag(kwargs))
    if functional:
        kw["torch_fn"] = _functional(op)
    add(op, "2x3", fn, [spec], **kw)
    add(op, "noncontig", fn, [spec.with_(noncontig=True)], **kw)
    add(op, "0d", fn, [spec.with_(shape=())], **kw)
    if inplace and op + "_" in ec.OPS:
        if functional:
            kw["torch_fn"] = _functional(op, inplace=True)
        if not inplace_parity:
            kw["parity"] = False  # torch has no derivative for this in-place op
        add(op, "inplace", _inplace(op, *const, **kwargs), [spec], **kw)


def binary(op, a=T(), b=T(), inplace=True, kwargs=None, scalar=None, **kw):
    """Same-shape, broadcast (both sides), non-contiguous, 0-d, mixed 0-d,
    scalar other, and in-place variants."""
    kwargs = kwargs or {}
    fn = _method(op, **kwargs)
    add = _prefixed(_tag(kwargs))
    add(op, "2x3", fn, [a, b], **kw)
    add(op, "bcast", fn, [a.with_(shape=(2, 1)), b.with_(shape=(3,))], **kw)
    add(op, "bcast-rank", fn, [a.with_(shape=(3,)), b.with_(shape=(2, 3))], **kw)
    add(op, "noncontig", fn, [a.with_(noncontig=True), b.with_(noncontig=True)], **kw)
    add(op, "0d", fn, [a.with_(shape=()), b.with_(shape=())], **kw)
    add(op, "0d-other", fn, [a, b.with_(shape=())], **kw)
    add(op, "grad-other-only", fn, [a.with_(grad=False), b], **kw)
    if scalar is not None:
        add(op, "scalar", _method(op, scalar, **kwargs), [a], **kw)
    if inplace and op + "_" in ec.OPS:
        add(op, "inplace", _inplace(op, **kwargs), [a, b], **kw)
        add(op, "inplace-bcast", _inplace(op, **kwargs), [a, b.with_(shape=(3,))], **kw)


POS = T(lo=0.5, hi=2.0)
UNIT = T(lo=-0.9, hi=0.9)
NZ = T(away_from_zero=True)

unary("neg")
unary("abs", NZ)
unary("sign", NZ)
unary("square")
unary("reciprocal", POS)
unary("sqrt", POS)
unary("rsqrt", POS)
unary("exp")
unary("exp2")
unary("expm1")
unary("log", POS)
unary("log2", POS)
unary("log10", POS)
unary("log1p", T(lo=-0.5, hi=2.0))
unary("sin")
unary("cos")
unary("tan", T(lo=-1.0, hi=1.0))
unary("asin", UNIT)
unary("acos", UNIT)
unary("atan")
unary("sinh")
unary("cosh")
unary("tanh")
unary("asinh", inplace_parity=False)
unary("acosh", T(lo=1.2, hi=3.0), inplace_parity=False)
unary("atanh", UNIT, inplace_parity=False)
unary("sigmoid")
unary("relu", NZ)
unary("silu", functional=True)
unary("erf")
unary("erfc")
unary("erfinv", UNIT)
unary("floor", T(lo=0.1, hi=0.9))
unary("ceil", T(lo=0.1, hi=0.9))
unary("trunc", T(lo=0.1, hi=0.9))
unary("round", T(lo=0.1, hi=0.4))
unary("round", T(lo=0.1, hi=0.4), inplace=False, kwargs={"decimals": 1})
unary("frac", T(lo=0.1, hi=0.9))
unary("lgamma", T(lo=0.5, hi=3.0))
unary("digamma", T(lo=0.5, hi=3.0))
unary("deg2rad")
unary("rad2deg")
unary("sinc", NZ)
unary("mish", functional=True)
# gelu and softplus are functions, not Tensor methods (as in PyTorch)
_GELU_SPECS = (
    (T(lo=-3.0, hi=3.0), ""),
    (T(lo=-3.0, hi=3.0, noncontig=True), "-noncontig"),
    (T(shape=()), "-0d"),
)
for _approx in ("none", "tanh"):
    for _spec, _tag_ in _GELU_SPECS:
        add(
            "gelu",
            f"approximate={_approx}{_tag_}",
            lambda ns, x, a=_approx: ns.gelu(x, approximate=a),
            [_spec],
            torch_fn=lambda ns, x, a=_approx: ns.nn.functional.gelu(x, approximate=a),
        )
add("gelu", "inplace", lambda ns, x: ns.gelu_(x * 1), [T()], parity=False)
add(
    "softplus",
    "2x3",
    lambda ns, x: ns.softplus(x),
    [T(lo=-3.0, hi=3.0)],
    torch_fn=lambda ns, x: ns.nn.functional.softplus(x),
)
add(
    "softplus",
    "beta=2-threshold=1",
    lambda ns, x: ns.softplus(x, 2.0, 1.0),
    [T(values=((-2.0, -0.3, 0.1), (0.3, 1.5, 2.5)))],
    torch_fn=lambda ns, x: ns.nn.functional.softplus(x, 2.0, 1.0),
)
add(
    "softplus",
    "noncontig",
    lambda ns, x: ns.softplus(x, 0.5),
    [T(noncontig=True)],
    torch_fn=lambda ns, x: ns.nn.functional.softplus(x, 0.5),
)
unary("selu", NZ, functional=True)
unary("hardsigmoid", T(lo=-2.5, hi=2.5), functional=True)
add(
    "hardsigmoid",
    "saturated",
    _method("hardsigmoid"),
    [T(values=((-4.0, 3.5), (-3.5, 4.0)))],
    torch_fn=_functional("hardsigmoid"),
)
unary("hardswish", T(lo=-2.5, hi=2.5), functional=True)
add(
    "hardswish",
    "saturated",
    _method("hardswish"),
    [T(values=((-4.0, 3.5), (-3.5, 4.0)))],
    torch_fn=_functional("hardswish"),
)
unary("softsign", NZ, inplace=False, functional=True)
unary("logsigmoid", inplace=False, torch_fn=lambda ns, x: ns.nn.functional.logsigmoid(x))
unary("nan_to_num", inplace=False)
add(
    "nan_to_num",
    "nonfinite",
    _method("nan_to_num", nan=1.0, posinf=2.0, neginf=-2.0),
    [T(values=((1.0, float("nan")), (float("inf"), -float("inf"))))],
    gradcheck=False,  # finite differences through inf/nan are meaningless
)

# clamp: scalar and tensor bounds, one or both, broadcast bounds, in place
unary("clamp", NZ.with_(lo=-1.0, hi=1.0), const=(-0.5, 0.5))
add("clamp", "min-only", lambda ns, x: x.clamp(min=-0.3), [NZ])
add("clamp", "max-only", lambda ns, x: x.clamp(max=0.3), [NZ])
add(
    "clamp",
    "tensor-bounds",
    lambda ns, x, lo, hi: x.clamp(lo, hi),
    [T(), T(lo=-1.5, hi=-0.5, shape=(3,)), T(lo=0.5, hi=1.5, shape=(2, 1))],
)
add("clamp", "tensor-min-only", lambda ns, x, lo: x.clamp(min=lo), [T(), T(shape=(3,))])
add("clamp", "tensor-max-only", lambda ns, x, hi: x.clamp(max=hi), [T(), T(shape=(3,))])
add(
    "clamp",
    "inplace-tensor",
    lambda ns, x, lo, hi: (x * 1).clamp_(lo, hi),
    [T(), T(lo=-1.5, hi=-0.5), T(lo=0.5, hi=1.5)],
)

binary("add", scalar=2.5)
binary("add", kwargs={"alpha": 2.5}, inplace=True)
binary("sub", scalar=2.5)
binary("sub", kwargs={"alpha": -1.5})
binary("rsub", inplace=False, scalar=2.5, torch_fn=lambda ns, a, b=2.5: ns.rsub(a, b))
binary(
    "rsub", inplace=False, kwargs={"alpha": 3.0}, torch_fn=lambda ns, a, b: ns.rsub(a, b, alpha=3.0)
)
binary("mul", scalar=2.5)
binary("div", b=POS, scalar=2.5)
binary("div", a=T(lo=0.1, hi=0.9), b=T(lo=1.2, hi=1.8), kwargs={"rounding_mode": "floor"})
binary("div", a=T(lo=0.1, hi=0.9), b=T(lo=1.2, hi=1.8), kwargs={"rounding_mode": "trunc"})
# torch raises "derivative for floor_divide is not implemented"; ember gives the
# zero gradient of the step function (as div(rounding_mode="floor") does in both)
binary("floor_divide", a=T(lo=0.1, hi=0.9), b=T(lo=1.2, hi=1.8), parity=False)
binary("remainder", a=T(lo=0.1, hi=0.9), b=T(lo=1.2, hi=1.8), scalar=1.5)
binary("fmod", a=T(lo=0.1, hi=0.9), b=T(lo=1.2, hi=1.8), scalar=1.5)
add("remainder", "wrapping", _method("remainder"), [T(lo=2.2, hi=2.8), T(lo=-1.8, hi=-1.2)])
add("fmod", "wrapping", _method("fmod"), [T(lo=-2.8, hi=-2.2), T(lo=1.2, hi=1.8)])
binary("pow", a=POS, b=T(lo=-1.5, hi=1.5), scalar=2.5)
add("pow", "int-exponent", _method("pow", 3), [T()])
add("pow", "zero-exponent", _method("pow", 0), [T()])
add("pow", "negative-base-int", _method("pow", 2.0), [T(lo=-2.0, hi=-0.5)])
add("pow", "scalar-base", lambda ns, e: ns.pow(2.0, e), [T()])
add("pow", "tensor-exponent-zero", lambda ns, x, e: x.pow(e * 0), [POS, T()], parity=True)
binary("maximum", inplace=False)
binary("minimum", inplace=False)
binary("fmax", inplace=False)
binary("fmin", inplace=False)
binary("atan2", b=NZ)
binary("hypot", a=NZ, b=NZ)
binary("copysign", a=NZ, b=NZ)
binary("xlogy", b=POS, scalar=2.5)
add(
    "xlogy",
    "zero-input",
    _method("xlogy"),
    [T(values=((0.0, 1.0), (0.0, 2.0)), grad=False), POS.with_(shape=(2, 2))],
)
binary("logaddexp", inplace=False)
binary("logaddexp2", inplace=False)
add(
    "maximum",
    "ties",
    _method("maximum"),
    [T(values=((1.0, 2.0), (3.0, 4.0))), T(values=((1.0, 0.0), (3.0, 5.0)))],
    gradcheck=False,
)
add(
    "minimum",
    "ties",
    _method("minimum"),
    [T(values=((1.0, 2.0), (3.0, 4.0))), T(values=((1.0, 0.0), (3.0, 5.0)))],
    gradcheck=False,
)
add(
    "fmax",
    "nan",
    _method("fmax"),
    [T(values=((float("nan"), 2.0),)), T(values=((1.0, float("nan")),))],
    gradcheck=False,
)
add(
    "fmin",
    "nan",
    _method("fmin"),
    [T(values=((float("nan"), 2.0),)), T(values=((1.0, float("nan")),))],
    gradcheck=False,
)

# ---------------------------------------------------------------- ternary

COND = T(dtype="bool", grad=False)
add("where", "2x3", lambda ns, c, x, y: ns.where(c, x, y), [COND, T(), T()])
add(
    "where",
    "bcast",
    lambda ns, c, x, y: ns.where(c, x, y),
    [COND.with_(shape=(2, 1)), T(shape=(3,)), T(shape=())],
)
add(
    "where",
    "noncontig",
    lambda ns, c, x, y: ns.where(c, x, y),
    [COND, T(noncontig=True), T(noncontig=True)],
)
add("where", "scalar-other", lambda ns, c, x: ns.where(c, x, 0.5), [COND, T()])
add("where", "scalar-input", lambda ns, c, y: ns.where(c, 0.5, y), [COND, T()])
add("where", "method", lambda ns, x, c, y: x.where(c, y), [T(), COND, T()])
add("lerp", "scalar-weight", lambda ns, a, b: a.lerp(b, 0.3), [T(), T()])
add("lerp", "tensor-weight", lambda ns, a, b, w: a.lerp(b, w), [T(), T(), T(lo=0.0, hi=1.0)])
add(
    "lerp", "bcast", lambda ns, a, b, w: a.lerp(b, w), [T(shape=(2, 1)), T(shape=(3,)), T(shape=())]
)
add(
    "lerp",
    "noncontig",
    lambda ns, a, b, w: a.lerp(b, w),
    [T(noncontig=True), T(noncontig=True), T(noncontig=True)],
)
add("lerp", "inplace", lambda ns, a, b, w: (a * 1).lerp_(b, w), [T(), T(), T()])
add("lerp", "0d", lambda ns, a, b, w: a.lerp(b, w), [T(shape=()), T(shape=()), T(shape=())])
for _op in ("addcmul", "addcdiv"):
    _den = POS if _op == "addcdiv" else T()
    add(_op, "2x3", lambda ns, a, b, c, _o=_op: getattr(a, _o)(b, c, value=0.5), [T(), T(), _den])
    add(
        _op,
        "bcast",
        lambda ns, a, b, c, _o=_op: getattr(a, _o)(b, c),
        [T(shape=(3,)), T(shape=(2, 1)), _den.with_(shape=())],
    )
    add(
        _op,
        "noncontig",
        lambda ns, a, b, c, _o=_op: getattr(a, _o)(b, c, value=2),
        [T(noncontig=True), T(noncontig=True), _den.with_(noncontig=True)],
    )
    add(
        _op,
        "0d",
        lambda ns, a, b, c, _o=_op: getattr(a, _o)(b, c),
        [T(shape=()), T(shape=()), _den.with_(shape=())],
    )
    add(
        _op,
        "inplace",
        lambda ns, a, b, c, _o=_op: getattr(a * 1, _o + "_")(b, c, value=-1.5),
        [T(), T(), _den],
    )

# ------------------------------------------------------------ copies/fills

add("copy_", "same-shape", lambda ns, a, b: (a * 2).copy_(b), [T(), T()])
add("copy_", "bcast", lambda ns, a, b: (a * 2).copy_(b), [T(), T(shape=(3,))])
add("copy_", "noncontig", lambda ns, a, b: (a * 2).copy_(b), [T(noncontig=True), T(noncontig=True)])
add(
    "copy_", "into-view", lambda ns, a, b: _copy_into_view(a, b), [T(shape=(3, 4)), T(shape=(3, 2))]
)
add(
    "copy_",
    "float32-src",
    lambda ns, a, b: (a * 2).copy_(b) * 1,
    [T(), T(dtype="float32", grad=False)],
)
add("copy_", "0d", lambda ns, a, b: (a * 2).copy_(b), [T(shape=()), T(shape=())])


def _copy_into_view(a, b):
    y = a * 1
    y[:, 1:3].copy_(b)
    return y


unary("clone", inplace=False)
unary("contiguous", inplace=False)
unary("alias", inplace=False, torch_fn=lambda ns, x: ns.ops.aten.alias(x))
add("_to_copy", "to-float32", lambda ns, x: x.to(ns.float32), [T()], eps=1e-3, atol=1e-3, rtol=1e-2)
add(
    "_to_copy",
    "float32-to-float64",
    lambda ns, x: x.to(ns.float64),
    [T(dtype="float32")],
    eps=1e-2,
    atol=1e-2,
    rtol=1e-2,
    gradgrad=False,
)
add(
    "_to_copy",
    "noncontig",
    lambda ns, x: x.to(ns.float32),
    [T(noncontig=True)],
    eps=1e-3,
    atol=1e-3,
    rtol=1e-2,
)
add("fill_", "scalar", lambda ns, a: (a * 2).fill_(1.5) * a, [T()])
add("fill_", "tensor-value", lambda ns, a, v: (a * 2).fill_(v) * a, [T(), T(shape=())])
add("fill_", "into-view", lambda ns, a, v: _fill_view(a, v), [T(), T(shape=())])
add("zero_", "2x3", lambda ns, a: (a * 2).zero_() + a, [T()])
add("zero_", "into-view", lambda ns, a: _zero_view(a), [T()])


def _fill_view(a, v):
    y = a * 2
    y[0].fill_(v)
    return y


def _zero_view(a):
    y = a * 2
    y[:, 1].zero_()
    return y


# ------------------------------------------------------------------ views

add("view", "flatten", lambda ns, x: x.view(-1), [T()])
add("view", "split-dim", lambda ns, x: x.view(3, 2, 2), [T(shape=(3, 4))])
add("view", "0d", lambda ns, x: x.view(1, 1), [T(shape=())])
add("view", "to-0d", lambda ns, x: x.view(()), [T(shape=(1,))])
add("transpose", "2d", lambda ns, x: x.transpose(0, 1), [T()])
add("transpose", "neg-dims", lambda ns, x: x.transpose(-1, -3), [T(shape=(2, 3, 4))])
add("transpose", "noncontig", lambda ns, x: x.transpose(0, 1), [T(noncontig=True)])
add("permute", "3d", lambda ns, x: x.permute(2, 0, 1), [T(shape=(2, 3, 4))])
add("permute", "tuple", lambda ns, x: x.permute((1, 0)), [T(noncontig=True)])
add("permute", "0d", lambda ns, x: x.permute(()), [T(shape=())])
add("expand", "new-dims", lambda ns, x: x.expand(4, 2, 3), [T()])
add("expand", "size-1", lambda ns, x: x.expand(2, 3), [T(shape=(2, 1))])
add("expand", "minus-one", lambda ns, x: x.expand(-1, 4), [T(shape=(2, 1))])
add("expand", "0d", lambda ns, x: x.expand(3, 2), [T(shape=())])
add("expand", "noncontig", lambda ns, x: x.expand(2, 2, 3), [T(noncontig=True)])
add("squeeze", "all", lambda ns, x: x.squeeze(), [T(shape=(2, 1, 3, 1))])
add("squeeze", "dim", lambda ns, x: x.squeeze(1), [T(shape=(2, 1, 3))])
add("squeeze", "0d", lambda ns, x: x.squeeze(), [T(shape=())])
add("unsqueeze", "mid", lambda ns, x: x.unsqueeze(1), [T()])
add("unsqueeze", "neg", lambda ns, x: x.unsqueeze(-1), [T(noncontig=True)])
add("unsqueeze", "0d", lambda ns, x: x.unsqueeze(0), [T(shape=())])
add("narrow", "dim1", lambda ns, x: x.narrow(1, 1, 2), [T(shape=(2, 4))])
add("narrow", "noncontig", lambda ns, x: x.narrow(0, 1, 1), [T(noncontig=True)])
add("narrow", "neg-dim", lambda ns, x: x.narrow(-1, 0, 2), [T(shape=(2, 3, 3))])
add("select", "dim0", lambda ns, x: x.select(0, 1), [T()])
add("select", "neg-index", lambda ns, x: x.select(1, -1), [T(noncontig=True)])
add("select", "to-0d", lambda ns, x: x.select(0, 2), [T(shape=(3,))])
add("diagonal", "main", lambda ns, x: x.diagonal(), [T(shape=(3, 3))])
add("diagonal", "offset", lambda ns, x: x.diagonal(1), [T(shape=(3, 4))])
add("diagonal", "neg-offset-dims", lambda ns, x: x.diagonal(-1, 0, 2), [T(shape=(3, 2, 4))])
add("diagonal", "noncontig", lambda ns, x: x.diagonal(), [T(noncontig=True, shape=(3, 3))])
add("__getitem__", "int", lambda ns, x: x[1], [T()])
add("__getitem__", "slice-step", lambda ns, x: x[:, ::2], [T(shape=(2, 5))])
add("__getitem__", "neg-step-free", lambda ns, x: x[-1:, 1:], [T()])
add("__getitem__", "none-ellipsis", lambda ns, x: x[None, ..., 1], [T(shape=(2, 3, 4))])
add("__getitem__", "noncontig", lambda ns, x: x[1:, 0], [T(noncontig=True, shape=(3, 3))])
add("__getitem__", "0d-ellipsis", lambda ns, x: x[...], [T(shape=())])
add(
    "__getitem__",
    "tensor-index",
    lambda ns, x, i: x[i],
    [T(shape=(4, 2)), T(dtype="int64", values=(0, 2, 0, 3), grad=False)],
    needs="_ops.indexing.advanced_index",
)
add(
    "__getitem__",
    "list-index",
    lambda ns, x: x[[1, 1, 0]],
    [T(shape=(3, 2))],
    needs="_ops.indexing.advanced_index",
)
add(
    "__getitem__",
    "bool-mask",
    lambda ns, x, m: x[m],
    [T(), T(dtype="bool", values=((True, False, True), (False, True, True)), grad=False)],
    needs="_ops.indexing.advanced_index",
)
add(
    "__getitem__",
    "mixed",
    lambda ns, x, i: x[1:, i],
    [T(shape=(3, 4)), T(dtype="int64", values=(3, 0, 3), grad=False)],
    needs="_ops.indexing.advanced_index",
)
add(
    "__setitem__",
    "slice-tensor",
    lambda ns, x, v: _setitem(x, (slice(None), slice(1, 3)), v),
    [T(shape=(3, 4)), T(shape=(3, 2))],
)
add("__setitem__", "int-bcast", lambda ns, x, v: _setitem(x, 1, v), [T(), T(shape=(3,))])
add("__setitem__", "scalar", lambda ns, x: _setitem(x, (0, 1), 2.0), [T()])
add(
    "__setitem__", "0d-value", lambda ns, x, v: _setitem(x, (slice(None), 0), v), [T(), T(shape=())]
)
add(
    "__setitem__",
    "tensor-index",
    lambda ns, x, i, v: _setitem(x, i, v),
    [T(shape=(4, 2)), T(dtype="int64", values=(0, 2), grad=False), T(shape=(2, 2))],
    needs="_ops.indexing.advanced_index",
)
add(
    "__setitem__",
    "bool-mask",
    lambda ns, x, m, v: _setitem(x, m, v),
    [
        T(),
        T(dtype="bool", values=((True, False, True), (False, True, False)), grad=False),
        T(shape=()),
    ],
    needs="_ops.indexing.advanced_index",
)


def _setitem(x, key, v):
    y = x * 1
    y[key] = v
    return y


add("as_strided", "window", lambda ns, x: x.as_strided((2, 2), (1, 2), 1), [T(shape=(3, 3))])
add("as_strided", "transpose-like", lambda ns, x: x.as_strided((3, 2), (1, 3)), [T()])
add("as_strided", "of-view", lambda ns, x: x[1:].as_strided((2,), (2,), 2), [T(shape=(3, 2))])
add("unfold", "windows", lambda ns, x: x.unfold(0, 2, 1), [T(shape=(4,))])
add("unfold", "step", lambda ns, x: x.unfold(1, 2, 2), [T(shape=(2, 5))])
add("unfold", "noncontig", lambda ns, x: x.unfold(0, 2, 1), [T(noncontig=True, shape=(3, 2))])
add("unfold", "0d", lambda ns, x: x.unfold(0, 1, 1), [T(shape=())])

# ------------------------------------------------------------ joining etc.

add("cat", "dim0", lambda ns, a, b: ns.cat([a, b]), [T(), T(shape=(1, 3))])
add(
    "cat",
    "dim1-noncontig",
    lambda ns, a, b: ns.cat((a, b), 1),
    [T(noncontig=True), T(shape=(2, 2))],
)
add(
    "cat",
    "neg-dim-3",
    lambda ns, a, b, c: ns.cat([a, b, c], -1),
    [T(shape=(2, 1)), T(shape=(2, 2)), T(shape=(2, 3))],
)
add("cat", "one-no-grad", lambda ns, a, b: ns.cat([a, b]), [T(grad=False), T()])
add("cat", "legacy-empty", lambda ns, a, b: ns.cat([a, b]), [T(), T(shape=(0,))])
add("stack", "dim0", lambda ns, a, b: ns.stack([a, b]), [T(), T()])
add("stack", "neg-dim", lambda ns, a, b: ns.stack([a, b], -1), [T(noncontig=True), T()])
add("stack", "0d", lambda ns, a, b: ns.stack([a, b]), [T(shape=()), T(shape=())])
add("flip", "dims", lambda ns, x: x.flip((0, 2)), [T(shape=(2, 3, 2))])
add("flip", "noncontig", lambda ns, x: x.flip(-1), [T(noncontig=True)])
add("roll", "flat", lambda ns, x: x.roll(2), [T()])
add("roll", "dim", lambda ns, x: x.roll(1, 1), [T(noncontig=True)])
add("roll", "multi", lambda ns, x: x.roll((1, -1), (0, 1)), [T(shape=(3, 4))])
add("repeat", "2d", lambda ns, x: x.repeat(2, 3), [T()])
add("repeat", "new-dims", lambda ns, x: x.repeat(2, 1, 2), [T(noncontig=True)])
add("repeat", "0d", lambda ns, x: x.repeat(3), [T(shape=())])
add("repeat", "tuple", lambda ns, x: x.repeat((2, 1)), [T(shape=(3,))])
for _op in ("tril", "triu"):
    add(_op, "main", _method(_op), [T(shape=(3, 4))])
    add(_op, "offset", _method(_op, -1), [T(shape=(3, 3), noncontig=True)])
    add(_op, "batched", _method(_op, 1), [T(shape=(2, 3, 3))])
    add(_op, "inplace", _inplace(_op), [T(shape=(3, 3))])

# -------------------------------------------------------------- products

add("matmul", "1d-1d", _method("matmul"), [T(shape=(3,)), T(shape=(3,))])
add("matmul", "2d-1d", _method("matmul"), [T(shape=(2, 3)), T(shape=(3,))])
add("matmul", "1d-2d", _method("matmul"), [T(shape=(2,)), T(shape=(2, 3))])
add(
    "matmul",
    "2d-2d-noncontig",
    _method("matmul"),
    [T(shape=(2, 3), noncontig=True), T(shape=(3, 2))],
)
add("matmul", "3d-2d", _method("matmul"), [T(shape=(2, 2, 3)), T(shape=(3, 2))])
add("matmul", "2d-3d", _method("matmul"), [T(shape=(2, 3)), T(shape=(2, 3, 2))])
add("matmul", "bcast-batch", _method("matmul"), [T(shape=(2, 1, 2, 3)), T(shape=(3, 3, 2))])
add("matmul", "1d-3d", _method("matmul"), [T(shape=(3,)), T(shape=(2, 3, 2))])
add("matmul", "3d-1d", _method("matmul"), [T(shape=(2, 2, 3)), T(shape=(3,))])
add("matmul", "operator", lambda ns, a, b: a @ b, [T(shape=(2, 3)), T(shape=(3, 2), grad=False)])
add("mm", "2d", _method("mm"), [T(shape=(2, 3)), T(shape=(3, 4))])
add(
    "mm",
    "noncontig",
    _method("mm"),
    [T(shape=(3, 2), noncontig=True), T(shape=(2, 2), noncontig=True)],
)
add("bmm", "3d", _method("bmm"), [T(shape=(2, 2, 3)), T(shape=(2, 3, 2))])
add("bmm", "noncontig", _method("bmm"), [T(shape=(2, 2, 3), noncontig=True), T(shape=(2, 3, 2))])
add("mv", "2d", _method("mv"), [T(shape=(2, 3)), T(shape=(3,))])
add(
    "mv",
    "noncontig",
    _method("mv"),
    [T(shape=(2, 3), noncontig=True), T(shape=(3,), noncontig=True)],
)
add("dot", "1d", _method("dot"), [T(shape=(4,)), T(shape=(4,))])
add("dot", "noncontig", _method("dot"), [T(shape=(3,), noncontig=True), T(shape=(3,))])
add("outer", "1d", _method("outer"), [T(shape=(3,)), T(shape=(2,))])
add(
    "outer",
    "noncontig",
    _method("outer"),
    [T(shape=(3,), noncontig=True), T(shape=(2,), noncontig=True)],
)
add("addmm", "2d", _method("addmm"), [T(shape=(2, 4)), T(shape=(2, 3)), T(shape=(3, 4))])
add(
    "addmm",
    "bcast-input",
    lambda ns, i, a, b: i.addmm(a, b, beta=0.5, alpha=2.0),
    [T(shape=(4,)), T(shape=(2, 3)), T(shape=(3, 4))],
)
add(
    "addmm",
    "0d-input",
    lambda ns, i, a, b: ns.addmm(i, a, b, alpha=-1),
    [T(shape=()), T(shape=(2, 3), noncontig=True), T(shape=(3, 4))],
)
add(
    "addmm",
    "inplace",
    lambda ns, i, a, b: (i * 1).addmm_(a, b, beta=2),
    [T(shape=(2, 4)), T(shape=(2, 3)), T(shape=(3, 4))],
)
add(
    "baddbmm",
    "3d",
    _method("baddbmm"),
    [T(shape=(2, 2, 4)), T(shape=(2, 2, 3)), T(shape=(2, 3, 4))],
)
add(
    "baddbmm",
    "bcast-alpha-beta",
    lambda ns, i, a, b: i.baddbmm(a, b, beta=0.5, alpha=1.5),
    [T(shape=(2, 4)), T(shape=(2, 2, 3)), T(shape=(2, 3, 4))],
)

# ------------------------------------------------------------ reductions

for _op in ("sum", "mean", "nansum"):
    add(_op, "all", _method(_op), [T()])
    add(_op, "dim", _method(_op, 1), [T(noncontig=True)])
    add(
        _op,
        "dims-keepdim",
        lambda ns, x, _o=_op: getattr(x, _o)((0, 2), keepdim=True),
        [T(shape=(2, 3, 2))],
    )
    add(_op, "neg-dim", lambda ns, x, _o=_op: getattr(x, _o)(-1), [T(shape=(2, 3, 2))])
    add(_op, "0d", _method(_op), [T(shape=())])
    add(_op, "0d-dim", lambda ns, x, _o=_op: getattr(x, _o)(0, keepdim=True), [T(shape=())])
    add(_op, "empty-dims", lambda ns, x, _o=_op: getattr(x, _o)(()), [T()], parity=_op != "nansum")
add(
    "nansum",
    "with-nan",
    _method("nansum", 1),
    [T(values=((1.0, float("nan"), 2.0), (0.5, 0.25, float("nan"))))],
    gradcheck=False,
)
add("sum", "dtype", lambda ns, x: x.sum(dtype=ns.float64), [T()])
add("prod", "all", _method("prod"), [T()])
add("prod", "dim", _method("prod", 1), [T(noncontig=True)])
add("prod", "keepdim", lambda ns, x: x.prod(0, keepdim=True), [T()])
add("prod", "0d", _method("prod"), [T(shape=())])
add("prod", "one-zero-all", _method("prod"), [T(values=((1.5, 0.0, 2.0), (0.5, -1.0, 3.0)))])
add("prod", "one-zero-dim", _method("prod", 1), [T(values=((1.5, 0.0, 2.0), (0.5, -1.0, 3.0)))])
add("prod", "two-zeros-dim", _method("prod", 1), [T(values=((0.0, 0.0, 2.0), (0.5, -1.0, 0.0)))])
add("prod", "two-zeros-all", _method("prod"), [T(values=((0.0, 0.0, 2.0), (0.5, -1.0, 1.0)))])
add(
    "prod",
    "zero-3d-dim",
    _method("prod", 2),
    [T(values=(((0.0, 2.0), (1.0, 3.0)), ((2.0, 1.5), (0.0, 0.5))))],
)
for _op in ("max", "min"):
    add(_op, "all", _method(_op), [T()])
    add(_op, "dim", lambda ns, x, _o=_op: getattr(x, _o)(1)[0], [T(noncontig=True)])
    add(
        _op,
        "dim-keepdim",
        lambda ns, x, _o=_op: getattr(x, _o)(0, keepdim=True).values,
        [T(shape=(3, 2, 2))],
    )
    add(_op, "dim-tuple", lambda ns, x, _o=_op: getattr(x, _o)(-1), [T()])
    add(_op, "0d", _method(_op), [T(shape=())])
    add(_op, "0d-dim", lambda ns, x, _o=_op: getattr(x, _o)(0)[0], [T(shape=())])
    add(_op, "binary", _method(_op), [T(), T(shape=(3,))])
    add(
        _op,
        "ties-all",
        _method(_op),
        [T(values=((1.0, 1.0), (1.0, 0.0) if _op == "max" else (1.0, 2.0)))],
        gradcheck=False,
    )
for _op in ("amax", "amin"):
    add(_op, "all", _method(_op), [T()])
    add(_op, "dim", _method(_op, 1), [T(noncontig=True)])
    add(
        _op,
        "dims-keepdim",
        lambda ns, x, _o=_op: getattr(x, _o)((0, 2), keepdim=True),
        [T(shape=(2, 3, 2))],
    )
    add(_op, "0d", _method(_op), [T(shape=())])
    add(
        _op,
        "ties",
        _method(_op, 1),
        [
            T(
                values=((1.0, 1.0, 0.0), (2.0, 2.0, 2.0))
                if _op == "amax"
                else ((0.0, 0.0, 1.0), (2.0, 2.0, 2.0))
            )
        ],
        gradcheck=False,
    )
for _op in ("var", "std"):
    add(_op, "all", _method(_op), [T()])
    add(_op, "dim", _method(_op, 1), [T(noncontig=True)])
    add(
        _op,
        "dims-keepdim",
        lambda ns, x, _o=_op: getattr(x, _o)((0, 2), keepdim=True),
        [T(shape=(2, 3, 2))],
    )
    add(_op, "biased", lambda ns, x, _o=_op: getattr(x, _o)(0, unbiased=False), [T()])
    add(_op, "correction", lambda ns, x, _o=_op: getattr(x, _o)(1, correction=2), [T(shape=(2, 4))])
    add(_op, "unbiased-positional", lambda ns, x, _o=_op: getattr(x, _o)(False), [T()])
    add(
        _op,
        "0d-biased",
        lambda ns, x, _o=_op: getattr(x, _o)(unbiased=False),
        [T(shape=())],
        gradcheck=_op == "var",
        gradgrad=False,
    )
add("norm", "fro", _method("norm"), [T()])
add("norm", "p1-dim", lambda ns, x: x.norm(1, 1), [NZ.with_(noncontig=True)])
add("norm", "p3-keepdim", lambda ns, x: x.norm(3, 0, keepdim=True), [NZ])
add("norm", "inf", lambda ns, x: x.norm(float("inf")), [T()])
add("norm", "neg-inf-dim", lambda ns, x: x.norm(float("-inf"), 1), [T()])
add("norm", "p2-dim", lambda ns, x: x.norm(2, -1), [T()])
add("norm", "0d", _method("norm"), [NZ.with_(shape=())])
add("norm", "p0", lambda ns, x: x.norm(0), [NZ], gradgrad=False)
add("norm", "zero-input", _method("norm"), [T(values=((0.0, 0.0),))], gradcheck=False)


def _VN(ns, x, **kw):
    """torch.linalg.vector_norm / ember_core.vector_norm."""
    return (ns.linalg.vector_norm if hasattr(ns, "linalg") else ns.vector_norm)(x, **kw)


add("vector_norm", "l2", lambda ns, x: _VN(ns, x), [T()])
add("vector_norm", "l1-dim", lambda ns, x: _VN(ns, x, ord=1, dim=1), [NZ.with_(noncontig=True)])
add(
    "vector_norm",
    "l3-dims-keepdim",
    lambda ns, x: _VN(ns, x, ord=3, dim=(0, 2), keepdim=True),
    [NZ.with_(shape=(2, 3, 2))],
)
add("vector_norm", "inf", lambda ns, x: _VN(ns, x, ord=float("inf"), dim=0), [T()])
add("vector_norm", "0d", lambda ns, x: _VN(ns, x), [NZ.with_(shape=())])
add("logsumexp", "dim", lambda ns, x: x.logsumexp(1), [T()])
add(
    "logsumexp",
    "dims-keepdim",
    lambda ns, x: x.logsumexp((0, 2), keepdim=True),
    [T(shape=(2, 3, 2), noncontig=True)],
)
add("logsumexp", "0d", lambda ns, x: x.logsumexp(0), [T(shape=())])
add("logsumexp", "large", lambda ns, x: (x * 500).logsumexp(1), [T()])
add("cumsum", "dim", lambda ns, x: x.cumsum(1), [T(noncontig=True)])
add("cumsum", "neg-dim", lambda ns, x: x.cumsum(-3), [T(shape=(2, 3, 2))])
add("cumsum", "0d", lambda ns, x: x.cumsum(0), [T(shape=())])
add("cumsum", "inplace", lambda ns, x: (x * 1).cumsum_(0), [T()])
add("cumprod", "dim", lambda ns, x: x.cumprod(1), [NZ.with_(noncontig=True)])
add("cumprod", "0d", lambda ns, x: x.cumprod(0), [T(shape=())])
add(
    "cumprod",
    "zeros",
    lambda ns, x: x.cumprod(1),
    [T(values=((1.5, 0.0, 2.0, 3.0), (0.0, -1.0, 0.0, 0.5)))],
)
add("cumprod", "dim0", lambda ns, x: x.cumprod(0), [NZ.with_(shape=(3, 2))])
for _op in ("cummax", "cummin"):
    add(_op, "dim", lambda ns, x, _o=_op: getattr(x, _o)(1)[0], [T(noncontig=True)])
    add(_op, "dim0", lambda ns, x, _o=_op: getattr(x, _o)(0).values, [T(shape=(3, 2, 2))])
    add(_op, "0d", lambda ns, x, _o=_op: getattr(x, _o)(0)[0], [T(shape=())])
add("logcumsumexp", "dim", lambda ns, x: x.logcumsumexp(1), [T(noncontig=True)])
add("logcumsumexp", "dim0", lambda ns, x: x.logcumsumexp(0), [T(shape=(3, 2))])
add("logcumsumexp", "0d", lambda ns, x: x.logcumsumexp(0), [T(shape=())])

# ----------------------------------------------------- dtypes (parity only)
# float32 meets float64: each gradient comes back in its input's dtype.
F32 = T(dtype="float32")
add("mul", "f32-f64", _method("mul"), [F32, T()], gradcheck=False)
add("add", "f32-f64-bcast", _method("add"), [F32.with_(shape=(3,)), T()], gradcheck=False)
add("div", "f64-f32", _method("div"), [T(), F32.with_(lo=0.5)], gradcheck=False)
add(
    "matmul",
    "f32",
    _method("matmul"),
    [F32.with_(shape=(2, 3)), F32.with_(shape=(3, 2))],
    gradcheck=False,
)
add("sum", "f32", _method("sum", 1), [F32], gradcheck=False)
add("exp", "f32-inplace", _inplace("exp"), [F32], gradcheck=False)
add("where", "f32-f64", lambda ns, c, x, y: ns.where(c, x, y), [COND, F32, T()], gradcheck=False)
add("cat", "f32-f64", lambda ns, a, b: ns.cat([a, b]), [F32, T()], gradcheck=False)

# ------------------------------------------------ complex (Note [Complex gradients])
# Complex inputs are checked as pairs of reals by gradcheck; parity with
# PyTorch's complex gradients is in test_complex_grad.py.
C = T(dtype="complex128")
CNZ = C.with_(lo=0.5, hi=1.5)  # away from zero and from the branch cuts
add("view_as_real", "plain", lambda ns, z: ns.view_as_real(z), [C], parity=False)
add("view_as_complex", "plain", lambda ns, x: ns.view_as_complex(x), [T((3, 2))], parity=False)
add("real", "complex", lambda ns, z: ns.real(z) * 1, [C], parity=False)
add("imag", "complex", lambda ns, z: ns.imag(z) * 1, [C], parity=False)
add("conj", "complex", lambda ns, z: ns.conj(z) * 1, [C], parity=False)
add("complex", "plain", lambda ns, a, b: ns.complex(a, b), [T(), T()], parity=False)
add("complex", "bcast", lambda ns, a, b: ns.complex(a, b), [T((3,)), T((2, 3))], parity=False)
add(
    "_angle",
    "complex",
    lambda ns, z: ns.angle(z),
    [CNZ],
    parity=False,
    gradgrad=False,
    forward=False,
)
for _name, _call in [
    ("mul", lambda ns, a, b: a * b),
    ("div", lambda ns, a, b: a / b),
    ("matmul", lambda ns, a, b: a @ b.transpose(0, 1)),
    ("add", lambda ns, a, b: ns.add(a, b, alpha=0.5 - 2j)),
]:
    add(_name, "complex", _call, [CNZ, CNZ], parity=False, gradgrad=False)
add("mul", "complex-real", lambda ns, a, b: a * b, [C, T()], parity=False, gradgrad=False)
for _name in ("exp", "log", "sqrt", "sin", "cos", "tanh", "sigmoid", "reciprocal", "asin"):
    add(_name, "complex", _method(_name), [CNZ], parity=False, gradgrad=False)
add("abs", "complex", _method("abs"), [CNZ], parity=False, gradgrad=False, forward=False)
add("pow", "complex", lambda ns, z: z**3, [CNZ], parity=False, gradgrad=False)
add("sum", "complex", lambda ns, z: z.sum(1), [C], parity=False)
# the FFT primitives, through torch.fft's functions (odd and even lengths)
add("_fft_c2c", "fft", lambda ns, z: ns.fft.fft(z), [C], parity=False)
add("_fft_c2c", "ifft2-ortho", lambda ns, z: ns.fft.ifft2(z, norm="ortho"), [C], parity=False)
add("_fft_r2c", "rfft-even", lambda ns, x: ns.fft.rfft(x), [T((2, 6))], parity=False)
add("_fft_r2c", "rfft-odd-trim", lambda ns, x: ns.fft.rfft(x, n=5), [T((2, 7))], parity=False)
# zero-padding goes through constant_pad_nd, which has no forward-mode rule yet
add(
    "_fft_r2c",
    "rfft-odd-pad",
    lambda ns, x: ns.fft.rfft(x, n=5),
    [T((2, 4))],
    parity=False,
    forward=False,
)
add(
    "_fft_c2r",
    "irfft-even",
    lambda ns, z: ns.fft.irfft(z, n=6),
    [C.with_(shape=(2, 4))],
    parity=False,
)
add(
    "_fft_c2r",
    "irfft-odd",
    lambda ns, z: ns.fft.irfft(z, n=7, norm="forward"),
    [C.with_(shape=(2, 4))],
    parity=False,
)
