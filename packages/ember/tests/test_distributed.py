"""ember.distributed in one process (no collective backend): the answers
PyTorch gives without a process group, and a clear error where one is needed;
nn.parallel.DistributedDataParallel; DataParallel on CPU."""

import pytest

import ember
import ember.distributed as dist
from ember.nn.parallel import DataParallel, DistributedDataParallel

NOT_INIT = (
    "Default process group has not been initialized, please make sure to call init_process_group."
)


def test_status():
    assert dist.is_available() is False
    assert dist.is_initialized() is False
    assert not (dist.is_available() and dist.is_initialized())  # scripts' usual guard
    assert dist.group.WORLD is None and dist.GroupMember.WORLD is None
    assert not dist.is_nccl_available() and not dist.is_gloo_available()


def test_is_torchelastic_launched_reads_the_environment(monkeypatch):
    monkeypatch.delenv("TORCHELASTIC_RUN_ID", raising=False)
    assert dist.is_torchelastic_launched() is False
    monkeypatch.setenv("TORCHELASTIC_RUN_ID", "abc")
    assert dist.is_torchelastic_launched() is True


@pytest.mark.parametrize(
    "call",
    [
        lambda: dist.get_rank(),
        lambda: dist.get_world_size(),
        lambda: dist.get_backend(),
        lambda: dist.all_reduce(ember.ones(2)),
        lambda: dist.all_reduce(ember.ones(2), op=dist.ReduceOp.MAX),
        lambda: dist.broadcast(ember.ones(2), 0),
        lambda: dist.all_gather([ember.ones(2)], ember.ones(2)),
        lambda: dist.barrier(),
        lambda: dist.new_group(),
        lambda: DistributedDataParallel(ember.nn.Linear(2, 2)),
    ],
)
def test_without_a_process_group_raises_torchs_value_error(call):
    with pytest.raises(ValueError) as err:
        call()
    assert str(err.value).startswith(NOT_INIT)


def test_init_process_group_says_there_is_no_backend():
    with pytest.raises(RuntimeError, match="ember has no collective communication backend"):
        dist.init_process_group("gloo", rank=0, world_size=1)
    assert dist.is_initialized() is False


def test_node_local_rank_and_error_types(monkeypatch):
    monkeypatch.delenv("LOCAL_RANK", raising=False)
    assert dist.get_node_local_rank(fallback_rank=3) == 3
    with pytest.raises(RuntimeError, match="LOCAL_RANK is not in the environment"):
        dist.get_node_local_rank()
    monkeypatch.setenv("LOCAL_RANK", "1")
    assert dist.get_node_local_rank(fallback_rank=3) == 1
    assert issubclass(dist.QueueEmptyError, dist.DistStoreError)
    assert issubclass(dist.DistBackendError, dist.DistError) and issubclass(
        dist.DistError, RuntimeError
    )


def test_destroy_without_group():
    with pytest.raises(AssertionError, match="Process group cannot be None"):
        dist.destroy_process_group()


def test_reduce_op_and_backend():
    assert dist.ReduceOp.SUM != dist.ReduceOp.MAX
    assert repr(dist.ReduceOp.SUM) == "<RedOpType.SUM: 0>"
    assert dist.Backend("GLOO") == "gloo" == dist.Backend.GLOO
    assert ember.nn.parallel.DistributedDataParallel is DistributedDataParallel
    assert ember.nn.parallel.distributed.DistributedDataParallel is DistributedDataParallel


def test_data_parallel_on_cpu_calls_the_module():
    lin = ember.nn.Linear(3, 2)
    dp = DataParallel(lin)
    x = ember.ones(4, 3)
    assert ember.equal(dp(x), lin(x))
    assert list(dp.state_dict()) == ["module.weight", "module.bias"]
    assert dp.device_ids == []


@pytest.mark.parity
def test_errors_match_torch():
    torch = pytest.importorskip("torch")
    import torch.distributed as tdist

    pairs = [
        (dist.get_rank, tdist.get_rank),
        (dist.get_world_size, tdist.get_world_size),
        (lambda: dist.all_reduce(ember.ones(1)), lambda: tdist.all_reduce(torch.ones(1))),
        (dist.barrier, tdist.barrier),
        (dist.destroy_process_group, tdist.destroy_process_group),
        (
            lambda: DistributedDataParallel(ember.nn.Linear(2, 2)),
            lambda: torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 2)),
        ),
    ]
    for mine, theirs in pairs:
        with pytest.raises(Exception) as e_mine:
            mine()
        with pytest.raises(Exception) as e_torch:
            theirs()
        assert type(e_mine.value) is type(e_torch.value)
        assert str(e_mine.value).startswith(str(e_torch.value))
    assert tdist.is_initialized() == dist.is_initialized()
    assert tdist.is_torchelastic_launched() == dist.is_torchelastic_launched()
    assert [m for m in dir(tdist.ReduceOp) if m.isupper()] == [
        m for m in dir(dist.ReduceOp) if m.isupper()
    ]
