"""Sorting, selection, set ops, binary search and counting (_ops/reduction/sorting.py) against
NumPy references written out here."""

import collections

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ember_core as ec

rng = np.random.default_rng(7)
DTYPES = [ec.float32, ec.float64, ec.float16, ec.int64, ec.int32, ec.int16, ec.int8, ec.uint8]


def sample(shape, dtype, low=-20, high=20, nan=False):
    if dtype.is_floating_point:
        a = rng.integers(low, high, size=shape) + rng.choice([0.0, 0.25, 0.5], size=shape)
        if nan and a.size:
            a.reshape(-1)[rng.integers(0, a.size, size=max(1, a.size // 5))] = np.nan
    elif dtype is ec.uint8:
        a = rng.integers(0, high, size=shape)
    elif dtype is ec.bool:
        a = rng.integers(0, 2, size=shape).astype(bool)
    else:
        a = rng.integers(low, high, size=shape)
    return ec.tensor(a).to(dtype)


def stable_argsort(a, axis, descending):
    """Stable argsort along axis; NaN sorts last ascending, first descending (PyTorch)."""
    a = np.moveaxis(a, axis, -1)
    if not descending:
        idx = np.argsort(a, axis=-1, kind="stable")
    else:
        # stable descending = reversed stable ascending of the reversed line
        n = a.shape[-1]
        idx = (n - 1 - np.argsort(a[..., ::-1], axis=-1, kind="stable"))[..., ::-1]
    return np.moveaxis(idx, -1, axis)


# -------------------------------------------------------------------- sort


@pytest.mark.parametrize("dtype", DTYPES + [ec.bool])
@pytest.mark.parametrize("descending", [False, True])
def test_sort_is_stable_with_duplicates(dtype, descending):
    x = sample((4, 37), dtype, -3, 3)  # many ties
    a = x.numpy()
    for dim in (0, 1, -1):
        values, indices = x.sort(dim, descending=descending)
        ref = stable_argsort(a, dim, descending)
        np.testing.assert_array_equal(indices.numpy(), ref)
        np.testing.assert_array_equal(values.numpy(), np.take_along_axis(a, ref, dim))
        np.testing.assert_array_equal(x.argsort(dim, descending=descending).numpy(), ref)


@pytest.mark.parametrize("descending", [False, True])
def test_sort_nan_signed_zero_and_infinities(descending):
    a = np.array([np.nan, 1.0, -0.0, np.inf, 0.0, -np.inf, np.nan, -1.0], np.float32)
    values, indices = ec.from_numpy(a).sort(descending=descending)
    ref = stable_argsort(a, 0, descending)
    np.testing.assert_array_equal(indices.numpy(), ref)
    np.testing.assert_array_equal(values.numpy(), a[ref])


def test_sort_long_line_parallel_and_wide_keys():
    # lines from 2**21 elements are split between threads and merged
    for dtype, n in (
        (np.float32, (1 << 21) + 3),
        (np.int64, (1 << 21) + 5),
        (np.float64, 100_003),
        (np.int16, 100_003),
    ):
        a = (rng.standard_normal(n) * 1000).astype(dtype)
        a[::97] = a[5]  # ties across the parallel runs
        v, i = ec.from_numpy(a).sort()
        ref = np.argsort(a, kind="stable")
        np.testing.assert_array_equal(i.numpy(), ref)
        np.testing.assert_array_equal(v.numpy(), a[ref])
        vd, idd = ec.from_numpy(a).sort(descending=True)
        np.testing.assert_array_equal(idd.numpy(), stable_argsort(a, 0, True))


def test_sort_int64_extremes_and_bfloat16():
    a = np.array([2**62, -(2**63), 2**63 - 1, 0, -1], np.int64)
    np.testing.assert_array_equal(ec.from_numpy(a).sort().values.numpy(), np.sort(a))
    b = ec.tensor([3.0, -1.5, 2.0]).to(ec.bfloat16)
    assert b.sort().values.float().tolist() == [-1.5, 2.0, 3.0]


def test_sort_shapes_views_and_out():
    x = sample((5, 6), ec.float32).t()[:, ::2]  # non-contiguous (6, 3)
    v, i = x.sort(0)
    ref = stable_argsort(x.numpy(), 0, False)
    np.testing.assert_array_equal(i.numpy(), ref)
    z = ec.tensor(3.0).sort()
    assert z.values.item() == 3.0 and z.indices.item() == 0
    e = ec.zeros(0, 4).sort(0)
    assert tuple(e.values.shape) == (0, 4)
    ov, oi = ec.empty(0), ec.empty(0, dtype=ec.int64)
    r = ec.sort(ec.tensor([2.0, 1.0]), out=(ov, oi))
    assert ov.tolist() == [1.0, 2.0] and oi.tolist() == [1, 0] and r.values is ov
    np.testing.assert_array_equal(ec.msort(ec.tensor([[3, 1], [2, 4]])).numpy(), [[2, 1], [3, 4]])
    with pytest.raises(IndexError, match="Dimension out of range"):
        ec.zeros(3).sort(1)


# -------------------------------------------------------------------- topk


@pytest.mark.parametrize("dtype", [ec.float32, ec.float64, ec.int64, ec.int8])
@pytest.mark.parametrize("largest", [True, False])
def test_topk(dtype, largest):
    x = ec.tensor(rng.permutation(200).reshape(8, 25) - 100).to(dtype)  # distinct values
    a = x.numpy()
    for k in (0, 1, 5, 25):
        v, i = x.topk(k, dim=1, largest=largest)
        ref = np.sort(a, axis=1)
        ref = ref[:, ::-1][:, :k] if largest else ref[:, :k]
        np.testing.assert_array_equal(v.numpy(), ref)
        np.testing.assert_array_equal(np.take_along_axis(a, i.numpy(), 1), v.numpy())
    v, i = x.topk(3, dim=0, largest=largest, sorted=False)
    s = np.sort(a, axis=0)
    best = s[::-1][:3] if largest else s[:3]
    np.testing.assert_array_equal(np.sort(v.numpy(), axis=0), np.sort(best, axis=0))
    np.testing.assert_array_equal(np.take_along_axis(a, i.numpy(), 0), v.numpy())


def test_topk_large_lines_and_nan():
    a = rng.standard_normal(300_000).astype(np.float32)
    v, i = ec.from_numpy(a).topk(100)  # streaming selection
    np.testing.assert_array_equal(v.numpy(), np.sort(a)[::-1][:100])
    np.testing.assert_array_equal(a[i.numpy()], v.numpy())
    big = rng.standard_normal((1 << 21) + 1).astype(np.float32)
    v, i = ec.from_numpy(big).topk(100_000, largest=False)  # split between threads
    np.testing.assert_array_equal(v.numpy(), np.sort(big)[:100_000])
    np.testing.assert_array_equal(big[i.numpy()], v.numpy())
    b = np.array([1.0, np.nan, 3.0, 2.0], np.float32)
    v, i = ec.from_numpy(b).topk(2)
    assert np.isnan(v.numpy()[0]) and v.numpy()[1] == 3.0 and i.tolist() == [1, 2]
    with pytest.raises(RuntimeError, match="selected index k out of range"):
        ec.zeros(3).topk(4)


# --------------------------------------------------------- kthvalue, median


def lower_median(a, axis):
    s = np.sort(a, axis=axis)
    n = a.shape[axis]
    return np.take(s, (n - 1) // 2, axis=axis)


@pytest.mark.parametrize("dtype", DTYPES)
def test_kthvalue_and_median(dtype):
    x = sample((5, 9), dtype)
    a = x.numpy()
    for dim in (0, 1):
        for k in (1, 3, a.shape[dim]):
            v, i = x.kthvalue(k, dim)
            np.testing.assert_array_equal(v.numpy(), np.take(np.sort(a, axis=dim), k - 1, axis=dim))
            np.testing.assert_array_equal(
                np.take_along_axis(a, np.expand_dims(i.numpy(), dim), dim).squeeze(dim), v.numpy()
            )
        v, i = x.median(dim, keepdim=True)
        np.testing.assert_array_equal(v.numpy(), np.expand_dims(lower_median(a, dim), dim))
        np.testing.assert_array_equal(np.take_along_axis(a, i.numpy(), dim), v.numpy())
    assert x.median().item() == np.sort(a.reshape(-1))[(a.size - 1) // 2]


def test_median_nan_and_nanmedian():
    a = np.array([[1.0, np.nan, 2.0, np.nan], [4.0, 3.0, 1.0, 2.0], [np.nan] * 4], np.float32)
    x = ec.from_numpy(a)
    v, i = x.median(1)
    np.testing.assert_array_equal(v.numpy(), [np.nan, 2.0, np.nan])
    assert i.tolist() == [1, 3, 0]  # the first NaN where there is one
    v, i = x.nanmedian(1)
    np.testing.assert_array_equal(v.numpy(), [1.0, 2.0, np.nan])
    assert i.tolist()[:2] == [0, 3]
    assert np.isnan(x.median().item())
    assert x.nanmedian().item() == 2.0
    assert np.isnan(ec.tensor([]).median().item())


def test_kthvalue_median_errors_and_0d():
    with pytest.raises(RuntimeError, match="selected number k out of range"):
        ec.zeros(3).kthvalue(4)
    with pytest.raises(IndexError, match="Expected reduction dim 1 to have non-zero size"):
        ec.zeros(2, 0).median(1)
    z = ec.tensor(5.0)
    assert z.kthvalue(1).values.item() == 5.0 and z.median(0).indices.item() == 0
    e = ec.zeros(0, 3).median(1)
    assert tuple(e.values.shape) == (0,)


# --------------------------------------------------------------------- mode


def ref_mode(line):
    c = collections.Counter(line.tolist())
    best = max(c.values())
    value = min(v for v, n in c.items() if n == best)
    last = max(j for j, v in enumerate(line.tolist()) if v == value)
    return value, last


@pytest.mark.parametrize("dtype", [ec.float32, ec.int64, ec.int8, ec.uint8, ec.bool])
def test_mode(dtype):
    x = sample((6, 15), dtype, 0, 4)
    a = x.numpy()
    v, i = x.mode(1)
    for r in range(6):
        assert (v[r].item(), i[r].item()) == ref_mode(a[r])
    v, i = x.mode(0, keepdim=True)
    assert tuple(v.shape) == (1, 15)
    m = ec.tensor([2.0, 1.0, 2.0, 1.0]).mode()
    assert m.values.item() == 1.0 and m.indices.item() == 3


# ------------------------------------------------------------------- unique


@pytest.mark.parametrize("dtype", [ec.float32, ec.int64, ec.int16, ec.uint8, ec.bool])
def test_unique_matches_numpy(dtype):
    x = sample((7, 5), dtype, 0, 6)
    a = x.numpy()
    u, inv, cnt = ec.unique(x, return_inverse=True, return_counts=True)
    ru, rinv, rcnt = np.unique(a, return_inverse=True, return_counts=True)
    np.testing.assert_array_equal(u.numpy(), ru)
    np.testing.assert_array_equal(inv.numpy(), rinv.reshape(a.shape))
    np.testing.assert_array_equal(cnt.numpy(), rcnt)
    np.testing.assert_array_equal(x.unique().numpy(), ru)


def test_unique_dim_and_edge_cases():
    x = ec.tensor([[1, 2], [1, 2], [0, 5], [1, 0]])
    u, inv, cnt = ec.unique(x, dim=0, return_inverse=True, return_counts=True)
    ru, rinv, rcnt = np.unique(x.numpy(), axis=0, return_inverse=True, return_counts=True)
    np.testing.assert_array_equal(u.numpy(), ru)
    np.testing.assert_array_equal(inv.numpy(), rinv.reshape(-1))
    np.testing.assert_array_equal(cnt.numpy(), rcnt)
    cols = ec.unique(x, dim=1)
    np.testing.assert_array_equal(cols.numpy(), np.unique(x.numpy(), axis=1))
    nan = ec.tensor([1.0, float("nan"), float("nan"), 1.0])
    u, c = ec.unique(nan, return_counts=True)
    assert u.numpy()[0] == 1.0 and np.isnan(u.numpy()[1:]).all() and c.tolist() == [2, 1, 1]
    z, zi = ec.unique(ec.tensor(3), return_inverse=True)
    assert z.tolist() == [3] and zi.dim() == 0 and zi.item() == 0
    e, ei, ec_ = ec.unique(ec.tensor([], dtype=ec.int64), return_inverse=True, return_counts=True)
    assert e.numel() == 0 and ei.numel() == 0 and ec_.numel() == 0


def test_unique_consecutive():
    x = ec.tensor([1, 1, 2, 2, 3, 1, 1, 2])
    u, inv, cnt = ec.unique_consecutive(x, return_inverse=True, return_counts=True)
    assert u.tolist() == [1, 2, 3, 1, 2]
    assert inv.tolist() == [0, 0, 1, 1, 2, 3, 3, 4]
    assert cnt.tolist() == [2, 2, 1, 2, 1]
    m = ec.tensor([[1, 1], [1, 1], [2, 0], [1, 1]])
    assert ec.unique_consecutive(m, dim=0).tolist() == [[1, 1], [2, 0], [1, 1]]


# ------------------------------------------------------------ searchsorted


@pytest.mark.parametrize("dtype", [ec.float32, ec.float64, ec.int64, ec.int32])
@pytest.mark.parametrize("right", [False, True])
def test_searchsorted_1d(dtype, right):
    seq = np.sort(sample((20,), dtype).numpy())
    vals = sample((3, 7), dtype).numpy()
    got = ec.searchsorted(ec.from_numpy(seq), ec.from_numpy(vals), right=right)
    np.testing.assert_array_equal(
        got.numpy(), np.searchsorted(seq, vals, side="right" if right else "left")
    )
    side = ec.searchsorted(
        ec.from_numpy(seq), ec.from_numpy(vals), side="right" if right else "left", out_int32=True
    )
    assert side.dtype is ec.int32
    np.testing.assert_array_equal(side.numpy(), got.numpy())
    b = ec.bucketize(ec.from_numpy(vals), ec.from_numpy(seq), right=right)
    np.testing.assert_array_equal(b.numpy(), got.numpy())


def test_searchsorted_nd_sorter_scalar_and_promotion():
    seq = np.sort(rng.standard_normal((3, 10)), axis=1)
    vals = rng.standard_normal((3, 4))
    got = ec.searchsorted(ec.from_numpy(seq), ec.from_numpy(vals))
    for r in range(3):
        np.testing.assert_array_equal(got.numpy()[r], np.searchsorted(seq[r], vals[r]))
    unsorted = rng.permutation(10).astype(np.float64)
    sorter = np.argsort(unsorted)
    g = ec.searchsorted(
        ec.from_numpy(unsorted),
        ec.tensor([2.5, 9.5, -1.0], dtype=ec.float64),
        sorter=ec.from_numpy(sorter),
    )
    np.testing.assert_array_equal(
        g.numpy(), np.searchsorted(unsorted, [2.5, 9.5, -1.0], sorter=sorter)
    )
    assert ec.searchsorted(ec.tensor([1.0, 2.0, 3.0]), 2.0).item() == 1
    assert ec.searchsorted(ec.tensor([1, 2, 3]), ec.tensor([2.5])).tolist() == [2]
    assert ec.searchsorted(ec.tensor([1.0, 2.0]), ec.tensor([float("nan")])).tolist() == [2]


def test_searchsorted_errors():
    with pytest.raises(
        RuntimeError, match="boundaries tensor should be 1 dimension or the first N-1"
    ):
        ec.searchsorted(ec.zeros(2, 3), ec.zeros(3, 2))
    with pytest.raises(RuntimeError, match="side and right can't be set to opposites"):
        ec.searchsorted(ec.zeros(3), ec.zeros(2), right=True, side="left")
    with pytest.raises(RuntimeError, match="boundaries tensor must be 1 dimension"):
        ec.bucketize(ec.zeros(2), ec.zeros(2, 2))


# ---------------------------------------------------------------- counting


def test_bincount():
    a = rng.integers(0, 10, size=50)
    w = rng.standard_normal(50)
    np.testing.assert_array_equal(ec.bincount(ec.from_numpy(a)).numpy(), np.bincount(a))
    np.testing.assert_array_equal(
        ec.bincount(ec.from_numpy(a), minlength=15).numpy(), np.bincount(a, minlength=15)
    )
    got = ec.bincount(ec.from_numpy(a), weights=ec.from_numpy(w))
    assert got.dtype is ec.float64
    np.testing.assert_allclose(got.numpy(), np.bincount(a, weights=w))
    assert ec.bincount(ec.from_numpy(a), ec.from_numpy(w.astype(np.float32))).dtype is ec.float32
    assert ec.bincount(ec.from_numpy(a), ec.from_numpy(a)).dtype is ec.float64
    assert ec.bincount(ec.tensor([], dtype=ec.int64), minlength=3).tolist() == [0, 0, 0]
    assert ec.bincount(ec.tensor([2], dtype=ec.uint8)).tolist() == [0, 0, 1]
    with pytest.raises(RuntimeError, match="non-negative"):
        ec.bincount(ec.tensor([-1, 2]))
    with pytest.raises(RuntimeError, match="1-d non-negative integral"):
        ec.bincount(ec.tensor([1.0]))


@pytest.mark.parametrize("dtype", [ec.float32, ec.float64])
def test_histc(dtype):
    a = rng.standard_normal(1000)
    x = ec.from_numpy(a).to(dtype)
    got = ec.histc(x, bins=10, min=-2, max=2)
    ref, _ = np.histogram(x.numpy()[(x.numpy() >= -2) & (x.numpy() <= 2)], bins=10, range=(-2, 2))
    np.testing.assert_array_equal(got.numpy(), ref)
    auto = x.histc(bins=7)
    ref, _ = np.histogram(x.numpy(), bins=7)
    np.testing.assert_array_equal(auto.numpy(), ref)
    assert ec.histc(ec.tensor([1.0, 1.0, 1.0]), bins=4).tolist() == [0.0, 0.0, 3.0, 0.0]
    assert ec.histc(ec.tensor([1.0, 2.0, 1.0, float("nan")]), 4, 0, 3).tolist() == [
        0.0,
        2.0,
        1.0,
        0.0,
    ]
    with pytest.raises(NotImplementedError):
        ec.histc(ec.tensor([1, 2]))
    with pytest.raises(RuntimeError, match="bins must be > 0"):
        ec.histc(x, bins=0)


# ----------------------------------------------------------------- fuzzing


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.integers(0, 5), min_size=1, max_size=3),
    st.integers(0, 1000),
    st.booleans(),
    st.data(),
)
def test_fuzz_sort_and_topk(shape, seed, descending, data):
    r = np.random.default_rng(seed)
    a = r.integers(-3, 3, size=shape).astype(np.float64)
    if a.size:
        a.reshape(-1)[r.integers(0, a.size)] = np.nan
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    v, i = ec.from_numpy(a).sort(dim, descending=descending)
    ref = stable_argsort(a, dim, descending)
    np.testing.assert_array_equal(i.numpy(), ref)
    k = data.draw(st.integers(0, shape[dim]))
    tv, ti = ec.from_numpy(a).topk(k, dim, largest=descending)
    np.testing.assert_array_equal(
        tv.numpy(), np.take(np.take_along_axis(a, ref, dim), range(k), axis=dim)
    )


# ------------------------------------------------------------------ parity


@pytest.mark.parity
def test_parity_sorting_with_torch():
    torch = pytest.importorskip("torch")
    a = rng.integers(-4, 4, size=(6, 40)).astype(np.float32)
    a[0, 3] = np.nan
    x, t = ec.from_numpy(a), torch.from_numpy(a)
    for desc in (False, True):
        e, r = (
            x.sort(dim=1, descending=desc, stable=True),
            t.sort(dim=1, descending=desc, stable=True),
        )
        np.testing.assert_array_equal(e.values.numpy(), r.values.numpy())
        np.testing.assert_array_equal(e.indices.numpy(), r.indices.numpy())
    np.testing.assert_array_equal(x.median(1).values.numpy(), t.median(1).values.numpy())
    np.testing.assert_array_equal(x.nanmedian(1).values.numpy(), t.nanmedian(1).values.numpy())
    np.testing.assert_array_equal(x.kthvalue(5, 1).values.numpy(), t.kthvalue(5, 1).values.numpy())
    # (mode of rows without NaN: PyTorch's sort-based mode has no defined order for NaN)
    em, tm = x[1:].mode(1), t[1:].mode(1)
    np.testing.assert_array_equal(em.values.numpy(), tm.values.numpy())
    # PyTorch's index is that of whichever tied element its (unstable) sort puts
    # last; ember's is the last occurrence (the same for lines of <= 16 elements)
    np.testing.assert_array_equal(a[1 + np.arange(5), em.indices.numpy()], em.values.numpy())
    short = rng.integers(0, 3, size=(5, 16)).astype(np.float32)
    np.testing.assert_array_equal(
        ec.from_numpy(short).mode(1).indices.numpy(),
        torch.from_numpy(short).mode(1).indices.numpy(),
    )
    np.testing.assert_array_equal(x.topk(5, 1).values.numpy(), t.topk(5, 1).values.numpy())
    ints = rng.integers(0, 5, size=30)
    for eo, to in zip(
        ec.unique(ec.from_numpy(ints), return_inverse=True, return_counts=True),
        torch.unique(torch.from_numpy(ints), return_inverse=True, return_counts=True),
    ):
        np.testing.assert_array_equal(eo.numpy(), to.numpy())
    seq = np.sort(rng.standard_normal(20)).astype(np.float32)
    v = rng.standard_normal(9).astype(np.float32)
    for right in (False, True):
        np.testing.assert_array_equal(
            ec.searchsorted(ec.from_numpy(seq), ec.from_numpy(v), right=right).numpy(),
            torch.searchsorted(torch.from_numpy(seq), torch.from_numpy(v), right=right).numpy(),
        )
    h = rng.standard_normal(500).astype(np.float32)
    np.testing.assert_array_equal(
        ec.histc(ec.from_numpy(h), 13).numpy(), torch.histc(torch.from_numpy(h), 13).numpy()
    )
    np.testing.assert_array_equal(
        ec.bincount(ec.from_numpy(ints), minlength=7).numpy(),
        torch.bincount(torch.from_numpy(ints), minlength=7).numpy(),
    )


@pytest.mark.parametrize("order", ["ascending", "descending", "ties"])
@pytest.mark.parametrize("largest", [True, False])
def test_topk_streaming_path_on_adversarial_orders(order, largest):
    n = 50_000
    a = np.arange(n, dtype=np.float32)
    if order == "descending":
        a = a[::-1].copy()
    elif order == "ties":
        a = (a % 7).astype(np.float32)
    for rows in (1, 3):
        x = ec.from_numpy(np.tile(a, (rows, 1)))
        v, i = x.topk(40, dim=1, largest=largest)
        ref = stable_argsort(a, 0, largest)[:40]  # ties go to the lower index
        np.testing.assert_array_equal(i.numpy(), np.tile(ref, (rows, 1)))
        np.testing.assert_array_equal(v.numpy(), np.tile(a[ref], (rows, 1)))
