"""Zero-copy exchange of CUDA tensors with CuPy (and PyTorch, when installed):
``__cuda_array_interface__`` v3 and DLPack with kDLCUDA, both ways, the same
device pointer, writes visible on the other side, non-contiguous strides, every
dtype both support, and the ``stream=`` protocol of ``__dlpack__``."""

import numpy as np
import pytest
from cuda_helpers import has_module

import ember_core as ec

pytestmark = pytest.mark.cuda

kDLCUDA = 2
TYPESTR = {
    ec.bool: "|b1",
    ec.uint8: "|u1",
    ec.int8: "|i1",
    ec.int16: "<i2",
    ec.int32: "<i4",
    ec.int64: "<i8",
    ec.float16: "<f2",
    ec.float32: "<f4",
    ec.float64: "<f8",
}


def _cupy():
    if not has_module("cupy"):
        pytest.skip("cupy is not installed")
    import cupy

    return cupy


@pytest.mark.parametrize("dtype", list(TYPESTR), ids=str)
def test_cuda_array_interface(dtype):
    t = ec.arange(24, device="cuda").to(dtype).view(4, 6)
    cai = t.__cuda_array_interface__
    assert cai["version"] == 3
    assert cai["shape"] == (4, 6)
    assert cai["typestr"] == TYPESTR[dtype]
    assert cai["data"] == (t.data_ptr(), False)
    assert cai["strides"] is None  # contiguous, as PyTorch reports it
    assert "stream" in cai
    tt = t.t()
    cai_t = tt.__cuda_array_interface__
    assert cai_t["shape"] == (6, 4)
    assert cai_t["strides"] == (t.element_size(), 6 * t.element_size())
    with pytest.raises((AttributeError, RuntimeError, TypeError)):
        _ = ec.ones(2).__cuda_array_interface__  # a CPU tensor has none


def test_dlpack_device():
    t = ec.ones(3, device="cuda")
    assert tuple(t.__dlpack_device__()) == (kDLCUDA, 0)
    assert tuple(ec.ones(3).__dlpack_device__()) == (1, 0)


@pytest.mark.parametrize("dtype", list(TYPESTR), ids=str)
def test_cupy_reads_ember_zero_copy(dtype):
    cupy = _cupy()
    t = ec.arange(60, device="cuda").to(dtype).view(3, 4, 5)
    for label, view in [
        ("contiguous", t),
        ("transposed", t.permute(2, 0, 1)),
        ("stepped", t[:, ::2, 1:]),
    ]:
        c = cupy.asarray(view)  # through __cuda_array_interface__
        assert c.data.ptr == view.data_ptr(), label
        np.testing.assert_array_equal(cupy.asnumpy(c), view.cpu().numpy(), err_msg=label)
        d = cupy.from_dlpack(view)  # through DLPack
        assert d.data.ptr == view.data_ptr(), label
        np.testing.assert_array_equal(cupy.asnumpy(d), view.cpu().numpy(), err_msg=label)


def test_writes_are_shared_both_ways_with_cupy():
    cupy = _cupy()
    t = ec.zeros(1000, device="cuda")
    c = cupy.from_dlpack(t)
    c[10] = 5.0
    cupy.cuda.get_current_stream().synchronize()
    assert t[10].item() == 5.0
    t[20] = 7.0
    ec.cuda.synchronize()
    assert float(c[20]) == 7.0


@pytest.mark.parametrize("dtype", [ec.float32, ec.float16, ec.int64, ec.uint8, ec.bool], ids=str)
def test_ember_reads_cupy_zero_copy(dtype):
    cupy = _cupy()
    npd = np.dtype(TYPESTR[dtype][1:]) if dtype is not ec.bool else np.dtype(bool)
    c = cupy.arange(60).astype(npd).reshape(3, 4, 5)
    for label, view in [
        ("contiguous", c),
        ("transposed", c.transpose(2, 0, 1)),
        ("stepped", c[:, ::2, 1:]),
    ]:
        t = ec.from_dlpack(view)
        assert t.is_cuda and t.device == ec.device("cuda", 0), label
        assert t.data_ptr() == view.data.ptr, label
        assert t.dtype == dtype
        assert tuple(t.shape) == view.shape
        assert tuple(s * t.element_size() for s in t.stride()) == view.strides, label
        np.testing.assert_array_equal(t.cpu().numpy(), cupy.asnumpy(view), err_msg=label)
    t = ec.from_dlpack(c)
    t.view(-1)[0] = 9 if dtype is not ec.bool else True
    ec.cuda.synchronize()
    assert bool(c.reshape(-1)[0] == (9 if dtype is not ec.bool else True))


def test_ember_computes_on_cupy_memory():
    cupy = _cupy()
    c = cupy.random.rand(1 << 20).astype(cupy.float32)
    t = ec.from_dlpack(c)
    got = (t * 2 + 1).sum().item()
    want = float((c * 2 + 1).sum())
    assert got == pytest.approx(want, rel=1e-5)


def test_dlpack_stream_protocol_with_a_cupy_stream():
    """cupy.from_dlpack passes its current stream: ember's pending work on its own
    stream must be ordered before CuPy reads (DLPack's stream= contract)."""
    cupy = _cupy()
    s = ec.cuda.Stream()
    with ec.cuda.stream(s):
        a = ec.ones(1 << 24, device="cuda")
        for _ in range(20):
            a = a * 1.0 + 1.0  # queued work on s: a ends at 21.0
    with cupy.cuda.Stream(non_blocking=True) as cs:
        with ec.cuda.stream(s):
            c = cupy.from_dlpack(a)
        total = float(c.sum(dtype=cupy.float64))
        cs.synchronize()
    assert total == 21.0 * (1 << 24)


def test_capsule_round_trip_and_consumed_once():
    t = ec.arange(10, device="cuda", dtype=ec.float32)
    cap = t.__dlpack__()
    u = ec.from_dlpack(cap)
    assert u.data_ptr() == t.data_ptr() and u.is_cuda
    with pytest.raises((RuntimeError, ValueError, BufferError, TypeError)):
        ec.from_dlpack(cap)
    v = ec.from_dlpack(t)  # a tensor itself
    assert v.data_ptr() == t.data_ptr()


def test_torch_shares_cuda_memory_through_dlpack():
    if not has_module("torch"):
        pytest.skip("torch is not installed")
    import torch

    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA here")
    t = ec.arange(12, device="cuda", dtype=ec.float32).view(3, 4)
    tt = torch.from_dlpack(t)
    assert tt.is_cuda and tt.data_ptr() == t.data_ptr()
    assert tt.tolist() == t.tolist()
    tt[0, 0] = 42.0
    torch.cuda.synchronize()
    assert t[0, 0].item() == 42.0
    back = ec.from_dlpack(torch.arange(6, device="cuda", dtype=torch.float32).view(2, 3).t())
    assert back.is_cuda and back.tolist() == [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]]
