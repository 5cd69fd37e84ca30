"""NumPy interop (zero-copy both ways), Python values (item, tolist, __bool__,
__len__, __iter__) and pickling."""

import gc
import pickle
import weakref

import numpy as np
import pytest
from conftest import ALL_DTYPES, to_np

import ember_core as ec
from ember_core._interop import numpy as _interop


@pytest.mark.parametrize("dtype", [d for d in ALL_DTYPES if d is not ec.bfloat16], ids=str)
def test_from_numpy_shares_memory_both_ways(dtype):
    a = np.zeros((3, 4), dtype=dtype.numpy)
    t = ec.from_numpy(a)
    assert t.dtype is dtype and t.shape == (3, 4)
    assert t.data_ptr() == a.__array_interface__["data"][0]
    a[1, 2] = 1
    assert t[1, 2].item() == 1
    t[0, 0] = 1
    assert a[0, 0] == 1
    back = t.numpy()
    assert back.__array_interface__["data"][0] == a.__array_interface__["data"][0]
    back[2, 3] = 1
    assert t[2, 3].item() == 1


@pytest.mark.parametrize(
    "view",
    [
        lambda a: a[::2],
        lambda a: a.T,
        lambda a: a[::-1, ::-2],
        lambda a: np.broadcast_to(a[:1], (3, 4)),
        lambda a: a[:, 1:3],
    ],
)
def test_wrap_numpy_keeps_any_strides(view):
    a = np.arange(12.0).reshape(3, 4)
    v = view(a)
    t = _interop.wrap_numpy(v)
    np.testing.assert_array_equal(t.numpy(), v)
    np.testing.assert_array_equal((t + 0).numpy(), v)  # computing on it reads the right elements
    assert t.numpy().__array_interface__["data"][0] == v.__array_interface__["data"][0]


def test_from_numpy_keeps_the_array_alive():
    a = np.arange(5.0)
    ref = weakref.ref(a) if hasattr(a, "__weakref__") else None
    t = ec.from_numpy(a)
    del a
    gc.collect()
    assert t.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
    assert ref is None or ref() is not None


def test_numpy_view_keeps_the_tensor_memory_alive():
    import ember_allocator

    t = ec.arange(1000.0)
    a = t.numpy()
    allocated = ember_allocator.memory_stats()["allocated_bytes.all.current"]
    del t
    gc.collect()
    assert ember_allocator.memory_stats()["allocated_bytes.all.current"] == allocated
    assert a[999] == 999.0
    del a
    gc.collect()
    assert ember_allocator.memory_stats()["allocated_bytes.all.current"] < allocated


@pytest.mark.parametrize("view", [lambda a: a[::-1], lambda a: a[:, ::-2], lambda a: a[::-1, ::-1]])
def test_from_numpy_refuses_negative_strides_tensor_copies(view):
    # PyTorch's from_numpy refuses negative strides; tensor()/as_tensor() copy
    v = view(np.arange(12.0).reshape(3, 4))
    with pytest.raises(ValueError, match="negative"):
        ec.from_numpy(v)
    for make in (ec.tensor, ec.as_tensor):
        t = make(v)
        np.testing.assert_array_equal(t.numpy(), v)
        assert t.is_contiguous()


