"""_tensor.empty, C (Note [C empty] in csrc/cpu/runtime/pyfast.c), against its Python
reference _tensor._empty_py: the same tensor for every case, the same errors,
and every case it does not handle itself handed to the reference."""

import numpy as np
import pytest

import ember_allocator
import ember_core as ec
from ember_core._tensor import storage as _storage
from ember_core._tensor import tensor as _tensor

SLOTS = ("_shape", "_stride", "_offset", "_dtype", "_numel", "_contig")


def same_tensor(a, b):
    assert type(a) is type(b)
    for s in SLOTS:
        assert getattr(a, s) == getattr(b, s), s
    assert type(a._shape) is type(b._shape)
    assert type(a._storage) is type(b._storage)
    assert a._storage._nbytes == b._storage._nbytes
    assert a._storage._device is b._storage._device
    assert a._storage._version == b._storage._version == 0
    assert a._storage._owner is None and b._storage._owner is None
    assert a._ptr == a._storage._ptr and b._ptr == b._storage._ptr


@pytest.mark.parametrize("shape", [(), (0,), (3,), (4, 4), (2, 0, 5), (1, 2, 3, 4, 5)])
@pytest.mark.parametrize("dtype", [ec.float32, ec.float64, ec.int64, ec.bool, ec.float16])
def test_c_empty_makes_what_the_reference_makes(shape, dtype):
    same_tensor(_tensor.empty(shape, dtype), _tensor._empty_py(shape, dtype))
    same_tensor(_tensor.empty(shape, dtype, ec.device("cpu")), _tensor._empty_py(shape, dtype))


def test_the_memory_is_usable_and_returns():
    base = ember_allocator.memory_stats()["allocated_bytes.all.current"]
    t = _tensor.empty((100, 10), ec.float32)
    t.fill_(2.0)
    assert np.array_equal(t.numpy(), np.full((100, 10), 2.0, np.float32))
    assert ember_allocator.memory_stats()["allocated_bytes.all.current"] >= base + 4000
    del t
    assert ember_allocator.memory_stats()["allocated_bytes.all.current"] == base


def test_other_shapes_go_to_the_reference():
    # a Size (a tuple subclass) and NumPy integers are the reference's to handle
    same_tensor(
        _tensor.empty(ec.Size((2, 3)), ec.float32), _tensor._empty_py(ec.Size((2, 3)), ec.float32)
    )
    same_tensor(
        _tensor.empty((np.int64(2), 3), ec.float32), _tensor._empty_py((np.int64(2), 3), ec.float32)
    )


def test_sizes_past_the_address_space_raise_as_the_reference_does():
    huge = (1 << 40, 1 << 30)
    with pytest.raises(ember_allocator.OutOfMemoryError) as c_error:
        _tensor.empty(huge, ec.float32)
    with pytest.raises(ember_allocator.OutOfMemoryError) as py_error:
        _tensor._empty_py(huge, ec.float32)
    assert str(c_error.value) == str(py_error.value)


def test_an_installed_allocator_is_used():
    calls = []

    class Counting:
        def __init__(self):
            self.inner = ember_allocator.CachingAllocator()

        def allocate(self, nbytes, device, stream):
            calls.append(nbytes)
            return self.inner.allocate(nbytes)

        def free(self, block):
            self.inner.free(block)

    _storage.set_allocator(Counting())
    try:
        t = _tensor.empty((4, 4), ec.float32)
        assert calls == [64]
        assert type(t._storage) is not _storage._HostStorage
        del t
    finally:
        _storage.set_allocator(None)
    assert type(_tensor.empty((4, 4), ec.float32)._storage) is _storage._HostStorage
