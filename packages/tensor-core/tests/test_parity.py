"""Parity with PyTorch (CPU): type promotion and every elementwise, reduction and
matrix op over every dtype: the same result dtype and values, or an exception
of the same type on both sides."""

# The lambdas handed to compare()/run() run at once, inside the loop that binds them.
# ruff: noqa: B023

import inspect
import math

import numpy as np
import pytest
from conftest import ALL_DTYPES, to_np

import ember_core as ec
from ember_core._base import dispatch as _dispatch

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.parity

TORCH_DTYPE = {d: getattr(torch, d.name) for d in ALL_DTYPES}
EMBER_DTYPE = {v: k for k, v in TORCH_DTYPE.items()}


def values(dtype, shape=(7,), seed=0, low=-4.0, high=4.0):
    """The same values as an ember and a torch tensor (exactly representable)."""
    rng = np.random.default_rng(seed)
    if dtype is ec.bool:
        a = rng.random(shape) < 0.5
    elif dtype.is_floating_point:
        a = rng.uniform(low, high, shape).round(2)
    else:
        lo, hi = max(int(low), dtype.min), min(int(high), dtype.max)
        a = rng.integers(lo, hi + 1, shape)
    t = torch.tensor(a).to(TORCH_DTYPE[dtype])
    e = ec.from_numpy(t.float().numpy() if dtype is ec.bfloat16 else t.numpy().copy()).to(dtype)
    return e, t


def outcome(fn):
    try:
        return fn(), None
    except Exception as exc:  # noqa: BLE001 - the type is what we compare
        return None, exc


def torch_np(t):
    if t.dtype == torch.bfloat16:
        t = t.float()
    return t.numpy()


def assert_same(op, er, tr, tol=None):
    if isinstance(tr, tuple):
        assert isinstance(er, tuple) and len(er) == len(tr), op
        for a, b in zip(er, tr):
            assert_same(op, a, b, tol)
        return
    if not isinstance(tr, torch.Tensor):
        assert er == pytest.approx(tr, nan_ok=True), op
        return
    assert isinstance(er, ec.Tensor), f"{op}: ember returned {type(er).__name__}"
    assert er.dtype is EMBER_DTYPE[tr.dtype], f"{op}: dtype {er.dtype} vs torch {tr.dtype}"
    assert tuple(er.shape) == tuple(tr.shape), (
        f"{op}: shape {tuple(er.shape)} vs torch {tuple(tr.shape)}"
    )
    a, b = to_np(er), torch_np(tr)
    if er.dtype.is_floating_point:
        rtol = (
            tol
            or {ec.float16: 2e-3, ec.bfloat16: 1.6e-2, ec.float32: 2e-5, ec.float64: 1e-10}[
                er.dtype
            ]
        )
        np.testing.assert_allclose(
            a.astype(np.float64),
            b.astype(np.float64),
            rtol=rtol,
            atol=rtol,
            equal_nan=True,
            err_msg=op,
        )
    else:
        np.testing.assert_array_equal(a, b, err_msg=op)


def compare(op, efn, tfn, tol=None):
    er, eexc = outcome(efn)
    tr, texc = outcome(tfn)
    if texc is not None:
        assert eexc is not None, (
            f"{op}: torch raised {type(texc).__name__}: {texc}, ember returned {er!r}"
        )
        assert isinstance(eexc, type(texc)), (
            f"{op}: torch raised {type(texc).__name__} ({texc}), "
            f"ember {type(eexc).__name__} ({eexc})"
        )
        return
    assert eexc is None, f"{op}: ember raised {type(eexc).__name__}: {eexc}"
    assert_same(op, er, tr, tol)


# ------------------------------------------------------------ type promotion

SCALARS = [True, 3, -2, 2.5, -0.0]


@pytest.mark.parametrize("a", ALL_DTYPES, ids=str)
@pytest.mark.parametrize("b", ALL_DTYPES, ids=str)
def test_promote_types_matches_torch(a, b):
    assert TORCH_DTYPE[ec.promote_types(a, b)] == torch.promote_types(
        TORCH_DTYPE[a], TORCH_DTYPE[b]
    )


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_result_type_with_scalars_and_0d_matches_torch(dtype):
    e, t = values(dtype, (3,))
    for s in SCALARS:
        assert TORCH_DTYPE[ec.result_type(e, s)] == torch.result_type(t, s), s
        assert TORCH_DTYPE[ec.result_type(s, e)] == torch.result_type(s, t), s
    for other in ALL_DTYPES:
        e0, t0 = values(other, ())
        assert TORCH_DTYPE[ec.result_type(e, e0)] == torch.result_type(t, t0)
        assert TORCH_DTYPE[ec.result_type(e0, e)] == torch.result_type(t0, t)
        for s in SCALARS:
            assert TORCH_DTYPE[ec.result_type(e0, s)] == torch.result_type(t0, s), (other, s)


