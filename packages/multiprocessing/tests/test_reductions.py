"""Tensors through Queue, Pipe and Pool, with fork and spawn, for every strategy."""

import os
import sys

import numpy as np
import pytest

import ember_core as ec
import ember_multiprocessing as mp

sys.path.insert(0, os.path.dirname(__file__))
import helpers  # noqa: E402

METHODS = ["fork", "spawn"]
STRATEGIES = ["segments", "file_descriptor", "file_system"]
DTYPES = [ec.bool, ec.uint8, ec.int8, ec.int16, ec.int32, ec.int64, ec.float16, ec.bfloat16, ec.float32, ec.float64]


@pytest.fixture(params=STRATEGIES)
def strategy(request):
    old = mp.get_sharing_strategy()
    mp.set_sharing_strategy(request.param)
    yield request.param
    mp.set_sharing_strategy(old)


def _values(t):
    return t.to(ec.float32).numpy() if t.dtype is ec.bfloat16 else t.numpy()


@pytest.mark.parametrize("method", METHODS)
def test_every_dtype_round_trips(method, strategy, no_leaks):
    ctx = mp.get_context(method)
    q_in, q_out = ctx.Queue(), ctx.Queue()
    tensors = [(ec.arange(12) % 3).to(dt).reshape(3, 4) for dt in DTYPES]
    p = ctx.Process(target=helpers.echo, args=(q_in, q_out, len(tensors)))
    p.start()
    for t in tensors:
        q_in.put(t)
    back = [q_out.get(timeout=30) for _ in tensors]
    q_in.put(None)
    p.join(30)
    assert p.exitcode == 0
    for t, b in zip(tensors, back):
        assert b.dtype is t.dtype and b.shape == t.shape and b.is_shared()
        np.testing.assert_array_equal(_values(b), _values(t))


@pytest.mark.parametrize("method", METHODS)
def test_views_keep_geometry_and_share_storage(method, strategy, no_leaks):
    ctx = mp.get_context(method)
    q_in, q_out = ctx.Queue(), ctx.Queue()
    base = ec.arange(24.0).reshape(4, 6)
    views = [base.t(), base[1:3, ::2], base.expand(2, 4, 6), base.select(1, 2)]
    p = ctx.Process(target=helpers.echo, args=(q_in, q_out, len(views)))
    p.start()
    for v in views:
        q_in.put(v)
    back = [q_out.get(timeout=30) for _ in views]
    q_in.put(None)
    p.join(30)
    for v, b in zip(views, back):
        assert b.shape == v.shape and b.stride() == v.stride() and b.storage_offset() == v.storage_offset()
        np.testing.assert_array_equal(b.numpy(), v.numpy())
    # the parent's own views now live in shared memory too, all in one storage
    assert base.is_shared() and all(v.untyped_storage() is base.untyped_storage() for v in views)


@pytest.mark.parametrize("method", METHODS)
def test_child_writes_are_seen_by_parent(method, strategy, no_leaks):
    ctx = mp.get_context(method)
    q, done = ctx.Queue(), ctx.Queue()
    t = ec.zeros(2, 3)
    p = ctx.Process(target=helpers.write_first, args=(q, done))
    p.start()
    q.put(t)
    assert done.get(timeout=30)
    p.join(30)
    assert t[0, 0].item() == 99


@pytest.mark.parametrize("method", METHODS)
def test_shared_storage_stays_shared_in_receiver(method, strategy, no_leaks):
    ctx = mp.get_context(method)
    q_in, q_out = ctx.Queue(), ctx.Queue()
    base = ec.arange(10.0)
    p = ctx.Process(target=helpers.describe, args=(q_in, q_out))
    p.start()
    q_in.put((base[:5], base[5:]))
    same, a_shared, b_shared = q_out.get(timeout=30)
    p.join(30)
    assert same and a_shared and b_shared


@pytest.mark.parametrize("method", METHODS)
def test_pipe(method, no_leaks):
    ctx = mp.get_context(method)
    parent, child = ctx.Pipe()
    p = ctx.Process(target=helpers.pipe_child, args=(child,))
    p.start()
    parent.send(ec.tensor([1.0, 2.0, 3.0]))
    out = parent.recv()
    parent.send(None)
    p.join(30)
    np.testing.assert_array_equal(out.numpy(), [2.0, 4.0, 6.0])


@pytest.mark.parametrize("method", METHODS)
def test_pool(method, no_leaks):
    ctx = mp.get_context(method)
    with ctx.Pool(2) as pool:
        results = pool.map(helpers.square, [ec.full((3,), float(i)) for i in range(4)])
        made = pool.map(helpers.make_tensor, range(2))
    for i, r in enumerate(results):
        np.testing.assert_array_equal(r.numpy(), [i * i] * 3)
    np.testing.assert_array_equal(made[1].numpy(), np.arange(6.0).reshape(2, 3))


def test_non_leaf_requiring_grad_is_refused():
    import ember_autograd  # noqa: F401 - records graphs

    x = ec.ones(3, requires_grad=True)
    y = x * 2
    from multiprocessing.reduction import ForkingPickler

    with pytest.raises(RuntimeError, match="Cowardly refusing"):
        ForkingPickler.dumps(y)
    # a leaf that requires grad travels with its flag
    back = ForkingPickler.loads(ForkingPickler.dumps(x))
    assert back.requires_grad


def test_strategies():
    assert mp.get_all_sharing_strategies() == {"segments", "file_descriptor", "file_system"}
    with pytest.raises(ValueError, match="sharing strategy"):
        mp.set_sharing_strategy("carrier pigeon")
