"""Elementwise ops on CUDA against the CPU, generated from the op table.

Unary ops are every op declared as ``name(input, *, out=None)`` (less the few of
that signature that are not elementwise), binary ops every ``name(input, other,
*, out=None)``; in-place variants come from the table's ``inplace_of``.  Ops with
parameters and the ternary ones are listed below with their arguments.  Each
(op, dtype) runs over: 0-d, empty, 3-d, transposed, stepped (every other
element), offset (misaligned start), expanded, special values (nan, +-inf, -0.0)
for floats, large (2^20+3 elements, many blocks) and large transposed; binary
ops also broadcast, a 0-d tensor operand, a Python scalar and a second dtype
(type promotion); plus ``out=`` (contiguous and transposed out) and the in-place
form on contiguous and non-contiguous inputs.  A dtype the CPU refuses must be
refused on CUDA too (with the same exception type).
"""

import zlib

import numpy as np
import pytest
from cuda_helpers import (
    ALL_DTYPES,
    CUDA,
    LARGE,
    LARGE_NC_DTYPES,
    SPECIAL,
    SPECIAL_TOL,
    TOL,
    Failures,
    check_op,
    tensor,
    values,
)

import ember_core as ec
from ember_core._base import dispatch as _dispatch

SELFTEST_OK = True
pytestmark = pytest.mark.cuda

OPS = _dispatch.OPS
INPLACE = {op.inplace_of: name for name, op in OPS.items() if op.inplace_of}


def fn_of(name):
    return _dispatch.public_function(name)


# --- the op lists -------------------------------------------------------------------

NOT_ELEMENTWISE = {"inverse", "geqrf", "matmul", "dot", "kron"}  # test_cuda_linalg.py
UNARY = sorted(
    n for n, o in OPS.items() if o.signature == "(input, *, out=None)" and n not in NOT_ELEMENTWISE
)
BINARY = sorted(
    n
    for n, o in OPS.items()
    if o.signature == "(input, other, *, out=None)" and n not in NOT_ELEMENTWISE
)

# Input ranges where an op is defined and well-conditioned (default [-3, 3]).
DOMAIN = {
    **dict.fromkeys(["log", "log2", "log10", "sqrt", "rsqrt", "special_entr"], (0.05, 5.0)),
    **dict.fromkeys(["lgamma", "digamma", "_special_trigamma"], (0.1, 6.0)),
    **dict.fromkeys(["asin", "acos", "atanh", "erfinv"], (-0.95, 0.95)),
    **dict.fromkeys(["special_ndtri", "logit"], (0.02, 0.98)),
    "acosh": (1.05, 5.0),
    "log1p": (-0.9, 5.0),
    "tan": (-1.4, 1.4),
    **dict.fromkeys(
        [
            "special_bessel_y0",
            "special_bessel_y1",
            "special_modified_bessel_k0",
            "special_modified_bessel_k1",
            "special_scaled_modified_bessel_k0",
            "special_scaled_modified_bessel_k1",
        ],
        (0.1, 8.0),
    ),
}
SPECIAL_FUNCTIONS = {
    n
    for n in OPS
    if n.startswith(("special_", "_special"))
    or n in ("lgamma", "digamma", "erfinv", "i0", "polygamma", "mvlgamma", "igamma", "igammac")
}
# Second operands: nonzero divisors, small shift counts, positive where required.
OTHER_DOMAIN = {
    **dict.fromkeys(
        ["div", "true_divide", "floor_divide", "remainder", "fmod"], dict(nonzero=True)
    ),
    **dict.fromkeys(["bitwise_left_shift", "bitwise_right_shift"], dict(low=0, high=3)),
    "ldexp": dict(low=-3, high=3),
    "xlogy": dict(low=0.05, high=5.0),
    "special_xlog1py": dict(low=-0.9, high=5.0),
    "special_zeta": dict(low=0.5, high=4.0),
    "igamma": dict(low=0.1, high=5.0),
    "igammac": dict(low=0.1, high=5.0),
    "pow": dict(low=0, high=3),
    "float_power": dict(low=0, high=3),
}
FIRST_DOMAIN = {
    "special_zeta": dict(low=1.1, high=5.0),
    "igamma": dict(low=0.1, high=5.0),
    "igammac": dict(low=0.1, high=5.0),
    "pow": dict(low=0.05, high=3.0),
    "float_power": dict(low=0.05, high=3.0),
    "gcd": dict(low=-30, high=30),
    "lcm": dict(low=-12, high=12),
}


