"""CUDA memory shared with other libraries without copying, the protocols in
detail (beyond test_cuda_interop.py): DLPack with kDLCUDA both ways (Note
[DLPack], Note [DLPack streams] in ember_core/_interop/dlpack.py), the CUDA Array
Interface v3 (``Tensor.__cuda_array_interface__``, ``as_tensor`` and
``tensor`` of CuPy arrays), with the stream contracts of both.

Without a GPU: the capsules' device fields, the stream arguments ember passes
and the event ordering it queues (against a stand-in for the runtime), and the
clean errors.  With a GPU (tests marked ``cuda``): round trips with CuPy and
PyTorch -- same device pointer, writes visible both ways, strides, lifetimes,
and the ``stream=`` protocol ordering work queued on different streams.
"""

import ctypes
import gc
import os

import numpy as np
import pytest

import ember_core as ec
from ember_core._interop import dlpack as _dlpack

kDLCPU, kDLCUDA, kDLCUDAHost = 1, 2, 3


def _has(module):
    try:
        __import__(module)
    except Exception:  # absent, or present but unusable here (no driver)
        return False
    return True


@pytest.fixture(autouse=True)
def _cuda_or_skip(request):
    """Tests marked ``cuda`` skip without a usable GPU (unless EMBER_EXPECT_CUDA=1
    says one is expected: then they fail)."""
    if request.node.get_closest_marker("cuda") is None:
        return
    if not os.environ.get("EMBER_EXPECT_CUDA") and not ec.cuda.is_available():
        from ember_core._cuda import runtime as _cuda

        pytest.skip(f"CUDA is not available: {_cuda._why_unavailable()}")


def _cupy():
    if not _has("cupy"):
        pytest.skip("cupy is not installed")
    import cupy

    return cupy


def _torch_cuda():
    if not _has("torch"):
        pytest.skip("torch is not installed")
    import torch

    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA here")
    return torch


# ================================================================ no GPU


def _capsule(t, device_type, device_id, versioned=True):
    """A DLPack capsule over CPU tensor ``t``'s memory that claims another device."""
    n = len(t.shape)
    shape = (ctypes.c_int64 * max(n, 1))(*t.shape)
    stride = (ctypes.c_int64 * max(n, 1))(*t.stride())
    status = ctypes.c_int(0)
    cap = _dlpack._to_capsule(
        t._storage, t._ptr, n, shape, stride, t.dtype.code, int(versioned), 0,
        device_type, device_id, ctypes.byref(status),
    )  # fmt: skip
    assert status.value == 0
    return cap


def test_capsules_carry_their_device():
    t = ec.arange(6.0).view(2, 3)
    # kDLCUDAHost (pinned host memory) is host memory: it imports as a CPU tensor
    u = ec.from_dlpack(_capsule(t, kDLCUDAHost, 0))
    assert u.device == ec.device("cpu") and u.data_ptr() == t.data_ptr()
    assert u.tolist() == t.tolist()
    # the CPU export still says kDLCPU
    back = ec.from_dlpack(_capsule(t, kDLCPU, 0, versioned=False))
    assert back.data_ptr() == t.data_ptr()
    with pytest.raises(BufferError, match="kDLOpenCL"):
        ec.from_dlpack(_capsule(t, 4, 0))


def test_a_cuda_capsule_without_cuda_is_a_clear_buffer_error():
    if ec.cuda.is_available():
        pytest.skip("CUDA is available here (the GPU tests cover CUDA capsules)")
    t = ec.arange(4.0)
    with pytest.raises(BufferError, match="CUDA is not available"):
        ec.from_dlpack(_capsule(t, kDLCUDA, 0))
    with pytest.raises(BufferError, match="CUDA is not available"):
        t.__dlpack__(dl_device=(kDLCUDA, 0))
    with pytest.raises(BufferError, match="copy=False"):
        t.__dlpack__(dl_device=(kDLCUDA, 0), copy=False)


