"""Messages between processes: pickled with out-of-band buffers in shared memory."""

import os

import numpy as np
import pytest

from ember_data._utils import shm, transport


def roundtrip(obj):
    msg, fds, owned = transport.encode(obj)
    try:
        dup = [os.dup(fd) for fd in fds]
    finally:
        for seg in owned:
            seg.close()
        shm.release_registered()
    return transport.decode(msg, dup), msg, fds


def test_small_objects_travel_inline():
    obj = {"a": [1, 2.5, "x"], "b": np.arange(5)}
    out, msg, fds = roundtrip(obj)
    assert fds == [] and msg[:1] == b"F"
    assert out["a"] == obj["a"]
    np.testing.assert_array_equal(out["b"], obj["b"])
    assert out["b"].flags.writeable


def test_large_buffers_are_copied_into_one_segment():
    a, b = np.random.rand(100, 100), np.arange(50000, dtype=np.int32)
    (x, y), msg, fds = roundtrip((a, b))
    assert len(fds) == 1
    np.testing.assert_array_equal(x, a)
    np.testing.assert_array_equal(y, b)
    assert x.flags.writeable and not np.shares_memory(x, a)


def test_arrays_built_in_a_segment_are_sent_by_descriptor():
    a = shm.empty((256, 256), np.float32)
    a[:] = 7
    assert a is not None and shm._registry
    out, msg, fds = roundtrip({"batch": a})
    assert len(fds) == 1 and not shm._registry
    np.testing.assert_array_equal(out["batch"], a)
    out["batch"][0, 0] = 1  # the same memory: a shared mapping
    assert a[0, 0] == 1


def test_small_arrays_do_not_get_a_segment():
    assert shm.empty((4,), np.float32) is None
    assert shm.empty((100000,), object) is None


def test_huge_messages_go_into_a_segment():
    obj = [f"{i:0100d}" for i in range(2000)]  # big in band
    out, msg, fds = roundtrip(obj)
    assert msg[:1] == b"S" and len(fds) == 1 and out == obj


def test_channel_pair_sends_descriptors():
    a, b = transport.Channel.pair()
    try:
        big = np.arange(1 << 16, dtype=np.float64)
        a.send(("hello", big))
        word, arr = b.recv()
        assert word == "hello"
        np.testing.assert_array_equal(arr, big)
        a.close()
        with pytest.raises(EOFError):
            b.recv()
    finally:
        b.close()


def test_nonblocking_post_queues_until_flushed():
    a, b = transport.Channel.pair()
    try:
        a.sock.setblocking(False)
        payload = b"z" * 30000
        for i in range(40):  # more than the socket buffer holds
            a.post((i, payload))
        assert a.pending
        got = []
        while len(got) < 40:
            got.append(b.recv()[0])
            a.flush()
        assert got == list(range(40)) and not a.pending
    finally:
        a.close()
        b.close()


def test_ember_tensors_travel_as_arrays():
    ec = pytest.importorskip("ember_core")
    t = ec.arange(100000, dtype=ec.float32).reshape(100, 1000)
    out, msg, fds = roundtrip({"t": t, "v": t[:, 3]})
    assert isinstance(out["t"], ec.Tensor) and out["t"].dtype == ec.float32
    np.testing.assert_array_equal(out["t"].numpy(), t.numpy())
    np.testing.assert_array_equal(out["v"].numpy(), t[:, 3].numpy())