class Unary:
    """A unary case: ``call(x)`` (default: the op with ``kwargs``)."""

    def __init__(self, op, kwargs=None, domain=None, call=None, label=None, out=True):
        self.op = op
        self.kwargs = kwargs or {}
        self.domain = domain or DOMAIN.get(op, (-3.0, 3.0))
        self.call = call
        self.out = out
        self.id = label or (op + ("" if not kwargs else "-" + "-".join(map(str, kwargs.values()))))

    def fn(self, name=None):
        f = fn_of(name or self.op)
        if self.call is not None and name is None:
            return self.call
        return lambda x, **k: f(x, **self.kwargs, **k)


def _poly(name, n):
    f = fn_of(name)
    return lambda x, **k: f(x, n, **k)


PARAM_UNARY = [
    *(Unary(n, out=False) for n in ("isneginf", "isposinf", "isreal", "positive")),
    Unary("gelu"),
    Unary("gelu", {"approximate": "tanh"}),
    Unary("softplus", {"beta": 2.0, "threshold": 5.0}),
    Unary("round"),
    Unary("round", {"decimals": 2}),
    Unary("clamp", {"min": -1.0, "max": 2.0}),
    Unary("clamp", {"min": -1}),
    Unary("clamp", {"max": 1}),
    Unary("clamp_min", {"min": 0.5}),
    Unary("clamp_max", {"max": 0.5}),
    Unary("nan_to_num"),
    Unary("nan_to_num", {"nan": 1.0, "posinf": 9.0, "neginf": -9.0}),
    Unary("hardshrink", {"lambd": 0.7}),
    Unary("softshrink", {"lambd": 0.7}),
    Unary("elu", {"alpha": 1.5}),
    Unary("celu", {"alpha": 1.5}),
    Unary("leaky_relu", {"negative_slope": 0.2}),
    Unary("hardtanh", {"min_val": -0.5, "max_val": 0.5}),
    Unary("threshold", {"threshold": 0.1, "value": 20.0}),
    Unary("logit"),
    Unary("logit", {"eps": 1e-3}, domain=(-0.5, 1.5)),
    Unary("mvlgamma", {"p": 2}, domain=(1.1, 5.0)),
    Unary("pow", {"exponent": 2}),
    Unary("pow", {"exponent": 0.5}, domain=(0.05, 5.0)),
    Unary("pow", {"exponent": -1.5}, domain=(0.05, 5.0)),
    Unary("float_power", {"exponent": 2}),
    Unary("add", {"other": 2, "alpha": 3}),
    Unary("sub", {"other": 1.5}),
    Unary("mul", {"other": 3}),
    Unary("div", {"other": 4}),
    Unary("div", {"other": 3, "rounding_mode": "floor"}),
    Unary("div", {"other": 3, "rounding_mode": "trunc"}),
    Unary("rsub", {"other": 1}, out=False),
    Unary("isneginf", out=False),
    Unary("isposinf", out=False),
    Unary("polygamma", call=lambda x, **k: ec.polygamma(1, x, **k), label="polygamma-1"),
    Unary("polygamma", call=lambda x, **k: ec.polygamma(2, x, **k), label="polygamma-2"),
]
PARAM_UNARY += [
    Unary(n, call=_poly(n, 3), label=f"{n}-3", domain=(-1.0, 1.0))
    for n, o in sorted(OPS.items())
    if o.signature == "(input, n, *, out=None)"
]
for _c in PARAM_UNARY:
    if _c.op in ("polygamma",):
        _c.domain = (0.1, 5.0)