# --------------------------------------------------------------- elementwise


def _unary(op):
    """A pointwise op callable on one tensor (every other parameter has a default)."""
    if op.inplace_of or op.params[:1] != ("input",):
        return False
    sig = inspect.signature(_dispatch.public_function(op.name))
    return all(p.name == "input" or p.default is not p.empty for p in sig.parameters.values())


# the unary pointwise ops of the table that PyTorch has at the top level
UNARY = [op.name for op in ec.ops_tagged("pointwise") if _unary(op) and hasattr(torch, op.name)]


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
@pytest.mark.parametrize("name", UNARY)
def test_unary_matches_torch(name, dtype):
    low = 0.05 if name in ("log", "log2", "log10", "sqrt", "rsqrt", "lgamma", "digamma") else -0.95
    high = 0.95 if name in ("asin", "acos", "atanh", "erfinv") else 4.0
    if name == "acosh":
        low, high = 1.0, 5.0
    e, t = values(dtype, (9,), low=low, high=high)
    compare(name, lambda: getattr(ec, name)(e), lambda: getattr(torch, name)(t))
    if hasattr(torch.Tensor, name + "_"):
        e2, t2 = e.clone(), t.clone()
        compare(name + "_", lambda: getattr(e2, name + "_")(), lambda: getattr(t2, name + "_")())


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
@pytest.mark.parametrize(
    "name, kwargs",
    [
        ("gelu", {}),
        ("gelu", {"approximate": "tanh"}),
        ("softplus", {}),
        ("softplus", {"beta": 2.0, "threshold": 1.0}),
        ("silu", {}),
        ("mish", {}),
        ("selu", {}),
        ("hardsigmoid", {}),
        ("hardswish", {}),
        ("logsigmoid", {}),
        ("softsign", {}),
    ],
)
def test_activation_matches_torch(name, kwargs, dtype):
    e, t = values(dtype, (11,))
    fn = getattr(ec, name)
    compare(name, lambda: fn(e, **kwargs), lambda: getattr(torch.nn.functional, name)(t, **kwargs))


BINARY = [
    "add",
    "sub",
    "mul",
    "div",
    "floor_divide",
    "remainder",
    "fmod",
    "pow",
    "maximum",
    "minimum",
    "fmax",
    "fmin",
    "atan2",
    "hypot",
    "copysign",
    "xlogy",
    "logaddexp",
    "eq",
    "ne",
    "lt",
    "le",
    "gt",
    "ge",
    "logical_and",
    "logical_or",
    "logical_xor",
    "bitwise_and",
    "bitwise_or",
    "bitwise_xor",
    "bitwise_left_shift",
    "bitwise_right_shift",
]
# Divisions by zero differ between ember (which raises for integers) and torch
# (which crashes or returns garbage), so divisors avoid zero.
NONZERO_RHS = {"div", "floor_divide", "remainder", "fmod"}


