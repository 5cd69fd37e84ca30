"""Elementwise ops against NumPy: every dtype, 0-d/empty/broadcast shapes,
non-contiguous and negative-stride layouts, in-place and out= forms, type
promotion with Python scalars, and errors."""

import math

import numpy as np
import pytest
from conftest import (
    ALL_DTYPES,
    FLOAT_DTYPES,
    INT_DTYPES,
    LAYOUTS,
    NUMERIC_DTYPES,
    SHAPES,
    as_dtype_np,
    assert_close,
    make,
    random_values,
    to_np,
)

import ember_core as ec

_erf = np.vectorize(math.erf, otypes=[np.float64])
_erfc = np.vectorize(math.erfc, otypes=[np.float64])
_lgamma = np.vectorize(
    lambda v: math.lgamma(v) if v > 0 or v != math.floor(v) else math.inf, otypes=[np.float64]
)


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _gelu(x):
    return 0.5 * x * (1 + _erf(x / math.sqrt(2)))


def _gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))


# name: (reference in float64, low, high, integers allowed as they are)
UNARY = {
    "neg": (np.negative, -5, 5),
    "abs": (np.abs, -5, 5),
    "sign": (np.sign, -5, 5),
    "square": (np.square, -5, 5),
    "reciprocal": (np.reciprocal, 0.5, 5),
    "sqrt": (np.sqrt, 0, 9),
    "rsqrt": (lambda x: 1 / np.sqrt(x), 0.2, 9),
    "exp": (np.exp, -5, 5),
    "exp2": (np.exp2, -5, 5),
    "expm1": (np.expm1, -3, 3),
    "log": (np.log, 0.1, 9),
    "log2": (np.log2, 0.1, 9),
    "log10": (np.log10, 0.1, 9),
    "log1p": (np.log1p, -0.5, 9),
    "sin": (np.sin, -3, 3),
    "cos": (np.cos, -3, 3),
    "tan": (np.tan, -1.2, 1.2),
    "asin": (np.arcsin, -0.95, 0.95),
    "acos": (np.arccos, -0.95, 0.95),
    "atan": (np.arctan, -5, 5),
    "sinh": (np.sinh, -3, 3),
    "cosh": (np.cosh, -3, 3),
    "tanh": (np.tanh, -3, 3),
    "asinh": (np.arcsinh, -5, 5),
    "acosh": (np.arccosh, 1.1, 5),
    "atanh": (np.arctanh, -0.9, 0.9),
    "sigmoid": (_sigmoid, -6, 6),
    "relu": (lambda x: np.maximum(x, 0), -5, 5),
    "silu": (lambda x: x * _sigmoid(x), -5, 5),
    "erf": (_erf, -2.5, 2.5),
    "erfc": (_erfc, -2.5, 2.5),
    "floor": (np.floor, -5, 5),
    "ceil": (np.ceil, -5, 5),
    "round": (np.round, -5, 5),
    "trunc": (np.trunc, -5, 5),
    "frac": (lambda x: x - np.trunc(x), -5, 5),
    "lgamma": (_lgamma, 0.2, 6),
    "deg2rad": (np.deg2rad, -360, 360),
    "rad2deg": (np.rad2deg, -3, 3),
}
BOOL_UNARY = {
    "isnan": np.isnan,
    "isinf": np.isinf,
    "isfinite": np.isfinite,
    "signbit": np.signbit,
    "logical_not": np.logical_not,
}
# ops PyTorch computes in the default float dtype for integer inputs (a declaration fact)
FLOAT_RESULT = {op.name for op in ec.ops_tagged("float-result")}
FLOAT_ONLY = {"silu", "frac"}


def expected_dtype(name, dtype):
    if name in FLOAT_RESULT and not dtype.is_floating_point:
        return ec.float32
    return dtype


def reference(fn, x, out_dtype):
    with np.errstate(all="ignore"):
        r = fn(x.astype(np.float64) if out_dtype.is_floating_point else x)
    return as_dtype_np(r, out_dtype)


@pytest.mark.parametrize("name", sorted(UNARY))
@pytest.mark.parametrize("dtype", NUMERIC_DTYPES, ids=str)
def test_unary_matches_numpy_on_every_dtype(name, dtype, rng):
    fn, low, high = UNARY[name]
    if dtype is ec.uint8 and name in ("neg", "abs", "sign", "square"):
        low = 0
    if not dtype.is_floating_point and (
        name in FLOAT_ONLY or low >= 0.2 and name not in FLOAT_RESULT
    ):
        with pytest.raises(NotImplementedError, match="not implemented for"):
            getattr(ec, name)(make(random_values((3,), dtype, rng, 1, 3), dtype))
        return
    lo, hi = (low, high) if dtype.is_floating_point else (math.ceil(low), math.floor(high))
    x = random_values((4, 5), dtype, rng, lo, hi)
    od = expected_dtype(name, dtype)
    r = getattr(ec, name)(make(x, dtype))
    assert r.dtype is od
    exp = reference(fn, x, od)
    # float16/bfloat16 inputs compute in float32 and round once: allow two roundings
    assert_close(r, exp, od, rtol=4e-3 if od is ec.float16 else None)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("name", ["exp", "neg", "sqrt", "floor", "sigmoid"])