UNARY_CASES = [Unary(n) for n in UNARY] + PARAM_UNARY


def _seed(*parts):
    return zlib.crc32("/".join(map(str, parts)).encode())


def _tol(op):
    return SPECIAL_TOL if op in SPECIAL_FUNCTIONS else TOL


def _rng(*parts):
    return np.random.default_rng(_seed(*parts))


# --- unary ----------------------------------------------------------------------------

UNARY_VARIANTS = [
    ("0-d", (), "contiguous"),
    ("empty", (0,), "contiguous"),
    ("empty-3d", (2, 0, 3), "contiguous"),
    ("3-d", (3, 4, 5), "contiguous"),
    ("transposed", (3, 4, 5), "transposed"),
    ("stepped", (3, 4, 5), "stepped"),
    ("offset", (7, 9), "offset"),
    ("expanded", (4, 3, 5), "expanded"),
    ("large", (LARGE,), "contiguous"),
    ("large-transposed", (1031, 1029), "transposed"),
]


def _unary_check(case, dtype, fails):
    fn = case.fn()
    lo, hi = case.domain
    tol = _tol(case.op)
    variants = list(UNARY_VARIANTS)
    if dtype.is_floating_point:
        variants.append(("special", (len(SPECIAL),), "special"))
    for label, shape, layout in variants:
        if label == "large-transposed" and dtype not in LARGE_NC_DTYPES:
            continue
        if layout == "special":
            vals = np.array(SPECIAL, dtype=np.float64)
            layout = "contiguous"
        else:
            vals = values(shape, dtype, _rng(case.id, dtype, label), lo, hi)

        def make(dev, vals=vals, layout=layout):
            return (tensor(vals, dtype, dev, layout),), {}

        fails.run(
            label,
            lambda make=make, label=label: check_op(
                fn, make, op_name=case.op, tol=tol, where=f"{case.id}({dtype}) {label}"
            ),
        )
    return fn


def _out_and_inplace(case, dtype, fails, nargs=1, make_vals=None):
    """out= (contiguous and transposed) and the in-place form, if the op has them."""
    fn = case.fn()
    tol = _tol(case.op)
    shape = (4, 6)
    vals = (
        make_vals(shape)
        if make_vals
        else [
            values(shape, dtype, _rng(case.id, dtype, "out", i), *case.domain) for i in range(nargs)
        ]
    )
    probe = None
    try:
        probe = fn(*(tensor(v, dtype, "cpu") for v in vals))
    except Exception:  # noqa: BLE001 - dtype refused: covered by the value variants
        return
    if case.out and isinstance(probe, ec.Tensor):
        for out_layout in ("contiguous", "transposed"):

            def with_out(*args, out_layout=out_layout):
                dev = args[0].device
                if out_layout == "contiguous":
                    out = ec.empty(0, dtype=probe.dtype, device=dev)
                else:
                    out = ec.empty(shape[::-1], dtype=probe.dtype, device=dev).t()
                r = fn(*args, out=out)
                assert r is out, "out= must return the out tensor itself"
                return out

            def make(dev):
                return tuple(tensor(v, dtype, dev) for v in vals), {}

            fails.run(
                f"out={out_layout}",
                lambda w=with_out, m=make, o=out_layout: check_op(
                    w, m, op_name=case.op, tol=tol, where=f"{case.id}({dtype}) out={o}"
                ),
            )
    inplace = INPLACE.get(case.op)
    if inplace is None or case.call is not None:
        return
    f_ = fn_of(inplace)
    kwargs = case.kwargs

    def run_inplace(*args):
        r = f_(*args, **kwargs)
        assert r is args[0], f"{inplace} must return its input"
        return args[0]

    for layout in ("contiguous", "transposed", "stepped", "offset"):

        def make(dev, layout=layout):
            return (tensor(vals[0], dtype, dev, layout),) + tuple(
                tensor(v, dtype, dev) for v in vals[1:]
            ), {}

        fails.run(
            f"{inplace} {layout}",
            lambda m=make, lay=layout: check_op(
                run_inplace, m, op_name=inplace, tol=tol, where=f"{inplace}({dtype}) {lay}"
            ),
        )


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
@pytest.mark.parametrize("case", UNARY_CASES, ids=lambda c: c.id)
def test_unary(case, dtype):
    fails = Failures(f"{case.id} on CUDA ({dtype})")
    _unary_check(case, dtype, fails)
    _out_and_inplace(case, dtype, fails)
    fails.check()


