"""Reductions and scans against NumPy: one or many dims, keepdim, dtype=,
out=, every dtype, non-contiguous inputs, empty and 0-d tensors, NaN handling."""

import numpy as np
import pytest
from conftest import (
    ALL_DTYPES,
    FLOAT_DTYPES,
    LAYOUTS,
    NUMERIC_DTYPES,
    assert_close,
    make,
    random_values,
    to_np,
)

import ember_core as ec

DIMS = [None, 0, 1, -1, (0, 2), (1, 2), (0, 1, 2), ()]


def _np_dims(dim, nd):
    if dim is None or dim == ():
        return tuple(range(nd))
    return dim


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dim", DIMS, ids=str)
def test_sum_mean_over_dims_and_layouts(dim, layout, rng):
    x = random_values((3, 4, 5), ec.float64, rng)
    t = make(x, ec.float64, layout)
    nd = _np_dims(dim, 3)
    for keepdim in (False, True):
        assert_close(ec.sum(t, dim, keepdim), x.sum(axis=nd, keepdims=keepdim))
        assert_close(t.mean(dim, keepdim), x.mean(axis=nd, keepdims=keepdim))


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_sum_prod_dtypes(dtype, rng):
    x = random_values((4, 6), dtype, rng, -3, 3)
    t = make(x, dtype, "transposed")
    s = ec.sum(t, 1)
    expected_dtype = dtype if dtype.is_floating_point else ec.int64
    assert s.dtype is expected_dtype
    ref = x.astype(np.float64 if dtype.is_floating_point else np.int64)
    assert_close(
        s, ref.sum(1), rtol=2e-2 if dtype in (ec.float16, ec.bfloat16) else None, atol=5e-2
    )
    assert_close(
        ec.prod(t, 0),
        ref.prod(0),
        rtol=2e-2 if dtype in (ec.float16, ec.bfloat16) else None,
        atol=5e-2,
    )
    assert ec.sum(t, dtype=ec.float64).dtype is ec.float64
    np.testing.assert_allclose(
        ec.sum(t, dtype=ec.float64).item(), ref.astype(np.float64).sum(), rtol=1e-2
    )


def test_float32_sum_is_accurate_and_fast_paths_agree(rng):
    x = rng.standard_normal(1_000_003).astype(np.float32) + 1000
    t = ec.tensor(x)
    exact = x.astype(np.float64).sum()
    assert abs(t.sum().item() - exact) / exact < 1e-6
    m = x[:1_000_000].reshape(1000, 1000)
    tm = ec.tensor(m)
    np.testing.assert_allclose(
        tm.sum(0).numpy(), m.astype(np.float64).sum(0), rtol=1e-5
    )  # column sums
    np.testing.assert_allclose(tm.sum(1).numpy(), m.astype(np.float64).sum(1), rtol=1e-5)
    np.testing.assert_allclose(tm.T.sum(0).numpy(), m.astype(np.float64).sum(1), rtol=1e-5)
    np.testing.assert_allclose(tm.mean().item(), m.astype(np.float64).mean(), rtol=1e-6)


@pytest.mark.parametrize("dtype", NUMERIC_DTYPES, ids=str)
def test_max_min_argmax_with_indices(dtype, rng):
    x = random_values((5, 7), dtype, rng, -50, 50)
    t = make(x, dtype, "strided")
    v, i = ec.max(t, 1)
    assert_close(v, x.max(1))
    np.testing.assert_array_equal(i.numpy(), x.astype(np.float64).argmax(1))
    v, i = t.min(0, keepdim=True)
    assert_close(v, x.min(0, keepdims=True))
    np.testing.assert_array_equal(i.numpy(), x.astype(np.float64).argmin(0)[None])
    assert ec.max(t).item() == pytest.approx(float(x.max()))
    assert ec.argmax(t).item() == x.astype(np.float64).argmax()
    assert ec.argmin(t, 1).tolist() == x.astype(np.float64).argmin(1).tolist()
    assert_close(ec.amax(t, (0, 1)), x.max())
    assert_close(ec.amin(t, 0), x.min(0))
    r = ec.aminmax(t)
    assert r.min.item() == pytest.approx(float(x.min())) and r.max.item() == pytest.approx(
        float(x.max())
    )