@pytest.mark.parametrize("b_dtype", ALL_DTYPES, ids=str)
@pytest.mark.parametrize("a_dtype", ALL_DTYPES, ids=str)
def test_binary_promotion_and_values_match_torch(a_dtype, b_dtype):
    ea, ta = values(a_dtype, (2, 5), seed=1)
    eb, tb = values(b_dtype, (5,), seed=2, low=1.0, high=4.0)
    for name in BINARY:
        if name == "pow" and not a_dtype.is_floating_point and not b_dtype.is_floating_point:
            eb2, tb2 = (
                ec.abs(eb) if b_dtype is not ec.bool else eb,
                tb.abs() if b_dtype is not ec.bool else tb,
            )
        else:
            eb2, tb2 = eb, tb
        if name in ("bitwise_left_shift", "bitwise_right_shift") and (
            a_dtype.is_signed and not a_dtype.is_floating_point
        ):
            # shifting negative numbers left is undefined in C++: torch's result is the compiler's
            continue
        compare(name, lambda: getattr(ec, name)(ea, eb2), lambda: getattr(torch, name)(ta, tb2))


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
@pytest.mark.parametrize("scalar", [True, 3, -2, 2.5])
def test_binary_with_python_scalars_match_torch(dtype, scalar):
    e, t = values(dtype, (6,), seed=3, low=1.0, high=5.0)
    for name in BINARY:
        if name in NONZERO_RHS and scalar in (0, False):
            continue
        compare(
            f"{name}(t, {scalar!r})",
            lambda: getattr(ec, name)(e, scalar),
            lambda: getattr(torch, name)(t, scalar),
        )
    ops = [
        "__add__",
        "__radd__",
        "__sub__",
        "__rsub__",
        "__mul__",
        "__rmul__",
        "__truediv__",
        "__rtruediv__",
        "__floordiv__",
        "__rfloordiv__",
        "__mod__",
        "__rmod__",
        "__pow__",
        "__rpow__",
        "__and__",
        "__rand__",
        "__or__",
        "__ror__",
        "__xor__",
        "__rxor__",
        "__eq__",
        "__lt__",
        "__ge__",
    ]
    for name in ops:
        compare(
            f"{name}({scalar!r})",
            lambda: getattr(e, name)(scalar),
            lambda: getattr(t, name)(scalar),
        )


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
@pytest.mark.parametrize("other", [ec.bool, ec.int64, ec.float32, ec.float64])
def test_inplace_casting_rules_match_torch(dtype, other):
    for name in [
        "add_",
        "sub_",
        "mul_",
        "div_",
        "remainder_",
        "pow_",
        "bitwise_and_",
        "eq_",
        "lt_",
        "logical_and_",
    ]:
        e, t = values(dtype, (4,), seed=4, low=1.0, high=3.0)
        o, to = values(other, (4,), seed=5, low=1.0, high=3.0)
        compare(name, lambda: getattr(e, name)(o), lambda: getattr(t, name)(to))


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_ternary_matches_torch(dtype):
    a, ta = values(dtype, (3, 4), seed=6)
    b, tb = values(dtype, (4,), seed=7, low=1.0, high=3.0)
    c, tc = values(dtype, (3, 1), seed=8, low=1.0, high=3.0)
    m, tm = values(ec.bool, (3, 4), seed=9)
    compare("where", lambda: ec.where(m, a, b), lambda: torch.where(tm, ta, tb))
    compare("where scalar", lambda: ec.where(m, a, 1.5), lambda: torch.where(tm, ta, 1.5))
    compare("clamp", lambda: ec.clamp(a, -1, 2), lambda: torch.clamp(ta, -1, 2))
    compare("clamp float", lambda: ec.clamp(a, -1.5, 2.5), lambda: torch.clamp(ta, -1.5, 2.5))
    compare("clamp tensors", lambda: ec.clamp(a, b, c), lambda: torch.clamp(ta, tb, tc))
    compare("clamp min only", lambda: ec.clamp(a, min=0), lambda: torch.clamp(ta, min=0))
    compare("lerp", lambda: ec.lerp(a, b, c), lambda: torch.lerp(ta, tb, tc))
    compare("lerp scalar", lambda: ec.lerp(a, b, 0.25), lambda: torch.lerp(ta, tb, 0.25))
    compare(
        "addcmul", lambda: ec.addcmul(a, b, c, value=2), lambda: torch.addcmul(ta, tb, tc, value=2)
    )
    compare(
        "addcdiv",
        lambda: ec.addcdiv(a, b, c, value=0.5),
        lambda: torch.addcdiv(ta, tb, tc, value=0.5),
    )


# ---------------------------------------------------------------- reductions


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_reductions_match_torch(dtype):
    e, t = values(dtype, (3, 4, 5), seed=10)
    cases = [
        ("sum", {}),
        ("sum", {"dim": 1}),
        ("sum", {"dim": (0, 2), "keepdim": True}),
        ("sum", {"dtype": ec.float64}),
        ("mean", {}),
        ("mean", {"dim": -1}),
        ("prod", {"dim": 1}),
        ("prod", {}),
        ("max", {}),
        ("max", {"dim": 1}),
        ("min", {"dim": 0, "keepdim": True}),
        ("amax", {"dim": (0, 1)}),
        ("amin", {}),
        ("argmax", {}),
        ("argmax", {"dim": 2}),
        ("argmin", {"dim": 1, "keepdim": True}),
        ("var", {}),
        ("var", {"dim": 1, "correction": 0}),
        ("std", {"dim": (0, 2)}),
        ("std", {"unbiased": False}),
        ("norm", {}),
        ("norm", {"p": 1, "dim": 1}),
        ("norm", {"p": math.inf}),
        ("logsumexp", {"dim": 1}),
        ("all", {}),
        ("all", {"dim": 1}),
        ("any", {"dim": 0}),
        ("count_nonzero", {}),
        ("count_nonzero", {"dim": 2}),
        ("cumsum", {"dim": 1}),
        ("cumprod", {"dim": 2}),
        ("cummax", {"dim": 0}),
        ("cummin", {"dim": 1}),
        ("logcumsumexp", {"dim": 1}),
        ("nansum", {}),
        ("aminmax", {}),
    ]
    for name, kw in cases:
        tkw = {k: (TORCH_DTYPE[v] if isinstance(v, ec.dtype) else v) for k, v in kw.items()}
        compare(
            f"{name}{kw}",
            lambda: getattr(ec, name)(e, **kw),
            lambda: getattr(torch, name)(t, **tkw),
            tol=1e-2 if dtype in (ec.float16, ec.bfloat16) else None,
        )