def test_unary_on_every_shape_and_layout(name, shape, layout, rng):
    fn, low, high = UNARY[name]
    x = random_values(shape, ec.float32, rng, max(low, 0), high)
    t = make(x, ec.float32, layout)
    assert_close(getattr(ec, name)(t), reference(fn, x, ec.float32))
    assert_close(getattr(t, name)(), reference(fn, x, ec.float32))


@pytest.mark.parametrize("name", BOOL_UNARY)
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_predicates_return_bool(name, dtype, rng):
    x = random_values((6,), dtype, rng)
    if dtype.is_floating_point:
        x[:3] = [np.nan, np.inf, -np.inf]
        x = as_dtype_np(x, dtype)
    r = getattr(ec, name)(make(x, dtype, "strided"))
    assert r.dtype is ec.bool
    np.testing.assert_array_equal(to_np(r), BOOL_UNARY[name](x))


def test_round_is_half_to_even_and_takes_decimals():
    x = ec.tensor([0.5, 1.5, 2.5, -0.5, -1.5, 1.2345, -2.675])
    np.testing.assert_array_equal(ec.round(x).numpy(), np.round(x.numpy()))
    np.testing.assert_allclose(ec.round(x, decimals=2).numpy(), np.round(x.numpy(), 2), rtol=1e-6)


def test_gelu_exact_and_tanh_approximation(rng):
    x = random_values((50,), ec.float64, rng, -6, 6)
    t = ec.tensor(x)
    np.testing.assert_allclose(ec.gelu(t).numpy(), _gelu(x), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(
        ec.gelu(t, approximate="tanh").numpy(), _gelu_tanh(x), rtol=1e-12, atol=1e-14
    )
    for dtype in FLOAT_DTYPES:
        assert_close(
            ec.gelu(ec.tensor(x, dtype=dtype)),
            _gelu(to_np(ec.tensor(x, dtype=dtype)).astype(np.float64)),
            dtype,
        )
    y = t.clone()
    assert ec.gelu_(y, approximate="tanh") is y
    np.testing.assert_allclose(y.numpy(), _gelu_tanh(x), rtol=1e-12, atol=1e-14)
    with pytest.raises(RuntimeError, match="approximate"):
        ec.gelu(t, approximate="fast")
    with pytest.raises(NotImplementedError, match="Long"):
        ec.gelu(ec.tensor([1, 2]))


def test_softplus_with_beta_and_threshold(rng):
    x = random_values((40,), ec.float64, rng, -30, 30)
    t = ec.tensor(x)
    ref = np.where(x > 20, x, np.log1p(np.exp(x)))
    np.testing.assert_allclose(ec.softplus(t).numpy(), ref, rtol=1e-12)
    beta, thr = 2.0, 3.0
    ref = np.where(x * beta > thr, x, np.log1p(np.exp(x * beta)) / beta)
    np.testing.assert_allclose(ec.softplus(t, beta, thr).numpy(), ref, rtol=1e-12)
    out = ec.empty(0, dtype=ec.float64)
    assert ec.softplus(t, beta=beta, threshold=thr, out=out) is out
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-12)
    half = ec.softplus(ec.tensor(x, dtype=ec.float16))
    assert half.dtype is ec.float16


# ------------------------------------------------------------------ binary

BINARY = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "maximum": np.maximum,
    "minimum": np.minimum,
    "eq": np.equal,
    "ne": np.not_equal,
    "lt": np.less,
    "le": np.less_equal,
    "gt": np.greater,
    "ge": np.greater_equal,
    "logical_and": np.logical_and,
    "logical_or": np.logical_or,
    "logical_xor": np.logical_xor,
}
FLOAT_BINARY = {
    "div": np.divide,
    "atan2": np.arctan2,
    "hypot": np.hypot,
    "copysign": np.copysign,
    "fmax": np.fmax,
    "fmin": np.fmin,
    "logaddexp": np.logaddexp,
    "logaddexp2": np.logaddexp2,
    "xlogy": lambda a, b: np.where(a == 0, 0.0, a * np.log(b)),
    "pow": np.power,
    "remainder": np.remainder,
    "fmod": np.fmod,
    "floor_divide": np.floor_divide,
}
INT_BINARY = {
    "bitwise_and": np.bitwise_and,
    "bitwise_or": np.bitwise_or,
    "bitwise_xor": np.bitwise_xor,
    "remainder": np.remainder,
    "fmod": np.fmod,
    "floor_divide": np.floor_divide,
}


def _binary_ref(fn, a, b, dtype):
    with np.errstate(all="ignore"):
        if dtype.is_floating_point:
            return fn(a.astype(np.float64), b.astype(np.float64))
        return fn(a, b)


