"""Pooling (ember_core._ops.nn.pool) against straightforward NumPy references: max
(values and indices, dilation, padding, ceil_mode, NaN), average
(count_include_pad, divisor_override, ceil_mode), adaptive average and max;
the backward ops; bad input; hypothesis fuzzing of the shape arguments."""

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ember_core as ec

rng = np.random.default_rng(1)


def E(a):
    return ec.from_numpy(np.ascontiguousarray(a))


def rand(*shape, dtype=np.float64):
    return rng.standard_normal(shape).astype(dtype)


def out_size(i, k, s, p, d, ceil):
    o = (i + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil else 0)) // s + 1
    if ceil and (o - 1) * s >= i + p:
        o -= 1
    return o


def windows(spatial, k, s, p, d, ceil):
    """For each output position, the input positions of its window (in bounds)."""
    outs = [out_size(*a, ceil) for a in zip(spatial, k, s, p, d)]
    for o in itertools.product(*(range(n) for n in outs)):
        axes = [
            [oi * si - pi + j * di for j in range(ki)] for oi, si, pi, di, ki in zip(o, s, p, d, k)
        ]
        axes = [[v for v in ax if 0 <= v < n] for ax, n in zip(axes, spatial)]
        yield o, list(itertools.product(*axes)), outs


def max_pool_ref(x, k, s, p, d, ceil):
    """Values and flat plane indices; the first maximum wins, NaN wins."""
    lead, spatial = x.shape[:2], x.shape[2:]
    outs = [out_size(*a, ceil) for a in zip(spatial, k, s, p, d)]
    vals = np.empty(lead + tuple(outs))
    idx = np.empty(lead + tuple(outs), dtype=np.int64)
    for n, c in np.ndindex(*lead):
        for o, pos, _ in windows(spatial, k, s, p, d, ceil):
            best, bi = -np.inf, None
            for q in pos:
                v = x[(n, c) + q]
                if v > best or np.isnan(v):
                    best, bi = v, q
            vals[(n, c) + o] = best
            idx[(n, c) + o] = np.ravel_multi_index(bi, spatial)
    return vals, idx


def avg_pool_ref(x, k, s, p, ceil, count_include_pad, divisor):
    lead, spatial = x.shape[:2], x.shape[2:]
    outs = [out_size(i, kk, ss, pp, 1, ceil) for i, kk, ss, pp in zip(spatial, k, s, p)]
    y = np.empty(lead + tuple(outs))
    for o in itertools.product(*(range(n) for n in outs)):
        lo = [oi * si - pi for oi, si, pi in zip(o, s, p)]
        hi_pad = [min(a + kk, n + pp) for a, kk, n, pp in zip(lo, k, spatial, p)]
        padded = math.prod(h - a for a, h in zip(lo, hi_pad))
        a = [max(v, 0) for v in lo]
        h = [min(v, n) for v, n in zip(hi_pad, spatial)]
        sl = (slice(None), slice(None)) + tuple(slice(u, v) for u, v in zip(a, h))
        count = math.prod(v - u for u, v in zip(a, h))
        div = divisor or (padded if count_include_pad else count)
        y[(slice(None), slice(None)) + o] = x[sl].sum(axis=tuple(range(2, x.ndim))) / div
    return y