def test_from_numpy_of_positive_strides_shares_memory():
    a = np.arange(12.0).reshape(3, 4)
    for v in (a[::2], a.T, a[:, 1:3]):
        t = ec.from_numpy(v)
        assert t.stride() == tuple(s // 8 for s in v.strides)
        assert t.numpy().__array_interface__["data"][0] == v.__array_interface__["data"][0]


def test_read_only_arrays_give_read_only_tensors():
    a = np.arange(4.0)
    a.flags.writeable = False
    with pytest.warns(UserWarning, match="not writable"):
        t = ec.from_numpy(a)
    for write in (
        lambda: t.add_(1),
        lambda: t.zero_(),
        lambda: t.__setitem__(0, 1),
        lambda: t.copy_(ec.ones(4)),
        lambda: t.uniform_(),
    ):
        with pytest.raises(RuntimeError, match="read-only"):
            write()
    np.testing.assert_array_equal(a, np.arange(4.0))
    assert not t.numpy().flags.writeable
    c = t.clone()
    c.add_(1)  # a copy is writable
    assert c.tolist() == [1.0, 2.0, 3.0, 4.0]


def test_from_numpy_errors():
    with pytest.raises(TypeError, match="can't convert"):
        ec.from_numpy(np.array([1 + 2j], dtype=np.clongdouble))
    with pytest.raises(TypeError, match="can't convert"):
        ec.from_numpy(np.array([1], dtype=np.float128))
    with pytest.raises(TypeError, match="expected np.ndarray"):
        ec.from_numpy([1, 2])
    with pytest.raises(ValueError, match="byte order different from the native byte order"):
        ec.from_numpy(np.arange(3, dtype=">f4"))  # ValueError, as PyTorch


def test_numpy_and_array_protocol():
    t = ec.arange(6).view(2, 3).T
    a = np.asarray(t)
    np.testing.assert_array_equal(a, np.arange(6).reshape(2, 3).T)
    assert np.array(t, dtype=np.float32).dtype == np.float32
    c = np.array(t, copy=True)
    c[0, 0] = 100
    assert t[0, 0].item() == 0
    np.testing.assert_array_equal(np.add(t, 1), np.arange(6).reshape(2, 3).T + 1)
    with pytest.raises(RuntimeError, match="requires grad"):
        ec.ones(2, requires_grad=True).numpy()
    assert ec.ones(2, requires_grad=True).numpy(force=True).tolist() == [1.0, 1.0]
    with pytest.raises(TypeError, match="BFloat16|bfloat16"):
        ec.ones(2, dtype=ec.bfloat16).numpy()


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_item_and_tolist(dtype):
    t = ec.tensor([[1, 0], [3, 1]], dtype=dtype)
    v = t[1, 0].item()
    if dtype is ec.bool:
        assert v is True
    elif dtype.is_floating_point:
        assert type(v) is float and v == 3.0
    else:
        assert type(v) is int and v == 3
    lst = t.tolist()
    assert lst == to_np(t).tolist()
    assert all(type(x) is type(v) for row in lst for x in row)
    assert ec.tensor(2.5, dtype=dtype).tolist() == to_np(ec.tensor(2.5, dtype=dtype)).item()
    with pytest.raises(RuntimeError, match="cannot be converted to Scalar"):
        t.item()


def test_python_protocols():
    t = ec.tensor([[1.0, 2.0], [3.0, 4.0]])
    assert len(t) == 2
    rows = list(t)
    assert len(rows) == 2 and rows[1].tolist() == [3.0, 4.0]
    assert bool(ec.tensor([1])) and not bool(ec.tensor(0.0))
    with pytest.raises(RuntimeError, match="ambiguous"):
        bool(t)
    with pytest.raises(TypeError, match="0-d"):
        len(ec.tensor(1.0))
    with pytest.raises(TypeError, match="0-d"):
        iter(ec.tensor(1.0))
    assert int(ec.tensor(3.7)) == 3 and float(ec.tensor(2)) == 2.0
    assert [10, 20, 30][ec.tensor(1)] == 20
    with pytest.raises(TypeError, match="integer"):
        [1, 2][ec.tensor(1.0)]
    assert 2.0 in t and 5.0 not in t
    assert f"{ec.tensor(1.5):.2f}" == "1.50"
    assert ec.is_tensor(t) and not ec.is_tensor([1])


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_pickle_copies_the_data(dtype):
    t = ec.tensor([[1, 2, 3], [4, 5, 6]], dtype=dtype).T  # not contiguous
    u = pickle.loads(pickle.dumps(t))
    assert u.dtype is dtype and u.shape == t.shape
    np.testing.assert_array_equal(to_np(u), to_np(t))
    assert u.untyped_storage() is not t.untyped_storage()
    g = pickle.loads(pickle.dumps(ec.ones(2, requires_grad=True)))
    assert g.requires_grad
    assert pickle.loads(pickle.dumps(ec.float16)) is ec.float16
    assert pickle.loads(pickle.dumps(ec.device("cpu"))) == ec.device("cpu")
