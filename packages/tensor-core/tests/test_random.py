"""Random numbers: Philox determinism (seeds, Generator objects, state save and
restore), independence from the thread count, and distribution statistics."""

import math

import numpy as np
import pytest

import ember_core as ec


@pytest.fixture(autouse=True)
def _restore_threads():
    n = ec.get_num_threads()
    yield
    ec.set_num_threads(n)


def test_manual_seed_makes_draws_reproducible():
    ec.manual_seed(123)
    a = ec.rand(100)
    b = ec.randn(3, 4)
    ec.manual_seed(123)
    np.testing.assert_array_equal(ec.rand(100).numpy(), a.numpy())
    np.testing.assert_array_equal(ec.randn(3, 4).numpy(), b.numpy())
    assert not np.array_equal(ec.rand(100).numpy(), a.numpy())


def test_generators_are_independent_streams():
    g1 = ec.Generator().manual_seed(7)
    g2 = ec.Generator().manual_seed(7)
    ec.manual_seed(0)
    x = ec.rand(50, generator=g1)
    ec.rand(10)  # the default generator does not disturb g2
    np.testing.assert_array_equal(ec.rand(50, generator=g2).numpy(), x.numpy())
    assert g1.initial_seed() == 7
    g3 = ec.Generator().manual_seed(8)
    assert not np.array_equal(ec.rand(50, generator=g3).numpy(), x.numpy())


def test_get_and_set_state_replay_the_stream():
    g = ec.Generator().manual_seed(3)
    ec.rand(7, generator=g)
    state = g.get_state()
    assert state.dtype is ec.uint8
    a = ec.randn(20, generator=g)
    g.set_state(state)
    np.testing.assert_array_equal(ec.randn(20, generator=g).numpy(), a.numpy())
    s = ec.get_rng_state()
    b = ec.rand(5)
    ec.set_rng_state(s)
    np.testing.assert_array_equal(ec.rand(5).numpy(), b.numpy())


def test_results_do_not_depend_on_the_thread_count():
    shape = (300, 1000)  # large enough to run in parallel
    draws = {}
    for n in (1, 2):
        ec.set_num_threads(n)
        g = ec.Generator().manual_seed(11)
        draws[n] = [
            ec.rand(shape, generator=g).numpy(),
            ec.randn(shape, generator=g).numpy(),
            ec.randint(0, 1000, shape, generator=g).numpy(),
            ec.empty(shape).bernoulli_(0.3, generator=g).numpy(),
            ec.randperm(10000, generator=g).numpy(),
            ec.empty(shape, dtype=ec.float64).normal_(generator=g).numpy(),
        ]
    for a, b in zip(draws[1], draws[2]):
        np.testing.assert_array_equal(a, b)


def test_a_split_draw_continues_the_same_stream():
    """Counters advance with what was drawn: drawing 8 then 8 equals 16 at once
    (for sizes that are whole Philox blocks)."""
    g = ec.Generator().manual_seed(5)
    a = np.concatenate([ec.rand(8, generator=g).numpy(), ec.rand(8, generator=g).numpy()])
    g.manual_seed(5)
    np.testing.assert_array_equal(ec.rand(16, generator=g).numpy(), a)


def test_uniform_statistics():
    ec.manual_seed(1)
    x = ec.rand(200_000, dtype=ec.float64).numpy()
    assert x.min() >= 0 and x.max() < 1
    assert abs(x.mean() - 0.5) < 0.005
    assert abs(x.var() - 1 / 12) < 0.002
    hist, _ = np.histogram(x, bins=10, range=(0, 1))
    assert hist.min() > 19_000 and hist.max() < 21_000
    y = ec.empty(100_000).uniform_(-2, 3).numpy()
    assert y.min() >= -2 and y.max() < 3 and abs(y.mean() - 0.5) < 0.03


@pytest.mark.parametrize("dtype", [ec.float16, ec.bfloat16, ec.float32, ec.float64])
def test_rand_in_every_float_dtype_stays_below_one(dtype):
    x = ec.rand(50_000, dtype=dtype)
    assert x.dtype is dtype
    v = x.float().numpy()
    assert v.min() >= 0 and v.max() < 1


def test_normal_statistics():
    ec.manual_seed(2)
    z = ec.randn(200_000, dtype=ec.float64).numpy()
    assert abs(z.mean()) < 0.01 and abs(z.std() - 1) < 0.01
    assert abs(np.mean(z**3)) < 0.03  # symmetric
    assert abs(np.mean(z**4) - 3) < 0.08  # normal kurtosis
    n = ec.normal(2.0, 3.0, (100_000,)).numpy()
    assert abs(n.mean() - 2) < 0.05 and abs(n.std() - 3) < 0.05
    m = ec.normal(ec.tensor([0.0, 100.0]).expand(50_000, 2), ec.tensor([1.0, 0.1]))
    assert abs(m[:, 1].mean().item() - 100) < 0.01
    assert abs(m[:, 0].std().item() - 1) < 0.02


def test_randint_range_and_uniformity():
    ec.manual_seed(3)
    r = ec.randint(-3, 4, (70_000,))
    assert r.dtype is ec.int64
    counts = np.bincount(r.numpy() + 3, minlength=7)
    assert counts.min() > 9_300 and counts.max() < 10_700
    assert ec.randint(5, (3, 2)).shape == (3, 2)
    assert ec.randint(10, (4,), dtype=ec.int8).dtype is ec.int8
    with pytest.raises(RuntimeError, match="from"):
        ec.randint(5, 5, (2,))