# --- binary ---------------------------------------------------------------------------


class Binary:
    def __init__(self, op, kwargs=None, label=None):
        self.op = op
        self.kwargs = kwargs or {}
        self.id = label or (op + ("" if not kwargs else "-" + "-".join(map(str, kwargs.values()))))
        self.call = None
        self.out = True
        first = FIRST_DOMAIN.get(op, {})
        self.domain = (first.get("low", -3.0), first.get("high", 3.0))
        self.other = OTHER_DOMAIN.get(op, {})

    def fn(self):
        f = fn_of(self.op)
        return lambda x, y, **k: f(x, y, **self.kwargs, **k)

    def vals(self, shape, dtype, rng, other_shape=None, other_dtype=None):
        x = values(shape, dtype, rng, *self.domain)
        od = other_dtype or dtype
        o = dict(self.other)
        y = values(
            shape if other_shape is None else other_shape,
            od,
            rng,
            o.pop("low", -3.0),
            o.pop("high", 3.0),
            **o,
        )
        return x, y


BINARY_CASES = [Binary(n) for n in BINARY] + [
    Binary("add"),
    Binary("add", {"alpha": 2}),
    Binary("sub"),
    Binary("sub", {"alpha": 2}),
    Binary("div"),
    Binary("div", {"rounding_mode": "trunc"}),
    Binary("div", {"rounding_mode": "floor"}),
    Binary("pow"),
    Binary("float_power"),
    Binary("heaviside"),
    Binary("isclose", {"rtol": 0.5, "atol": 0.1}),
]
for _c in BINARY_CASES:
    if _c.op == "div":
        _c.other = dict(nonzero=True)
    if _c.op == "heaviside":
        _c.out = True
    if _c.op == "isclose":
        _c.out = False  # (no out= parameter)


def _promote_dtype(dtype):
    return ec.float32 if dtype is not ec.float32 else ec.int32


