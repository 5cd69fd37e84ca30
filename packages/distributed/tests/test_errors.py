"""Bad input: clear errors, in one process (an MPI world of one) and across two."""

import os

import pytest
from helpers import need_mpi, run_mpi

import ember_core as ec
import ember_distributed as dist
from ember_distributed import ReduceOp, _lib

NOT_INIT = (
    "Default process group has not been initialized, please make sure to call init_process_group."
)


def test_before_init_process_group():
    assert not dist.is_initialized() and dist.is_available()
    for call in (
        dist.get_rank,
        dist.get_world_size,
        dist.get_backend,
        dist.barrier,
        dist.new_group,
        lambda: dist.all_reduce(ec.ones(2)),
        lambda: dist.broadcast(ec.ones(2), 0),
        lambda: dist.all_gather([ec.ones(2)], ec.ones(2)),
    ):
        with pytest.raises(ValueError) as e:
            call()
        assert str(e.value).startswith(NOT_INIT)
    with pytest.raises(AssertionError, match="Process group cannot be None"):
        dist.destroy_process_group()


def test_rendezvous_errors(monkeypatch):
    for k in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setattr(dist._mpi, "launched_by_mpi", lambda: False)
    with pytest.raises(ValueError, match="environment variable RANK expected, but not set"):
        dist.init_process_group("mpi")
    with pytest.raises(ValueError, match="unknown backend 'foo'"):
        dist.init_process_group("foo", rank=0, world_size=1)
    with pytest.raises(ValueError, match="Cannot specify both init_method and store"):
        dist.init_process_group("mpi", init_method="env://", store=dist.HashStore())
    assert not dist.is_initialized()


@pytest.fixture
def world_of_one():
    pytest.importorskip("mpi4py")
    dist.init_process_group("mpi", init_method="tcp://127.0.0.1:1", rank=0, world_size=1)
    yield
    dist.destroy_process_group()


def test_world_of_one(world_of_one):
    assert dist.get_rank() == 0 and dist.get_world_size() == 1 and dist.get_backend() == "mpi"
    # Note [MPI fast path]: bound where the C helper is built (these wheels) and mpi4py runs
    # an MPI whose handles have one width (MPICH, Open MPI)
    pg = dist.distributed_c10d._World.default._mpi
    assert _lib.lib is not None and pg._c_types is not None
    t = ec.arange(4.0)
    dist.all_reduce(t, op=ReduceOp.AVG)
    assert t.tolist() == [0, 1, 2, 3]
    out = ec.zeros(1, 4)
    dist.all_gather_into_tensor(out, ec.arange(4.0).reshape(1, 4))
    assert out.tolist() == [[0, 1, 2, 3]]
    objs = [None]
    dist.all_gather_object(objs, {"a": 1})
    assert objs == [{"a": 1}]
    with pytest.raises(ValueError, match="trying to initialize the default process group twice"):
        dist.init_process_group("mpi", rank=0, world_size=1)


def test_argument_errors(world_of_one):
    cases = [
        (
            TypeError,
            "Expected parameter `tensor` of type torch.Tensor",
            lambda: dist.all_reduce([1.0]),
        ),
        (
            RuntimeError,
            "Cannot use ReduceOp.BAND with non-integral dtype",
            lambda: dist.all_reduce(ec.ones(2), op=ReduceOp.BAND),
        ),
        (
            RuntimeError,
            "result type Float can't be cast to the desired output type Long",
            lambda: dist.all_reduce(ec.ones(2, dtype=ec.int64), op=ReduceOp.AVG),
        ),
        (
            TypeError,
            "op must be a ember.distributed.ReduceOp",
            lambda: dist.all_reduce(ec.ones(2), op="sum"),
        ),
        (RuntimeError, "invalid root rank: 5", lambda: dist.broadcast(ec.ones(2), 5)),
        (
            RuntimeError,
            "invalid output tensor list at index 0 (expected length 1, got 2)",
            lambda: dist.all_gather([ec.zeros(2), ec.zeros(2)], ec.ones(2)),
        ),
        (
            RuntimeError,
            "invalid tensor size at index 0 (expected (2,), got (3,))",
            lambda: dist.all_gather([ec.zeros(3)], ec.ones(2)),
        ),
        (
            RuntimeError,
            "output tensor size must be equal to world_size times input",
            lambda: dist.all_gather_into_tensor(ec.zeros(3), ec.ones(2)),
        ),
        (
            RuntimeError,
            "input tensor must be the same size as output size times world size",
            lambda: dist.reduce_scatter_tensor(ec.zeros(3), ec.ones(4)),
        ),
        (
            RuntimeError,
            "Incorrect output list size 2",
            lambda: dist.gather(ec.ones(1), [ec.zeros(1), ec.zeros(1)], dst=0),
        ),
        (
            ValueError,
            "destination rank should not be the same as the rank of the current",
            lambda: dist.send(ec.ones(1), 0),
        ),
        (ValueError, "source rank should not be the same", lambda: dist.recv(ec.ones(1), 0)),
        (
            ValueError,
            "The new group's rank should be within the world_size",
            lambda: dist.new_group([0, 3]),
        ),
        (
            RuntimeError,
            "split sizes [2] must be 1 numbers summing to its dim 0 (3)",
            lambda: dist.all_to_all_single(ec.zeros(3), ec.zeros(3), [3], [2]),
        ),
    ]
    for exc, text, call in cases:
        with pytest.raises(exc) as e:
            call()
        assert text in str(e.value), (text, str(e.value))


def test_wrong_device_for_the_backend():
    pytest.importorskip("mpi4py")
    dist.init_process_group("nccl", init_method="tcp://127.0.0.1:1", rank=0, world_size=1)
    try:
        assert dist.get_backend() == "nccl"
        with pytest.raises(RuntimeError, match="No backend type associated with device type cpu"):
            dist.all_reduce(ec.ones(2))
    finally:
        dist.destroy_process_group()


def test_gloo_runs_on_mpi():
    pytest.importorskip("mpi4py")
    with pytest.warns(UserWarning, match="no gloo backend"):
        dist.init_process_group("gloo", init_method="tcp://127.0.0.1:1", rank=0, world_size=1)
    try:
        assert dist.get_backend() == "mpi"
        t = ec.ones(3)
        dist.all_reduce(t)
        assert t.tolist() == [1, 1, 1]
    finally:
        dist.destroy_process_group()


def test_mismatches_across_ranks_are_named():
    need_mpi()
    res = run_mpi("errors.py", 2, timeout=120, TORCH_DISTRIBUTED_DEBUG="DETAIL")
    assert res.returncode == 0, res
    assert "ERRORS OK rank 0" in res.out and "ERRORS OK rank 1" in res.out, res


def test_nccl_without_a_gpu_says_why():
    if dist.is_nccl_available():
        pytest.skip("libnccl is installed here")
    with pytest.raises(RuntimeError, match="the NCCL backend needs libnccl"):
        dist._nccl.lib()
    assert os.environ.get("EMBER_NCCL_LIBRARY") is None