class _Runtime:
    """Stands in for the C runtime entry points _dlpack uses for streams."""

    def __init__(self, real, current):
        self._real, self.current, self.calls = real, current, []

    def __getattr__(self, name):
        return getattr(self._real, name)

    def ecu_current_stream(self, index):
        return self.current

    def ecu_get_device(self):
        return 0

    def ecu_set_device(self, index):
        self.calls.append(("set_device", index))
        return 0

    def ecu_event_create(self, timing, event):
        event[0] = 77
        self.calls.append(("create", timing))
        return 0

    def ecu_event_record(self, event, stream):
        self.calls.append(("record", event, stream))
        return 0

    def ecu_stream_wait_event(self, stream, event):
        self.calls.append(("wait", stream, event))
        return 0

    def ecu_event_destroy(self, event):
        self.calls.append(("destroy", event))
        return 0


def test_dlpack_stream_numbers_map_to_driver_handles():
    h = _dlpack._stream_handle
    assert h(None) == 0 and h(1) == 0 and h(0) == 0  # the legacy default stream
    assert h(2) == 2  # per-thread default stream: CU_STREAM_PER_THREAD
    assert h(0x7F001234) == 0x7F001234


def test_stream_wait_orders_the_waiter_after_the_producer(monkeypatch):
    rt = _Runtime(_dlpack.lib, 0)
    monkeypatch.setattr(_dlpack, "lib", rt)
    _dlpack.stream_wait(0, 5, 5)
    assert rt.calls == []  # one stream: ordered already
    _dlpack.stream_wait(0, 0xC0, 0xB0)
    assert rt.calls == [("create", 0), ("record", 77, 0xB0), ("wait", 0xC0, 77), ("destroy", 77)]
    rt.calls.clear()
    _dlpack.stream_wait(1, 0xC0, 0)  # another device: made current around the calls
    assert rt.calls[0] == ("set_device", 1) and rt.calls[-1] == ("set_device", 0)


class _FakeCudaProducer:
    """Claims CUDA memory and hands out a capsule of CPU memory, recording what
    ember asked for."""

    def __init__(self, t, legacy=False):
        self.t, self.legacy, self.kwargs = t, legacy, None

    def __dlpack_device__(self):
        return (kDLCUDA, 0)

    def __dlpack__(self, **kwargs):
        if self.legacy and set(kwargs) - {"stream"}:
            raise TypeError("__dlpack__() got an unexpected keyword argument")
        self.kwargs = kwargs
        return self.t.__dlpack__(max_version=kwargs.get("max_version"))


@pytest.mark.parametrize("current, passed", [(0, 1), (0xABC000, 0xABC000)])
def test_from_dlpack_passes_embers_current_stream_to_a_cuda_producer(monkeypatch, current, passed):
    monkeypatch.setattr(_dlpack, "lib", _Runtime(_dlpack.lib, current))
    monkeypatch.setattr(_dlpack, "_require_cuda", lambda *args: None)
    src = ec.arange(3.0)
    p = _FakeCudaProducer(src)
    out = ec.from_dlpack(p)
    assert p.kwargs["stream"] == passed  # 1, not 0, for the legacy default stream
    assert tuple(p.kwargs["max_version"]) == (1, 0)
    assert out.data_ptr() == src.data_ptr()
    old = _FakeCudaProducer(src, legacy=True)  # takes the stream keyword only
    ec.from_dlpack(old)
    assert old.kwargs == {"stream": passed}


def test_cuda_array_interface_is_absent_from_cpu_tensors():
    t = ec.ones(2)
    assert not hasattr(t, "__cuda_array_interface__")
    with pytest.raises(AttributeError, match="non-CUDA tensor"):
        _ = t.__cuda_array_interface__


class _CudaArray:
    def __init__(self, **desc):
        self._desc = dict(
            {"shape": (2, 3), "typestr": "<f4", "data": (0x1000, False), "version": 3}, **desc
        )

    @property
    def __cuda_array_interface__(self):
        return self._desc