@pytest.mark.parametrize("name", sorted(BINARY))
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_binary_matches_numpy(name, dtype, rng):
    if name == "sub" and dtype is ec.bool:
        pytest.skip("bool subtraction is an error (tested below)")
    a = random_values((3, 4), dtype, rng)
    b = random_values((3, 4), dtype, rng)
    r = getattr(ec, name)(make(a, dtype), make(b, dtype, "transposed"))
    ref = _binary_ref(BINARY[name], a, b, dtype)
    od = ec.bool if ref.dtype == np.bool_ else dtype
    assert r.dtype is od
    assert_close(r, as_dtype_np(ref, od), od)


@pytest.mark.parametrize("name", sorted(FLOAT_BINARY))
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
def test_float_binary_matches_numpy(name, dtype, rng):
    a = random_values((4, 5), dtype, rng, 0.5 if name == "pow" else -5, 5)
    b = random_values((4, 5), dtype, rng, 0.5, 3)
    b[0, :2] = as_dtype_np([-1.5, -2.0], dtype) if name not in ("pow", "xlogy") else b[0, :2]
    r = getattr(ec, name)(make(a, dtype, "strided"), make(b, dtype))
    assert r.dtype is dtype
    assert_close(
        r,
        as_dtype_np(_binary_ref(FLOAT_BINARY[name], a, b, dtype), dtype),
        dtype,
        rtol=4e-3 if dtype is ec.float16 else None,
    )


@pytest.mark.parametrize("name", sorted(INT_BINARY))
@pytest.mark.parametrize("dtype", INT_DTYPES, ids=str)
def test_integer_binary_matches_numpy(name, dtype, rng):
    a = random_values((20,), dtype, rng, -100, 100)
    b = random_values((20,), dtype, rng, 1, 7)
    if dtype.is_signed:
        b[::3] = -b[::3]
    r = getattr(ec, name)(make(a, dtype, "reversed"), make(b, dtype))
    assert r.dtype is dtype
    np.testing.assert_array_equal(to_np(r), _binary_ref(INT_BINARY[name], a, b, dtype))


def test_integer_division_by_zero_raises_instead_of_crashing():
    a, z = ec.tensor([1, 2, 3]), ec.tensor([1, 0, 1])
    for fn in (
        ec.floor_divide,
        ec.remainder,
        ec.fmod,
        lambda x, y: ec.div(x, y, rounding_mode="trunc"),
    ):
        with pytest.raises(ZeroDivisionError):
            fn(a, z)
        with pytest.raises(RuntimeError):
            fn(a, 0)
    np.testing.assert_array_equal(ec.div(a, z).numpy(), [1.0, np.inf, 3.0])


def test_integer_overflow_wraps_like_pytorch():
    x = ec.tensor([127, -128], dtype=ec.int8)
    np.testing.assert_array_equal((x + 1).numpy(), np.array([127, -128], np.int8) + np.int8(1))
    big = ec.tensor([2**62])
    assert (big * 4).item() == 0
    assert ec.floor_divide(ec.tensor([-(2**63)]), -1).item() == -(2**63)


def test_int_pow_by_negative_tensor_exponent_and_scalar():
    base, exp = ec.tensor([1, -1, 2, 0, 3]), ec.tensor([-2, -3, -1, 2, 3])
    np.testing.assert_array_equal(ec.pow(base, exp).numpy(), [1, -1, 0, 0, 27])
    with pytest.raises(RuntimeError, match="negative integer powers"):
        ec.pow(base, -1)
    np.testing.assert_array_equal((2 ** ec.tensor([0, 3, 10])).numpy(), [1, 8, 1024])
    np.testing.assert_allclose((2.0 ** ec.tensor([0, 3])).numpy(), [1.0, 8.0])


@pytest.mark.parametrize(
    "shape_a, shape_b",
    [
        ((3, 1), (1, 4)),
        ((2, 3, 4), (4,)),
        ((), (3,)),
        ((5, 0), (5, 1)),
        ((1,), ()),
        ((2, 1, 3), (4, 1)),
    ],
)
def test_binary_broadcasting(shape_a, shape_b, rng):
    a = random_values(shape_a, ec.float32, rng)
    b = random_values(shape_b, ec.float32, rng)
    for name, fn in (
        ("add", np.add),
        ("mul", np.multiply),
        ("lt", np.less),
        ("maximum", np.maximum),
    ):
        r = getattr(ec, name)(make(a, ec.float32), make(b, ec.float32))
        assert_close(r, fn(a, b).astype(np.float64), r.dtype)


def test_broadcast_error_names_op_and_shapes():
    with pytest.raises(RuntimeError, match=r"add: shapes \(2, 3\) and \(4,\) cannot be broadcast"):
        ec.ones(2, 3) + ec.ones(4)
    with pytest.raises(RuntimeError, match="mul"):
        ec.mul(ec.ones(2, 3), ec.ones(3, 2))


