"""The array API namespace (ember_core.array_api) against the standard's documented
signatures and semantics, with NumPy 2.x's own (conforming) namespace as reference."""

import inspect
import math

import numpy as np
import pytest

import ember_core as ec

xp = ec.ones(1).__array_namespace__()
rng = np.random.default_rng(42)

DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "float32", "float64"]
NUMERIC = DTYPES[1:]
FLOATS = ["float32", "float64"]
INTS = ["int8", "int16", "int32", "int64", "uint8"]


def make(dtype, shape=(3, 4), positive=False, unit=False):
    """A NumPy array and the same data as an ember array."""
    if dtype == "bool":
        a = rng.integers(0, 2, size=shape).astype(bool)
    elif dtype in INTS:
        lo = 1 if positive else (0 if dtype == "uint8" else -9)
        a = rng.integers(lo, 10, size=shape).astype(dtype)
    else:
        a = rng.uniform(
            -0.9 if unit and not positive else (0.1 if positive else -5),
            0.9 if unit else 5,
            size=shape,
        ).astype(dtype)
    return a, xp.asarray(a.copy())


def same(got, ref, rtol=1e-6):
    assert isinstance(got, ec.Tensor)
    ref = np.asarray(ref)
    assert got.dtype.name == ref.dtype.name, (got.dtype, ref.dtype)
    assert tuple(got.shape) == ref.shape
    if ref.dtype.kind == "f":
        np.testing.assert_allclose(got.numpy(), ref, rtol=rtol, atol=1e-6, equal_nan=True)
    else:
        np.testing.assert_array_equal(got.numpy(), ref)


# ---------------------------------------------------------------- namespace


def test_namespace_and_version():
    x = ec.zeros(2)
    assert x.__array_namespace__() is xp
    assert x.__array_namespace__(api_version=None) is xp
    assert xp.__array_api_version__ == "2024.12"
    for name in ("e", "pi", "inf", "nan"):
        v = getattr(xp, name)
        assert isinstance(v, float) and (
            v == getattr(math, name) or (math.isnan(v) and name == "nan")
        )
    assert xp.newaxis is None
    assert x.to_device("cpu") is x


def test_every_exported_name_exists_and_signatures_are_positional_only():
    for name in xp.__all__:
        assert hasattr(xp, name), name
    # the standard makes array arguments positional-only
    for name in ("abs", "add", "sum", "sort", "reshape", "take", "matmul", "astype", "where"):
        params = list(inspect.signature(getattr(xp, name)).parameters.values())
        assert params[0].kind is inspect.Parameter.POSITIONAL_ONLY, name


def test_info_namespace():
    info = xp.__array_namespace_info__()
    caps = info.capabilities()
    assert caps["boolean indexing"] and caps["data-dependent shapes"]
    assert info.default_device() == ec.device("cpu")
    assert info.devices() == [ec.device("cpu")]
    d = info.default_dtypes()
    assert (
        d["real floating"] is xp.float32 and d["integral"] is xp.int64 and d["indexing"] is xp.int64
    )
    wide = {"uint16", "uint32", "uint64", "complex64", "complex128"}
    assert set(info.dtypes()) == set(DTYPES) | wide
    assert set(info.dtypes(kind="complex floating")) == {"complex64", "complex128"}
    assert info.default_dtypes()["complex floating"] is xp.complex64
    assert set(info.dtypes(kind="signed integer")) == {"int8", "int16", "int32", "int64"}
    assert set(info.dtypes(kind=("bool", "real floating"))) == {"bool", "float32", "float64"}


# --------------------------------------------------------------- data types