BINARY_VARIANTS = [
    # label, x shape, y shape (None: same), x layout, y layout
    ("0-d", (), (), "contiguous", "contiguous"),
    ("empty", (0,), (0,), "contiguous", "contiguous"),
    ("empty-broadcast", (2, 0, 3), (1, 3), "contiguous", "contiguous"),
    ("3-d", (3, 4, 5), None, "contiguous", "contiguous"),
    ("broadcast", (3, 1, 5), (4, 1), "contiguous", "contiguous"),
    ("0-d other", (3, 4, 5), (), "contiguous", "contiguous"),
    ("transposed", (3, 4, 5), None, "transposed", "transposed"),
    ("transposed+contiguous", (3, 4, 5), None, "transposed", "contiguous"),
    ("stepped+offset", (3, 4, 5), None, "stepped", "offset"),
    ("expanded", (4, 3, 5), None, "expanded", "contiguous"),
    ("large", (LARGE,), None, "contiguous", "contiguous"),
    ("large-broadcast", (1025, 1027), (1027,), "contiguous", "contiguous"),
    ("large-transposed", (1031, 1029), None, "transposed", "contiguous"),
]


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
@pytest.mark.parametrize("case", BINARY_CASES, ids=lambda c: c.id)
def test_binary(case, dtype):
    fails = Failures(f"{case.id} on CUDA ({dtype})")
    fn = case.fn()
    tol = _tol(case.op)
    variants = [(*v, None) for v in BINARY_VARIANTS]
    variants.append(("promotion", (3, 4, 5), None, "contiguous", "contiguous", "promote"))
    for label, xs, ys, xl, yl, extra in variants:
        if label in ("large-broadcast", "large-transposed") and dtype not in LARGE_NC_DTYPES:
            continue
        od = _promote_dtype(dtype) if extra == "promote" else dtype
        x, y = case.vals(xs, dtype, _rng(case.id, dtype, label), ys, od)

        def make(dev, x=x, y=y, xl=xl, yl=yl, od=od):
            return (tensor(x, dtype, dev, xl), tensor(y, od, dev, yl)), {}

        fails.run(
            label,
            lambda m=make, label=label: check_op(
                fn, m, op_name=case.op, tol=tol, where=f"{case.id}({dtype}) {label}"
            ),
        )
    if dtype.is_floating_point:
        x = np.array(SPECIAL)
        y = np.array(SPECIAL[::-1])

        def make_special(dev):
            return (tensor(x, dtype, dev), tensor(y, dtype, dev)), {}

        fails.run(
            "special",
            lambda: check_op(
                fn, make_special, op_name=case.op, tol=tol, where=f"{case.id}({dtype}) special"
            ),
        )
    # a Python scalar operand, and a CPU 0-d tensor with a CUDA tensor (as PyTorch allows)
    scalar = True if dtype is ec.bool else (2 if not dtype.is_floating_point else 1.5)
    xv = case.vals((3, 4), dtype, _rng(case.id, dtype, "scalar"))[0]

    def make_scalar(dev):
        return (tensor(xv, dtype, dev), scalar), {}

    fails.run(
        "python scalar",
        lambda: check_op(
            fn, make_scalar, op_name=case.op, tol=tol, where=f"{case.id}({dtype}) scalar"
        ),
    )
    yv = case.vals((), dtype, _rng(case.id, dtype, "cpu0d"))[1]

    def make_cpu_scalar_tensor(dev):
        return (tensor(xv, dtype, dev), tensor(yv, dtype, "cpu")), {}

    fails.run(
        "cpu 0-d operand",
        lambda: check_op(
            fn,
            make_cpu_scalar_tensor,
            op_name=case.op,
            tol=tol,
            where=f"{case.id}({dtype}) with a CPU 0-d tensor",
        ),
    )

    def pair(shape):
        return list(case.vals(shape, dtype, _rng(case.id, dtype, "outpair")))

    _out_and_inplace(case, dtype, fails, nargs=2, make_vals=pair)
    fails.check()


# --- ternary --------------------------------------------------------------------------


class Ternary:
    def __init__(self, op, call, label, domains=((-3, 3), (-3, 3), (-3, 3)), dtypes=None):
        self.op = op
        self.call = call
        self.id = label
        self.domains = domains
        self.dtypes = dtypes


def _cond(x):
    return x > 0


TERNARY_CASES = [
    Ternary("addcmul", lambda a, b, c, **k: ec.addcmul(a, b, c, value=0.5, **k), "addcmul"),
    Ternary(
        "addcdiv",
        lambda a, b, c, **k: ec.addcdiv(a, b, c, value=0.5, **k),
        "addcdiv",
        domains=((-3, 3), (-3, 3), (0.5, 3)),
    ),
    Ternary("lerp", lambda a, b, c, **k: ec.lerp(a, b, c, **k), "lerp-tensor-weight"),
    Ternary("lerp", lambda a, b, c, **k: ec.lerp(a, b, 0.3, **k), "lerp-scalar-weight"),
    Ternary("where", lambda a, b, c, **k: ec.where(a > 0, b, c, **k), "where"),
    Ternary("where", lambda a, b, c, **k: ec.where(a > 0, b, 2.0), "where-scalar"),
    Ternary("clamp", lambda a, b, c, **k: ec.clamp(a, b, b + 1, **k), "clamp-tensors"),
]

