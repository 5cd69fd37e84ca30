"""Composite ops against NumPy: logit, heaviside, gcd/lcm, ldexp, frexp, logaddexp2,
isin, trapezoid/cumulative_trapezoid, cov/corrcoef, cross, cdist, addbmm,
index_reduce, histogram, predicates."""

import numpy as np
import pytest

import ember_core as ec

rng = np.random.default_rng(5)
A = rng.standard_normal((3, 4))


def same(t, want, dtype=None, rtol=1e-6):
    got = t.numpy()
    assert got.shape == np.shape(want)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=1e-6, equal_nan=True)
    if dtype is not None:
        assert t.dtype == dtype


def test_logit():
    p = np.array([0.0, 0.1, 0.5, 0.9, 1.0, -0.2])
    with np.errstate(all="ignore"):
        same(ec.logit(ec.from_numpy(p)), np.log(p / (1 - p)))
        q = np.clip(p, 1e-3, 1 - 1e-3)
        same(ec.from_numpy(p).logit(1e-3), np.log(q / (1 - q)))
    assert ec.logit(ec.tensor([0, 1])).dtype == ec.float32
    t = ec.tensor([0.25])
    assert t.logit_() is t
    same(t, np.log([1 / 3.0]), rtol=1e-6)


def test_heaviside():
    same(
        ec.heaviside(ec.tensor([-1.0, 0.0, 2.0, 0.0]), ec.tensor([0.5])),
        np.heaviside([-1.0, 0.0, 2.0, 0.0], 0.5),
    )
    with pytest.raises(RuntimeError, match="different dtypes"):
        ec.heaviside(ec.tensor([1.0]), ec.tensor([1]))


def test_gcd_lcm():
    a, b = np.array([12, -18, 0, 7]), np.array([8, 12, 0, 0])
    same(ec.gcd(ec.tensor(a), ec.tensor(b)), np.gcd(a, b), ec.int64)
    same(ec.tensor(a).lcm(ec.tensor(b)), np.lcm(a, b), ec.int64)
    assert ec.lcm(ec.tensor([4], dtype=ec.int16), ec.tensor([6], dtype=ec.int32)).dtype == ec.int32
    t = ec.tensor([12, 9])
    assert t.gcd_(ec.tensor([8, 6])) is t
    same(t, np.array([4, 3]))
    with pytest.raises(RuntimeError, match="not implemented"):
        ec.gcd(ec.tensor([1.0]), ec.tensor([2.0]))


def test_ldexp_frexp():
    same(ec.ldexp(ec.tensor([1.0, 3.0]), ec.tensor([3, -2])), np.ldexp([1.0, 3.0], [3, -2]))
    v = np.array([0.0, -0.0, 1.0, -3.5, 1e-40, 1e30, np.inf, -np.inf, np.nan, 0.75], np.float32)
    m, e = ec.frexp(ec.from_numpy(v))
    wm, we = np.frexp(v)
    same(m, wm, ec.float32)
    np.testing.assert_array_equal(e.numpy()[np.isfinite(v)], we[np.isfinite(v)])
    assert e.dtype == ec.int32
    d = np.array([5e-324, 3.0, -1e300])
    m, e = ec.from_numpy(d).frexp()
    same(m, np.frexp(d)[0])
    np.testing.assert_array_equal(e.numpy(), np.frexp(d)[1])
    with pytest.raises(RuntimeError, match="floating-point"):
        ec.frexp(ec.tensor([1]))


def test_logaddexp2():
    a = np.array([0.0, 1.0, -np.inf, np.inf, np.inf, 100.0, -100.0])
    b = np.array([0.0, 3.0, -np.inf, np.inf, -np.inf, 99.0, 0.0])
    same(ec.logaddexp2(ec.from_numpy(a), ec.from_numpy(b)), np.logaddexp2(a, b))


def test_sgn():
    same(ec.sgn(ec.from_numpy(A)), np.sign(A))


def test_isin():
    e, t = np.array([[1, 2], [3, 4]]), np.array([2, 3])
    same(ec.isin(ec.tensor(e), ec.tensor(t)), np.isin(e, t), ec.bool_)
    same(ec.isin(ec.tensor(e), ec.tensor(t), invert=True), np.isin(e, t, invert=True))
    same(ec.isin(ec.tensor([1, 2, 3]), 2), np.array([False, True, False]))
    same(ec.isin(2, ec.tensor([1, 2])), np.array(True))


def test_trapezoid():
    x = np.array([0.0, 1.0, 3.0, 7.0])
    same(ec.trapezoid(ec.from_numpy(A)), np.trapezoid(A))
    same(ec.trapezoid(ec.from_numpy(A), dx=0.5, dim=0), np.trapezoid(A, dx=0.5, axis=0))
    same(ec.trapezoid(ec.from_numpy(A), ec.from_numpy(x)), np.trapezoid(A, x))
    xs = np.cumsum(rng.uniform(0.1, 1, (3, 4)), axis=1)
    same(ec.trapezoid(ec.from_numpy(A), ec.from_numpy(xs)), np.trapezoid(A, xs))
    assert ec.trapezoid(ec.tensor([1, 2, 4])).item() == 4.5


