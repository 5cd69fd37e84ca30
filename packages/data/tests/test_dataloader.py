"""The DataLoader in the main process (num_workers=0): arguments, batching,
seeding, resuming.  Worker processes are tested in test_workers.py."""

import random
import warnings

import numpy as np
import pytest
from helpers import RandomAugment, Range, Squares

from ember_data import (
    BatchSampler,
    DataLoader,
    IterableDataset,
    SequentialSampler,
    TensorDataset,
)
from ember_data._utils import pin_memory


def values(batch):
    return np.asarray(batch).tolist()


def test_batches_in_order():
    loader = DataLoader(Squares(10), batch_size=4)
    batches = list(loader)
    assert len(loader) == len(batches) == 3
    np.testing.assert_array_equal(np.asarray(batches[0][0]), [[0, 0], [1, 1], [2, 4], [3, 9]])
    assert values(batches[2][1]) == [8, 9]


def test_drop_last_and_len():
    loader = DataLoader(Squares(10), batch_size=4, drop_last=True)
    assert len(loader) == 2 and len(list(loader)) == 2


def test_no_batching_converts_samples():
    loader = DataLoader(Squares(3), batch_size=None)
    items = list(loader)
    assert len(items) == 3 and values(items[1][0]) == [1, 1] and isinstance(items[1], list)


def test_shuffle_with_generator_is_reproducible():
    def run(seed):
        loader = DataLoader(
            Squares(20), batch_size=5, shuffle=True, generator=np.random.default_rng(seed)
        )
        return [values(y) for _, y in loader]

    a = run(0)
    assert a == run(0) and a != run(1)
    assert sorted(sum(a, [])) == list(range(20))


def test_sampler_and_batch_sampler_arguments():
    loader = DataLoader(Squares(6), sampler=[5, 4, 3], batch_size=2)
    assert [values(y) for _, y in loader] == [[5, 4], [3]]
    loader = DataLoader(Squares(6), batch_sampler=[[1, 2], [0]])
    assert [values(y) for _, y in loader] == [[1, 2], [0]]
    loader = DataLoader(
        Squares(6), batch_sampler=BatchSampler(SequentialSampler(range(6)), 3, False)
    )
    assert len(loader) == 2


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"num_workers": -1}, "num_workers"),
        ({"timeout": -1}, "timeout"),
        ({"prefetch_factor": 2}, "prefetch_factor"),
        ({"persistent_workers": True}, "persistent_workers"),
        ({"sampler": [0], "shuffle": True}, "mutually exclusive with shuffle"),
        ({"batch_sampler": [[0]], "batch_size": 2}, "batch_sampler option is mutually exclusive"),
        ({"batch_sampler": [[0]], "drop_last": True}, "batch_sampler option is mutually exclusive"),
        ({"batch_size": None, "drop_last": True}, "batch_size=None"),
        ({"multiprocessing_context": "fork"}, "num_workers > 0"),
        ({"num_workers": 1, "multiprocessing_context": "nope"}, "valid start method"),
    ],
)
def test_argument_validation(kwargs, match):
    with pytest.raises(ValueError, match=match):
        DataLoader(Squares(4), **kwargs)


def test_iterable_dataset_argument_validation():
    for kwargs in ({"shuffle": True}, {"sampler": [0]}, {"batch_sampler": [[0]]}):
        with pytest.raises(ValueError, match="IterableDataset"):
            DataLoader(Range(0, 4), **kwargs)


def test_attributes_are_frozen_after_init():
    loader = DataLoader(Squares(4))
    with pytest.raises(ValueError, match="batch_size attribute should not be set"):
        loader.batch_size = 2
    loader.num_workers = 0  # others may change


def test_iterable_dataset_batches_and_len():
    loader = DataLoader(Range(0, 10), batch_size=4)
    assert [values(b) for b in loader] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert len(loader) == 3
    assert [values(b) for b in DataLoader(Range(0, 10), batch_size=4, drop_last=True)] == [
        [0, 1, 2, 3],
        [4, 5, 6, 7],
    ]