def adaptive_ref(x, out, kind):
    lead, spatial = x.shape[:2], x.shape[2:]
    y = np.empty(lead + tuple(out))
    idx = np.empty(lead + tuple(out), dtype=np.int64)
    for o in itertools.product(*(range(n) for n in out)):
        lo = [(oi * i) // n for oi, i, n in zip(o, spatial, out)]
        hi = [-(-((oi + 1) * i) // n) for oi, i, n in zip(o, spatial, out)]
        sl = tuple(slice(a, b) for a, b in zip(lo, hi))
        for n, c in np.ndindex(*lead):
            win = x[(n, c) + sl]
            if kind == "avg":
                y[(n, c) + o] = win.mean()
            else:
                j = (
                    int(np.argmax(win))
                    if not np.isnan(win).any()
                    else int(np.flatnonzero(np.isnan(win.ravel()))[-1])
                )
                q = np.unravel_index(j, win.shape)
                y[(n, c) + o] = win[q]
                idx[(n, c) + o] = np.ravel_multi_index(tuple(a + b for a, b in zip(lo, q)), spatial)
    return y, idx


# ---------------------------------------------------------------- max pool

MAX2D = [
    # shape, kernel, stride, padding, dilation, ceil_mode
    ((2, 3, 8, 8), 2, None, 0, 1, False),
    ((1, 2, 7, 9), (3, 2), (2, 1), (1, 1), 1, False),
    ((2, 1, 9, 7), 3, 2, 1, 2, True),
    ((1, 2, 5, 6), (2, 3), (2, 2), 0, (2, 1), True),
    ((3, 2, 6, 6), 3, 3, 1, 1, True),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", MAX2D)
def test_max_pool2d_values_and_indices(case, dtype):
    shape, k, s, p, d, ceil = case
    x = rand(*shape, dtype=dtype)
    x[0, 0, 0, :2] = x[0, 0, 1, 0]  # ties: the first one wins
    y, i = ec.max_pool2d(E(x), k, s, p, d, ceil, True)
    n2 = lambda v: (v, v) if isinstance(v, int) else v  # noqa: E731
    ref, ridx = max_pool_ref(x, n2(k), n2(s if s is not None else k), n2(p), n2(d), ceil)
    np.testing.assert_array_equal(y.numpy(), ref.astype(dtype))
    np.testing.assert_array_equal(i.numpy(), ridx)
    assert i.dtype == ec.int64
    np.testing.assert_array_equal(ec.max_pool2d(E(x), k, s, p, d, ceil).numpy(), ref.astype(dtype))


def test_max_pool_1d_3d_and_unbatched():
    x = rand(2, 3, 11)
    y, i = ec.max_pool1d(E(x), 3, 2, 1, 2, True, True)
    ref, ridx = max_pool_ref(x, (3,), (2,), (1,), (2,), True)
    np.testing.assert_array_equal(y.numpy(), ref)
    np.testing.assert_array_equal(i.numpy(), ridx)
    np.testing.assert_array_equal(ec.max_pool1d(E(x[0]), 3, 2, 1, 2, True).numpy(), ref[0])
    x3 = rand(1, 2, 5, 6, 4)
    y3, i3 = ec.max_pool3d(E(x3), (2, 3, 2), (1, 2, 2), (1, 1, 0), 1, False, True)
    ref3, ridx3 = max_pool_ref(x3, (2, 3, 2), (1, 2, 2), (1, 1, 0), (1, 1, 1), False)
    np.testing.assert_array_equal(y3.numpy(), ref3)
    np.testing.assert_array_equal(i3.numpy(), ridx3)
    np.testing.assert_array_equal(
        ec.max_pool3d(E(x3[0]), (2, 3, 2), (1, 2, 2), (1, 1, 0)).numpy(), ref3[0]
    )
    v, ix = ec.max_pool2d_with_indices(E(x3[0]), 2)
    r, rx = max_pool_ref(x3[0], (2, 2), (2, 2), (0, 0), (1, 1), False)
    np.testing.assert_array_equal(v.numpy(), r)
    np.testing.assert_array_equal(ix.numpy(), rx)


def test_max_pool_nan_and_infinity():
    x = np.array([[[[1.0, np.nan, 3.0, -np.inf], [np.nan, 0.0, -np.inf, -np.inf]]]])
    y, i = ec.max_pool2d(E(x), 2, return_indices=True)
    assert np.isnan(y.numpy()[0, 0, 0, 0]) and i.numpy()[0, 0, 0, 0] == 4  # the last NaN
    assert y.numpy()[0, 0, 0, 1] == 3.0 and i.numpy()[0, 0, 0, 1] == 2
    x2 = np.full((1, 1, 2, 2), -np.inf)
    y2, i2 = ec.max_pool2d(E(x2), 2, return_indices=True)
    assert y2.numpy().item() == -np.inf and i2.numpy().item() == 0


def test_max_pool_non_contiguous_and_half_and_int():
    t = E(rand(2, 6, 6, 3)).permute(0, 3, 1, 2)  # a channels-last layout
    assert not t.is_contiguous()
    ref, _ = max_pool_ref(t.numpy(), (2, 2), (2, 2), (0, 0), (1, 1), False)
    np.testing.assert_array_equal(ec.max_pool2d(t, 2).numpy(), ref)
    h = E(rand(1, 2, 4, 4)).to(ec.bfloat16)
    np.testing.assert_array_equal(
        ec.max_pool2d(h, 2).float().numpy(),
        max_pool_ref(h.float().numpy(), (2, 2), (2, 2), (0, 0), (1, 1), False)[0],
    )
    xi = np.arange(32).reshape(1, 2, 4, 4)
    yi = ec.max_pool2d(E(xi), 2)
    assert yi.dtype == ec.int64
    np.testing.assert_array_equal(
        yi.numpy(), max_pool_ref(xi, (2, 2), (2, 2), (0, 0), (1, 1), False)[0]
    )


def test_max_pool_backward_scatters_at_indices():
    x = rand(2, 3, 7, 7)
    y, i = ec.max_pool2d(E(x), 3, 2, 1, 1, False, True)  # overlapping windows
    gy = rand(*y.shape)
    gx = ec._max_pool_backward(E(gy), i, x.shape).numpy()
    ref = np.zeros_like(x)
    for n, c in np.ndindex(2, 3):
        np.add.at(ref[n, c].reshape(-1), i.numpy()[n, c].ravel(), gy[n, c].ravel())
    np.testing.assert_allclose(gx, ref, rtol=1e-12, atol=1e-12)
    # the double backward op gathers: its adjoint
    z = rand(*x.shape)
    gz = ec._max_pool_double_backward(E(z), i).numpy()
    np.testing.assert_allclose((gz * gy).sum(), (z * gx).sum(), rtol=1e-10, atol=1e-12)
    with pytest.raises(IndexError, match="out of bounds"):
        ec._max_pool_backward(E(gy), ec.full(y.shape, 49, dtype=ec.int64), x.shape)


# ---------------------------------------------------------------- avg pool

AVG2D = [
    ((2, 3, 8, 8), 2, None, 0, False, True, None),
    ((1, 2, 7, 9), (3, 2), (2, 1), (1, 1), False, False, None),
    ((2, 1, 9, 7), 3, 2, 1, True, True, None),
    ((2, 1, 9, 7), 3, 2, 1, True, False, None),
    ((1, 2, 5, 6), (2, 3), (3, 2), (1, 1), True, True, 4),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", AVG2D)
def test_avg_pool2d(case, dtype):
    shape, k, s, p, ceil, cip, div = case
    x = rand(*shape, dtype=dtype)
    y = ec.avg_pool2d(E(x), k, s, p, ceil, cip, div)
    n2 = lambda v: (v, v) if isinstance(v, int) else v  # noqa: E731
    ref = avg_pool_ref(
        x.astype(np.float64), n2(k), n2(s if s is not None else k), n2(p), ceil, cip, div
    )
    np.testing.assert_allclose(
        y.numpy(), ref, rtol=1e-5 if dtype == np.float32 else 1e-12, atol=1e-6
    )


def test_avg_pool_1d_3d_unbatched_and_int():
    x = rand(2, 3, 10)
    np.testing.assert_allclose(
        ec.avg_pool1d(E(x), 3, 2, 1, True, False).numpy(),
        avg_pool_ref(x, (3,), (2,), (1,), True, False, None),
        rtol=1e-12,
        atol=1e-12,
    )
    np.testing.assert_allclose(
        ec.avg_pool1d(E(x[0]), 2).numpy(),
        avg_pool_ref(x[:1], (2,), (2,), (0,), False, True, None)[0],
        rtol=1e-12,
        atol=1e-12,
    )
    x3 = rand(1, 2, 4, 5, 6)
    np.testing.assert_allclose(
        ec.avg_pool3d(E(x3), (2, 3, 2), (2, 1, 2), (1, 1, 0), False, True, 5).numpy(),
        avg_pool_ref(x3, (2, 3, 2), (2, 1, 2), (1, 1, 0), False, True, 5),
        rtol=1e-12,
        atol=1e-12,
    )
    xi = np.arange(36).reshape(1, 1, 6, 6)
    yi = ec.avg_pool2d(E(xi), 4)
    assert yi.dtype == ec.int64 and yi.numpy().item() == 10  # 168 / 16 truncated, as PyTorch


def test_avg_pool_backward_is_the_adjoint():
    x = rand(2, 3, 7, 8)
    args = ((3, 2), (2, 2), (1, 1), True, False, None)
    y = ec._avg_pool(E(x), *args).numpy()
    gy = rand(*y.shape)
    gx = ec._avg_pool_backward(E(gy), x.shape, *args).numpy()
    np.testing.assert_allclose((gx * x).sum(), (gy * y).sum(), rtol=1e-10, atol=1e-12)
    e = np.zeros_like(x)
    e[1, 2, 6, 7] = 1.0
    ye = ec._avg_pool(E(e), *args).numpy()
    np.testing.assert_allclose(gx[1, 2, 6, 7], (gy * ye).sum(), rtol=1e-10, atol=1e-12)


# ----------------------------------------------------------------- adaptive


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(
    "shape,out",
    [
        ((2, 3, 7, 9), (3, 4)),
        ((1, 2, 5, 5), (5, 5)),
        ((1, 1, 4, 6), (6, 9)),
        ((2, 2, 10), (3,)),
        ((1, 2, 5, 4, 7), (2, 3, 4)),
    ],
)
def test_adaptive_pools(shape, out, dtype):
    x = rand(*shape, dtype=dtype)
    k = len(out)
    avg = {1: ec.adaptive_avg_pool1d, 2: ec.adaptive_avg_pool2d, 3: ec.adaptive_avg_pool3d}[k]
    mx = {1: ec.adaptive_max_pool1d, 2: ec.adaptive_max_pool2d, 3: ec.adaptive_max_pool3d}[k]
    ref_avg, _ = adaptive_ref(x.astype(np.float64), out, "avg")
    np.testing.assert_allclose(
        avg(E(x), out).numpy(),
        ref_avg,
        rtol=1e-5 if dtype == np.float32 else 1e-12,
        atol=1e-6 if dtype == np.float32 else 1e-12,
    )
    v, i = mx(E(x), out)
    ref_max, ref_idx = adaptive_ref(x, out, "max")
    np.testing.assert_array_equal(v.numpy(), ref_max.astype(dtype))
    np.testing.assert_array_equal(i.numpy(), ref_idx)
    # unbatched, and None keeps a size
    np.testing.assert_allclose(avg(E(x[0]), out).numpy(), ref_avg[0], rtol=1e-5, atol=1e-6)
    if k == 2:
        y = ec.adaptive_avg_pool2d(E(x), (None, out[1]))
        assert y.shape == (shape[0], shape[1], shape[2], out[1])


def test_adaptive_avg_backward_is_the_adjoint():
    x = rand(2, 2, 7, 5)
    y = ec._adaptive_avg_pool(E(x), (3, 4)).numpy()
    gy = rand(*y.shape)
    gx = ec._adaptive_avg_pool_backward(E(gy), x.shape).numpy()
    np.testing.assert_allclose((gx * x).sum(), (gy * y).sum(), rtol=1e-10, atol=1e-12)


# ------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    "call,match",
    [
        (lambda: ec.max_pool2d(ec.ones(4, 4), 2), "non-empty 3D or 4D"),
        (lambda: ec.max_pool1d(ec.ones(1, 2, 4, 4), 2), "max_pool1d: Expected 2D or 3D"),
        (lambda: ec.max_pool2d(ec.ones(1, 0, 4, 4), 2), "non-empty 3D or 4D"),
        (
            lambda: ec.max_pool2d(ec.ones(1, 1, 4, 4), (2, 2, 2)),
            "kernel_size must either be a single int, or a tuple of two ints",
        ),
        (lambda: ec.max_pool2d(ec.ones(1, 1, 4, 4), 2, stride=0), "stride should not be zero"),
        (
            lambda: ec.max_pool2d(ec.ones(1, 1, 4, 4), 3, padding=2),
            "pad should be at most half of effective kernel size",
        ),
        (
            lambda: ec.max_pool2d(ec.ones(1, 1, 4, 4), 3, padding=2, dilation=2),
            "pad should be smaller than or equal to half of kernel size",
        ),
        (
            lambda: ec.max_pool2d(ec.ones(1, 2, 6, 6), 7),
            r"Given input size: \(2x6x6\). Calculated output size: \(2x0x0\). "
            "Output size is too small",
        ),
        (
            lambda: ec.avg_pool2d(ec.ones(1, 1, 4, 4), 3, divisor_override=0),
            "divisor must be not zero",
        ),
        (
            lambda: ec.avg_pool3d(ec.ones(1, 1, 1, 8, 6), (2, 4, 4), padding=(1, 2, 2)),
            r"input image \(T: 1 H: 8 W: 6\) smaller than kernel size",
        ),
        (
            lambda: ec.adaptive_avg_pool2d(ec.ones(1, 2, 0, 6), 2),
            "Expected input to have non-zero size for non-batch dimensions",
        ),
        (lambda: ec.adaptive_avg_pool2d(ec.ones(2, 2, 2, 4, 4), 2), "Expected 3D or 4D tensor"),
        (lambda: ec.max_pool2d(ec.ones(1, 1, 4, 4, dtype=ec.bool), 2), "Bool"),
    ],
)
def test_bad_input_raises(call, match):
    with pytest.raises(RuntimeError, match=match):
        call()


def test_adaptive_integer_input_not_implemented():
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        ec.adaptive_avg_pool2d(ec.ones(1, 1, 4, 4, dtype=ec.int64), 2)


@settings(max_examples=80, deadline=None)
@given(
    kind=st.sampled_from(["max", "avg"]),
    nd=st.integers(1, 3),
    size=st.integers(1, 7),
    k=st.integers(-1, 4),
    s=st.integers(-1, 3),
    p=st.integers(-1, 2),
    d=st.integers(0, 2),
    ceil=st.booleans(),
    batched=st.booleans(),
)
def test_fuzz_pool_shapes_never_crash(kind, nd, size, k, s, p, d, ceil, batched):
    shape = ((2,) if batched else ()) + (3,) + (size,) * nd
    x = ec.ones(*shape)
    fn = {
        ("max", 1): ec.max_pool1d,
        ("max", 2): ec.max_pool2d,
        ("max", 3): ec.max_pool3d,
        ("avg", 1): ec.avg_pool1d,
        ("avg", 2): ec.avg_pool2d,
        ("avg", 3): ec.avg_pool3d,
    }[kind, nd]
    try:
        y = fn(x, k, s, p, d, ceil) if kind == "max" else fn(x, k, s, p, ceil)
    except RuntimeError:
        return
    o = out_size(size, k, s, p, d if kind == "max" else 1, ceil)
    assert y.shape == shape[:-nd] + (o,) * nd
    if kind == "max":  # a window wholly in the padding gives -inf, as in PyTorch
        assert np.all((y.numpy() == 1.0) | (y.numpy() == -np.inf))
    elif p == 0:
        assert np.all(y.numpy() == 1.0)


# ------------------------------------------------------------------- parity


@pytest.mark.parity
def test_parity_pools():
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    x = rand(2, 3, 9, 11, dtype=np.float32)
    tx = torch.from_numpy(x)
    tv, ti = F.max_pool2d(tx, (3, 2), (2, 3), (1, 1), (2, 1), True, True)
    v, i = ec.max_pool2d(E(x), (3, 2), (2, 3), (1, 1), (2, 1), True, True)
    np.testing.assert_array_equal(v.numpy(), tv.numpy())
    np.testing.assert_array_equal(i.numpy(), ti.numpy())
    np.testing.assert_allclose(
        ec.avg_pool2d(E(x), 3, 2, 1, True, False).numpy(),
        F.avg_pool2d(tx, 3, 2, 1, True, False).numpy(),
        rtol=1e-6,
        atol=1e-6,
    )
    np.testing.assert_allclose(
        ec.adaptive_avg_pool2d(E(x), (4, 5)).numpy(),
        F.adaptive_avg_pool2d(tx, (4, 5)).numpy(),
        rtol=1e-6,
        atol=1e-6,
    )
    tv, ti = F.adaptive_max_pool2d(tx, (4, 5), True)
    v, i = ec.adaptive_max_pool2d(E(x), (4, 5))
    np.testing.assert_array_equal(v.numpy(), tv.numpy())
    np.testing.assert_array_equal(i.numpy(), ti.numpy())