def test_max_returns_named_tuple_and_first_index_of_ties():
    t = ec.tensor([[1.0, 3.0, 3.0], [2.0, 2.0, 0.0]])
    r = t.max(1)
    assert r.values.tolist() == [3.0, 2.0] and r.indices.tolist() == [1, 0]
    v, i = r
    assert v is r.values
    vals, idx = ec.empty(0), ec.empty(0, dtype=ec.int64)
    ec.max(t, 1, out=(vals, idx))
    assert vals.tolist() == [3.0, 2.0] and idx.tolist() == [1, 0]


def test_nan_propagates_through_max_min_sum():
    t = ec.tensor([[1.0, np.nan, 3.0], [4.0, 5.0, 6.0]])
    assert np.isnan(t.max().item()) and np.isnan(t.sum().item())
    v, i = t.max(1)
    assert np.isnan(v[0].item()) and i[0].item() == 1 and v[1].item() == 6.0
    assert np.isnan(t.amin(1)[0].item())
    assert ec.nansum(t).item() == 19.0
    assert ec.nanmean(t).item() == pytest.approx(19.0 / 5)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
@pytest.mark.parametrize("correction", [0, 1, 2])
def test_var_std(dtype, correction, rng):
    x = random_values((6, 8), dtype, rng)
    t = make(x, dtype, "transposed")
    xf = x.astype(np.float64)
    tol = 2e-2 if dtype in (ec.float16, ec.bfloat16) else None
    assert_close(ec.var(t, 1, correction=correction), xf.var(1, ddof=correction), rtol=tol)
    assert_close(ec.std(t, (0, 1), correction=correction), xf.std(ddof=correction), rtol=tol)
    assert_close(t.var(0, keepdim=True), xf.var(0, ddof=1, keepdims=True), rtol=tol)
    assert_close(t.std(unbiased=False), xf.std(), rtol=tol)
    v, m = ec.var_mean(t, 1)
    assert_close(v, xf.var(1, ddof=1), rtol=tol)
    assert_close(m, xf.mean(1), rtol=tol)


def test_var_of_one_element_is_nan_and_of_ints_errors():
    assert np.isnan(ec.tensor([3.0]).var().item())
    assert ec.tensor([3.0]).var(correction=0).item() == 0.0
    with pytest.raises(RuntimeError):
        ec.tensor([1, 2]).var()
    with pytest.raises(RuntimeError, match="could not infer output dtype"):
        ec.tensor([1, 2]).mean()
    assert ec.tensor([1, 2]).mean(dtype=ec.float64).item() == 1.5


@pytest.mark.parametrize("p", [1, 2, 3, 0.5, 0, float("inf"), float("-inf"), "fro"])
def test_norm(p, rng):
    x = random_values((4, 5), ec.float64, rng)
    t = ec.tensor(x)
    pn = 2 if p == "fro" else p
    np.testing.assert_allclose(ec.norm(t, p).item(), np.linalg.norm(x.reshape(-1), pn), rtol=1e-12)
    np.testing.assert_allclose(
        ec.norm(t, p, dim=1).numpy(), np.linalg.norm(x, pn, axis=1), rtol=1e-12
    )
    np.testing.assert_allclose(
        ec.vector_norm(t, pn, dim=0).numpy(), np.linalg.norm(x, pn, axis=0), rtol=1e-12
    )


def test_logsumexp_is_stable(rng):
    x = random_values((3, 5), ec.float64, rng) * 300
    t = ec.tensor(x)
    m = x.max(1, keepdims=True)
    np.testing.assert_allclose(
        ec.logsumexp(t, 1).numpy(), (m + np.log(np.exp(x - m).sum(1, keepdims=True)))[:, 0]
    )
    assert ec.logsumexp(ec.tensor([-np.inf, -np.inf]), 0).item() == -np.inf
    assert ec.logsumexp(ec.tensor([np.inf, 1.0]), 0).item() == np.inf
    assert ec.logsumexp(ec.tensor([1, 2]), 0).dtype is ec.float32


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_all_any_count_nonzero(dtype, rng):
    x = random_values((4, 5), dtype, rng, 0, 2)
    t = make(x, dtype, "reversed")
    assert ec.all(t).item() == bool(x.all())
    assert ec.any(t, 1).tolist() == x.any(1).tolist()
    assert t.all(0, keepdim=True).shape == (1, 5)
    assert ec.count_nonzero(t).item() == np.count_nonzero(x)
    assert ec.count_nonzero(t, 0).tolist() == np.count_nonzero(x, 0).tolist()
    assert ec.all(t).dtype is (ec.uint8 if dtype is ec.uint8 else ec.bool)


