"""Tensors and storages through Queue, Pipe and Pool, with fork and spawn, for
both strategies: values (against NumPy), geometry, shared storages, writes."""

import os
import pickle
import sys
from multiprocessing.reduction import ForkingPickler

import numpy as np
import pytest

import ember_core as ec
import ember_multiprocessing as mp

sys.path.insert(0, os.path.dirname(__file__))
import helpers  # noqa: E402

DTYPES = [
    ec.bool,
    ec.uint8,
    ec.int8,
    ec.int16,
    ec.int32,
    ec.int64,
    ec.float16,
    ec.bfloat16,
    ec.float32,
    ec.float64,
]


def _values(t):
    return t.to(ec.float32).numpy() if t.dtype is ec.bfloat16 else t.numpy()


def _echo(ctx, objs):
    """Send objs to a child that sends them back; what came back."""
    q_in, q_out = ctx.Queue(), ctx.Queue()
    p = ctx.Process(target=helpers.echo, args=(q_in, q_out, len(objs)))
    p.start()
    for o in objs:
        q_in.put(o)
    back = [q_out.get(timeout=60) for _ in objs]
    q_in.put(None)
    p.join(60)
    assert p.exitcode == 0
    return back


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_every_dtype_round_trips(method, strategy, no_leaks):
    tensors = [(ec.arange(12) % 3 - 1).to(dt).reshape(3, 4) for dt in DTYPES]
    expected = [_values(t).copy() for t in tensors]
    back = _echo(mp.get_context(method), tensors)
    for t, b, want in zip(tensors, back, expected):
        assert b.dtype is t.dtype and b.shape == t.shape and b.is_shared() and t.is_shared()
        np.testing.assert_array_equal(_values(b), want)
        # back home: the very storage it left with
        assert b.untyped_storage() is t.untyped_storage() and b.data_ptr() == t.data_ptr()


def _views(base):
    return [base.t(), base[1:3, ::2], base.expand(2, 4, 6), base.select(1, 2), base[3:, 5:]]


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_views_and_non_contiguous_tensors_keep_geometry(method, strategy, no_leaks):
    base = ec.arange(24.0).reshape(4, 6)
    views = _views(base)
    back = _echo(mp.get_context(method), views)
    for v, b in zip(views, back):
        assert b.shape == v.shape and b.stride() == v.stride()
        assert b.storage_offset() == v.storage_offset()
        np.testing.assert_array_equal(b.numpy(), v.numpy())
    # the views moved with their storage: one shared storage in the parent
    assert base.is_shared() and all(v.untyped_storage() is base.untyped_storage() for v in views)
    np.testing.assert_array_equal(base.numpy(), np.arange(24.0).reshape(4, 6))


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_tensors_sharing_a_storage_share_it_in_the_receiver(method, strategy, no_leaks):
    ctx = mp.get_context(method)
    q_in, q_out = ctx.Queue(), ctx.Queue()
    base = ec.arange(10.0)
    p = ctx.Process(target=helpers.describe, args=(q_in, q_out))
    p.start()
    q_in.put((base[:5], base[5:]))
    same, a_shared, b_shared, adjacent = q_out.get(timeout=60)
    q_in.put(None)
    p.join(60)
    assert same and a_shared and b_shared and adjacent


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_child_writes_are_seen_by_parent(method, strategy, no_leaks):
    ctx = mp.get_context(method)
    q, done = ctx.Queue(), ctx.Queue()
    t = ec.zeros(2, 3)
    view = t[1]
    p = ctx.Process(target=helpers.write_first, args=(q, done))
    p.start()
    q.put(view)
    assert done.get(timeout=60)
    p.join(60)
    expected = np.zeros((2, 3), np.float32)
    expected[1, 0] = 99
    np.testing.assert_array_equal(t.numpy(), expected)


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_pipe(method, no_leaks):
    ctx = mp.get_context(method)
    parent, child = ctx.Pipe()
    p = ctx.Process(target=helpers.pipe_child, args=(child,))
    p.start()
    t = ec.tensor([1.0, 2.0, 3.0])
    parent.send(t)
    doubled, same = parent.recv(), parent.recv()
    parent.send(None)
    p.join(60)
    child.close()
    parent.close()
    np.testing.assert_array_equal(doubled.numpy(), [2.0, 4.0, 6.0])
    assert same.untyped_storage() is t.untyped_storage()


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_pool(method, strategy, no_leaks):
    ctx = mp.get_context(method)
    pool = ctx.Pool(2)
    squares = pool.map(helpers.square, [ec.full((3,), float(i)) for i in range(4)])
    made = pool.map(helpers.make_tensor, range(3))
    pool.close()  # (terminate() would kill workers that may still hold a reference:
    pool.join()  # their named files would then wait for the cleanup process)
    for i, r in enumerate(squares):
        np.testing.assert_array_equal(r.numpy(), [i * i] * 3)
    for i, r in enumerate(made):
        assert r.is_shared()
        np.testing.assert_array_equal(r.numpy(), np.arange(6.0).reshape(2, 3) + i)


