"""Hypothesis fuzzing: random ops over random shapes (0-d, empty), strides
(transposed, stepped, negative, zero), dtypes and values (NaN, infinities,
extremes): results match NumPy where NumPy has the same semantics, and nothing
ever crashes -- bad input only raises an ordinary Python exception."""

# The lambdas handed to compare()/run() run at once, inside the loop that binds them.
# ruff: noqa: B023

import math

import numpy as np
import pytest
from conftest import ALL_DTYPES, as_dtype_np, to_np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ember_allocator
import ember_core as ec

# The exceptions bad input may raise; anything else (or a crash) is a bug.
ALLOWED = (
    RuntimeError,
    ValueError,
    TypeError,
    IndexError,
    MemoryError,
    NotImplementedError,
    ZeroDivisionError,
)
FUZZ = settings(
    max_examples=int(__import__("os").environ.get("EMBER_FUZZ_EXAMPLES", 120)),
    deadline=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.function_scoped_fixture,
    ],
)
LAYOUTS = ["contiguous", "transposed", "strided", "reversed", "broadcast"]

small_shapes = st.lists(st.integers(0, 4), max_size=4).map(tuple)


def _values(rng, shape, dtype, special):
    if dtype is ec.bool:
        return rng.random(shape) < 0.5
    if dtype.is_floating_point:
        v = rng.uniform(-4, 4, shape)
        if special and v.size:
            flat = v.reshape(-1)
            picks = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e30, -1e-30, 65504.0]
            for i in rng.integers(0, flat.size, max(1, flat.size // 4)):
                flat[i] = picks[rng.integers(len(picks))]
        return as_dtype_np(v, dtype)
    info = np.iinfo(dtype.numpy)
    if special:
        return rng.integers(info.min, info.max, shape, endpoint=True, dtype=dtype.numpy)
    return rng.integers(
        max(info.min, -9), min(info.max, 9), shape, endpoint=True, dtype=dtype.numpy
    )


def _layout(values, dtype, layout):
    """A tensor holding ``values`` with ``layout``."""
    if values.ndim == 0 or layout == "contiguous":
        return ec.tensor(values, dtype=dtype)
    if layout == "transposed":
        return ec.tensor(np.ascontiguousarray(values.T), dtype=dtype).permute(
            *reversed(range(values.ndim))
        )
    if layout == "strided":
        big = np.zeros(tuple(2 * s + 1 for s in values.shape), dtype=values.dtype)
        big[tuple(slice(1, None, 2) for _ in values.shape)] = values
        return ec.tensor(big, dtype=dtype)[tuple(slice(1, None, 2) for _ in values.shape)]
    if layout == "reversed":
        rev = tuple(slice(None, None, -1) for _ in values.shape)
        base = ec.tensor(np.ascontiguousarray(values[rev]), dtype=dtype)
        off = sum((s - 1) * st for s, st in zip(base.shape, base.stride()) if s > 0)
        return base.as_strided(base.shape, tuple(-s for s in base.stride()), off)
    # broadcast: the first dim repeats one row (stride 0)
    row = ec.tensor(values[:1], dtype=dtype)
    values[...] = values[:1]
    return row.expand(values.shape)


@st.composite
def tensors(draw, dtype=None, shape=None, special=True):
    dtype = dtype if dtype is not None else draw(st.sampled_from(ALL_DTYPES))
    shape = shape if shape is not None else draw(small_shapes)
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    values = _values(rng, shape, dtype, special and draw(st.booleans()))
    layout = draw(st.sampled_from(LAYOUTS))
    t = _layout(values, dtype, layout)
    return t, values


def broadcastable(shape, draw):
    """A shape that broadcasts with ``shape``: a suffix with some dims set to 1."""
    k = draw(st.integers(0, len(shape)))
    tail = list(shape[len(shape) - k :])
    return tuple(1 if draw(st.booleans()) else s for s in tail)


def run(fn):
    try:
        return fn(), None
    except ALLOWED as exc:
        return None, exc


def ref_cast(values, dtype):
    """Values as a NumPy array of the dtype ember computes in (float64 for floats,
    rounded to ``dtype`` first, as promotion does: an int32 of 1505919583 is inf in
    float16)."""
    if dtype.is_floating_point:
        return as_dtype_np(values.astype(np.float64), dtype).astype(np.float64)
    return values.astype(dtype.numpy)


def assert_matches(r, expected, dtype):
    got = to_np(r)
    assert got.shape == np.shape(expected)
    if dtype.is_floating_point:
        exp = as_dtype_np(expected, dtype).astype(np.float64)
        rtol = {ec.float16: 4e-3, ec.bfloat16: 2e-2, ec.float32: 1e-6, ec.float64: 1e-12}[dtype]
        np.testing.assert_allclose(
            got.astype(np.float64), exp, rtol=rtol, atol=rtol, equal_nan=True
        )
    else:
        np.testing.assert_array_equal(got, np.asarray(expected).astype(got.dtype))


# ------------------------------------------------------------- binary ops

BINARY_REF = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "maximum": np.maximum,
    "minimum": np.minimum,
    "eq": np.equal,
    "ne": np.not_equal,
    "lt": np.less,
    "ge": np.greater_equal,
    "logical_and": np.logical_and,
    "logical_xor": np.logical_xor,
    "bitwise_and": np.bitwise_and,
    "bitwise_or": np.bitwise_or,
    "bitwise_xor": np.bitwise_xor,
}
BINARY_OTHER = [
    "div",
    "floor_divide",
    "remainder",
    "fmod",
    "pow",
    "atan2",
    "hypot",
    "copysign",
    "fmax",
    "xlogy",
    "logaddexp",
    "bitwise_left_shift",
    "bitwise_right_shift",
    "nextafter",
    "le",
    "gt",
    "logical_or",
]


@FUZZ
@given(st.data(), st.sampled_from(sorted(BINARY_REF) + BINARY_OTHER))
def test_binary_ops(data, name):
    a, av = data.draw(tensors())
    b, bv = data.draw(tensors(shape=broadcastable(a.shape, data.draw)))
    r, exc = run(lambda: getattr(ec, name)(a, b))
    if exc is not None or name not in BINARY_REF:
        return
    rt = ec.result_type(a, b)
    with np.errstate(all="ignore"):
        expected = BINARY_REF[name](ref_cast(av, rt), ref_cast(bv, rt))
    assert r.shape == np.broadcast_shapes(a.shape, b.shape)
    assert_matches(r, expected, r.dtype)


@FUZZ
@given(
    st.data(),
    st.sampled_from(["add", "mul", "sub", "maximum", "lt", "pow", "remainder", "bitwise_xor"]),
    st.one_of(
        st.integers(-(2**70), 2**70), st.floats(allow_nan=True, allow_infinity=True), st.booleans()
    ),
)
def test_ops_with_python_scalars(data, name, scalar):
    a, av = data.draw(tensors())
    for fn in (
        lambda: getattr(ec, name)(a, scalar),
        lambda: getattr(a, name + "_")(scalar) if hasattr(a, name + "_") else None,
    ):
        run(fn)
    r, exc = run(lambda: a + scalar)
    if exc is None and not isinstance(scalar, float):
        assert r.dtype is ec.result_type(a, scalar)


@FUZZ
@given(
    st.data(),
    st.sampled_from(
        ["add_", "mul_", "sub_", "div_", "copy_", "clamp_", "lerp_", "addcmul_", "maximum"]
    ),
)
def test_inplace_and_out_forms(data, name):
    a, _ = data.draw(tensors())
    b, _ = data.draw(tensors(shape=broadcastable(a.shape, data.draw)))
    target = a.clone() if a.stride() and 0 in a.stride() else a
    if name == "clamp_":
        run(lambda: target.clamp_(b, b))
    elif name in ("lerp_", "addcmul_"):
        run(lambda: getattr(target, name)(b, b))
    elif name == "maximum":
        out = data.draw(tensors(shape=data.draw(small_shapes)))[0]
        run(lambda: ec.maximum(a, b, out=out))
    else:
        run(lambda: getattr(target, name)(b))


# -------------------------------------------------------------- unary ops

UNARY_REF = {
    "neg": np.negative,
    "abs": np.abs,
    "floor": np.floor,
    "ceil": np.ceil,
    "trunc": np.trunc,
    "isnan": np.isnan,
    "isinf": np.isinf,
    "logical_not": np.logical_not,
    "sign": np.sign,
    "exp": np.exp,
    "sqrt": np.sqrt,
    "square": np.square,
}
UNARY_OTHER = [
    "reciprocal",
    "rsqrt",
    "exp2",
    "expm1",
    "log",
    "log2",
    "log10",
    "log1p",
    "sin",
    "cos",
    "tan",
    "asin",
    "acos",
    "atan",
    "sinh",
    "cosh",
    "tanh",
    "asinh",
    "acosh",
    "atanh",
    "sigmoid",
    "relu",
    "silu",
    "erf",
    "erfc",
    "erfinv",
    "round",
    "frac",
    "isfinite",
    "signbit",
    "bitwise_not",
    "lgamma",
    "digamma",
    "sinc",
    "nan_to_num",
    "gelu",
    "softplus",
    "mish",
    "hardswish",
    "logsigmoid",
]
FLOAT_RESULT = {"exp", "sqrt"}


@FUZZ
@given(st.data(), st.sampled_from(sorted(UNARY_REF) + UNARY_OTHER))
def test_unary_ops(data, name):
    a, av = data.draw(tensors())
    r, exc = run(lambda: getattr(ec, name)(a))
    run(lambda: getattr(a.clone(), name + "_")() if hasattr(a, name + "_") else None)
    if exc is not None:
        return
    assert r.shape == a.shape
    if name not in UNARY_REF or (name == "sign" and a.dtype is ec.bool):
        return
    dt = r.dtype
    src = av.astype(np.float64) if dt.is_floating_point else av
    with np.errstate(all="ignore"):
        expected = UNARY_REF[name](src)
    if name in FLOAT_RESULT and a.dtype in (ec.float16, ec.bfloat16):
        # computed in float32 from the stored value, rounded once
        expected = UNARY_REF[name](av.astype(np.float32)).astype(np.float64)
    if name == "square" and not dt.is_floating_point:
        expected = np.square(av.astype(dt.numpy))
    assert_matches(r, expected, dt)


# ------------------------------------------------------------- reductions


@FUZZ
@given(
    st.data(),
    st.sampled_from(
        [
            "sum",
            "amax",
            "amin",
            "all",
            "any",
            "prod",
            "mean",
            "argmax",
            "std",
            "logsumexp",
            "cumsum",
            "cumprod",
            "count_nonzero",
            "max",
            "norm",
            "var",
        ]
    ),
)
def test_reductions(data, name):
    a, av = data.draw(tensors(special=False))
    nd = a.dim()
    dim = data.draw(st.one_of(st.none(), st.integers(-nd - 1, nd)))
    keepdim = data.draw(st.booleans())
    if name in ("cumsum", "cumprod"):
        r, exc = run(lambda: getattr(ec, name)(a, 0 if dim is None else dim))
    elif name == "count_nonzero":
        r, exc = run(lambda: ec.count_nonzero(a, dim))
    else:
        r, exc = run(
            lambda: getattr(ec, name)(a, dim, keepdim) if dim is not None else getattr(ec, name)(a)
        )
    if (
        exc is not None
        or name not in ("sum", "amax", "all", "any")
        or (dim is not None and nd == 0)
    ):
        return
    axis = None if dim is None else dim
    ref = {"sum": np.sum, "amax": np.max, "all": np.all, "any": np.any}[name]
    if dim is not None and not -nd <= dim < nd:
        return
    src = (
        av.astype(np.float64)
        if a.dtype.is_floating_point
        else av.astype(np.int64)
        if name == "sum"
        else av
    )
    expected = ref(src, axis=axis, keepdims=keepdim and dim is not None)
    if name == "sum" and a.dtype.is_floating_point:
        rtol = {ec.float16: 3e-2, ec.bfloat16: 5e-2}.get(a.dtype, 1e-5)
        np.testing.assert_allclose(
            to_np(r).astype(np.float64),
            as_dtype_np(expected, a.dtype).astype(np.float64),
            rtol=rtol,
            atol=rtol * 10,
        )
    else:
        assert_matches(r, expected, r.dtype)


# ---------------------------------------------------------------- views


@FUZZ
@given(st.data())
def test_chains_of_views_match_numpy(data):
    shape = data.draw(st.lists(st.integers(1, 4), min_size=1, max_size=4).map(tuple))
    a = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape)
    t = ec.tensor(a)
    for _ in range(data.draw(st.integers(1, 5))):
        nd = a.ndim
        kind = data.draw(
            st.sampled_from(
                [
                    "transpose",
                    "slice",
                    "unsqueeze",
                    "expand",
                    "flip",
                    "select",
                    "diagonal",
                    "reshape",
                ]
            )
        )
        if kind == "transpose" and nd >= 2:
            i, j = data.draw(st.integers(0, nd - 1)), data.draw(st.integers(0, nd - 1))
            a, t = np.swapaxes(a, i, j), t.transpose(i, j)
        elif kind == "slice" and nd >= 1:
            d = data.draw(st.integers(0, nd - 1))
            start, step = data.draw(st.integers(0, 3)), data.draw(st.integers(1, 3))
            key = (slice(None),) * d + (slice(start, None, step),)
            a, t = a[key], t[key]
        elif kind == "unsqueeze":
            d = data.draw(st.integers(0, nd))
            a, t = np.expand_dims(a, d), t.unsqueeze(d)
        elif kind == "expand" and nd >= 1 and 1 in a.shape:
            d = a.shape.index(1)
            new = a.shape[:d] + (3,) + a.shape[d + 1 :]
            a, t = np.broadcast_to(a, new), t.expand(new)
        elif kind == "flip" and nd >= 1:
            d = data.draw(st.integers(0, nd - 1))
            a, t = np.flip(a, d), t.flip(d)
        elif kind == "select" and nd >= 2 and a.shape[0] > 0:
            i = data.draw(st.integers(0, a.shape[0] - 1))
            a, t = a[i], t.select(0, i)
        elif kind == "diagonal" and nd >= 2:
            a, t = np.diagonal(a, 0, 0, 1), t.diagonal(0, 0, 1)
        elif kind == "reshape":
            a, t = a.reshape(-1), t.reshape(-1)
        assert t.shape == a.shape
    np.testing.assert_array_equal(t.numpy(), a)
    np.testing.assert_array_equal(t.contiguous().numpy(), a)
    np.testing.assert_array_equal((t * 2 + 1).numpy(), a * 2 + 1)
    np.testing.assert_array_equal(
        t.sum(tuple(range(t.dim()))).numpy() if t.dim() else t.numpy(), a.sum()
    )
    np.testing.assert_array_equal(t.clone().numpy(), a)


