"""uint16/uint32/uint64 as PyTorch 2.3+ has them: storage, creation, casts,
comparisons, bitwise ops, sums, sort/unique; PyTorch's errors elsewhere."""

import numpy as np
import pytest

import ember_core as ec

UINTS = [(ec.uint16, np.uint16), (ec.uint32, np.uint32), (ec.uint64, np.uint64)]


def _vals(npdt):
    top = np.iinfo(npdt).max
    return np.array([0, 1, 7, top // 2 + 3, top - 1, top, 5], dtype=npdt)


@pytest.mark.parametrize("dt, npdt", UINTS)
def test_storage_creation_and_interop(dt, npdt):
    a = _vals(npdt)
    t = ec.from_numpy(a)
    assert t.dtype is dt and t.tolist() == a.tolist()
    a[0] = 9
    assert t[0].item() == 9  # shared memory
    assert ec.tensor(a).dtype is dt
    assert ec.tensor([1, 2], dtype=dt).numpy().dtype == npdt
    assert ec.zeros(3, dtype=dt).tolist() == [0, 0, 0]
    assert ec.full((2,), int(a[5]), dtype=dt).tolist() == [int(a[5])] * 2
    assert np.from_dlpack(t).dtype == npdt
    assert ec.from_dlpack(a).dtype is dt
    assert repr(ec.tensor([1, 2], dtype=dt)) == f"tensor([1, 2], dtype=ember.{dt.name})"
    with pytest.raises(RuntimeError, match="overflow"):
        ec.full((1,), -1, dtype=dt)


@pytest.mark.parametrize("dt, npdt", UINTS)
def test_casts(dt, npdt):
    a = _vals(npdt)
    t = ec.from_numpy(a)
    np.testing.assert_array_equal(t.to(ec.float64).numpy(), a.astype(np.float64))
    np.testing.assert_array_equal(t.to(ec.int64).numpy(), a.astype(np.int64))
    back = ec.tensor([0.0, 3.0, 1000.0]).to(dt)
    assert back.dtype is dt and back.tolist() == [0, 3, 1000]
    assert t.to(ec.bool).tolist() == (a != 0).tolist()


@pytest.mark.parametrize("dt, npdt", UINTS)
def test_supported_ops(dt, npdt):
    a, b = _vals(npdt), np.roll(_vals(npdt), 2)
    x, y = ec.from_numpy(a), ec.from_numpy(b)
    np.testing.assert_array_equal((x * y).numpy(), a * b)  # wraps, as in C and NumPy
    np.testing.assert_array_equal((x * 3).numpy(), a * npdt(3))
    np.testing.assert_array_equal((x == y).numpy(), a == b)
    np.testing.assert_array_equal((x != 7).numpy(), a != 7)
    np.testing.assert_array_equal((x & y).numpy(), a & b)
    np.testing.assert_array_equal((x | y).numpy(), a | b)
    np.testing.assert_array_equal((x ^ y).numpy(), a ^ b)
    np.testing.assert_allclose((x / 2).numpy(), a.astype(np.float32) / 2, rtol=1e-6)
    assert (x / 2).dtype is ec.float32 and (x * 2.5).dtype is ec.float32
    np.testing.assert_allclose(x.sqrt().numpy(), np.sqrt(a.astype(np.float32)), rtol=1e-6)
    assert ec.where(x == 7, x, y).dtype is dt
    assert x.sum().dtype is ec.int64
    small = ec.tensor([1, 2, 3], dtype=dt)
    assert small.sum().item() == 6 and small.prod().item() == 6
    assert small.cumsum(0).tolist() == [1, 3, 6]
    assert ec.cat([small, small]).tolist() == [1, 2, 3] * 2


@pytest.mark.parametrize("dt, npdt", UINTS)
def test_sort_and_unique(dt, npdt):
    a = _vals(npdt)
    t = ec.from_numpy(a)
    v, i = t.sort()
    np.testing.assert_array_equal(v.numpy(), np.sort(a))
    np.testing.assert_array_equal(i.numpy(), np.argsort(a, kind="stable"))
    v, i = t.sort(descending=True)
    np.testing.assert_array_equal(v.numpy(), np.sort(a)[::-1])
    np.testing.assert_array_equal(t.argsort().numpy(), np.argsort(a, kind="stable"))
    u = ec.unique(ec.from_numpy(np.concatenate([a, a])))
    assert u.dtype is dt
    np.testing.assert_array_equal(u.numpy(), np.unique(a))


@pytest.mark.parametrize("dt, npdt", UINTS)
@pytest.mark.parametrize(
    "call, exc",
    [
        (lambda x: x + x, NotImplementedError),
        (lambda x: x - 1, NotImplementedError),
        (lambda x: x < x, NotImplementedError),
        (lambda x: -x, NotImplementedError),
        (lambda x: x.abs(), NotImplementedError),
        (lambda x: ~x, NotImplementedError),
        (lambda x: x << 1, NotImplementedError),
        (lambda x: x.max(), NotImplementedError),
        (lambda x: ec.maximum(x, x), NotImplementedError),
        (lambda x: x @ x, NotImplementedError),
        (lambda x: x + ec.ones(3, dtype=ec.int32), RuntimeError),  # no promotion with ints
        (lambda x: x.mean(), RuntimeError),
    ],
)
def test_errors_where_pytorch_has_none(dt, npdt, call, exc):
    with pytest.raises(exc):
        call(ec.tensor([1, 2, 3], dtype=dt))


def test_promotion():
    assert ec.promote_types(ec.uint16, ec.float32) is ec.float32
    assert ec.promote_types(ec.uint64, ec.uint64) is ec.uint64
    with pytest.raises(RuntimeError, match="Promotion for uint16, uint32, uint64"):
        ec.promote_types(ec.uint32, ec.int64)
    with pytest.raises(RuntimeError, match="Promotion for uint16, uint32, uint64"):
        ec.promote_types(ec.uint8, ec.uint16)


@pytest.mark.parametrize("dt, npdt", UINTS)
def test_python_ints_up_to_the_dtypes_max(dt, npdt):
    # values above int64 (uint64) or int32 (uint32) from Python lists, as from NumPy
    top = int(np.iinfo(npdt).max)
    values = [0, 1, top // 2, top // 2 + 1, top - 1, top]
    t = ec.tensor(values, dtype=dt)
    assert t.dtype is dt and t.tolist() == values
    assert t.numpy().tolist() == np.array(values, dtype=npdt).tolist()
    assert ec.tensor([values, values[::-1]], dtype=dt).tolist() == [values, values[::-1]]
    assert ec.tensor(top, dtype=dt).item() == top
    assert ec.tensor([True, top], dtype=dt).tolist() == [1, top]


def test_python_ints_beyond_uint64_or_mixed_with_negatives_overflow():
    for bad in ([2**64], [-1, 2**64 - 1], [2**64 - 1, 1.5], [[2**63], [-1]]):
        with pytest.raises(ValueError, match="Overflow.*uint64"):
            ec.tensor(bad, dtype=ec.uint64)
    with pytest.raises(ValueError, match="Overflow"):
        ec.tensor(2**64, dtype=ec.uint64)
    for dt in (None, ec.int64, ec.uint32, ec.uint8):
        with pytest.raises(ValueError, match="Overflow when unpacking long long"):
            ec.tensor([2**63], dtype=dt)
    with pytest.raises(ValueError, match="Overflow"):
        ec.tensor([-1, 2**64 - 1])  # NumPy would make these float64; PyTorch refuses them
    # floating dtypes take any int, rounded, as in PyTorch
    assert ec.tensor([2**63, -1], dtype=ec.float64).tolist() == [2.0**63, -1.0]
    assert ec.tensor([2**64 - 1, 0.5], dtype=ec.float64).tolist() == [2.0**64, 0.5]
    assert ec.tensor([2**70], dtype=ec.complex128).tolist() == [complex(2**70)]


def test_negative_python_ints_into_unsigned_dtypes():
    # PyTorch wraps them into uint8/16/32 but refuses them for uint64 (OverflowError;
    # ember raises ValueError for every overflow); NumPy data wraps
    for dt, npdt in ((ec.uint8, np.uint8), (ec.uint16, np.uint16), (ec.uint32, np.uint32)):
        assert ec.tensor([-1], dtype=dt).tolist() == [int(np.iinfo(npdt).max)]
    for bad in (-1, [-1], [[1], [-2]]):
        with pytest.raises(ValueError, match="negative int to unsigned"):
            ec.tensor(bad, dtype=ec.uint64)
    assert ec.tensor(np.array([-1]), dtype=ec.uint64).tolist() == [2**64 - 1]


@pytest.mark.parity
@pytest.mark.parametrize("dt, npdt", UINTS)
def test_python_ints_as_pytorch_reads_them(dt, npdt):
    torch = pytest.importorskip("torch")
    top = int(np.iinfo(npdt).max)
    values = [[0, top // 2 + 1], [top - 1, top]]
    expected = torch.tensor(values, dtype=getattr(torch, dt.name))
    assert ec.tensor(values, dtype=dt).tolist() == expected.tolist()
    assert ec.tensor(top, dtype=dt).item() == torch.tensor(top, dtype=expected.dtype).item()
