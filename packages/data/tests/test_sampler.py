import collections

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ember_data import (
    BatchSampler,
    RandomSampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)


def rng(seed=0):
    return np.random.default_rng(seed)


def test_sequential():
    s = SequentialSampler(range(5))
    assert list(s) == [0, 1, 2, 3, 4] and len(s) == 5


def test_random_sampler_is_a_permutation_and_deterministic():
    a = list(RandomSampler(range(50), generator=rng(3)))
    assert sorted(a) == list(range(50)) and a != list(range(50))
    assert a == list(RandomSampler(range(50), generator=rng(3)))
    assert a != list(RandomSampler(range(50), generator=rng(4)))


def test_random_sampler_consecutive_epochs_differ():
    s = RandomSampler(range(30), generator=rng(0))
    assert list(s) != list(s)


def test_random_sampler_default_source_follows_numpy_or_ember_seed():
    from ember_data import _rng

    def seeded_order():
        if _rng.ember_core() is not None:
            _rng.ember_core().manual_seed(7)
        else:
            np.random.seed(7)
        return list(RandomSampler(range(20)))

    assert seeded_order() == seeded_order()


def test_random_sampler_num_samples_without_replacement_chains_permutations():
    s = RandomSampler(range(4), num_samples=10, generator=rng(0))
    out = list(s)
    assert len(out) == len(s) == 10
    assert sorted(out[:4]) == sorted(out[4:8]) == [0, 1, 2, 3]
    assert set(out[8:]) <= {0, 1, 2, 3} and len(set(out[8:])) == 2


def test_random_sampler_with_replacement_is_uniform():
    n, draws = 10, 20000
    out = list(RandomSampler(range(n), replacement=True, num_samples=draws, generator=rng(0)))
    counts = np.bincount(out, minlength=n)
    expected = draws / n
    chi2 = ((counts - expected) ** 2 / expected).sum()
    assert chi2 < 30  # 9 degrees of freedom: p < 1e-3 beyond ~27.9


def test_random_sampler_validation():
    with pytest.raises(TypeError, match="replacement"):
        RandomSampler(range(3), replacement=1)
    with pytest.raises(ValueError, match="num_samples"):
        RandomSampler(range(3), num_samples=0)
    with pytest.raises(ValueError, match="num_samples"):
        RandomSampler([])
    with pytest.raises(TypeError, match="generator"):
        RandomSampler(range(3), generator=42)


def test_subset_random_sampler():
    idx = [10, 20, 30, 40]
    s = SubsetRandomSampler(idx, generator=rng(0))
    out = list(s)
    assert sorted(out) == idx and len(s) == 4
    assert out == list(SubsetRandomSampler(idx, generator=rng(0)))


def test_weighted_random_sampler_statistics():
    w = [0.1, 0.0, 0.6, 0.3]
    out = list(WeightedRandomSampler(w, 20000, generator=rng(0)))
    freq = np.bincount(out, minlength=4) / 20000
    np.testing.assert_allclose(freq, w, atol=0.015)
    assert freq[1] == 0


def test_weighted_random_sampler_without_replacement():
    out = list(WeightedRandomSampler([1, 1, 1, 5, 5], 4, replacement=False, generator=rng(0)))
    assert len(set(out)) == 4


def test_weighted_random_sampler_validation():
    with pytest.raises(ValueError, match="num_samples"):
        WeightedRandomSampler([1, 2], 0)
    with pytest.raises(ValueError, match="replacement"):
        WeightedRandomSampler([1, 2], 2, replacement=0)
    with pytest.raises(ValueError, match="1d sequence"):
        WeightedRandomSampler([[1, 2]], 2)


@settings(deadline=None, max_examples=40)
@given(n=st.integers(0, 40), batch_size=st.integers(1, 9), drop_last=st.booleans())
def test_batch_sampler_matches_slicing(n, batch_size, drop_last):
    bs = BatchSampler(SequentialSampler(range(n)), batch_size, drop_last)
    idx = list(range(n))
    expected = [idx[i : i + batch_size] for i in range(0, n, batch_size)]
    if drop_last and expected and len(expected[-1]) < batch_size:
        expected.pop()
    assert list(bs) == expected
    assert len(bs) == len(expected)