class _InterfaceOnly:
    """Shows another library's array through its CUDA Array Interface alone (as
    Numba's device arrays do), hiding its DLPack methods."""

    def __init__(self, array):
        self.array = array

    @property
    def __cuda_array_interface__(self):
        return self.array.__cuda_array_interface__


class _CpuTorchLike:
    """A CPU tensor of a library whose __cuda_array_interface__ property declines."""

    @property
    def __cuda_array_interface__(self):
        raise AttributeError("Can't get __cuda_array_interface__ on non-CUDA tensor")

    def __array__(self, dtype=None, copy=None):
        return np.arange(3.0)


@pytest.mark.parametrize(
    "desc, error, match",
    [
        ({"mask": object()}, TypeError, "masked"),
        ({"typestr": ">f4"}, TypeError, "type"),
        ({"typestr": "<c8"}, TypeError, "no ember dtype"),
        ({"strides": (12, 3)}, ValueError, "multiples"),
        ({"shape": (2, -3)}, ValueError, "negative"),
        ({"stream": 0}, ValueError, "stream 0"),
    ],
)
def test_cuda_array_interface_import_checks(desc, error, match):
    with pytest.raises(error, match=match):
        ec.as_tensor(_CudaArray(**desc))
    with pytest.raises(error, match=match):
        ec.tensor(_CudaArray(**desc))


def test_cuda_arrays_without_cuda_raise_and_declining_properties_fall_through():
    if not ec.cuda.is_available():
        with pytest.raises(RuntimeError, match="CUDA is not available"):
            ec.as_tensor(_CudaArray())
    assert ec.as_tensor(_CpuTorchLike()).tolist() == [0.0, 1.0, 2.0]
    assert ec.tensor(_CpuTorchLike()).tolist() == [0.0, 1.0, 2.0]


# ================================================================ on a GPU

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


def _gpu(values, dtype=ec.float32):
    return ec.tensor(np.asarray(values), dtype=dtype, device="cuda")


@pytest.mark.cuda
@pytest.mark.parametrize("dtype", list(TYPESTR), ids=str)
def test_cuda_array_interface_fields(dtype):
    t = _gpu(np.arange(24).reshape(4, 6) % 2, dtype)
    cai = t.__cuda_array_interface__
    assert cai["version"] == 3
    assert cai["shape"] == (4, 6) and cai["typestr"] == TYPESTR[dtype]
    assert cai["data"] == (t.data_ptr(), False)
    assert cai["strides"] is None  # contiguous, as PyTorch reports it
    assert cai["stream"] == 1  # ember's default stream is the legacy default stream
    tt = t.t()
    assert tt.__cuda_array_interface__["strides"] == (t.element_size(), 6 * t.element_size())
    s = ec.cuda.Stream()
    with ec.cuda.stream(s):
        assert t.__cuda_array_interface__["stream"] == s.cuda_stream
    assert ec.empty(0, 3, device="cuda").__cuda_array_interface__["data"][0] == 0
    with pytest.raises(TypeError, match="bfloat16"):
        _ = _gpu([1.0], ec.bfloat16).__cuda_array_interface__
    with pytest.raises(RuntimeError, match="requires grad"):
        _ = _gpu([1.0]).requires_grad_().__cuda_array_interface__


@pytest.mark.cuda
def test_dlpack_device_of_cuda_tensors():
    t = ec.ones(3, device="cuda")
    assert tuple(int(x) for x in t.__dlpack_device__()) == (kDLCUDA, t.device.index)
    n = ec.cuda.device_count()
    if n > 1:
        u = ec.ones(3, device=f"cuda:{n - 1}")
        assert tuple(int(x) for x in u.__dlpack_device__()) == (kDLCUDA, n - 1)
        assert ec.from_dlpack(u).device == u.device