def test_reductions_of_empty_tensors_match_torch():
    e, t = ec.zeros(0, 3), torch.zeros(0, 3)
    for name, kw in [
        ("sum", {}),
        ("sum", {"dim": 0}),
        ("prod", {"dim": 0}),
        ("mean", {"dim": 0}),
        ("amax", {"dim": 1}),
        ("max", {}),
        ("max", {"dim": 0}),
        ("argmax", {}),
        ("all", {}),
        ("any", {}),
        ("std", {"dim": 0}),
        ("logsumexp", {"dim": 0}),
        ("norm", {}),
        ("count_nonzero", {}),
    ]:
        compare(
            f"{name}{kw}", lambda: getattr(ec, name)(e, **kw), lambda: getattr(torch, name)(t, **kw)
        )


# -------------------------------------------------------------- matrix ops


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_matrix_ops_match_torch(dtype):
    a, ta = values(dtype, (3, 4), seed=11)
    b, tb = values(dtype, (4, 2), seed=12)
    v, tv = values(dtype, (4,), seed=13)
    w, tw = values(dtype, (3,), seed=14)
    x, tx = values(dtype, (2, 3, 4), seed=15)
    y, ty = values(dtype, (2, 4, 2), seed=16)
    c, tc = values(dtype, (3, 2), seed=17)
    tol = 2e-2 if dtype in (ec.float16, ec.bfloat16) else None
    compare("matmul", lambda: a @ b, lambda: ta @ tb, tol)
    compare("matmul T", lambda: b.T @ a.T, lambda: tb.T @ ta.T, tol)
    compare("mv", lambda: ec.mv(a, v), lambda: torch.mv(ta, tv), tol)
    compare("dot", lambda: ec.dot(v, v), lambda: torch.dot(tv, tv), tol)
    compare("outer", lambda: ec.outer(w, v), lambda: torch.outer(tw, tv), tol)
    compare("bmm", lambda: ec.bmm(x, y), lambda: torch.bmm(tx, ty), tol)
    compare("matmul broadcast", lambda: ec.matmul(x, b), lambda: torch.matmul(tx, tb), tol)
    compare("matmul vec", lambda: ec.matmul(v, b), lambda: torch.matmul(tv, tb), tol)
    compare(
        "addmm",
        lambda: ec.addmm(c, a, b, beta=2, alpha=1),
        lambda: torch.addmm(tc, ta, tb, beta=2, alpha=1),
        tol,
    )
    compare("baddbmm", lambda: ec.baddbmm(c, x, y), lambda: torch.baddbmm(tc, tx, ty), tol)
    compare(
        "einsum",
        lambda: ec.einsum("bij,jk->bik", x, b),
        lambda: torch.einsum("bij,jk->bik", tx, tb),
        tol,
    )


# ------------------------------------------------------------ shape ops


@pytest.mark.parametrize("dtype", [ec.bool, ec.int32, ec.float16, ec.bfloat16, ec.float32], ids=str)
def test_joining_and_shape_ops_match_torch(dtype):
    a, ta = values(dtype, (3, 4), seed=18)
    b, tb = values(dtype, (2, 4), seed=19)
    compare("cat", lambda: ec.cat([a, b]), lambda: torch.cat([ta, tb]))
    compare("stack", lambda: ec.stack([a, a], dim=1), lambda: torch.stack([ta, ta], dim=1))
    compare("split", lambda: ec.split(a, 2, dim=1), lambda: torch.split(ta, 2, dim=1))
    compare("chunk", lambda: ec.chunk(a, 2), lambda: torch.chunk(ta, 2))
    compare("flip", lambda: ec.flip(a, (0, 1)), lambda: torch.flip(ta, (0, 1)))
    compare("roll", lambda: ec.roll(a, 1, 1), lambda: torch.roll(ta, 1, 1))
    compare("roll flat", lambda: ec.roll(a, 5), lambda: torch.roll(ta, 5))
    compare("repeat", lambda: a.repeat(2, 1, 3), lambda: ta.repeat(2, 1, 3))
    compare("tile", lambda: ec.tile(a, (2,)), lambda: torch.tile(ta, (2,)))
    compare("tril", lambda: ec.tril(a, -1), lambda: torch.tril(ta, -1))
    compare("triu", lambda: ec.triu(a, 1), lambda: torch.triu(ta, 1))
    compare("diagonal", lambda: a.diagonal(1), lambda: ta.diagonal(1))
    compare("unfold", lambda: a.unfold(1, 2, 1), lambda: ta.unfold(1, 2, 1))
    compare("movedim", lambda: ec.movedim(a, 0, 1), lambda: torch.movedim(ta, 0, 1))
