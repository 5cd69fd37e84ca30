"""The NCCL backend on a GPU: a world of one process (the API, the streams, DDP on CUDA).
Marked cuda: skipped without a GPU and libnccl."""

import socket

import pytest

import ember_core as ec
import ember_distributed as dist
from ember_distributed import ReduceOp

pytestmark = pytest.mark.cuda


def _gpu():
    if not ec.cuda.is_available():
        pytest.skip("no CUDA GPU")
    if not dist.is_nccl_available():
        pytest.skip("no libnccl (pip install 'ember-distributed[nccl]')")
    return ec.device("cuda", 0)


@pytest.fixture
def world():
    dev = _gpu()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}", rank=0, world_size=1)
    yield dev
    dist.destroy_process_group()


def test_version():
    _gpu()
    from ember_distributed import _nccl

    assert _nccl.version() >= (2, 10, 0)


def test_collectives_on_one_gpu(world):
    dev = world
    for op in (ReduceOp.SUM, ReduceOp.AVG, ReduceOp.MAX, ReduceOp.MIN, ReduceOp.PRODUCT):
        t = ec.arange(8.0).to(dev)
        dist.all_reduce(t, op=op)
        assert t.cpu().tolist() == list(range(8)), op
    for dt in (ec.float16, ec.bfloat16, ec.float64, ec.int64, ec.int32, ec.uint8, ec.bool_):
        t = ec.ones(5, dtype=dt).to(dev)
        dist.all_reduce(t)
        assert t.cpu().tolist() == ec.ones(5, dtype=dt).tolist(), dt
    nc = ec.arange(12.0).reshape(3, 4).to(dev).t()
    assert not nc.is_contiguous()
    dist.all_reduce(nc)
    assert nc.cpu().tolist() == ec.arange(12.0).reshape(3, 4).t().tolist()
    t = ec.arange(6.0).to(dev)
    dist.broadcast(t, 0)
    out = ec.zeros(6, device=dev)
    dist.all_gather_into_tensor(out, t)
    assert out.cpu().tolist() == list(range(6))
    lst = [ec.zeros(6, device=dev)]
    dist.all_gather(lst, t)
    assert lst[0].cpu().tolist() == list(range(6))
    rs = ec.zeros(6, device=dev)
    dist.reduce_scatter_tensor(rs, t)
    assert rs.cpu().tolist() == list(range(6))
    a2a = ec.zeros(6, device=dev)
    dist.all_to_all_single(a2a, t)
    assert a2a.cpu().tolist() == list(range(6))
    g = [ec.zeros(6, device=dev)]
    dist.gather(t, g, dst=0)
    assert g[0].cpu().tolist() == list(range(6))
    s = ec.zeros(6, device=dev)
    dist.scatter(s, [t], src=0)
    assert s.cpu().tolist() == list(range(6))
    work = dist.all_reduce(t, async_op=True)
    assert work.wait() is True
    from ember_core import cuda

    cuda.synchronize()
    assert work.is_completed()
    dist.barrier()
    objs = [None]
    dist.all_gather_object(objs, {"gpu": True})
    assert objs == [{"gpu": True}]
    with pytest.raises(RuntimeError, match="Cannot use ReduceOp.BAND with NCCL"):
        dist.all_reduce(ec.ones(2, dtype=ec.int32).to(dev), op=ReduceOp.BAND)
    with pytest.raises(RuntimeError, match="No backend type associated with device type cpu"):
        dist.all_reduce(ec.ones(2))


def test_ddp_on_one_gpu(world):
    import ember_autograd
    import ember_nn as nn
    from ember_distributed.parallel import DistributedDataParallel as DDP

    dev = world

    class Scale(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(ec.ones(16, device=dev))
            self.b = nn.Parameter(ec.zeros(16, device=dev))

        def forward(self, x):
            return x * self.w + self.b

    model = Scale()
    ddp = DDP(model, device_ids=[0], bucket_cap_mb=0.00003)
    x = ec.arange(16.0).to(dev)
    y = ddp(x)
    y.backward(ec.ones(16, device=dev))
    assert model.w.grad.cpu().tolist() == list(range(16))
    assert model.b.grad.cpu().tolist() == [1.0] * 16
    with ember_autograd.no_grad():
        model.w.sub_(model.w.grad * 0.5)
    assert len(ddp._buckets) >= 2
