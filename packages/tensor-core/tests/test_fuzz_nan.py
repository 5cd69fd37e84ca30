"""NaN semantics of the bounding ops: clamp/clip (scalar and tensor bounds),
clamp_min/clamp_max, hardtanh, maximum/minimum (NaN propagates), fmax/fmin (NaN
ignored), threshold and softshrink -- as PyTorch: a NaN input stays NaN, and a
NaN bound makes every element NaN (clamp(x, min=nan) is all NaN).  A NumPy
reference of those rules checks random values, bounds and dtypes; the parity
test checks the same draws against torch."""

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ember_core as ec

PROPS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FLOATS = [ec.float16, ec.bfloat16, ec.float32, ec.float64]
SPECIAL = [math.nan, math.inf, -math.inf, 0.0, -0.0, 1.0, -1.0, 0.5, 3.0, -2.5, 1e30, 65504.0]
values = st.lists(st.sampled_from(SPECIAL) | st.floats(-10, 10), min_size=1, max_size=12)
bounds = st.none() | st.sampled_from([math.nan, math.inf, -math.inf, 0.0, -0.0, 1.0, -1.5, 2.0])


def _as(dtype, xs):
    """xs as stored in dtype, back as float64 (what a kernel computes with)."""
    return ec.tensor(xs, dtype=dtype).double().numpy()


def _same(got, expected):
    got = got.double().numpy()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
    mask = ~np.isnan(expected)
    np.testing.assert_array_equal(got[mask], expected[mask])


def clamp_ref(x, lo, hi):
    """PyTorch's clamp: NaN if x or a given bound is NaN, else min(max(x, lo), hi)."""
    r = x.copy()
    if lo is not None:
        r = np.where(r < lo, lo, r)
    if hi is not None:
        r = np.where(r > hi, hi, r)
    nan = np.isnan(x)
    for b in (lo, hi):
        if b is not None:
            nan = nan | np.isnan(b)
    return np.where(nan, np.nan, r)


def test_issue_example_nan_bound_gives_nan():
    x = ec.tensor([-1.0, 0.0, 2.0, math.inf])
    assert ec.clamp(x, min=math.nan).isnan().all()
    assert ec.clamp(x, max=math.nan).isnan().all()
    assert ec.clamp(x, -1.0, math.nan).isnan().all()
    assert ec.clip(x, math.nan, 1.0).isnan().all()
    assert x.clone().clamp_(min=math.nan).isnan().all()
    assert ec.clamp_min(x, math.nan).isnan().all()
    assert ec.hardtanh(x, math.nan, 1.0).isnan().all()
    # an integer tensor with a NaN bound promotes to float, all NaN
    assert ec.clamp(ec.arange(4), min=math.nan).isnan().all()
    # no bound on one side is unbounded, not NaN
    assert ec.clamp(x, min=0.5).tolist() == [0.5, 0.5, 2.0, math.inf]


def test_nan_input_stays_nan_in_threshold_and_softshrink():
    x = ec.tensor([math.nan, -1.0, 0.25, 2.0])
    r = ec.threshold(x, 0.5, 7.0)
    assert math.isnan(r[0].item()) and r[1:].tolist() == [7.0, 7.0, 2.0]
    # a NaN threshold keeps every element (x <= nan is false)
    assert ec.threshold(x, math.nan, 7.0)[1:].tolist() == [-1.0, 0.25, 2.0]
    s = ec.softshrink(x, 0.5)
    assert math.isnan(s[0].item()) and s[1:].tolist() == [-0.5, 0.0, 1.5]


def test_clamp_inplace_refuses_a_bound_its_dtype_cannot_hold():
    with pytest.raises(RuntimeError, match="result type Float can't be cast"):
        ec.arange(4).clamp_(min=1.5)
    with pytest.raises(RuntimeError, match="result type Float can't be cast"):
        ec.arange(4).clamp_(max=math.nan)
    assert ec.arange(4).clamp_(1, 2).tolist() == [1, 1, 2, 2]