def test_batch_sampler_validation():
    with pytest.raises(ValueError, match="batch_size"):
        BatchSampler(range(3), 0, False)
    with pytest.raises(ValueError, match="batch_size"):
        BatchSampler(range(3), True, False)
    with pytest.raises(ValueError, match="drop_last"):
        BatchSampler(range(3), 2, 1)


def test_batch_sampler_over_a_plain_list():
    assert list(BatchSampler([5, 6, 7], 2, False)) == [[5, 6], [7]]


# ----------------------------------------------------------- state_dict


def make_samplers(seed):
    return {
        "sequential": SequentialSampler(range(13)),
        "random": RandomSampler(range(13), generator=rng(seed)),
        "random_replacement": RandomSampler(
            range(13), replacement=True, num_samples=70, generator=rng(seed)
        ),
        "random_long": RandomSampler(range(5), num_samples=13, generator=rng(seed)),
        "subset": SubsetRandomSampler([3, 1, 4, 1, 5, 9, 2, 6], generator=rng(seed)),
        "weighted": WeightedRandomSampler([1, 2, 3, 4], 40, generator=rng(seed)),
        "batch": BatchSampler(RandomSampler(range(13), generator=rng(seed)), 4, False),
    }


@pytest.mark.parametrize("name", list(make_samplers(0)))
@pytest.mark.parametrize("stop", [0, 1, 3])
def test_state_dict_resumes_the_rest_of_the_epoch(name, stop):
    reference = make_samplers(0)[name]
    epoch1, epoch2 = list(reference), list(reference)

    s = make_samplers(0)[name]
    it = iter(s)
    head = [next(it) for _ in range(stop)]
    state = s.state_dict()

    resumed = make_samplers(0)[name]
    resumed.load_state_dict(state)
    assert head + list(resumed) == epoch1
    assert list(resumed) == epoch2  # and the next epoch follows as it would have


@pytest.mark.parametrize("name", ["random", "weighted", "batch"])
def test_state_dict_of_a_finished_epoch_starts_the_next(name):
    reference = make_samplers(0)[name]
    list(reference)
    epoch2 = list(reference)
    s = make_samplers(0)[name]
    list(s)
    state = s.state_dict()
    resumed = make_samplers(0)[name]
    resumed.load_state_dict(state)
    assert list(resumed) == epoch2


def test_state_dict_with_default_generator_keeps_the_epoch_seed():
    s = RandomSampler(range(20))
    it = iter(s)
    head = [next(it) for _ in range(5)]
    rest = list(it)
    state = s.state_dict()
    state["yielded"] = 5
    t = RandomSampler(range(20))
    t.load_state_dict(state)
    assert list(t) == rest
    assert head  # the epoch was fixed by its own seed, not the global state now


def test_load_state_dict_rejects_garbage():
    with pytest.raises(ValueError, match="state_dict"):
        RandomSampler(range(3)).load_state_dict({"nope": 1})
    with pytest.raises(ValueError, match="kind"):
        s = RandomSampler(range(3), generator=np.random.RandomState(0))
        s.load_state_dict(make_state_of_other_kind())
        list(s)


def make_state_of_other_kind():
    s = RandomSampler(range(3), generator=rng(0))
    iter(s)
    return s.state_dict()


def test_sampler_counts_are_a_counter():
    # every index of a permutation appears exactly once per epoch
    s = RandomSampler(range(7), generator=rng(0))
    assert collections.Counter(s) == collections.Counter(range(7))


def test_ember_generator_drives_the_samplers():
    ec = pytest.importorskip("ember_core")
    a = list(RandomSampler(range(10), generator=ec.Generator().manual_seed(0)))
    assert a == ec.randperm(10, generator=ec.Generator().manual_seed(0)).tolist()
    s = RandomSampler(range(10), generator=ec.Generator().manual_seed(0))
    it = iter(s)
    head = [next(it), next(it)]
    t = RandomSampler(range(10), generator=ec.Generator().manual_seed(5))
    t.load_state_dict(s.state_dict())
    assert head + list(t) == a
