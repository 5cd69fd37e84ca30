"""DLPack both ways with NumPy (and ember itself): zero-copy, versioned and
legacy capsules, read-only flags, bool and bfloat16, any strides, lifetimes and
clean BufferErrors."""

import gc

import numpy as np
import pytest
from conftest import ALL_DTYPES, to_np

import ember_allocator
import ember_core as ec


def allocated():
    gc.collect()
    return ember_allocator.memory_stats()["allocated_bytes.all.current"]


@pytest.mark.parametrize("dtype", [d for d in ALL_DTYPES if d is not ec.bfloat16], ids=str)
def test_numpy_consumes_ember_tensors_without_copying(dtype):
    t = ec.tensor([[1, 0, 1], [0, 1, 1]], dtype=dtype)
    a = np.from_dlpack(t)
    assert a.dtype == dtype.numpy and a.shape == (2, 3)
    assert a.__array_interface__["data"][0] == t.data_ptr()
    a[0, 1] = 1
    assert t[0, 1].item() == 1
    t[1, 0] = 1
    assert a[1, 0] == 1


@pytest.mark.parametrize("dtype", [d for d in ALL_DTYPES if d is not ec.bfloat16], ids=str)
def test_ember_consumes_numpy_arrays_without_copying(dtype):
    a = np.zeros((2, 3), dtype=dtype.numpy)
    t = ec.from_dlpack(a)
    assert t.dtype is dtype and t.shape == (2, 3)
    assert t.data_ptr() == a.__array_interface__["data"][0]
    t[0, 2] = 1
    assert a[0, 2] == 1


@pytest.mark.parametrize(
    "view",
    [
        lambda t: t.T,
        lambda t: t[:, ::2],
        lambda t: t[1:, 1:],
        lambda t: t[:1].expand(3, 4),
        lambda t: t[0],
        lambda t: t[0, 0],
        lambda t: t[:, :1],
    ],
)
def test_strides_survive_the_round_trip(view):
    t = ec.arange(12.0).view(3, 4)
    v = view(t)
    a = np.from_dlpack(v)
    assert a.strides == tuple(s * 4 for s in v.stride()) or v.numel() <= 1
    np.testing.assert_array_equal(a, v.numpy())
    back = ec.from_dlpack(a)
    assert back.data_ptr() == v.data_ptr() and back.stride() == v.stride() or v.numel() <= 1
    np.testing.assert_array_equal(back.numpy(), v.numpy())


def test_negative_strides_both_ways():
    a = np.arange(12.0).reshape(3, 4)[::-1, ::-2]
    t = ec.from_dlpack(a)
    assert t.stride() == (-4, -2)
    np.testing.assert_array_equal(t.numpy(), a)
    np.testing.assert_array_equal((t * 1).numpy(), a)
    b = np.from_dlpack(t)
    assert b.strides == a.strides
    np.testing.assert_array_equal(b, a)


def test_read_only_flag_is_honoured():
    a = np.arange(4.0)
    a.flags.writeable = False
    t = ec.from_dlpack(a)
    with pytest.raises(RuntimeError, match="read-only"):
        t.add_(1)
    b = np.from_dlpack(t)  # re-exported read-only through a versioned capsule
    assert not b.flags.writeable
    with pytest.raises(BufferError, match="read-only"):
        t.__dlpack__()  # a legacy capsule cannot carry the flag
    c = t.__dlpack__(copy=True)
    w = ec.from_dlpack(c)
    w.add_(1)  # a copy is writable and separate
    assert w.tolist() == [1.0, 2.0, 3.0, 4.0] and t.tolist() == [0.0, 1.0, 2.0, 3.0]


def test_versioned_and_legacy_capsules():
    t = ec.arange(3.0)
    legacy = t.__dlpack__()
    assert "dltensor" in repr(legacy) and "versioned" not in repr(legacy)
    versioned = t.__dlpack__(max_version=(1, 0))
    assert "dltensor_versioned" in repr(versioned)
    assert 'dltensor"' in repr(t.__dlpack__(max_version=(0, 8)))
    for cap in (legacy, versioned):
        u = ec.from_dlpack(cap)
        assert u.data_ptr() == t.data_ptr() and u.tolist() == [0.0, 1.0, 2.0]
        assert "used_dltensor" in repr(cap)
        with pytest.raises(BufferError, match="consumed only once"):
            ec.from_dlpack(cap)


