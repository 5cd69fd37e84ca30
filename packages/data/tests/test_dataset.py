import numpy as np
import pytest

from ember_data import (
    ChainDataset,
    ConcatDataset,
    Dataset,
    IterableDataset,
    StackDataset,
    Subset,
    TensorDataset,
    random_split,
)


class Items(Dataset):
    def __init__(self, items):
        self.items = list(items)

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return self.items[i]


class Batched(Items):
    calls = 0

    def __getitems__(self, indices):
        Batched.calls += 1
        return [self.items[i] for i in indices]


class Stream(IterableDataset):
    def __init__(self, items):
        self.items = list(items)

    def __iter__(self):
        return iter(self.items)

    def __len__(self):
        return len(self.items)


def test_base_dataset_requires_getitem():
    with pytest.raises(NotImplementedError):
        Dataset()[0]


def test_tensor_dataset_indexes_every_array():
    x, y = np.arange(12.0).reshape(4, 3), np.arange(4)
    ds = TensorDataset(x, y)
    assert len(ds) == 4
    a, b = ds[2]
    np.testing.assert_array_equal(a, x[2])
    assert b == 2
    with pytest.raises(AssertionError, match="Size mismatch"):
        TensorDataset(np.zeros(3), np.zeros(4))


def test_stack_dataset_tuple_and_dict():
    a, b = Items("abc"), Batched([1, 2, 3])
    s = StackDataset(a, b)
    assert len(s) == 3 and s[1] == ("b", 2)
    assert s.__getitems__([0, 2]) == [("a", 1), ("c", 3)]
    d = StackDataset(x=a, y=b)
    assert d[2] == {"x": "c", "y": 3}
    assert d.__getitems__([1]) == [{"x": "b", "y": 2}]
    with pytest.raises(ValueError, match="Size mismatch"):
        StackDataset(a, Items([1]))
    with pytest.raises(ValueError):
        StackDataset(a, y=b)
    with pytest.raises(ValueError):
        StackDataset()


def test_concat_dataset_indexing():
    c = ConcatDataset([Items([0, 1]), Items([2, 3, 4]), Items([5])])
    assert len(c) == 6 and c.cumulative_sizes == [2, 5, 6]
    assert [c[i] for i in range(6)] == list(range(6))
    assert c[-1] == 5 and c[-6] == 0
    with pytest.raises(ValueError, match="absolute value"):
        c[-7]
    with pytest.raises(IndexError):
        c[6]
    assert list(Items([1]) + Items([2])) == [1, 2]
    with pytest.raises(AssertionError):
        ConcatDataset([])
    with pytest.raises(AssertionError, match="IterableDataset"):
        ConcatDataset([Stream([1])])


def test_chain_dataset():
    ch = ChainDataset([Stream([1, 2]), Stream([3])])
    assert list(ch) == [1, 2, 3] and len(ch) == 3
    assert list(Stream([1]) + Stream([2])) == [1, 2]
    with pytest.raises(AssertionError, match="IterableDataset"):
        list(ChainDataset([Items([1])]))


def test_subset_maps_indices_and_batches():
    base = Batched(range(10, 20))
    s = Subset(base, [5, 1, 7])
    assert len(s) == 3 and [s[i] for i in range(3)] == [15, 11, 17]
    before = Batched.calls
    assert s.__getitems__([2, 0]) == [17, 15]
    assert Batched.calls == before + 1  # one batched call on the base dataset
    assert Subset(Items(range(5)), [4, 3]).__getitems__([0, 1]) == [4, 3]


@pytest.mark.parametrize("lengths", [[3, 7], [0.3, 0.7], [5, 0, 5]])
def test_random_split_partitions(lengths):
    parts = random_split(range(10), lengths, generator=np.random.default_rng(0))
    got = sorted(x for p in parts for x in p)
    assert got == list(range(10))
    sizes = [len(p) for p in parts]
    expected = [round(x * 10) if isinstance(x, float) else x for x in lengths]
    assert sizes == expected


def test_random_split_fraction_remainder_and_determinism():
    parts = random_split(range(11), [0.5, 0.5], generator=np.random.default_rng(1))
    assert [len(p) for p in parts] == [6, 5]  # remainder goes to the first split
    again = random_split(range(11), [0.5, 0.5], generator=np.random.default_rng(1))
    assert [list(p) for p in parts] == [list(p) for p in again]
    with pytest.warns(UserWarning, match="Length of split at index 1 is 0"):
        random_split(range(2), [1.0, 0.0])


def test_random_split_errors():
    with pytest.raises(ValueError, match="Sum of input lengths"):
        random_split(range(10), [3, 3])
    with pytest.raises(ValueError, match="not between 0 and 1"):
        random_split(range(10), [1.5, -0.5])
    with pytest.raises(TypeError, match="generator"):
        random_split(range(10), [5, 5], generator="seed")


def test_alias_registers_the_same_modules(monkeypatch):
    import sys

    import ember_data
    import ember_data.sampler

    monkeypatch.setattr(sys, "modules", dict(sys.modules))
    ember_data._alias("umbrella_alias.data")
    from umbrella_alias.data.datasets import transforms
    from umbrella_alias.data.sampler import RandomSampler

    assert RandomSampler is ember_data.sampler.RandomSampler
    assert transforms is sys.modules["ember_data.datasets.transforms"]