def test_reductions_of_empty_and_zero_dim_tensors():
    e = ec.zeros(0, 3)
    assert e.sum().item() == 0 and e.prod().item() == 1
    assert e.sum(0).tolist() == [0, 0, 0]
    assert e.sum(1).shape == (0,)
    assert np.isnan(e.mean().item())
    assert e.all().item() is True and e.any().item() is False
    assert e.amax(1).shape == (0,)
    with pytest.raises(IndexError, match="non-zero size"):
        e.amax(0)
    with pytest.raises(RuntimeError, match="numel"):
        e.max()
    s = ec.tensor(2.5)
    assert s.sum().item() == 2.5 and s.sum(0).item() == 2.5 and s.sum(-1, keepdim=True).shape == ()
    assert s.max().item() == 2.5 and s.argmax().item() == 0
    v, i = s.max(0)
    assert v.item() == 2.5 and i.item() == 0
    assert s.cumsum(0).item() == 2.5
    with pytest.raises(IndexError):
        s.sum(1)


@pytest.mark.parametrize("dtype", NUMERIC_DTYPES, ids=str)
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_scans(dtype, dim, rng):
    x = random_values((4, 5), dtype, rng, -3, 3)
    t = make(x, dtype, "transposed")
    acc = np.float64 if dtype.is_floating_point else np.int64
    tol = 2e-2 if dtype in (ec.float16, ec.bfloat16) else None
    assert_close(ec.cumsum(t, dim), x.astype(acc).cumsum(dim), rtol=tol, atol=5e-2)
    assert_close(ec.cumprod(t, dim), x.astype(acc).cumprod(dim), rtol=tol, atol=5e-2)
    v, i = ec.cummax(t, dim)
    assert_close(v, np.maximum.accumulate(x, axis=dim))
    v, i = ec.cummin(t, dim)
    assert_close(v, np.minimum.accumulate(x, axis=dim))
    if dtype.is_floating_point:
        xf = x.astype(np.float64)
        assert_close(ec.logcumsumexp(t, dim), np.logaddexp.accumulate(xf, axis=dim), rtol=tol)


def test_cumsum_dtype_out_and_inplace():
    t = ec.tensor([1, 2, 3], dtype=ec.int8)
    assert ec.cumsum(t, 0).dtype is ec.int64
    assert ec.cumsum(t, 0, dtype=ec.float32).tolist() == [1.0, 3.0, 6.0]
    out = ec.empty(0, dtype=ec.int64)
    ec.cumsum(t, 0, out=out)
    assert out.tolist() == [1, 3, 6]
    f = ec.tensor([1.0, 2.0, 3.0])
    f.cumsum_(0)
    assert f.tolist() == [1.0, 3.0, 6.0]
    f.cumprod_(0)
    assert f.tolist() == [1.0, 3.0, 18.0]


def test_out_forms_of_reductions():
    t = ec.arange(12.0).view(3, 4)
    for name, kwargs in [
        ("sum", {"dim": 1}),
        ("mean", {"dim": 0}),
        ("prod", {"dim": 1}),
        ("amax", {"dim": 1}),
        ("argmax", {"dim": 1}),
        ("std", {"dim": 1}),
        ("norm", {"dim": 1}),
        ("logsumexp", {"dim": 1}),
        ("count_nonzero", {"dim": 0}),
        ("all", {"dim": 1}),
    ]:
        expected = getattr(ec, name)(t, **kwargs)
        out = ec.empty(0, dtype=expected.dtype)
        v = out._version
        assert getattr(ec, name)(t, **kwargs, out=out) is out
        assert out._version > v
        np.testing.assert_array_equal(to_np(out), to_np(expected))


def test_reduction_dim_errors():
    t = ec.ones(2, 3)
    with pytest.raises(IndexError, match="Dimension out of range"):
        t.sum(2)
    with pytest.raises(RuntimeError, match="multiple times"):
        t.sum((0, 0))
    with pytest.raises(RuntimeError, match="bool"):
        ec.tensor([True]).argmax()
    with pytest.raises(NotImplementedError):
        ec.logcumsumexp(ec.tensor([1, 2]), 0)


def test_trace():
    m = ec.arange(9.0).view(3, 3)
    assert ec.trace(m).item() == 12.0
