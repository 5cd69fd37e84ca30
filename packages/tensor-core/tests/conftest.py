"""Shared helpers: dtype lists, NumPy references for every dtype (bfloat16 via
float32), tensors in several memory layouts, and dtype-aware comparisons."""

# CUDA tests (marked `cuda`) skip without a usable GPU, or fail where one is
# expected (EMBER_EXPECT_CUDA=1, set by `make gpu-check`): see cuda_helpers.py.
import cuda_helpers
import numpy as np
import pytest

import ember_core as ec

ALL_DTYPES = [
    ec.bool,
    ec.uint8,
    ec.int8,
    ec.int16,
    ec.int32,
    ec.int64,
    ec.float16,
    ec.bfloat16,
    ec.float32,
    ec.float64,
]
FLOAT_DTYPES = [ec.float16, ec.bfloat16, ec.float32, ec.float64]
INT_DTYPES = [ec.uint8, ec.int8, ec.int16, ec.int32, ec.int64]
NUMERIC_DTYPES = INT_DTYPES + FLOAT_DTYPES

# Shapes every elementwise op is tried on: 0-d, empty, a vector, matrices, 3-d.
SHAPES = [(), (0,), (5,), (3, 4), (2, 0, 3), (2, 3, 4)]
# How a tensor's memory is laid out: contiguous, transposed (permuted dims), every
# other element (step 2), reversed (negative strides through NumPy).
LAYOUTS = ["contiguous", "transposed", "strided", "reversed"]


def np_dtype(dtype):
    """The NumPy dtype holding a tensor's values (float32 for bfloat16)."""
    return np.dtype(np.float32) if dtype is ec.bfloat16 else dtype.numpy


def to_np(t):
    """A NumPy copy of a tensor's values (bfloat16 widened to float32)."""
    if t.dtype is ec.bfloat16:
        t = t.float()
    return np.array(t.numpy(), copy=True)


def round_bf16(a):
    """float32 values rounded to bfloat16 precision (nearest even), as float32."""
    a = np.asarray(a, dtype=np.float32)
    bits = a.view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
    out = rounded.astype(np.uint32).view(np.float32)
    return np.where(np.isnan(a), a, out)


def as_dtype_np(a, dtype):
    """NumPy values ``a`` stored as ``dtype`` would hold them."""
    if dtype is ec.bfloat16:
        return round_bf16(np.asarray(a, dtype=np.float32))
    with np.errstate(all="ignore"):
        return np.asarray(a).astype(dtype.numpy)


def random_values(shape, dtype, rng, low=-5, high=5):
    """Random NumPy values for ``dtype`` (exactly representable in it)."""
    if dtype is ec.bool:
        return rng.random(shape) < 0.5
    if dtype.is_floating_point:
        return as_dtype_np(rng.uniform(low, high, shape), dtype)
    lo = max(low, dtype.min)
    hi = min(high, dtype.max)
    return rng.integers(lo, hi + 1, shape).astype(dtype.numpy)


def make(values, dtype, layout="contiguous"):
    """A tensor of ``dtype`` holding ``values`` with the given memory layout."""
    values = np.asarray(values)
    if layout == "contiguous" or values.ndim == 0:
        return ec.tensor(values, dtype=dtype)
    if layout == "transposed":
        return ec.tensor(np.ascontiguousarray(values.T), dtype=dtype).permute(
            *reversed(range(values.ndim))
        )
    if layout == "strided":
        big = np.zeros(tuple(2 * s for s in values.shape), dtype=values.dtype)
        big[tuple(slice(None, None, 2) for _ in values.shape)] = values
        base = ec.tensor(big, dtype=dtype)
        return base[tuple(slice(None, None, 2) for _ in values.shape)]
    if layout == "reversed":
        flipped = np.ascontiguousarray(values[tuple(slice(None, None, -1) for _ in values.shape)])
        base = ec.tensor(flipped, dtype=dtype)
        # from_numpy refuses negative strides (as PyTorch): reverse through as_strided
        st = base.stride()
        off = sum((s - 1) * t for s, t in zip(base.shape, st) if s > 0)
        return base.as_strided(base.shape, tuple(-t for t in st), off)
    raise ValueError(layout)


def tolerance(dtype):
    """(rtol, atol) for results stored in ``dtype`` against a float64 reference."""
    return {
        ec.float16: (2e-3, 2e-3),
        ec.bfloat16: (1.6e-2, 1e-2),
        ec.float32: (3e-6, 1e-6),
        ec.float64: (1e-12, 1e-13),
    }.get(dtype, (0, 0))


def assert_close(actual, expected, dtype=None, rtol=None, atol=None, equal_nan=True):
    """Compare a tensor with NumPy values at the tolerance of its dtype."""
    dtype = dtype or actual.dtype
    got = to_np(actual)
    exp = np.asarray(expected)
    assert got.shape == exp.shape, f"shape {got.shape} != expected {exp.shape}"
    r, a = tolerance(dtype)
    r = r if rtol is None else rtol
    a = a if atol is None else atol
    if dtype.is_floating_point:
        np.testing.assert_allclose(
            got.astype(np.float64), exp.astype(np.float64), rtol=r, atol=a, equal_nan=equal_nan
        )
    else:
        np.testing.assert_array_equal(got, exp)


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


def pytest_runtest_setup(item):
    if item.get_closest_marker("cuda") is not None:
        cuda_helpers.require_cuda(item)