def test_randperm_is_a_permutation():
    ec.manual_seed(4)
    p = ec.randperm(1000).numpy()
    np.testing.assert_array_equal(np.sort(p), np.arange(1000))
    assert not np.array_equal(p, np.arange(1000))
    assert ec.randperm(0).shape == (0,)
    assert ec.randperm(5, dtype=ec.int32).dtype is ec.int32
    # every position is equally likely to hold element 0
    first = np.array([int(ec.randperm(4)[0]) for _ in range(2000)])
    assert np.bincount(first, minlength=4).min() > 420


def test_bernoulli_with_scalar_and_tensor_probabilities():
    ec.manual_seed(5)
    b = ec.empty(100_000).bernoulli_(0.25).numpy()
    assert set(np.unique(b)) <= {0.0, 1.0} and abs(b.mean() - 0.25) < 0.01
    p = ec.tensor([0.0, 1.0, 0.5]).expand(50_000, 3).contiguous()
    s = ec.bernoulli(p).numpy()
    assert s[:, 0].sum() == 0 and s[:, 1].all() and abs(s[:, 2].mean() - 0.5) < 0.015
    with pytest.raises(RuntimeError):
        ec.bernoulli(ec.tensor([1.5]))
    with pytest.raises(RuntimeError):
        ec.empty(2).bernoulli_(2.0)


def test_multinomial():
    ec.manual_seed(6)
    w = ec.tensor([1.0, 2.0, 7.0])
    draws = ec.multinomial(w, 30_000, replacement=True).numpy()
    freq = np.bincount(draws, minlength=3) / 30_000
    np.testing.assert_allclose(freq, [0.1, 0.2, 0.7], atol=0.015)
    rows = ec.multinomial(ec.tensor([[0.0, 1.0, 1.0, 0.0], [5.0, 0.0, 0.0, 1.0]]), 2)
    assert rows.shape == (2, 2)
    assert sorted(rows[0].tolist()) == [1, 2] and sorted(rows[1].tolist()) == [0, 3]
    with pytest.raises(RuntimeError, match="without replacement"):
        ec.multinomial(w, 4)
    with pytest.raises(RuntimeError):
        ec.multinomial(ec.tensor([-1.0, 2.0]), 1)


def test_other_in_place_samplers():
    ec.manual_seed(7)
    e = ec.empty(100_000, dtype=ec.float64).exponential_(2.0).numpy()
    assert e.min() >= 0 and abs(e.mean() - 0.5) < 0.01
    r = ec.empty(1000, dtype=ec.int32).random_(5, 10).numpy()
    assert r.min() >= 5 and r.max() < 10
    f = ec.empty(1000).random_(100).numpy()
    assert f.min() >= 0 and f.max() < 100 and np.all(f == np.round(f))
    g = ec.empty(50_000, dtype=ec.float64).geometric_(0.25).numpy()
    assert g.min() >= 1 and abs(g.mean() - 4) < 0.1
    ln = ec.empty(50_000, dtype=ec.float64).log_normal_(0.0, 0.5).numpy()
    assert abs(np.log(ln).mean()) < 0.01
    c = ec.empty(50_001, dtype=ec.float64).cauchy_(1.0, 2.0).numpy()
    assert abs(np.median(c) - 1.0) < 0.05


def test_samplers_fill_non_contiguous_views():
    t = ec.zeros(4, 6)
    v = t[:, ::2]
    v.uniform_(1, 2)
    arr = t.numpy()
    assert (arr[:, ::2] >= 1).all() and (arr[:, 1::2] == 0).all()


def test_like_functions_and_dtype_errors():
    x = ec.zeros(3, 2, dtype=ec.float64)
    assert ec.rand_like(x).dtype is ec.float64 and ec.rand_like(x).shape == (3, 2)
    assert ec.randn_like(x).shape == (3, 2)
    assert ec.randint_like(x, 10).dtype is ec.float64
    with pytest.raises(RuntimeError, match="not implemented"):
        ec.rand(3, dtype=ec.int64)
    with pytest.raises(RuntimeError, match="std"):
        ec.empty(2).normal_(0, -1)
    assert math.isfinite(ec.randn(()).item())


@pytest.mark.parametrize(
    "dtype, hi",
    [
        (ec.int64, 2**63 - 1),
        (ec.int32, 2**31 - 1),
        (ec.int16, 2**15 - 1),
        (ec.int8, 2**7 - 1),
        (ec.uint8, 2**8 - 1),
        (ec.bool_, 1),
        (ec.float64, 2**53),
        (ec.float32, 2**24),
        (ec.float16, 2**11),
        (ec.bfloat16, 2**8),
    ],
)
def test_random_default_range_is_the_dtype_range(dtype, hi):
    # PyTorch: [0, 2**mantissa] for floats, [0, max] for integers (int64 too)
    r = ec.empty(4000, dtype=dtype).random_()
    v = r.to(ec.float64).numpy() if dtype is not ec.int64 else r.numpy()
    assert v.min() >= 0 and v.max() <= hi
    assert v.max() > hi // 2  # the whole range is reached, not a smaller one
    assert ec.empty((), dtype=dtype).random_().shape == ()


def test_random_bounds_at_the_ends_of_int64():
    r = ec.empty(2000, dtype=ec.int64).random_(-(2**63), 2**63).numpy()
    assert r.min() < -(2**61) and r.max() > 2**61  # all 64-bit patterns
    r = ec.empty(2000, dtype=ec.int64).random_(2**63 - 3, 2**63).numpy()
    assert set(r.tolist()) == {2**63 - 3, 2**63 - 2, 2**63 - 1}
    with pytest.raises(RuntimeError, match="to - 1"):
        ec.empty(3, dtype=ec.uint8).random_(0, 300)
    with pytest.raises(RuntimeError, match="from"):
        ec.empty(3, dtype=ec.int8).random_(-200, 3)