@PROPS
@given(values, bounds, bounds, st.sampled_from(FLOATS), st.booleans())
def test_clamp_scalar_and_tensor_bounds_match_the_reference(xs, lo, hi, dtype, tensor_bounds):
    if lo is None and hi is None:
        return
    x = ec.tensor(xs, dtype=dtype)
    xv = _as(dtype, xs)
    lov = None if lo is None else _as(dtype, [lo])[0]
    hiv = None if hi is None else _as(dtype, [hi])[0]
    expected = clamp_ref(xv, lov, hiv)
    if tensor_bounds:
        lt = None if lo is None else ec.full(x.shape, lo, dtype=dtype)
        ht = None if hi is None else ec.full(x.shape, hi, dtype=dtype)
        _same(ec.clamp(x, lt, ht), expected)
        _same(x.clone().clamp_(lt, ht), expected)
        return
    _same(ec.clamp(x, lo, hi), expected)
    _same(ec.clip(x, lo, hi), expected)
    _same(x.clone().clamp_(lo, hi), expected)
    out = ec.empty(x.shape, dtype=dtype)
    _same(ec.clamp(x, lo, hi, out=out), expected)
    if lo is not None and hi is not None and not lo > hi:
        _same(ec.hardtanh(x, lo, hi), expected)
        _same(ec.hardtanh_(x.clone(), lo, hi), expected)


@PROPS
@given(values, st.data(), st.sampled_from(FLOATS))
def test_maximum_minimum_propagate_nan_fmax_fmin_ignore_it(xs, data, dtype):
    ys = data.draw(st.lists(st.sampled_from(SPECIAL), min_size=len(xs), max_size=len(xs)))
    x, y = ec.tensor(xs, dtype=dtype), ec.tensor(ys, dtype=dtype)
    xv, yv = _as(dtype, xs), _as(dtype, ys)
    _same(ec.maximum(x, y), np.maximum(xv, yv))
    _same(ec.minimum(x, y), np.minimum(xv, yv))
    _same(ec.max(x, y), np.maximum(xv, yv))
    _same(ec.fmax(x, y), np.fmax(xv, yv))
    _same(ec.fmin(x, y), np.fmin(xv, yv))


@pytest.mark.parity
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(values, bounds, bounds, st.sampled_from(FLOATS), st.booleans())
def test_bounding_ops_match_pytorch(xs, lo, hi, dtype, tensor_bounds):
    torch = pytest.importorskip("torch")
    if lo is None and hi is None:
        return
    td = getattr(torch, dtype.name)

    def run(T, d):
        x = T.tensor(xs, dtype=d)
        if tensor_bounds:
            lt = None if lo is None else T.full(x.shape, lo, dtype=d)
            ht = None if hi is None else T.full(x.shape, hi, dtype=d)
            rs = [T.clamp(x, lt, ht), x.clone().clamp_(lt, ht)]
            if lt is not None:
                rs += [T.maximum(x, lt), T.minimum(x, lt), T.fmax(x, lt), T.fmin(x, lt)]
        else:
            rs = [T.clamp(x, lo, hi), T.clip(x, lo, hi), x.clone().clamp_(lo, hi)]
            if lo is not None and hi is not None and not lo > hi:
                F = T.nn.functional if T is torch else T
                rs.append(F.hardtanh(x, lo, hi))
            if lo is not None:
                F = T.nn.functional if T is torch else T
                rs.append(F.threshold(x, lo, 7.0))
                if math.isfinite(lo):
                    rs.append(F.softshrink(x, abs(lo)))
        return [r.double().numpy() for r in rs]

    for got, want in zip(run(ec, dtype), run(torch, td)):
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        np.testing.assert_array_equal(got[~np.isnan(want)], want[~np.isnan(want)])


@pytest.mark.cuda
@pytest.mark.parametrize("dtype", FLOATS)
def test_cuda_bounding_ops_follow_the_same_nan_rules(dtype):
    # the CUDA kernels share ec_clamp and the expression lists with the CPU ones
    xs = [math.nan, -math.inf, -2.0, -0.0, 0.5, 3.0, math.inf]
    bounds = [None, math.nan, -1.0, 1.0]
    for lo in bounds:
        for hi in bounds:
            if lo is None and hi is None:
                continue
            got = ec.clamp(ec.tensor(xs, dtype=dtype, device="cuda"), lo, hi).cpu()
            want = ec.clamp(ec.tensor(xs, dtype=dtype), lo, hi)
            _same(got, want.double().numpy())
    x = ec.tensor(xs, dtype=dtype, device="cuda")
    _same(ec.threshold(x, 0.5, 7.0).cpu(), ec.threshold(x.cpu(), 0.5, 7.0).double().numpy())
    _same(ec.hardtanh(x, math.nan, 1.0).cpu(), np.full(len(xs), np.nan))