TERNARY_VARIANTS = [
    ("0-d", [(), (), ()]),
    ("empty", [(0,), (0,), (0,)]),
    ("3-d", [(3, 4, 5)] * 3),
    ("broadcast", [(3, 1, 5), (4, 1), (1, 1, 5)]),
    ("large", [(LARGE,)] * 3),
]


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
@pytest.mark.parametrize("case", TERNARY_CASES, ids=lambda c: c.id)
def test_ternary(case, dtype):
    fails = Failures(f"{case.id} on CUDA ({dtype})")
    for label, shapes in TERNARY_VARIANTS:
        rng = _rng(case.id, dtype, label)
        vals = [
            values(s, dtype, rng, *d, nonzero=(i == 2 and case.op == "addcdiv"))
            for i, (s, d) in enumerate(zip(shapes, case.domains))
        ]
        for layout in ("contiguous", "transposed") if label == "3-d" else ("contiguous",):

            def make(dev, vals=vals, layout=layout):
                return tuple(tensor(v, dtype, dev, layout) for v in vals), {}

            fails.run(
                f"{label} {layout}",
                lambda m=make, lab=label: check_op(
                    case.call, m, op_name=case.op, where=f"{case.id}({dtype}) {lab}"
                ),
            )
    inplace = {
        "addcmul": ec.Tensor.addcmul_,
        "addcdiv": ec.Tensor.addcdiv_,
        "lerp": ec.Tensor.lerp_,
    }.get(case.op)
    if inplace is not None and case.id != "lerp-scalar-weight":
        rng = _rng(case.id, dtype, "inplace")
        vals = [
            values((4, 6), dtype, rng, *d, nonzero=(i == 2 and case.op == "addcdiv"))
            for i, d in enumerate(case.domains)
        ]

        def run_inplace(a, b, c):
            kw = {} if case.op == "lerp" else {"value": 0.5}
            r = inplace(a, b, c, **kw)
            assert r is a
            return a

        def make_inplace(dev):
            return (
                tensor(vals[0], dtype, dev, "transposed"),
                tensor(vals[1], dtype, dev),
                tensor(vals[2], dtype, dev),
            ), {}

        fails.run(
            "in-place transposed",
            lambda: check_op(
                run_inplace, make_inplace, op_name=case.op + "_", where=f"{case.op}_({dtype})"
            ),
        )
    fails.check()


def test_op_lists_come_from_the_op_table():
    """The generated lists are not empty and hold what PyTorch calls elementwise."""
    assert {"exp", "sin", "sqrt", "sigmoid", "erfinv", "bitwise_not"} <= set(UNARY)
    assert {"mul", "maximum", "atan2", "bitwise_xor", "eq", "logaddexp"} <= set(BINARY)
    assert INPLACE["exp"] == "exp_"
    assert CUDA
    # every op the table tags `pointwise` is in one of the elementwise tables here
    tagged = getattr(_dispatch, "ops_tagged", None)
    if tagged is not None:
        listed = {c.op for c in UNARY_CASES + BINARY_CASES + TERNARY_CASES}
        listed |= set(INPLACE.values())
        complex_only = {"_angle"}  # takes complex tensors, which CUDA does not hold yet
        missing = sorted(
            op.name
            for op in tagged("pointwise")
            if op.name not in listed and op.name not in complex_only
        )
        assert not missing, f"pointwise ops without an elementwise CUDA test: {missing}"