@pytest.fixture
def memory_limit():
    """Sizes that fit the address space must fail cleanly, not fill the machine."""
    host = ember_allocator.host_allocator()
    host.set_memory_limit(1 << 28)
    yield
    host.set_memory_limit(None)


@FUZZ
@given(
    sizes=st.lists(
        st.one_of(st.integers(-3, 6), st.integers(2**30, 2**66), st.integers(-(2**66), -(2**30))),
        max_size=5,
    )
)
def test_creation_with_any_sizes_never_crashes(memory_limit, sizes):
    for fn in (
        ec.zeros,
        ec.empty,
        ec.ones,
        lambda *s: ec.full(s, 2.0),
        lambda *s: ec.rand(*s),
        lambda *s: ec.ones(1).expand(*s),
    ):
        r, exc = run(lambda: fn(*sizes))
        if exc is None:
            assert tuple(r.shape) == tuple(sizes) or -1 in sizes
            if r.numel() < 10_000:
                run(lambda: (r + 1).sum())


@FUZZ
@given(st.data())
def test_as_strided_views_are_bounds_checked(data):
    base = ec.arange(24.0)
    nd = data.draw(st.integers(0, 3))
    size = [data.draw(st.integers(0, 6)) for _ in range(nd)]
    stride = [data.draw(st.integers(-8, 8)) for _ in range(nd)]
    offset = data.draw(st.integers(-2, 30))
    v, exc = run(lambda: base.as_strided(size, stride, offset))
    if exc is not None:
        return
    expected = (
        np.lib.stride_tricks.as_strided(
            np.arange(24.0)[offset:] if offset >= 0 else np.arange(24.0),
            size,
            [s * 8 for s in stride],
        )
        if all(st >= 0 for st in stride)
        else None
    )
    values = v.contiguous().numpy()
    if expected is not None:
        np.testing.assert_array_equal(values, expected)
    assert np.isin(values, np.arange(24.0)).all()