def test_dtype_functions():
    for name in INTS:
        i, r = xp.iinfo(getattr(xp, name)), np.iinfo(name)
        assert (i.bits, i.min, i.max) == (r.bits, r.min, r.max) and i.dtype is getattr(xp, name)
    for name in FLOATS:
        f, r = xp.finfo(getattr(xp, name)), np.finfo(name)
        assert (f.bits, f.eps, f.max, f.min, f.smallest_normal) == (
            r.bits,
            r.eps,
            r.max,
            r.min,
            r.smallest_normal,
        )
    assert xp.finfo(xp.ones(1)).dtype is xp.float32
    kinds = [
        "bool",
        "signed integer",
        "unsigned integer",
        "integral",
        "real floating",
        "complex floating",
        "numeric",
    ]
    for name in DTYPES:
        for kind in kinds:
            assert xp.isdtype(getattr(xp, name), kind) == np.isdtype(np.dtype(name), kind), (
                name,
                kind,
            )
    assert xp.isdtype(xp.int8, (xp.int8, "real floating"))
    for a in DTYPES:
        for b in DTYPES:
            da, db = np.dtype(a), np.dtype(b)
            same_kind = da.kind == db.kind or "b" in (da.kind, db.kind)
            if same_kind and {da.kind, db.kind} != {"i", "u"}:
                assert (
                    xp.result_type(getattr(xp, a), getattr(xp, b)).name
                    == np.result_type(da, db).name
                )
                # the standard's can_cast never crosses kinds (NumPy's lets bool go anywhere)
                want = np.can_cast(da, db) and da.kind == db.kind
                assert xp.can_cast(getattr(xp, a), getattr(xp, b)) == want
    assert xp.result_type(xp.int8, 1) is xp.int8 and xp.result_type(xp.int16, 1.0) is xp.float32
    with pytest.raises(ValueError):
        xp.isdtype(xp.int8, "integer")


def test_astype():
    a, x = make("float64")
    same(xp.astype(x, xp.int32), a.astype(np.int32))
    assert xp.astype(x, xp.float64, copy=False) is x
    y = xp.astype(x, xp.float64)
    assert y is not x and y.data_ptr() != x.data_ptr()


# ----------------------------------------------------------------- creation


def test_creation_functions():
    same(xp.arange(5), np.arange(5))
    same(xp.arange(1.0, 2.0, 0.25), np.arange(1.0, 2.0, 0.25, dtype=np.float32))
    same(xp.arange(10, 0, -3, dtype=xp.int16), np.arange(10, 0, -3, dtype=np.int16))
    same(xp.linspace(0, 1, 5), np.linspace(0, 1, 5, dtype=np.float32))
    same(
        xp.linspace(0, 1, 5, endpoint=False), np.linspace(0, 1, 5, endpoint=False, dtype=np.float32)
    )
    for k in (-2, 0, 1, 5):
        same(xp.eye(3, 4, k=k), np.eye(3, 4, k=k, dtype=np.float32))
    same(xp.full((2, 3), 7), np.full((2, 3), 7))
    same(xp.full(2, True), np.full(2, True))
    same(xp.zeros(3, dtype=xp.int8), np.zeros(3, np.int8))
    same(xp.ones((2,)), np.ones(2, np.float32))
    assert tuple(xp.empty((2, 0)).shape) == (2, 0)
    a, x = make("int32")
    same(xp.zeros_like(x), np.zeros_like(a))
    same(xp.ones_like(x, dtype=xp.float64), np.ones_like(a, dtype=np.float64))
    same(xp.full_like(x, 3), np.full_like(a, 3))
    assert tuple(xp.empty_like(x).shape) == a.shape
    same(xp.tril(x, k=-1), np.tril(a, k=-1))
    same(xp.triu(x, k=1), np.triu(a, k=1))
    for indexing in ("xy", "ij"):
        got = xp.meshgrid(xp.arange(3), xp.arange(2), xp.arange(4), indexing=indexing)
        ref = np.meshgrid(np.arange(3), np.arange(2), np.arange(4), indexing=indexing)
        assert isinstance(got, tuple)
        for g, r in zip(got, ref):
            same(g, r)


def test_asarray_copy_semantics_and_inference():
    assert xp.asarray(True).dtype is xp.bool
    assert xp.asarray(3).dtype is xp.int64
    assert xp.asarray([1.5, 2]).dtype is xp.float32
    a = np.arange(4.0)
    shared = xp.asarray(a)
    shared[0] = 9.0
    assert a[0] == 9.0  # no copy of a NumPy array by default
    copied = xp.asarray(a, copy=True)
    copied[1] = -1
    assert a[1] == 1.0
    with pytest.raises(ValueError):
        xp.asarray([1, 2], copy=False)
    with pytest.raises(ValueError):
        xp.asarray(shared, dtype=xp.float32, copy=False)
    x = xp.ones(3)
    assert xp.asarray(x) is x
    assert xp.asarray(x, copy=True) is not x
    same(xp.asarray(memoryview(np.arange(3, dtype=np.int16))), np.arange(3, dtype=np.int16))
    same(xp.from_dlpack(np.arange(3.0)), np.arange(3.0))


