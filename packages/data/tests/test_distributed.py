import pytest

from ember_data import DistributedSampler


@pytest.mark.parametrize("n", [10, 11, 3])
@pytest.mark.parametrize("shuffle", [False, True])
def test_replicas_cover_the_dataset_with_padding(n, shuffle):
    parts = [
        list(DistributedSampler(range(n), num_replicas=4, rank=r, shuffle=shuffle))
        for r in range(4)
    ]
    per = -(-n // 4)
    assert all(len(p) == per for p in parts)
    flat = [i for p in parts for i in p]
    assert set(flat) == set(range(n))
    assert len(flat) == per * 4  # padded by repeating indices


@pytest.mark.parametrize("shuffle", [False, True])
def test_drop_last_trims_to_equal_shares(shuffle):
    parts = [
        list(DistributedSampler(range(11), num_replicas=4, rank=r, shuffle=shuffle, drop_last=True))
        for r in range(4)
    ]
    assert all(len(p) == 2 for p in parts)
    flat = [i for p in parts for i in p]
    assert len(set(flat)) == 8


def test_unshuffled_order_is_strided():
    assert list(DistributedSampler(range(6), num_replicas=3, rank=1, shuffle=False)) == [1, 4]


def test_shuffle_depends_on_seed_and_epoch_only():
    a = DistributedSampler(range(50), num_replicas=2, rank=0, seed=3)
    b = DistributedSampler(range(50), num_replicas=2, rank=0, seed=3)
    assert list(a) == list(b) == list(a)
    a.set_epoch(1)
    assert list(a) != list(b)
    b.set_epoch(1)
    assert list(a) == list(b)
    # the replicas of one epoch are disjoint
    r1 = DistributedSampler(range(50), num_replicas=2, rank=1, seed=3)
    r1.set_epoch(1)
    assert not set(a) & set(r1)


def test_invalid_rank_and_missing_world():
    with pytest.raises(ValueError, match="Invalid rank 2"):
        DistributedSampler(range(4), num_replicas=2, rank=2)
    with pytest.raises(ValueError, match="Invalid rank -1"):
        DistributedSampler(range(4), num_replicas=2, rank=-1)


def test_world_from_environment(monkeypatch):
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    monkeypatch.delenv("RANK", raising=False)
    with pytest.raises(RuntimeError, match="num_replicas"):
        DistributedSampler(range(4))
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "1")
    s = DistributedSampler(range(4), shuffle=False)
    assert (s.num_replicas, s.rank, list(s)) == (2, 1, [1, 3])


def test_state_dict_resumes_mid_epoch():
    s = DistributedSampler(range(20), num_replicas=2, rank=0, seed=1)
    s.set_epoch(4)
    full = list(s)
    it = iter(s)
    head = [next(it) for _ in range(3)]
    t = DistributedSampler(range(20), num_replicas=2, rank=0, seed=1)
    t.load_state_dict(s.state_dict())
    assert head + list(t) == full and t.epoch == 4