def test_add_sub_alpha():
    a, b = ec.tensor([1.0, 2.0]), ec.tensor([10.0, 20.0])
    np.testing.assert_allclose(ec.add(a, b, alpha=0.5).numpy(), [6.0, 12.0])
    np.testing.assert_allclose(ec.sub(a, b, alpha=2).numpy(), [-19.0, -38.0])
    np.testing.assert_allclose(ec.rsub(a, b, alpha=2).numpy(), [8.0, 16.0])
    with pytest.raises(RuntimeError, match="alpha"):
        ec.add(ec.tensor([1]), ec.tensor([2]), alpha=0.5)


def test_div_rounding_modes():
    a = ec.tensor([7.0, -7.0, 7.5, -7.5])
    b = ec.tensor([2.0, 2.0, -2.0, -2.0])
    np.testing.assert_array_equal(
        ec.div(a, b, rounding_mode="trunc").numpy(), np.trunc(a.numpy() / b.numpy())
    )
    np.testing.assert_array_equal(
        ec.div(a, b, rounding_mode="floor").numpy(), np.floor(a.numpy() / b.numpy())
    )
    ia, ib = ec.tensor([7, -7, 7, -7]), ec.tensor([2, 2, -2, -2])
    np.testing.assert_array_equal(ec.div(ia, ib, rounding_mode="floor").numpy(), [3, -4, -4, 3])
    np.testing.assert_array_equal(ec.div(ia, ib, rounding_mode="trunc").numpy(), [3, -3, -3, 3])
    assert ec.div(ia, ib).dtype is ec.float32
    with pytest.raises(ValueError, match="rounding_mode"):
        ec.div(a, b, rounding_mode="nearest")


def test_remainder_follows_the_divisor_sign_and_fmod_the_dividend():
    a, b = ec.tensor([5.0, -5.0, 5.0, -5.0]), ec.tensor([3.0, 3.0, -3.0, -3.0])
    np.testing.assert_array_equal(ec.remainder(a, b).numpy(), [2.0, 1.0, -1.0, -2.0])
    np.testing.assert_array_equal(ec.fmod(a, b).numpy(), [2.0, -2.0, 2.0, -2.0])
    np.testing.assert_array_equal((a % 3).numpy(), [2.0, 1.0, 2.0, 1.0])
    np.testing.assert_array_equal((7 % ec.tensor([3, -3])).numpy(), [1, -2])