# -------------------------------------------------------------- elementwise

UNARY_ANY = [
    "abs",
    "negative",
    "positive",
    "square",
    "sign",
    "isfinite",
    "isinf",
    "isnan",
    "ceil",
    "floor",
    "trunc",
    "round",
]
UNARY_FLOAT = [
    "exp",
    "expm1",
    "sin",
    "cos",
    "tan",
    "sinh",
    "cosh",
    "tanh",
    "atan",
    "asinh",
    "signbit",
]
UNARY_UNIT = ["asin", "acos", "atanh"]
UNARY_POSITIVE = ["log", "log1p", "log2", "log10", "sqrt", "reciprocal"]


@pytest.mark.parametrize("name", UNARY_ANY)
@pytest.mark.parametrize("dtype", NUMERIC)
def test_unary_numeric(name, dtype):
    a, x = make(dtype)
    same(getattr(xp, name)(x), getattr(np, name)(a))


@pytest.mark.parametrize("name", UNARY_FLOAT + UNARY_UNIT + UNARY_POSITIVE + ["acosh"])
@pytest.mark.parametrize("dtype", FLOATS)
def test_unary_float(name, dtype):
    if name == "acosh":
        a = rng.uniform(1, 5, size=(3, 4)).astype(dtype)
        x = xp.asarray(a.copy())
    else:
        a, x = make(dtype, positive=name in UNARY_POSITIVE, unit=name in UNARY_UNIT)
    same(getattr(xp, name)(x), getattr(np, name)(a), rtol=2e-6)


def test_logical_and_bitwise_unary():
    a, x = make("bool")
    same(xp.logical_not(x), np.logical_not(a))
    for dtype in INTS:
        b, y = make(dtype)
        same(xp.bitwise_invert(y), np.bitwise_invert(b))


BINARY_NUMERIC = [
    "add",
    "subtract",
    "multiply",
    "maximum",
    "minimum",
    "equal",
    "not_equal",
    "less",
    "less_equal",
    "greater",
    "greater_equal",
]
BINARY_FLOAT = ["divide", "atan2", "hypot", "copysign", "logaddexp", "nextafter", "pow"]
BINARY_INT = ["bitwise_and", "bitwise_or", "bitwise_xor"]


@pytest.mark.parametrize("name", BINARY_NUMERIC)
@pytest.mark.parametrize("dtype", NUMERIC)
def test_binary_numeric(name, dtype):
    a, x = make(dtype)
    b, y = make(dtype, shape=(4,))  # broadcasting
    same(getattr(xp, name)(x, y), getattr(np, name)(a, b))


@pytest.mark.parametrize("name", BINARY_FLOAT)
@pytest.mark.parametrize("dtype", FLOATS)
def test_binary_float(name, dtype):
    a, x = make(dtype, positive=name == "pow")
    b, y = make(dtype, shape=(4,))
    same(getattr(xp, name)(x, y), getattr(np, name)(a, b), rtol=2e-6)


@pytest.mark.parametrize("dtype", INTS)
def test_binary_integer(dtype):
    a, x = make(dtype)
    b, y = make(dtype, shape=(4,), positive=True)
    for name in BINARY_INT:
        same(getattr(xp, name)(x, y), getattr(np, name)(a, b))
    same(xp.floor_divide(x, y), np.floor_divide(a, b))
    same(xp.remainder(x, y), np.remainder(a, b))
    s = np.array([1, 2, 3, 0], dtype=dtype)
    same(xp.bitwise_left_shift(x, xp.asarray(s)), np.bitwise_left_shift(a, s))
    same(xp.bitwise_right_shift(x, xp.asarray(s)), np.bitwise_right_shift(a, s))


def test_floor_divide_and_remainder_floats():
    a, x = make("float64")
    b, y = make("float64", positive=True, shape=(4,))
    same(xp.floor_divide(x, y), np.floor_divide(a, b))
    same(xp.remainder(x, y), np.remainder(a, b))