@pytest.mark.cuda
def test_ember_capsule_round_trip_copy_and_cpu_export():
    t = _gpu(np.arange(10.0))
    cap = t.__dlpack__(max_version=(1, 0))
    u = ec.from_dlpack(cap)
    assert u.is_cuda and u.data_ptr() == t.data_ptr() and u.device == t.device
    with pytest.raises((BufferError, ValueError, RuntimeError, TypeError)):
        ec.from_dlpack(cap)  # consumed once
    assert ec.from_dlpack(t).data_ptr() == t.data_ptr()
    c = ec.from_dlpack(t, copy=True)
    assert c.is_cuda and c.data_ptr() != t.data_ptr() and c.tolist() == t.tolist()
    h = ec.from_dlpack(t, device="cpu")  # moved by a copy
    assert h.device == ec.device("cpu") and h.tolist() == t.tolist()
    with pytest.raises(BufferError, match="copy=False"):
        ec.from_dlpack(t, device="cpu", copy=False)
    host = ec.from_dlpack(t.__dlpack__(max_version=(1, 0), dl_device=(kDLCPU, 0)))
    assert host.device == ec.device("cpu") and host.tolist() == t.tolist()
    with pytest.raises(BufferError, match="copy=False"):
        t.__dlpack__(max_version=(1, 0), dl_device=(kDLCPU, 0), copy=False)
    with pytest.raises(BufferError, match="require gradient"):
        _gpu([1.0]).requires_grad_().__dlpack__()


@pytest.mark.cuda
@pytest.mark.parametrize("dtype", list(TYPESTR), ids=str)
def test_cupy_reads_ember_memory_zero_copy(dtype):
    cupy = _cupy()
    t = _gpu(np.arange(60).reshape(3, 4, 5) % 7, dtype)
    for label, view in [("contiguous", t), ("permuted", t.permute(2, 0, 1)), ("stepped",
                        t[:, ::2, 1:])]:  # fmt: skip
        c = cupy.asarray(view)  # through __cuda_array_interface__
        assert c.data.ptr == view.data_ptr(), label
        np.testing.assert_array_equal(cupy.asnumpy(c), view.cpu().numpy(), err_msg=label)
        d = cupy.from_dlpack(view)  # through DLPack
        assert d.data.ptr == view.data_ptr(), label
        assert d.strides == tuple(s * t.element_size() for s in view.stride()), label
        np.testing.assert_array_equal(cupy.asnumpy(d), view.cpu().numpy(), err_msg=label)


@pytest.mark.cuda
@pytest.mark.parametrize("dtype", [ec.float32, ec.float16, ec.int64, ec.uint8, ec.bool], ids=str)
def test_ember_reads_cupy_memory_zero_copy(dtype):
    cupy = _cupy()
    npd = np.dtype(TYPESTR[dtype][1:]) if dtype is not ec.bool else np.dtype(bool)
    c = (cupy.arange(60) % 7).astype(npd).reshape(3, 4, 5)
    for label, view in [("contiguous", c), ("transposed", c.transpose(2, 0, 1)),
                        ("stepped", c[:, ::2, 1:]), ("reversed", c[::-1])]:  # fmt: skip
        for how, t in [
            ("dlpack", ec.from_dlpack(view)),
            ("as_tensor", ec.as_tensor(view)),
            ("interface", ec.as_tensor(_InterfaceOnly(view))),
        ]:
            what = f"{label} via {how}"
            assert t.is_cuda and t.device == ec.device("cuda", view.device.id), what
            assert t.data_ptr() == view.data.ptr, what
            assert t.dtype == dtype, what
            assert tuple(t.shape) == view.shape, what
            assert tuple(s * t.element_size() for s in t.stride()) == view.strides, what
            np.testing.assert_array_equal(t.cpu().numpy(), cupy.asnumpy(view), err_msg=what)
    copy = ec.tensor(c)  # tensor() copies, on the array's device
    assert copy.is_cuda and copy.data_ptr() != c.data.ptr
    np.testing.assert_array_equal(copy.cpu().numpy(), cupy.asnumpy(c))
    as64 = ec.as_tensor(c, dtype=ec.float64)  # a dtype change copies
    assert as64.dtype == ec.float64 and as64.is_cuda


