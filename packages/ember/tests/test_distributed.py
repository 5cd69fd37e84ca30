"""ember.distributed (ember_distributed, on MPI): the answers PyTorch gives without a
process group, a world of one, a PyTorch-style DDP script under the launcher
(python -m ember.distributed.run); nn.parallel; DataParallel on CPU.  The package's own
tests (packages/distributed) cover the collectives, DDP and faults in depth."""

import os
import subprocess
import sys
import textwrap

import pytest

import ember
import ember.distributed as dist
from ember.nn.parallel import DataParallel, DistributedDataParallel

NOT_INIT = (
    "Default process group has not been initialized, please make sure to call init_process_group."
)


def test_status():
    assert dist.is_available() is True
    assert dist.is_initialized() is False
    assert not (dist.is_available() and dist.is_initialized())  # scripts' usual guard
    assert dist.group.WORLD is None and dist.GroupMember.WORLD is None
    assert not dist.is_gloo_available() and dist.is_mpi_available()
    assert dist.init_process_group is ember.distributed.init_process_group
    import ember_distributed

    assert dist.all_reduce is ember_distributed.all_reduce


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


def test_a_world_of_one():
    dist.init_process_group("mpi", init_method="tcp://127.0.0.1:1", rank=0, world_size=1)
    try:
        assert dist.is_initialized() and dist.get_rank() == 0 and dist.get_world_size() == 1
        assert dist.group.WORLD is not None
        t = ember.ones(3)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        assert t.tolist() == [1.0, 1.0, 1.0]
        model = ember.nn.Linear(3, 2)
        ddp = DistributedDataParallel(model)
        ddp(ember.ones(4, 3)).sum().backward()
        assert model.weight.grad.tolist() == [[4.0] * 3] * 2
        assert list(ddp.state_dict()) == ["module.weight", "module.bias"]
    finally:
        dist.destroy_process_group()
    assert dist.is_initialized() is False


SCRIPT = textwrap.dedent(
    """
    import ember as torch
    import ember.distributed as dist
    from ember.nn.parallel import DistributedDataParallel as DDP
    from ember.utils.data import DataLoader, DistributedSampler, TensorDataset

    dist.init_process_group()
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(rank)  # different on purpose: DDP starts from rank 0's weights
    model = DDP(torch.nn.Linear(4, 1))
    data = TensorDataset(torch.arange(32.0).reshape(8, 4) / 32, torch.ones(8, 1))
    sampler = DistributedSampler(data)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        sampler.set_epoch(epoch)
        for x, y in DataLoader(data, batch_size=2, sampler=sampler):
            opt.zero_grad()
            torch.nn.functional.mse_loss(model(x), y).backward()
            opt.step()
    w = model.module.weight.detach().clone()
    every = [torch.zeros_like(w) for _ in range(world)]
    dist.all_gather(every, w)
    assert all(torch.equal(e, every[0]) for e in every), every
    print(f"rank {rank}/{world} in step, {len(sampler)} samples", flush=True)
    dist.destroy_process_group()
    """
)


def test_a_pytorch_style_ddp_script_under_the_launcher(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    for k in [k for k in env if k.startswith(("PMI_", "PMIX_", "HYDRA_"))]:
        del env[k]
    cmd = [sys.executable, "-m", "ember.distributed.run", "--nproc-per-node", "2", str(script)]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "rank 0/2 in step, 4 samples" in res.stdout, res.stdout + res.stderr
    assert "rank 1/2 in step, 4 samples" in res.stdout


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
    assert not dist.is_initialized()
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