def test_cumulative_trapezoid():
    x = np.array([0.0, 1.0, 3.0])
    mid = (A[:, 1:] + A[:, :-1]) / 2
    same(ec.cumulative_trapezoid(ec.from_numpy(A)), np.cumsum(mid, axis=1))
    midx = (A[1:] + A[:-1]) / 2 * np.diff(x)[:, None]
    same(
        ec.cumulative_trapezoid(ec.from_numpy(A), ec.from_numpy(x), dim=0), np.cumsum(midx, axis=0)
    )


def test_cov_corrcoef():
    same(ec.cov(ec.from_numpy(A)), np.cov(A))
    same(ec.cov(ec.from_numpy(A[0])), np.cov(A[0]))
    same(ec.cov(ec.from_numpy(A), correction=0), np.cov(A, ddof=0))
    fw, aw = np.array([1, 2, 1, 3]), np.array([0.5, 1.0, 2.0, 0.1])
    same(
        ec.cov(ec.from_numpy(A), fweights=ec.tensor(fw), aweights=ec.from_numpy(aw)),
        np.cov(A, fweights=fw, aweights=aw),
    )
    same(ec.cov(ec.from_numpy(A), aweights=ec.from_numpy(aw)), np.cov(A, aweights=aw))
    same(ec.corrcoef(ec.from_numpy(A)), np.corrcoef(A))
    with pytest.raises(RuntimeError, match="negative"):
        ec.cov(ec.from_numpy(A), fweights=ec.tensor([1, -1, 1, 1]))


def test_cross():
    a, b = rng.standard_normal((2, 3, 5)), rng.standard_normal((1, 3, 5))
    same(ec.cross(ec.from_numpy(a), ec.from_numpy(b), dim=1), np.cross(a, b, axis=1))
    same(ec.from_numpy(a).cross(ec.from_numpy(b)), np.cross(a, b, axis=1))  # first dim of size 3
    with pytest.raises(RuntimeError, match="length 3"):
        ec.cross(ec.from_numpy(a), ec.from_numpy(b), dim=2)


@pytest.mark.parametrize("p", [0.0, 1.0, 2.0, 3.0, float("inf"), 0.5])
@pytest.mark.parametrize("r", [3, 30])  # 30 > 25: p=2 takes the matrix-product path
def test_cdist(p, r):
    x1, x2 = rng.standard_normal((2, 5, 4)), rng.standard_normal((2, r, 4))
    d = x1[:, :, None, :] - x2[:, None, :, :]
    if p == 0:
        want = (d != 0).sum(-1).astype(np.float64)
    elif p == float("inf"):
        want = np.abs(d).max(-1)
    else:
        want = (np.abs(d) ** p).sum(-1) ** (1 / p)
    same(ec.cdist(ec.from_numpy(x1), ec.from_numpy(x2), p=p), want, rtol=1e-5)
    with pytest.raises(RuntimeError, match="same number of columns"):
        ec.cdist(ec.from_numpy(x1), ec.zeros(2, 3, 5, dtype=ec.float64))


def test_addbmm():
    b1, b2, inp = (
        rng.standard_normal((3, 2, 4)),
        rng.standard_normal((3, 4, 5)),
        rng.standard_normal((2, 5)),
    )
    want = 0.5 * inp + 2 * np.einsum("bij,bjk->ik", b1, b2)
    same(
        ec.addbmm(ec.from_numpy(inp), ec.from_numpy(b1), ec.from_numpy(b2), beta=0.5, alpha=2), want
    )
    t = ec.from_numpy(inp.copy())
    assert t.addbmm_(ec.from_numpy(b1), ec.from_numpy(b2), beta=0.5, alpha=2) is t
    same(t, want)


@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_index_reduce(reduce, include_self):
    src = rng.standard_normal((5, 4))
    index = np.array([0, 2, 0, 1, 0])
    want = A.copy()
    groups = {i: [src[k] for k in range(5) if index[k] == i] for i in set(index)}
    fn = {"prod": np.prod, "mean": np.mean, "amax": np.max, "amin": np.min}[reduce]
    for i, rows in groups.items():
        rows = ([A[i]] if include_self else []) + rows
        want[i] = fn(np.stack(rows), axis=0)
    got = ec.from_numpy(A).index_reduce(
        0, ec.tensor(index), ec.from_numpy(src), reduce, include_self=include_self
    )
    same(got, want)


def test_histogram():
    x = rng.standard_normal(50)
    h, edges = ec.histogram(ec.from_numpy(x), 5)
    wh, we = np.histogram(x, 5)
    same(h, wh.astype(np.float64), ec.float64)
    same(edges, we)
    bins = np.array([-2.0, 0.0, 0.5, 3.0])
    w = rng.uniform(size=50)
    r = ec.from_numpy(x).histogram(ec.from_numpy(bins), weight=ec.from_numpy(w), density=True)
    same(r.hist, np.histogram(x, bins, weights=w, density=True)[0])
    same(r.bin_edges, bins)


def test_predicates():
    a = ec.zeros(2, 3)
    assert ec.is_same_size(a, ec.ones(2, 3)) and not a.is_same_size(ec.ones(3, 2))
    assert ec.is_nonzero(ec.tensor([0.5])) and not ec.tensor(0).is_nonzero()
    assert ec.tensor(float("nan")).is_nonzero()
    with pytest.raises(RuntimeError, match="more than one value"):
        ec.is_nonzero(a)
    with pytest.raises(RuntimeError, match="no values"):
        ec.is_nonzero(ec.zeros(0))
    assert ec.is_signed(a) and not ec.is_signed(ec.tensor([1], dtype=ec.uint8))