def test_to_dlpack_gives_a_legacy_capsule_like_torch():
    t = ec.arange(3.0)
    cap = ec.to_dlpack(t)
    assert "dltensor" in repr(cap) and "versioned" not in repr(cap)
    assert ec.from_dlpack(cap).data_ptr() == t.data_ptr()


def test_bool_and_bfloat16():
    b = ec.tensor([True, False, True])
    assert np.from_dlpack(b).tolist() == [True, False, True]
    assert ec.from_dlpack(np.array([False, True])).tolist() == [False, True]
    h = ec.tensor([1.5, -2.25, 3.0], dtype=ec.bfloat16)
    r = ec.from_dlpack(h.__dlpack__(max_version=(1, 0)))
    assert r.dtype is ec.bfloat16 and r.data_ptr() == h.data_ptr()
    assert to_np(r).tolist() == [1.5, -2.25, 3.0]
    assert ec.from_dlpack(h).dtype is ec.bfloat16


def test_copy_argument():
    a = np.arange(3.0)
    t = ec.from_dlpack(a, copy=True)
    assert t.data_ptr() != a.__array_interface__["data"][0]
    t.add_(1)
    assert a.tolist() == [0.0, 1.0, 2.0]
    u = ec.from_dlpack(a, copy=False)
    assert u.data_ptr() == a.__array_interface__["data"][0]
    e = ec.arange(3.0)
    assert np.from_dlpack(e, copy=True).__array_interface__["data"][0] != e.data_ptr()


def test_dlpack_device_and_errors():
    t = ec.ones(2)
    kind, index = t.__dlpack_device__()
    assert int(kind) == 1 and index == 0
    with pytest.raises(BufferError, match="require gradient"):
        ec.ones(2, requires_grad=True).__dlpack__()
    with pytest.raises(BufferError, match="device"):
        t.__dlpack__(dl_device=(2, 0))
    assert "dltensor" in repr(t.__dlpack__(dl_device=(1, 0)))
    with pytest.raises(TypeError):
        ec.from_dlpack([1, 2])
    with pytest.raises(TypeError, match="stream"):
        t.__dlpack__(stream="default")

    class FakeGPU:
        def __dlpack_device__(self):
            return (2, 0)

        def __dlpack__(self, **kwargs):
            raise AssertionError("must not be asked for a capsule")

    with pytest.raises(BufferError, match="CUDA"):
        ec.from_dlpack(FakeGPU())


def test_producers_without_keyword_support_get_the_legacy_call():
    class Old:
        def __init__(self, t):
            self.t = t

        def __dlpack_device__(self):
            return (1, 0)

        def __dlpack__(self, stream=None):
            return self.t.__dlpack__()

    src = ec.arange(4.0)
    out = ec.from_dlpack(Old(src))
    assert out.data_ptr() == src.data_ptr()


def test_memory_lives_until_the_last_holder_goes():
    base = allocated()
    t = ec.arange(10_000.0)
    a = np.from_dlpack(t)
    held = allocated()
    assert held > base
    del t
    assert allocated() == held and a[9_999] == 9_999.0
    del a
    assert allocated() == base
    # an unconsumed capsule frees its tensor too
    t = ec.arange(10_000.0)
    cap = t.__dlpack__(max_version=(1, 0))
    del t
    assert allocated() == held
    del cap
    assert allocated() == base
    # importing: the producer's array lives as long as the ember tensor
    arr = np.arange(5.0)
    imported = ec.from_dlpack(arr)
    del arr
    gc.collect()
    assert imported.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]


def test_zero_size_and_zero_dim():
    e = ec.zeros(0, 3)
    assert np.from_dlpack(e).shape == (0, 3)
    assert ec.from_dlpack(np.zeros((3, 0))).shape == (3, 0)
    s = ec.tensor(7.0)
    assert np.from_dlpack(s).shape == () and float(np.from_dlpack(s)) == 7.0
    assert ec.from_dlpack(np.array(2.0)).item() == 2.0
