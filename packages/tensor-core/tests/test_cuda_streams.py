"""Streams and events, as torch.cuda's: ordering across streams by events and
wait_stream, the stream context, Event timing/query/synchronize, record_stream
keeping a block from reuse until the stream that uses it is done, and ops
returning before their kernels finish (the CPU runs ahead of the GPU).

The GPU is kept busy with a chain of large matmuls so that missing
synchronisation shows up as wrong values (work on one stream overtaking work
it should wait for), not only as timing.
"""

import time

import pytest

import ember_core as ec

pytestmark = pytest.mark.cuda

N = 1 << 24


def _busy(ms_target=30.0):
    """Queue roughly ms_target of GPU work on the current stream; returns its result."""
    a = ec.randn(2048, 2048, device="cuda") * 0.01
    ec.cuda.synchronize()
    start, end = ec.cuda.Event(enable_timing=True), ec.cuda.Event(enable_timing=True)
    start.record()
    b = a @ a
    end.record()
    end.synchronize()
    one = max(start.elapsed_time(end), 0.05)
    reps = max(1, min(400, int(ms_target / one)))
    x = a
    for _ in range(reps):
        x = (x @ a).clamp_(-1, 1)
    return x, b


def test_streams_and_the_stream_context():
    d = ec.cuda.default_stream()
    assert ec.cuda.current_stream() == d
    s = ec.cuda.Stream()
    assert s != d
    assert isinstance(s.cuda_stream, int) and s.cuda_stream != d.cuda_stream
    assert s.device == ec.device("cuda", 0)
    with ec.cuda.stream(s):
        assert ec.cuda.current_stream() == s
        with ec.cuda.stream(d):
            assert ec.cuda.current_stream() == d
        assert ec.cuda.current_stream() == s
    assert ec.cuda.current_stream() == d
    hi = ec.cuda.Stream(priority=-1)
    assert hi.priority <= 0
    with ec.cuda.stream(None):  # None: no change, as in PyTorch
        assert ec.cuda.current_stream() == d


def test_ops_return_before_the_gpu_is_done():
    """The CPU runs ahead: queuing heavy work returns long before it completes."""
    ec.cuda.synchronize()
    t0 = time.perf_counter()
    x, _ = _busy(200.0)
    t_queue = time.perf_counter() - t0
    s = ec.cuda.current_stream()
    busy = not s.query()
    ec.cuda.synchronize()
    t_total = time.perf_counter() - t0
    assert busy, "the stream was already idle right after queuing ~200 ms of work"
    assert t_queue < 0.6 * t_total, (t_queue, t_total)
    assert s.query() is True


def test_wait_stream_orders_work():
    s = ec.cuda.Stream()
    a = ec.zeros(N, device="cuda")
    ec.cuda.synchronize()
    _busy(50.0)  # default stream busy ...
    a.fill_(1.0)  # ... then a is written, on the default stream
    s.wait_stream(ec.cuda.current_stream())
    with ec.cuda.stream(s):
        total = a.sum(dtype=ec.float64)  # must see the fill
        doubled = a * 2
    ec.cuda.current_stream().wait_stream(s)
    assert total.item() == N
    assert doubled.sum(dtype=ec.float64).item() == 2 * N


def test_events_order_work_across_streams():
    s1, s2 = ec.cuda.Stream(), ec.cuda.Stream()
    a = ec.zeros(N, device="cuda")
    ec.cuda.synchronize()
    with ec.cuda.stream(s1):
        _busy(50.0)
        a.add_(3.0)
        ev = ec.cuda.Event()
        ev.record()  # on s1 (the current stream)
    with ec.cuda.stream(s2):
        ev.wait()  # s2 waits for s1's add
        b = a * 2
        ev2 = s2.record_event()
    assert isinstance(ev2, ec.cuda.Event)
    ev2.synchronize()
    assert ev2.query() is True
    assert b.sum(dtype=ec.float64).item() == 6 * N
    # Event.record(stream) / stream.wait_event(event)
    c = ec.zeros(N, device="cuda")
    e3 = ec.cuda.Event()
    with ec.cuda.stream(s1):
        _busy(30.0)
        c.fill_(5.0)
    e3.record(s1)
    s2.wait_event(e3)
    with ec.cuda.stream(s2):
        m = c.mean(dtype=ec.float64)
    s2.synchronize()
    assert m.item() == 5.0


def test_event_timing():
    start = ec.cuda.Event(enable_timing=True)
    end = ec.cuda.Event(enable_timing=True)
    start.record()
    _busy(20.0)
    end.record()
    end.synchronize()
    ms = start.elapsed_time(end)
    assert isinstance(ms, float) and 1.0 < ms < 10_000.0, ms
    plain = ec.cuda.Event()
    plain.record()
    plain.synchronize()
    with pytest.raises(RuntimeError):
        start.elapsed_time(plain)  # timing needs both events created with enable_timing


def test_record_stream_keeps_a_block_from_reuse_while_the_stream_uses_it():
    s = ec.cuda.Stream()
    ec.cuda.synchronize()
    x = ec.ones(4 << 20, device="cuda")  # allocated on the default stream
    ptr = x.data_ptr()
    s.wait_stream(ec.cuda.current_stream())
    with ec.cuda.stream(s):
        _busy(100.0)
        y = x * 2  # x in use on s, queued behind the busy work
    x.record_stream(s)
    del x
    # s is still busy: the block must not be handed out on the default stream
    z = ec.empty(4 << 20, device="cuda")
    assert z.data_ptr() != ptr, "a block recorded on a busy stream was reused"
    z.fill_(7.0)
    s.synchronize()
    assert y.sum(dtype=ec.float64).item() == 2 * (4 << 20), (
        "the side stream read overwritten memory"
    )
    del z


def test_without_record_stream_the_block_is_reused_on_its_stream():
    """The other half of record_stream's contract (PyTorch's caching): a block freed
    on its own stream is reused by the next allocation of that size right away."""
    ec.cuda.synchronize()
    x = ec.empty(3 << 20, device="cuda")
    ptr = x.data_ptr()
    del x
    y = ec.empty(3 << 20, device="cuda")
    assert y.data_ptr() == ptr


def test_work_split_over_streams_joins_correctly():
    streams = [ec.cuda.Stream() for _ in range(4)]
    base = ec.arange(N, device="cuda", dtype=ec.float32)
    cur = ec.cuda.current_stream()
    parts = []
    for i, s in enumerate(streams):
        s.wait_stream(cur)
        with ec.cuda.stream(s):
            chunk = base[i * (N // 4) : (i + 1) * (N // 4)]
            parts.append((chunk * 2).sum(dtype=ec.float64))
    for s, p in zip(streams, parts):
        cur.wait_stream(s)
        p.record_stream(cur)
    total = ec.stack(parts).sum().item()
    assert total == float(N) * (N - 1)


def test_synchronize_waits_for_every_stream():
    s = ec.cuda.Stream()
    a = ec.zeros(N, device="cuda")
    with ec.cuda.stream(s):
        _busy(50.0)
        a.fill_(2.0)
    ec.cuda.synchronize()
    assert s.query() is True
    assert a.cpu().sum(dtype=ec.float64).item() == 2 * N


def test_stream_synchronize_and_query():
    s = ec.cuda.Stream()
    with ec.cuda.stream(s):
        _busy(50.0)
    assert s.query() is False
    s.synchronize()
    assert s.query() is True