def test_logical_binary():
    a, x = make("bool")
    b, y = make("bool")
    for name in ("logical_and", "logical_or", "logical_xor"):
        same(getattr(xp, name)(x, y), getattr(np, name)(a, b))


def test_promotion_ignores_zero_dim_status_and_scalars_adopt_dtype():
    x = xp.asarray(np.array([1, 2], np.int8))
    z = xp.asarray(np.array(300, np.int64))  # a 0-d array promotes fully
    assert xp.add(x, z).dtype is xp.int64
    assert xp.add(x, 1).dtype is xp.int8
    assert xp.add(2, x).dtype is xp.int8 and xp.subtract(10, x).tolist() == [9, 8]
    f = xp.asarray(np.array([1.0], np.float32))
    assert xp.multiply(f, xp.asarray(np.array(2.0))).dtype is xp.float64
    assert xp.multiply(f, 2.0).dtype is xp.float32
    assert xp.divide(1.0, f).tolist() == [1.0]


def test_clip_and_complex_helpers():
    a, x = make("int32")
    same(xp.clip(x, -2, 3), np.clip(a, -2, 3))
    same(xp.clip(x, min=0), np.clip(a, 0, None))
    f, y = make("float32")
    same(xp.clip(y, xp.asarray(np.float32(-1)), xp.asarray(np.float32(1))), np.clip(f, -1, 1))
    same(xp.real(y), np.real(f))
    same(xp.conj(y), np.conj(f))
    same(xp.imag(y), np.zeros_like(f))
    c = np.array([1 + 2j, -3j], dtype=np.complex64)
    z = xp.asarray(c)
    assert z.dtype is xp.complex64
    same(xp.real(z), c.real)
    same(xp.imag(z), c.imag)
    same(xp.conj(z), np.conj(c))
    same(xp.multiply(z, 1j), c * 1j)
    assert xp.result_type(xp.float64, 1j) is xp.complex128


# -------------------------------------------------------- statistical etc.

AXES = [None, 0, 1, -1, (0, 1), ()]


@pytest.mark.parametrize("axis", AXES)
@pytest.mark.parametrize("keepdims", [False, True])
def test_reductions(axis, keepdims):
    for dtype in ("float64", "float32", "int32", "int64"):
        a, x = make(dtype)
        for name in ("sum", "prod", "max", "min"):
            same(
                getattr(xp, name)(x, axis=axis, keepdims=keepdims),
                getattr(np, name)(a, axis=axis, keepdims=keepdims),
                rtol=1e-5,
            )
        if dtype.startswith("float"):
            same(
                xp.mean(x, axis=axis, keepdims=keepdims),
                np.mean(a, axis=axis, keepdims=keepdims),
                rtol=1e-5,
            )
            if axis != ():
                for c in (0.0, 1.0):
                    same(
                        xp.var(x, axis=axis, correction=c, keepdims=keepdims),
                        np.var(a, axis=axis, correction=c, keepdims=keepdims),
                        rtol=1e-5,
                    )
                    same(
                        xp.std(x, axis=axis, correction=c, keepdims=keepdims),
                        np.std(a, axis=axis, correction=c, keepdims=keepdims),
                        rtol=1e-5,
                    )
        same(
            xp.count_nonzero(x, axis=axis, keepdims=keepdims),
            np.count_nonzero(a, axis=axis, keepdims=keepdims),
        )
        same(xp.all(x, axis=axis, keepdims=keepdims), np.all(a, axis=axis, keepdims=keepdims))
        same(xp.any(x, axis=axis, keepdims=keepdims), np.any(a, axis=axis, keepdims=keepdims))


def test_sum_and_prod_dtypes():
    a, x = make("int8")
    same(xp.sum(x), np.sum(a, dtype=np.int64))
    same(xp.sum(x, dtype=xp.float64), np.sum(a, dtype=np.float64))
    b, y = make("bool")
    same(xp.sum(y), np.sum(b, dtype=np.int64))
    same(xp.prod(x, axis=0, dtype=xp.int16), np.prod(a, axis=0, dtype=np.int16))