def test_storages_travel_too(strategy, no_leaks):
    t = ec.arange(4.0)
    s = t.untyped_storage()
    (back,) = _echo(mp.get_context("fork"), [s])
    assert back is s and t.is_shared()


def test_forwarded_tensor_reaches_a_third_process(strategy, no_leaks):
    # parent -> child A -> child B -> parent, all over the parent's memory
    ctx = mp.get_context("fork")
    q1, q2, q3 = ctx.Queue(), ctx.Queue(), ctx.Queue()
    a = ctx.Process(target=helpers.echo, args=(q1, q2, 1))
    b = ctx.Process(target=helpers.echo, args=(q2, q3, 1))
    a.start()
    b.start()
    t = ec.arange(5.0)
    q1.put(t)
    back = q3.get(timeout=60)
    q1.put(None)
    q2.put(None)
    a.join(60)
    b.join(60)
    assert back.untyped_storage() is t.untyped_storage()


def test_requires_grad_and_subclasses_travel():
    x = ec.ones(3)
    x.requires_grad_(True)
    back = ForkingPickler.loads(ForkingPickler.dumps(x))
    assert back.requires_grad and back.untyped_storage() is x.untyped_storage()
    m = ec.zeros(2).as_subclass(helpers.Marked)
    back = ForkingPickler.loads(ForkingPickler.dumps(m))
    assert type(back) is helpers.Marked and back.data_ptr() == m.data_ptr()


def test_non_leaf_tensor_requiring_grad_is_refused():
    x = ec.ones(3)
    x._rg = True
    x.grad_fn = object()  # what autograd records for a computed tensor
    with pytest.raises(RuntimeError, match="Cowardly refusing"):
        ForkingPickler.dumps(x)


def test_cuda_tensors_give_a_clear_error():
    t = ec.ones(2)
    storage = t.untyped_storage()
    storage._device = ec.device("cuda", 0)  # the reduction looks at the storage's device
    try:
        with pytest.raises(RuntimeError, match="CUDA IPC"):
            ForkingPickler.dumps(t)
    finally:
        storage._device = ec.device("cpu")


def test_plain_pickle_is_untouched():
    # only multiprocessing's pickler shares memory; pickle.dumps is unaffected
    assert ForkingPickler.reducer_override is not None
    assert getattr(pickle.Pickler, "reducer_override", None) is None


def test_strategies():
    assert mp.get_all_sharing_strategies() == {"file_descriptor", "file_system"}
    assert mp.get_sharing_strategy() == "file_descriptor"
    with pytest.raises(ValueError, match="unknown strategy"):
        mp.set_sharing_strategy("carrier pigeon")
    with pytest.raises(AssertionError):  # what PyTorch raises
        mp.set_sharing_strategy("file")
    assert mp.get_sharing_strategy() == "file_descriptor"


def test_share_memory_follows_the_strategy(strategy, no_leaks):
    t = ec.arange(8.0)
    v = t[2:4]
    assert t.share_memory_() is t
    assert t.is_shared() and v.is_shared()
    v[0] = -1
    assert t[2].item() == -1
    named = any(isinstance(x, mp._file_system.NamedBlock) for x in t.untyped_storage()._owner)
    assert named == (strategy == "file_system")
    del t, v


@pytest.mark.parity
def test_strategies_and_refusals_match_torch():
    torch = pytest.importorskip("torch")
    import torch.multiprocessing as tmp

    assert mp.get_all_sharing_strategies() == tmp.get_all_sharing_strategies()
    assert mp.get_sharing_strategy() == tmp.get_sharing_strategy()
    y = torch.ones(2, requires_grad=True) * 2
    with pytest.raises(RuntimeError) as theirs:
        ForkingPickler.dumps(y)
    x = ec.ones(2)
    x._rg, x.grad_fn = True, object()
    with pytest.raises(RuntimeError) as ours:
        ForkingPickler.dumps(x)
    assert str(ours.value) == str(theirs.value)