def inplace_cases(dtype, rng):
    """In-place forms not generated above (their ops take extra arguments)."""
    from cuda_helpers import Spec, maker

    def S(*shape, low=-3, high=3, layout="contiguous", **kw):
        return Spec(values(shape, dtype, rng, low, high, **kw), dtype, layout)

    def I(vals):  # noqa: E743 - an index spec
        return Spec(np.asarray(vals, dtype=np.int64), ec.int64)

    return [
        (
            "clamp_min_ clamp_max_",
            lambda x: (x.clone().clamp_min_(0), x.clone().clamp_max_(1)),
            maker(S(4, 5, layout="transposed")),
            "clamp_min_",
        ),
        (
            "cumsum_ cumprod_",
            lambda x: (x.clone().cumsum_(1), x.clone().cumprod_(0)),
            maker(S(4, 5, low=0.5, high=1.5)),
            "cumsum_",
        ),
        (
            "float_power_ true_divide_",
            lambda x, y: (
                x.clone().float_power_(2) if x.dtype is ec.float64 else x * 0,
                x.clone().true_divide_(y) if x.dtype.is_floating_point else x * 0,
            ),
            maker(S(4, 5), S(4, 5, nonzero=True)),
            "float_power_",
        ),
        (
            "gcd_ lcm_",
            lambda x, y: (
                (x.clone().gcd_(y), x.clone().lcm_(y))
                if not x.dtype.is_floating_point and x.dtype is not ec.bool
                else x
            ),
            maker(S(4, 5, low=-20, high=20), S(4, 5, low=-20, high=20)),
            "gcd_",
        ),
        (
            "ldexp_ logit_ mvlgamma_ sgn_",
            lambda x: (
                x.clone().ldexp_(ec.ones_like(x, dtype=ec.int64))
                if x.dtype.is_floating_point
                else x,
                x.clone().logit_(0.01) if x.dtype.is_floating_point else x,
                (x.abs() + 1.5).mvlgamma_(2) if x.dtype.is_floating_point else x,
                x.clone().sgn_(),
            ),
            maker(S(4, 5, low=0.1, high=0.9)),
            "ldexp_",
        ),
        (
            "addmm-family in place",
            lambda c, a, b, v: (
                (
                    c.clone().addmv_(a, v),
                    c.clone().addr_(v, v),
                    c.clone().addbmm_(a[None], b[None]),
                    c[None].clone().baddbmm_(a[None], b[None]),
                )
                if c.dtype.is_floating_point
                else c
            ),
            maker(
                S(5, 5, low=-1, high=1),
                S(5, 5, low=-1, high=1),
                S(5, 5, low=-1, high=1),
                S(5, low=-1, high=1),
            ),
            "addmv_",
        ),
        (
            "index ops in place",
            lambda x, i, s: (
                x.clone().index_add_(0, i, s),
                x.clone().index_copy_(0, i, s),
                x.clone().index_fill_(1, i, 2),
                x.clone().index_reduce_(0, i, s, "amax"),
                x.clone().scatter_add_(0, i[:, None].expand(2, 5), s),
                x.clone().scatter_reduce_(0, i[:, None].expand(2, 5), s, "sum"),
                x.clone().masked_scatter_(x > 0, s.flatten().repeat(3)),
            ),
            maker(S(4, 5), I([3, 1]), S(2, 5)),
            "index_add_",
        ),
        (
            "view in place",
            lambda x: (
                x.clone().unsqueeze_(1).squeeze_(1),
                x.clone().swapaxes_(0, 1),
                x.clone().swapdims_(0, 1),
                x.clone().t_(),
                x.clone().resize_as_(x[:2]),
            ),
            maker(S(4, 5)),
            "unsqueeze_",
        ),
    ]


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_inplace_variants(dtype):
    from cuda_helpers import REDUCTION_TOL, run_table

    run_table(
        f"in-place forms on CUDA ({dtype})",
        inplace_cases(dtype, _rng("ip", dtype)),
        dtype,
        tol=REDUCTION_TOL,
    )