def test_cumulative():
    a, x = make("float64", shape=(3, 4))
    for axis in (0, 1):
        for init in (False, True):
            same(
                xp.cumulative_sum(x, axis=axis, include_initial=init),
                np.cumulative_sum(a, axis=axis, include_initial=init),
            )
            same(
                xp.cumulative_prod(x, axis=axis, include_initial=init),
                np.cumulative_prod(a, axis=axis, include_initial=init),
            )
    b, y = make("int8", shape=(5,))
    same(xp.cumulative_sum(y), np.cumulative_sum(b, dtype=np.int64))
    with pytest.raises(ValueError):
        xp.cumulative_sum(x)


def test_diff():
    a, x = make("int64", shape=(3, 5))
    for n in (1, 2):
        for axis in (0, -1):
            same(xp.diff(x, axis=axis, n=n), np.diff(a, axis=axis, n=n))
    p = np.zeros((3, 1), np.int64)
    same(xp.diff(x, prepend=xp.asarray(p), append=xp.asarray(p)), np.diff(a, prepend=p, append=p))
    b, y = make("bool", shape=(6,))
    same(xp.diff(y), np.diff(b))


# ----------------------------------------------- searching, sorting, sets


def test_searching():
    a, x = make("float32", shape=(4, 5))
    for axis in (None, 0, 1):
        for keepdims in (False, True):
            same(
                xp.argmax(x, axis=axis, keepdims=keepdims),
                np.argmax(a, axis=axis, keepdims=keepdims),
            )
            same(
                xp.argmin(x, axis=axis, keepdims=keepdims),
                np.argmin(a, axis=axis, keepdims=keepdims),
            )
    b, y = make("int8")
    for g, r in zip(xp.nonzero(y), np.nonzero(b)):
        same(g, r)
    with pytest.raises(ValueError):
        xp.nonzero(xp.asarray(1))
    s = np.sort(rng.integers(0, 10, 12))
    v = rng.integers(-1, 11, (2, 3))
    for side in ("left", "right"):
        same(
            xp.searchsorted(xp.asarray(s), xp.asarray(v), side=side),
            np.searchsorted(s, v, side=side),
        )
    c, cond = make("bool")
    same(xp.where(cond, x[:3, :4], y), np.where(c, a[:3, :4], b))
    same(xp.where(cond, x[:3, :4], 0.5), np.where(c, a[:3, :4], np.float32(0.5)))


def test_sorting():
    a, x = make("int16", shape=(4, 9))
    for axis in (0, 1, -1):
        for desc in (False, True):
            ref = np.sort(a, axis=axis)
            same(xp.sort(x, axis=axis, descending=desc), np.flip(ref, axis=axis) if desc else ref)
            idx = xp.argsort(x, axis=axis, descending=desc)
            same(xp.take_along_axis(x, idx, axis=axis), np.flip(ref, axis=axis) if desc else ref)
        same(xp.argsort(x, axis=axis), np.argsort(a, axis=axis, stable=True))


def test_set_functions():
    a = np.array([[3.0, 1.0, np.nan], [3.0, np.nan, 2.0]], np.float32)
    x = xp.asarray(a)
    got, ref = xp.unique_all(x), np.unique_all(a)
    for field in ("values", "indices", "inverse_indices", "counts"):
        same(getattr(got, field), getattr(ref, field))
    same(xp.unique_counts(x).counts, np.unique_counts(a).counts)
    same(xp.unique_inverse(x).inverse_indices, np.unique_inverse(a).inverse_indices)
    same(xp.unique_values(x), np.unique_values(a))
    i = rng.integers(0, 4, size=20)
    same(xp.unique_all(xp.asarray(i)).indices, np.unique_all(i).indices)


def test_indexing_functions():
    a, x = make("float64", shape=(4, 5))
    idx = np.array([3, 0, 3])
    same(xp.take(x, xp.asarray(idx), axis=0), np.take(a, idx, axis=0))
    same(xp.take(x, xp.asarray(idx), axis=1), np.take(a, idx, axis=1))
    same(xp.take(x[0], xp.asarray(idx)), np.take(a[0], idx))
    with pytest.raises(ValueError):
        xp.take(x, xp.asarray(idx))
    ti = rng.integers(0, 4, size=(2, 5))
    same(xp.take_along_axis(x, xp.asarray(ti), axis=0), np.take_along_axis(a, ti, axis=0))
    # array indexing of the array object itself
    same(x[xp.asarray(idx)], a[idx])
    m = a > 0
    same(x[xp.asarray(m)], a[m])