def test_maximum_minimum_propagate_nan_and_fmax_ignores_it():
    a, b = ec.tensor([1.0, math.nan, 3.0]), ec.tensor([math.nan, 2.0, 1.0])
    np.testing.assert_array_equal(ec.maximum(a, b).numpy(), [np.nan, np.nan, 3.0])
    np.testing.assert_array_equal(ec.fmax(a, b).numpy(), [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(ec.minimum(a, b).numpy(), [np.nan, np.nan, 1.0])
    with pytest.raises(TypeError, match="must be Tensor"):
        ec.maximum(a, 2.0)


def test_shifts():
    x = ec.tensor([1, 2, -8], dtype=ec.int32)
    np.testing.assert_array_equal((x << 2).numpy(), [4, 8, -32])
    np.testing.assert_array_equal((x >> 1).numpy(), [0, 1, -4])
    np.testing.assert_array_equal(ec.bitwise_right_shift(x, 40).numpy(), [0, 0, -1])
    np.testing.assert_array_equal(ec.bitwise_left_shift(x, 40).numpy(), [0, 0, 0])


# -------------------------------------------------------- type promotion


@pytest.mark.parametrize(
    "dtype, scalar, expected",
    [
        (ec.int32, 2, ec.int32),
        (ec.int32, 2.5, ec.float32),
        (ec.uint8, True, ec.uint8),
        (ec.bool, True, ec.bool),
        (ec.bool, 2, ec.int64),
        (ec.bool, 2.0, ec.float32),
        (ec.float16, 2.5, ec.float16),
        (ec.bfloat16, 3, ec.bfloat16),
        (ec.int8, 1000, ec.int8),
        (ec.float64, 1, ec.float64),
    ],
)
def test_python_scalars_do_not_widen_tensors(dtype, scalar, expected):
    t = ec.ones(3, dtype=dtype)
    assert ec.result_type(t, scalar) is expected
    assert (t * scalar).dtype is expected
    assert (scalar * t).dtype is expected


def test_result_type_categories_and_zero_dim():
    f16, i64 = ec.ones(2, dtype=ec.float16), ec.ones(2, dtype=ec.int64)
    assert ec.result_type(f16, i64) is ec.float16
    assert ec.result_type(ec.ones(2, dtype=ec.int8), ec.tensor(1, dtype=ec.int64)) is ec.int8
    assert ec.result_type(ec.ones(2, dtype=ec.int8), ec.tensor(1.0, dtype=ec.float64)) is ec.float64
    assert ec.result_type(ec.tensor(1, dtype=ec.uint8), ec.tensor(1, dtype=ec.int8)) is ec.int16
    assert ec.result_type(ec.tensor(1, dtype=ec.int32), 2.0) is ec.float32
    assert ec.promote_types(ec.float16, ec.bfloat16) is ec.float32
    assert ec.promote_types(ec.uint8, ec.int64) is ec.int64
    assert (ec.ones(2, dtype=ec.int32) + ec.ones(2, dtype=ec.float16)).dtype is ec.float16
    ec.set_default_dtype(ec.float64)
    try:
        assert ec.result_type(ec.ones(2, dtype=ec.int32), 2.5) is ec.float64
        assert ec.exp(ec.tensor([1, 2])).dtype is ec.float64
    finally:
        ec.set_default_dtype(ec.float32)


def test_mixed_dtype_tensors_compute_in_the_promoted_type(rng):
    a = random_values((5,), ec.int16, rng)
    b = random_values((5,), ec.float32, rng)
    r = make(a, ec.int16) * make(b, ec.float32, "strided")
    assert r.dtype is ec.float32
    np.testing.assert_allclose(r.numpy(), a.astype(np.float32) * b, rtol=1e-6)
    r = ec.tensor([200], dtype=ec.uint8) + ec.tensor([100], dtype=ec.int8)
    assert r.dtype is ec.int16 and r.item() == 300


# ------------------------------------------------------- in-place and out=


@pytest.mark.parametrize("layout", LAYOUTS)
def test_inplace_ops_write_through_any_layout(layout, rng):
    x = random_values((3, 4), ec.float32, rng, 0.5, 4)
    y = random_values((3, 4), ec.float32, rng, 0.5, 4)
    for name, fn in [
        ("add_", np.add),
        ("mul_", np.multiply),
        ("div_", np.divide),
        ("pow_", np.power),
        ("atan2_", np.arctan2),
    ]:
        t = make(x, ec.float32, layout)
        v = t._version
        assert getattr(t, name)(make(y, ec.float32)) is t
        assert t._version > v
        np.testing.assert_allclose(t.numpy(), fn(x, y), rtol=2e-6)
    for name, fn in [
        ("exp_", np.exp),
        ("sqrt_", np.sqrt),
        ("neg_", np.negative),
        ("floor_", np.floor),
    ]:
        t = make(x, ec.float32, layout)
        assert getattr(t, name)() is t
        np.testing.assert_allclose(t.numpy(), fn(x), rtol=2e-6)


def test_inplace_broadcasts_the_other_operand_but_not_self():
    t = ec.zeros(2, 3)
    t.add_(ec.tensor([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(t.numpy(), [[1, 2, 3], [1, 2, 3]])
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        ec.zeros(3).add_(ec.zeros(2, 3))


def test_inplace_refuses_results_it_cannot_store():
    i = ec.tensor([1, 2, 3])
    with pytest.raises(RuntimeError, match="can't be cast"):
        i.add_(1.5)
    with pytest.raises(RuntimeError, match="can't be cast"):
        i.exp_()
    with pytest.raises(RuntimeError, match="can't be cast"):
        i.div_(2)
    b = ec.tensor([True, False])
    with pytest.raises(RuntimeError):
        b.add_(2)
    f = ec.tensor([1.0, 2.0])
    f.add_(ec.tensor([1, 1]))  # int into float is fine
    np.testing.assert_array_equal(f.numpy(), [2.0, 3.0])
    f.lt_(2.5)  # a comparison stores 0/1 in the tensor's own dtype
    np.testing.assert_array_equal(f.numpy(), [1.0, 0.0])


def test_inplace_with_overlapping_source_is_safe():
    x = ec.arange(6.0)
    x[1:].add_(x[:-1])
    np.testing.assert_array_equal(x.numpy(), [0, 1, 3, 5, 7, 9])
    y = ec.arange(4.0)
    y.mul_(y)
    np.testing.assert_array_equal(y.numpy(), [0, 1, 4, 9])


@pytest.mark.parametrize("name", ["add", "mul", "exp", "lt", "maximum"])
def test_out_argument(name, rng):
    a = make(random_values((3, 4), ec.float32, rng), ec.float32)
    b = make(random_values((3, 4), ec.float32, rng), ec.float32)
    args = (a,) if name == "exp" else (a, b)
    expected = getattr(ec, name)(*args)
    out = ec.empty(3, 4, dtype=expected.dtype)
    v = out._version
    assert getattr(ec, name)(*args, out=out) is out
    assert out._version > v
    np.testing.assert_array_equal(to_np(out), to_np(expected))
    # a non-contiguous out keeps its strides
    big = ec.zeros(3, 8, dtype=expected.dtype)
    view = big[:, ::2]
    getattr(ec, name)(*args, out=view)
    assert view.stride() == (8, 2)
    np.testing.assert_array_equal(to_np(big)[:, ::2], to_np(expected))
    np.testing.assert_array_equal(to_np(big)[:, 1::2], 0)
    # an empty out is resized; a wider dtype takes the cast result
    out = ec.empty(0, dtype=ec.float64)
    getattr(ec, name)(*args, out=out)
    assert out.shape == (3, 4)
    np.testing.assert_allclose(to_np(out), to_np(expected).astype(np.float64))


def test_out_of_narrower_dtype_or_aliasing_input():
    a = ec.tensor([1.5, 2.5])
    with pytest.raises(RuntimeError, match="can't be cast"):
        ec.add(a, a, out=ec.empty(2, dtype=ec.int64))
    ec.add(a, 1, out=a)
    np.testing.assert_array_equal(a.numpy(), [2.5, 3.5])
    x = ec.arange(5.0)
    ec.add(x[:-1], x[1:], out=x[1:])
    np.testing.assert_array_equal(x.numpy(), [0, 1, 3, 5, 7])


def test_read_only_memory_refuses_inplace_writes():
    arr = np.arange(3.0)
    arr.flags.writeable = False
    t = ec.from_numpy(arr)
    with pytest.raises(RuntimeError, match="read-only"):
        t.add_(1)
    with pytest.raises(RuntimeError, match="read-only"):
        ec.exp(t, out=t)
    np.testing.assert_array_equal((t + 1).numpy(), [1.0, 2.0, 3.0])


# ----------------------------------------------------------------- ternary


def test_where_broadcasts_and_promotes(rng):
    c = rng.random((3, 4)) < 0.5
    x = random_values((4,), ec.int32, rng)
    y = random_values((3, 1), ec.float32, rng)
    r = ec.where(ec.tensor(c), make(x, ec.int32), make(y, ec.float32))
    assert r.dtype is ec.float32
    np.testing.assert_array_equal(r.numpy(), np.where(c, x, y))
    r = ec.where(ec.tensor(c), make(x, ec.int32), 0)
    assert r.dtype is ec.int32
    np.testing.assert_array_equal(r.numpy(), np.where(c, x, 0))
    with pytest.raises(RuntimeError, match="boolean"):
        ec.where(ec.tensor([1, 0]), ec.ones(2), ec.zeros(2))


@pytest.mark.parametrize("dtype", [ec.float32, ec.int64, ec.bool], ids=str)
def test_where_same_dtype_broadcast_and_strided(dtype, rng):
    # the fast path (Note [Broadcast plans]): a bool mask and two values of one dtype
    c = rng.random((5, 1, 4)) < 0.5
    x = random_values((3, 4), dtype, rng)
    y = random_values((4, 3), dtype, rng)
    tx, ty = make(x, dtype), make(y, dtype).T  # ty is a transposed view
    for _ in range(2):  # a cached plan the second time
        r = ec.where(ec.tensor(c), tx, ty)
        assert r.dtype is dtype and r.shape == (5, 3, 4)
        np.testing.assert_array_equal(r.numpy(), np.where(c, x, y.T))
    with pytest.raises(RuntimeError, match="cannot be broadcast"):
        ec.where(ec.tensor(c), tx, ec.zeros(5, dtype=dtype))


def test_inplace_same_shape_fast_path(rng):
    # binary_'s fast path: a contiguous target and a distinct same-shaped tensor
    a = rng.standard_normal((4, 5)).astype(np.float32)
    b = rng.standard_normal((4, 5)).astype(np.float32)
    t = ec.tensor(a)
    v = t._storage._version
    t.add_(ec.tensor(b), alpha=2)
    np.testing.assert_allclose(t.numpy(), a + 2 * b, rtol=1e-6)
    assert t._storage._version == v + 1
    t.mul_(ec.tensor(b).T.contiguous().T)  # a non-contiguous operand: the general path
    np.testing.assert_allclose(t.numpy(), (a + 2 * b) * b, rtol=1e-6)
    # an operand in the target's own storage goes through the general path
    tx = ec.tensor(a)
    tx.add_(tx)
    np.testing.assert_array_equal(tx.numpy(), a + a)
    with pytest.raises(RuntimeError, match="can't be cast"):
        ec.ones(3, dtype=ec.int32).add_(ec.ones(3, dtype=ec.float32))


def test_broadcast_plans_are_bounded_and_exact(rng):
    from ember_core._ops.pointwise import elementwise as _elementwise

    a = rng.standard_normal((6, 7)).astype(np.float32)
    ta = ec.tensor(a)
    for n in range(1, 40):  # many geometries, with the cache cleared on the way
        if n == 20:
            _elementwise._plans.clear()
        b = rng.standard_normal((n, 6, 1)).astype(np.float32)
        np.testing.assert_array_equal((ta * ec.tensor(b)).numpy(), a * b)
        np.testing.assert_array_equal((ec.tensor(b) - ta.T[:, :6].T).numpy(), b - a)
    assert 0 < len(_elementwise._plans) <= _elementwise._MAX_PLANS


@pytest.mark.parametrize("dtype", NUMERIC_DTYPES, ids=str)
def test_clamp(dtype, rng):
    x = random_values((20,), dtype, rng, -10 if dtype.is_signed else 0, 10)
    t = make(x, dtype, "strided")
    r = ec.clamp(t, 2, 6)
    assert r.dtype is dtype
    assert_close(r, np.clip(x, 2, 6))
    assert_close(t.clamp(min=3), np.maximum(x, 3))
    assert_close(t.clamp(max=3), np.minimum(x, 3))
    lo = ec.full((20,), 1, dtype=dtype)
    assert_close(ec.clamp(t, lo, 5), np.clip(x, 1, 5))
    t.clamp_(4, 5)
    assert_close(t, np.clip(x, 4, 5))
    with pytest.raises(RuntimeError, match="At least one"):
        ec.clamp(t)


def test_clamp_keeps_nan_and_min_above_max_gives_max():
    r = ec.clamp(ec.tensor([math.nan, -3.0, 3.0]), -1, 1)
    np.testing.assert_array_equal(r.numpy(), [np.nan, -1.0, 1.0])
    np.testing.assert_array_equal(ec.clamp(ec.tensor([0.0, 5.0]), 3, 1).numpy(), [1.0, 1.0])
    np.testing.assert_array_equal(ec.clamp(ec.tensor([0, 5]), 3, 1).numpy(), [1, 1])


def test_lerp_addcmul_addcdiv(rng):
    a, b, w = (random_values((3, 4), ec.float64, rng) for _ in range(3))
    ta, tb, tw = (ec.tensor(v) for v in (a, b, w))
    np.testing.assert_allclose(ec.lerp(ta, tb, tw).numpy(), a + w * (b - a))
    np.testing.assert_allclose(ec.lerp(ta, tb, 0.3).numpy(), a + 0.3 * (b - a))
    np.testing.assert_allclose(ec.addcmul(ta, tb, tw, value=2).numpy(), a + 2 * b * w)
    np.testing.assert_allclose(ec.addcdiv(ta, tb, tw, value=0.5).numpy(), a + 0.5 * b / w)
    ta.addcmul_(tb, tw)
    np.testing.assert_allclose(ta.numpy(), a + b * w)
    with pytest.raises(RuntimeError, match="Integer division"):
        ec.addcdiv(ta, ec.tensor([1]), ec.tensor([2]))


# ------------------------------------------------------------------ errors


def test_errors_name_the_op_and_dtypes():
    with pytest.raises(NotImplementedError, match="bitwise_and_cpu.*Float"):
        ec.ones(2) & ec.ones(2)
    with pytest.raises(NotImplementedError, match="Bool"):
        ec.abs(ec.tensor([True]))
    with pytest.raises(RuntimeError, match="Subtraction.*bool"):
        ec.tensor([True]) - ec.tensor([False])
    with pytest.raises(RuntimeError, match="Negation.*bool"):
        -ec.tensor([True])
    with pytest.raises(TypeError, match="must be Tensor or Number"):
        ec.add(ec.ones(2), "x")
    with pytest.raises(TypeError, match="must be Tensor"):
        ec.exp([1.0, 2.0])


def test_operators_return_not_implemented_for_foreign_objects():
    t = ec.ones(2)
    assert t.__eq__("a") is NotImplemented
    assert (t == "a") is False
    with pytest.raises(TypeError):
        t < "a"  # noqa: B015


def test_operators_and_reflected_forms():
    t = ec.tensor([1.0, 2.0, 4.0])
    i = ec.tensor([6, 3, 5])
    pairs = [
        (t + 1, [2, 3, 5]),
        (1 + t, [2, 3, 5]),
        (t - 1, [0, 1, 3]),
        (1 - t, [0, -1, -3]),
        (t * 2, [2, 4, 8]),
        (2 * t, [2, 4, 8]),
        (t / 2, [0.5, 1, 2]),
        (2 / t, [2, 1, 0.5]),
        (t // 3, [0, 0, 1]),
        (7 // t, [7, 3, 1]),
        (t % 3, [1, 2, 1]),
        (7 % t, [0, 1, 3]),
        (t**2, [1, 4, 16]),
        (2**t, [2, 4, 16]),
        (-t, [-1, -2, -4]),
        (+t, [1, 2, 4]),
        (abs(-t), [1, 2, 4]),
        (i & 3, [2, 3, 1]),
        (3 & i, [2, 3, 1]),
        (i | 8, [14, 11, 13]),
        (8 | i, [14, 11, 13]),
        (i ^ 1, [7, 2, 4]),
        (1 ^ i, [7, 2, 4]),
        (~i, [-7, -4, -6]),
        (i << 1, [12, 6, 10]),
        (i >> 1, [3, 1, 2]),
        (t < 2, [True, False, False]),
        (t <= 2, [True, True, False]),
        (t > 2, [False, False, True]),
        (t >= 2, [False, True, True]),
        (t == 2, [False, True, False]),
        (t != 2, [True, False, True]),
        (t > 2, [False, False, True]),
    ]
    for got, want in pairs:
        np.testing.assert_allclose(to_np(got).astype(np.float64), np.array(want, dtype=np.float64))
    x = ec.tensor([1.0, 2.0])
    y = x
    x += 1
    x *= 3
    x -= 1
    x /= 2
    x **= 2
    assert x is y
    np.testing.assert_allclose(x.numpy(), [6.25, 16.0])
    m = ec.tensor([[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_allclose((m @ m).numpy(), m.numpy() @ m.numpy())


@pytest.mark.parametrize("n", [1, 7, 8, 9, 255, 256, 257, 1000, 70_001])
def test_vectorised_float32_exp_sigmoid_silu_at_every_length_and_extreme(n, rng):
    x = rng.uniform(-100, 100, n).astype(np.float32)
    specials = np.array(
        [np.nan, np.inf, -np.inf, 0.0, -0.0, 88.0, 88.5, 88.73, -87.3, -87.4, -103.0, -104.0],
        np.float32,
    )
    x[: min(n, len(specials))] = specials[: min(n, len(specials))]
    xd = x.astype(np.float64)
    with np.errstate(all="ignore"):
        refs = {"exp": np.exp(xd), "sigmoid": 1 / (1 + np.exp(-xd)), "silu": xd / (1 + np.exp(-xd))}
    for name, ref in refs.items():
        ref32 = ref.astype(np.float32)
        for t in (ec.tensor(x), ec.tensor(x)):
            got = getattr(ec, name)(t).numpy()
            np.testing.assert_allclose(got, ref32, rtol=3e-7, atol=1e-35, equal_nan=True)
        inplace = ec.tensor(x)
        getattr(inplace, name + "_")()
        np.testing.assert_allclose(inplace.numpy(), ref32, rtol=3e-7, atol=1e-35, equal_nan=True)
        strided = ec.tensor(np.repeat(x, 2))[::2]
        np.testing.assert_allclose(
            getattr(strided, name)().numpy(), ref32, rtol=3e-7, atol=1e-35, equal_nan=True
        )


@pytest.mark.parametrize("n", [1, 7, 8, 9, 255, 256, 1000, 70_001])
def test_vectorised_float32_tanh_erf_gelu_at_every_length_and_extreme(n, rng):
    """Note [Fast float32 tanh and erf]: within a few ulps of the float64 values
    (GELU, whose 1 + erf cancels for large negative x, within 1e-6 of them),
    the same values on contiguous and strided tensors, NaN and infinities kept."""
    x = rng.uniform(-8, 8, n).astype(np.float32)
    specials = np.array(
        [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-30, 0.625, -0.625, 1.0, -1.0, 44.0, -1e30],
        np.float32,
    )
    x[: min(n, len(specials))] = specials[: min(n, len(specials))]
    xd = x.astype(np.float64)
    erf = np.vectorize(math.erf, otypes=[np.float64])
    k = math.sqrt(2 / math.pi)
    with np.errstate(all="ignore"):
        refs = {
            "tanh": (np.tanh(xd), 4e-7, 0),
            "erf": (erf(xd), 4e-7, 0),
            "gelu": (0.5 * xd * (1 + erf(xd / math.sqrt(2))), 1e-6, 1e-6),
            "gelu_tanh": (0.5 * xd * (1 + np.tanh(k * (xd + 0.044715 * xd**3))), 1e-6, 1e-6),
        }
    fns = {
        "tanh": ec.tanh,
        "erf": ec.erf,
        "gelu": ec.gelu,
        "gelu_tanh": lambda t: ec.gelu(t, approximate="tanh"),
    }
    for name, (ref, rtol, atol) in refs.items():
        ref32 = ref.astype(np.float32)
        got = fns[name](ec.tensor(x)).numpy()
        np.testing.assert_allclose(got, ref32, rtol=rtol, atol=atol + 1e-35, equal_nan=True)
        strided = ec.tensor(np.repeat(x, 2))[::2]
        np.testing.assert_array_equal(fns[name](strided).numpy(), got)


def test_inplace_aliases_and_composites():
    x = ec.tensor([-1.5, 2.5])
    for name, ref in [
        ("absolute_", [1.5, 2.5]),
        ("negative_", [-1.5, -2.5]),
        ("fix_", [-1.0, -2.0]),
        ("clip_", None),
    ]:
        if ref is None:
            continue
        getattr(x, name)()
        assert x.tolist() == ref
    y = ec.tensor([-3.0, 3.0])
    y.clamp_min_(-1).clamp_max_(2)
    assert y.tolist() == [-1.0, 2.0]
    y.clip_(0, 1)
    assert y.tolist() == [0.0, 1.0]
    z = ec.tensor([4.0, 9.0])
    z.true_divide_(2).multiply_(2).subtract_(1).divide_(2)
    assert z.tolist() == [1.5, 4.0]
    assert ec.tensor([1.0, 3.0]).greater_(2).tolist() == [0.0, 1.0]
    d = ec.tensor([2.0], dtype=ec.float64)
    assert d.float_power_(3).tolist() == [8.0]
    with pytest.raises(RuntimeError, match="Double"):
        ec.tensor([2.0]).float_power_(2)
    assert ec.is_floating_point(d) and not ec.is_complex(d)