@FUZZ
@given(
    st.data(),
    st.sampled_from(["matmul", "cat", "stack", "where", "einsum", "repeat", "roll", "tril"]),
)
def test_shape_ops_never_crash(data, name):
    a, _ = data.draw(tensors(special=False))
    b, _ = data.draw(tensors(special=False, shape=data.draw(small_shapes)))
    if name == "matmul":
        r, exc = run(lambda: a @ b)
        if (
            exc is None
            and a.dtype is b.dtype
            and a.dtype.is_floating_point
            and a.dtype is not ec.bfloat16
            and a.dim()
            and b.dim()
        ):
            np.testing.assert_allclose(
                to_np(r),
                np.matmul(to_np(a).astype(np.float64), to_np(b).astype(np.float64)),
                rtol=2e-2,
                atol=2e-2,
            )
    elif name == "cat":
        run(lambda: ec.cat([a, b], data.draw(st.integers(-3, 3))))
    elif name == "stack":
        run(lambda: ec.stack([a, b]))
    elif name == "where":
        run(lambda: ec.where(a > 0, a, b))
    elif name == "einsum":
        run(
            lambda: ec.einsum(
                data.draw(st.sampled_from(["ij,jk", "i,i", "...i,i", "ii", "ij->j", "ijk"])), a, b
            )
        )
    elif name == "repeat":
        run(lambda: a.repeat(*data.draw(st.lists(st.integers(0, 3), max_size=5))))
    elif name == "roll":
        run(
            lambda: ec.roll(
                a,
                data.draw(st.integers(-5, 5)),
                data.draw(st.one_of(st.none(), st.integers(-3, 3))),
            )
        )
    else:
        run(lambda: ec.tril(a, data.draw(st.integers(-3, 3))))


def test_huge_shapes_raise_instead_of_overflowing():
    for fn in (
        lambda: ec.ones(3).expand(2**62, 3),
        lambda: ec.ones(3).expand(2**63, 3),
        lambda: ec.ones(1).expand(2**64),
        lambda: ec.empty(2**62),
        lambda: ec.zeros(2**40, 2**40),
        lambda: ec.empty(0, 2**64),
        lambda: ec.ones(2).as_strided((2**63,), (0,)),
    ):
        try:
            r = fn()
        except (MemoryError, RuntimeError):
            continue
        raise AssertionError(f"expected an error, got a tensor of shape {tuple(r.shape)}")
    assert math.isfinite(ec.ones(5)[:: 2**62].sum().item())
    assert np.isfinite(ec.ones(3).unfold(0, 2, 2**62).numpy()).all()