@pytest.mark.cuda
def test_writes_are_visible_both_ways_with_cupy():
    cupy = _cupy()
    t = ec.zeros(1000, device="cuda")
    c = cupy.from_dlpack(t)
    c[10] = 5.0
    cupy.cuda.get_current_stream().synchronize()
    assert t[10].item() == 5.0
    t[20] = 7.0
    ec.cuda.synchronize()
    assert float(c[20]) == 7.0
    a = cupy.zeros(100, dtype=cupy.float32)
    u = ec.as_tensor(_InterfaceOnly(a))
    u.add_(3.0)
    ec.cuda.synchronize()
    assert float(a[99]) == 3.0
    a[0] = -1.0
    cupy.cuda.get_current_stream().synchronize()
    assert u[0].item() == -1.0


@pytest.mark.cuda
def test_producers_are_kept_alive_by_their_consumers():
    cupy = _cupy()
    a = cupy.arange(1 << 20, dtype=cupy.float32)
    t = ec.from_dlpack(a)
    # no other reference to either array
    u = ec.as_tensor(_InterfaceOnly(cupy.arange(1 << 20, dtype=cupy.float32)))
    v = ec.as_tensor(cupy.arange(1 << 20, dtype=cupy.float32))
    del a
    gc.collect()
    cupy.get_default_memory_pool().free_all_blocks()
    junk = cupy.full(1 << 22, 9.0, dtype=cupy.float32)  # would reuse freed memory
    assert t[(1 << 20) - 1].item() == float((1 << 20) - 1)
    assert u[12345].item() == 12345.0 and v[54321].item() == 54321.0
    del junk
    e = _gpu(np.arange(1 << 20, dtype=np.float32))
    c = cupy.from_dlpack(e)
    del e
    gc.collect()
    filler = ec.full((1 << 22,), 9.0, device="cuda")
    assert float(c[(1 << 20) - 1]) == float((1 << 20) - 1)
    del filler


def _slow_fill(t, value, rounds=30):
    """Queue many kernels on the current stream that end with t == value."""
    for _ in range(rounds):
        t.mul_(0.5).add_(1.0)
    t.fill_(value)


@pytest.mark.cuda
def test_dlpack_export_orders_the_consumers_stream_after_embers():
    """cupy.from_dlpack passes its current stream: the work ember queued on its
    own stream must come first (DLPack's stream= contract)."""
    cupy = _cupy()
    n = 1 << 24
    s = ec.cuda.Stream()
    with ec.cuda.stream(s):
        a = ec.zeros(n, device="cuda")
        _slow_fill(a, 21.0)
        with cupy.cuda.Stream(non_blocking=True) as cs:
            c = cupy.from_dlpack(a)
            total = float(c.sum(dtype=cupy.float64))
            cs.synchronize()
    assert total == 21.0 * n


@pytest.mark.cuda
def test_dlpack_import_orders_embers_stream_after_the_producers():
    """ember passes its current stream to cupy's __dlpack__: CuPy's pending work
    on its own stream comes before what ember queues."""
    cupy = _cupy()
    n = 1 << 24
    cs = cupy.cuda.Stream(non_blocking=True)
    with cs:  # CuPy's current stream is the one its data was produced on
        c = cupy.zeros(n, dtype=cupy.float32)
        for _ in range(30):
            c *= 0.5
            c += 1.0
        c.fill(5.0)
        s = ec.cuda.Stream()
        with ec.cuda.stream(s):
            t = ec.from_dlpack(c)
            host = (t * 2.0).cpu().numpy()  # queued on s, then copied on s
    assert (host == 10.0).all()
    cs.synchronize()