def test_iterable_dataset_longer_than_its_len_warns():
    class Liar(IterableDataset):
        def __iter__(self):
            return iter(range(5))

        def __len__(self):
            return 2

    loader = DataLoader(Liar(), batch_size=None)
    len(loader)
    with pytest.warns(UserWarning, match="Length of IterableDataset"):
        list(loader)


def test_pin_memory_without_gpu_is_a_noop_noted_once(monkeypatch):
    monkeypatch.setattr(pin_memory, "_noted", [])
    with pytest.warns(UserWarning, match="pin_memory"):
        out = list(DataLoader(Squares(4), batch_size=2, pin_memory=True))
    assert len(out) == 2
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        list(DataLoader(Squares(4), batch_size=2, pin_memory=True))


def test_batches_are_seeded_but_the_callers_random_state_is_kept():
    random.seed(123)
    np.random.seed(123)
    expected_py, expected_np = random.random(), np.random.rand()
    random.seed(123)
    np.random.seed(123)
    loader = DataLoader(RandomAugment(8), batch_size=4, generator=np.random.default_rng(0))
    first = [values(b["py"]) for b in loader]
    assert random.random() == expected_py and np.random.rand() == expected_np
    again = [
        values(b["py"])
        for b in DataLoader(RandomAugment(8), batch_size=4, generator=np.random.default_rng(0))
    ]
    assert first == again
    assert len({x for b in first for x in b}) == 8  # every sample its own draw


def test_tensor_dataset_of_arrays():
    x = np.arange(20, dtype=np.float32).reshape(10, 2)
    (xb, yb), *_ = DataLoader(TensorDataset(x, np.arange(10)), batch_size=10)
    np.testing.assert_array_equal(np.asarray(xb), x)


def test_ember_batches_and_generator():
    ec = pytest.importorskip("ember_core")
    loader = DataLoader(
        Squares(6), batch_size=3, shuffle=True, generator=ec.Generator().manual_seed(0)
    )
    x, y = next(iter(loader))
    assert isinstance(x, ec.Tensor) and x.dtype == ec.int64 and y.dtype == ec.int64
    again = DataLoader(
        Squares(6), batch_size=3, shuffle=True, generator=ec.Generator().manual_seed(0)
    )
    assert next(iter(again))[1].tolist() == y.tolist()
    ec.manual_seed(1)
    a = [b[1].tolist() for b in DataLoader(Squares(12), batch_size=4, shuffle=True)]
    ec.manual_seed(1)
    assert a == [b[1].tolist() for b in DataLoader(Squares(12), batch_size=4, shuffle=True)]


# ----------------------------------------------------------- state_dict


def collect(loader, n=None):
    out = []
    for b in loader:
        out.append(values(b["i"]) + values(b["py"]))
        if n is not None and len(out) == n:
            break
    return out


@pytest.mark.parametrize("shuffle", [False, True])
def test_state_dict_resumes_mid_epoch(shuffle):
    def make():
        return DataLoader(
            RandomAugment(22), batch_size=4, shuffle=shuffle, generator=np.random.default_rng(5)
        )

    full = collect(make())
    loader = make()
    head = collect(loader, 2)
    state = loader.state_dict()
    resumed = make()
    resumed.load_state_dict(state)
    assert head + collect(resumed) == full


def test_state_dict_between_epochs_starts_fresh():
    loader = DataLoader(Squares(6), batch_size=2)
    assert loader.state_dict()["epoch"] is None
    list(loader)
    assert loader.state_dict()["epoch"] is None
    with pytest.raises(ValueError, match="state_dict"):
        loader.load_state_dict({"what": 1})


def test_state_dict_of_an_iterable_dataset_fast_forwards():
    loader = DataLoader(Range(0, 10), batch_size=3)
    it = iter(loader)
    next(it)
    state = loader.state_dict()
    resumed = DataLoader(Range(0, 10), batch_size=3)
    resumed.load_state_dict(state)
    assert [values(b) for b in resumed] == [[3, 4, 5], [6, 7, 8], [9]]