# ------------------------------------------------------------ manipulation


def test_manipulation():
    a, x = make("int32", shape=(2, 3, 4))
    same(xp.broadcast_to(x[0], (5, 3, 4)), np.broadcast_to(a[0], (5, 3, 4)))
    for g, r in zip(xp.broadcast_arrays(x, x[0, 0]), np.broadcast_arrays(a, a[0, 0])):
        same(g, r)
    b, y = make("int64", shape=(2, 3, 4))
    same(xp.concat((x, y), axis=1), np.concat((a, b), axis=1))
    same(xp.concat([x, y], axis=None), np.concat([a, b], axis=None))
    same(xp.stack((x, y), axis=-1), np.stack((a, b), axis=-1))
    for axis in (0, -1, 3):
        same(xp.expand_dims(x, axis=axis), np.expand_dims(a, axis))
    for axis in (None, 0, (1, 2)):
        same(xp.flip(x, axis=axis), np.flip(a, axis=axis))
    same(xp.moveaxis(x, 0, -1), np.moveaxis(a, 0, -1))
    same(xp.permute_dims(x, (2, 0, 1)), np.permute_dims(a, (2, 0, 1)))
    same(xp.reshape(x, (4, -1)), np.reshape(a, (4, -1)))
    same(xp.reshape(x, (24,), copy=True), np.reshape(a, 24))
    with pytest.raises(ValueError):
        xp.reshape(xp.permute_dims(x, (2, 0, 1)), (24,), copy=False)
    for shift, axis in ((2, None), (1, 0), ((1, -1), (1, 2))):
        same(xp.roll(x, shift, axis=axis), np.roll(a, shift, axis=axis))
    s = x[:, :1, :1]
    same(xp.squeeze(s, axis=(1, 2)), np.squeeze(a[:, :1, :1], axis=(1, 2)))
    with pytest.raises(ValueError):
        xp.squeeze(x, axis=0)
    same(xp.tile(x, (2, 1, 1)), np.tile(a, (2, 1, 1)))
    for g, r in zip(xp.unstack(x, axis=1), np.unstack(a, axis=1)):
        same(g, r)


def test_repeat():
    a, x = make("float32", shape=(3, 2))
    same(xp.repeat(x, 2), np.repeat(a, 2))
    same(xp.repeat(x, 3, axis=1), np.repeat(a, 3, axis=1))
    r = np.array([0, 2, 1])
    same(xp.repeat(x, xp.asarray(r), axis=0), np.repeat(a, r, axis=0))
    same(xp.repeat(x, 0, axis=0), np.repeat(a, 0, axis=0))


# -------------------------------------------------------------- linalg


def test_linear_algebra():
    a, x = make("float64", shape=(2, 3, 4))
    b, y = make("float64", shape=(4, 5))
    same(xp.matmul(x, y), np.matmul(a, b))
    same(xp.matrix_transpose(x), np.matrix_transpose(a))
    same(xp.tensordot(x, y, axes=1), np.tensordot(a, b, axes=1))
    c, z = make("float64", shape=(3, 4))
    same(xp.tensordot(x, z, axes=((1, 2), (0, 1))), np.tensordot(a, c, axes=((1, 2), (0, 1))))
    same(xp.vecdot(x, z), np.vecdot(a, c))
    same(xp.vecdot(x, z, axis=-2), np.vecdot(a, c, axis=-2))
    with pytest.raises(ValueError):
        xp.matrix_transpose(xp.ones(3))
    with pytest.raises(ValueError):
        xp.vecdot(x, xp.ones((3, 5), dtype=xp.float64))


def test_array_object_protocol():
    a, x = make("float32", shape=(2, 3))
    assert x.ndim == 2 and tuple(x.shape) == (2, 3) and x.dtype is xp.float32
    assert x.device == ec.device("cpu")
    same(x.mT, a.swapaxes(-1, -2))
    same(x.T, a.T)
    same(x @ xp.asarray(a.T.copy()), a @ a.T)
    assert float(xp.asarray(2.5)) == 2.5 and int(xp.asarray(3)) == 3 and bool(xp.asarray(True))
    assert [1, 2, 3][xp.asarray(1)] == 2  # __index__
    np.testing.assert_array_equal(np.asarray(x), a)