@pytest.mark.cuda
def test_cuda_array_interface_import_waits_for_the_producers_stream():
    cupy = _cupy()
    n = 1 << 24
    cs = cupy.cuda.Stream(non_blocking=True)
    with cs:
        c = cupy.zeros(n, dtype=cupy.float32)
        for _ in range(30):
            c *= 0.5
            c += 1.0
        c.fill(3.0)
        desc = c.__cuda_array_interface__
        if desc.get("version", 0) < 3 or desc.get("stream") is None:
            pytest.skip("this CuPy exports no stream in its CUDA Array Interface")
        s = ec.cuda.Stream()
        with ec.cuda.stream(s):
            t = ec.as_tensor(_InterfaceOnly(c))
            host = (t + 1.0).cpu().numpy()
    assert (host == 4.0).all()


@pytest.mark.cuda
def test_stream_minus_one_and_per_thread_default_stream_are_accepted():
    t = ec.ones(4, device="cuda")
    assert "dltensor" in repr(t.__dlpack__(stream=-1))  # no ordering asked
    assert "dltensor" in repr(t.__dlpack__(stream=2))  # the per-thread default stream
    assert "dltensor" in repr(t.__dlpack__(stream=1))
    s = ec.cuda.Stream()
    assert "dltensor" in repr(t.__dlpack__(stream=s.cuda_stream))
    ec.cuda.synchronize()


@pytest.mark.cuda
def test_pytorch_round_trips():
    torch = _torch_cuda()
    t = _gpu(np.arange(12.0, dtype=np.float32)).view(3, 4)
    tt = torch.from_dlpack(t)
    assert tt.is_cuda and tt.data_ptr() == t.data_ptr()
    assert tt.tolist() == t.tolist()
    tt[0, 0] = 42.0
    torch.cuda.synchronize()
    assert t[0, 0].item() == 42.0
    ta = torch.as_tensor(t, device="cuda")  # PyTorch reads __cuda_array_interface__ v3
    assert ta.data_ptr() == t.data_ptr()
    back = ec.from_dlpack(torch.arange(6, device="cuda", dtype=torch.float32).view(2, 3).t())
    assert back.is_cuda and back.tolist() == [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]]
    src = torch.arange(5, device="cuda", dtype=torch.float64)
    e = ec.as_tensor(_InterfaceOnly(src))  # PyTorch's interface: version 2, no stream
    assert e.data_ptr() == src.data_ptr() and e.dtype == ec.float64
    e.mul_(2.0)
    ec.cuda.synchronize()
    assert src.tolist() == [0.0, 2.0, 4.0, 6.0, 8.0]
    bf = torch.ones(3, device="cuda", dtype=torch.bfloat16)
    eb = ec.from_dlpack(bf)
    assert eb.dtype == ec.bfloat16 and eb.data_ptr() == bf.data_ptr()
    ab = ec.as_tensor(bf)  # through DLPack: the interface would call it float16
    assert ab.dtype == ec.bfloat16 and ab.data_ptr() == bf.data_ptr()
    tb = torch.from_dlpack(_gpu([1.0, 2.0], ec.bfloat16))
    assert tb.dtype == torch.bfloat16 and tb.tolist() == [1.0, 2.0]


@pytest.mark.cuda
def test_ember_computes_on_cupy_memory_and_cupy_on_embers():
    cupy = _cupy()
    c = cupy.random.rand(1 << 20).astype(cupy.float32)
    t = ec.from_dlpack(c)
    got = (t * 2 + 1).cpu().numpy()
    np.testing.assert_allclose(got, cupy.asnumpy(c * 2 + 1), rtol=1e-6)
    m = _gpu(np.random.default_rng(0).uniform(-1, 1, (64, 64)).astype(np.float32))
    cm = cupy.asarray(m)
    np.testing.assert_allclose((m @ m).cpu().numpy(), cupy.asnumpy(cm @ cm), rtol=1e-4, atol=1e-4)
