"""Capture and replay of kernel calls (Note [Capture and replay], _tensor/graph.py)."""

import pytest

import ember_core as ec
from ember_core._base.lib import ffi, lib
from ember_core._tensor import graph as _graph


def _kernels():
    for name in dir(lib):
        fn = getattr(lib, name)
        if name.startswith("ec_") and callable(fn):
            ctype = ffi.typeof(fn)
            if ctype.result.cname == "int":
                yield name, ctype


def test_every_kernel_signature_has_a_trampoline():
    # the letters computed from cffi's types at capture time are the ones the
    # build generated trampolines for (csrc/graph_gen.py reads ember_core.h)
    missing = []
    for name, ctype in _kernels():
        if name.startswith(("ec_graph_", "ec_py_")):
            continue
        sig = _graph.signature(ctype)
        if sig is None or lib.ec_graph_signature(sig.encode()) < 0:
            missing.append((name, sig))
    assert missing == []


def test_replay_runs_the_recorded_kernels_on_the_same_memory():
    x = ec.arange(4.0)
    with _graph.capture() as rec:
        y = (x + 1) * 3
    g = _graph.Graph(rec)
    assert [c.name for c in g.calls] == ["ec_binary_scalar_contig", "ec_binary_scalar_contig"]
    x.fill_(10.0)
    g.replay()
    assert y.tolist() == [33.0] * 4
    g.release()


def test_numbers_for_double_parameters_replay_as_doubles():
    x = ec.ones(3)
    with _graph.capture() as rec:
        y = x * 2  # the int 2 reaches a double parameter
    g = _graph.Graph(rec)
    x.fill_(4.0)
    g.replay()
    assert y.tolist() == [8.0, 8.0, 8.0]


def test_host_arrays_are_owned_by_the_graph():
    x = ec.arange(6.0).reshape(2, 3)
    with _graph.capture() as rec:
        y = x.t() + 0  # a strided op: its layout array is a cffi array
    g = _graph.Graph(rec)
    assert any(c.arrays for c in g.calls)
    del rec
    x.mul_(2)
    g.replay()
    assert y.tolist() == [[0.0, 6.0], [2.0, 8.0], [4.0, 10.0]]


def test_pool_memory_is_reused_within_a_capture_and_kept_after():
    x = ec.ones(1000)
    with _graph.capture() as rec:
        a = x * 2
        del a
        b = x * 3  # same size: the freed block serves it
    assert len(rec.pool.blocks) == 1
    g = _graph.Graph(rec)
    ptr = b._ptr
    del b
    c = ec.empty(1000)  # the graph's block is not handed out again
    assert c._ptr != ptr
    g.release()


def test_random_slots_take_fresh_counters():
    gen = ec.Generator().manual_seed(7)
    with _graph.capture() as rec:
        r = ec.rand(5, generator=gen)
    g = _graph.Graph(rec)
    assert g.takes and g.takes[0].slots
    first = r.clone()
    g.replay()
    second = r.clone()
    gen2 = ec.Generator().manual_seed(7)
    assert ec.equal(first, ec.rand(5, generator=gen2))
    assert ec.equal(second, ec.rand(5, generator=gen2))


@pytest.mark.parametrize(
    "region, why",
    [
        (lambda x: x.sum().item(), "item"),
        (lambda x: x.tolist(), "tolist"),
        (lambda x: x.numpy(), "NumPy"),
        (lambda x: x.nonzero(), "output shape"),
        (lambda x: x[x > 1], "nonzero"),
    ],
)
def test_host_reads_fail_the_capture(region, why):
    x = ec.arange(4.0)
    with _graph.capture() as rec:
        region(x)
    assert why in rec.failure
    with pytest.raises(_graph.CaptureError, match=why):
        _graph.Graph(rec)


def test_reseeding_fails_the_capture():
    with _graph.capture() as rec:
        ec.manual_seed(0)
        ec.rand(3)
    assert "manual_seed" in rec.failure


def test_captures_do_not_nest():
    with _graph.capture(), pytest.raises(_graph.CaptureError, match="nest"), _graph.capture():
        pass
    # and the kernel namespaces are the real ones again
    assert ec.device("cpu")._k is lib


def test_canonical_form_ignores_where_the_buffers_are():
    x = ec.ones(8)

    def record():
        with _graph.capture() as rec:
            (x * 2).exp()
        return _graph.Graph(rec)

    a, b = record(), record()
    assert a.canonical() == b.canonical()
    assert a.calls[0].words != b.calls[0].words  # different memory, same computation
