"""The CUDA emulator (tests/cuda_emu, Note [CUDA emulation] in driver.c) with
the real ember_core, and ember's CUDA basics that it lets run without a GPU.

Tests marked ``cuda`` run wherever ember has a CUDA device: on a GPU, or under
the emulator (``make test-cuda-emu``); they assert only what holds on both.
The others check the emulator itself -- what it must catch (missing
synchronisation, bad launches, illegal addresses, deadlocks), its kernel cache
and its agreement with NVRTC -- each in a process of its own that runs on
the emulator (CUDA state cannot be reset within a process)."""

import ctypes
import json
import pathlib
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import ember_core as ec

HERE = pathlib.Path(__file__).resolve().parent
EMU = HERE / "cuda_emu"
sys.path.insert(0, str(EMU))

import driver_api  # noqa: E402
import ember_cuda_emu  # noqa: E402

HAVE_CXX = shutil.which("g++") is not None and shutil.which("gcc") is not None
needs_cxx = pytest.mark.skipif(not HAVE_CXX, reason="the CUDA emulator needs gcc and g++")


def cuda(test):
    """Marked `cuda`: runs where ember has a CUDA device (a GPU, or the emulator)."""
    why = None if ec.cuda.is_available() else "no CUDA device (no GPU, and not emulated)"
    return pytest.mark.cuda(pytest.mark.skipif(why is not None, reason=str(why))(test))


ALL = (
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
)
FLOATS = (ec.float16, ec.bfloat16, ec.float32, ec.float64)
BIG = (1 << 20) + 3  # many blocks, not a multiple of any vector width


# ------------------------------------------------------------------ helpers


def values(shape, dtype, seed=0):
    """A CPU tensor of `dtype` with varied values (negatives, zeros, and for
    floats fractions and a wide range)."""
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape)) if shape else 1
    if dtype == ec.bool:
        a = rng.integers(0, 2, n).astype(bool)
    elif dtype in FLOATS:
        a = (rng.standard_normal(n) * 10.0 ** rng.integers(-3, 4, n)).astype(np.float64)
    else:
        info = np.iinfo(str(dtype).split(".")[-1])
        a = rng.integers(max(info.min, -(1 << 40)), min(info.max, 1 << 40), n, endpoint=True)
    t = ec.from_numpy(np.asarray(a).reshape(shape))
    return t.to(dtype)


def layouts(shape_kind, dtype):
    """(name, CPU tensor) pairs in several memory layouts."""
    if shape_kind == "0d":
        return [("0-d", values((), dtype))]
    if shape_kind == "empty":
        return [("empty", values((0, 3), dtype))]
    if shape_kind == "big":
        return [("big", values((BIG,), dtype, 1))]
    base = values((33, 65), dtype, 2)
    return [
        ("contiguous", base),
        ("transposed", base.t()),
        ("sliced", base[1::2, 3:60:3]),
        ("broadcast", values((33, 1), dtype, 3).expand(33, 65)),
    ]


def tolerance(dtype):
    return {
        ec.float16: (2e-3, 1e-5),
        ec.bfloat16: (1.6e-2, 1e-5),
        ec.float32: (2e-6, 1e-30),
        ec.float64: (1e-13, 1e-300),
    }.get(dtype, (0.0, 0.0))


def same(gpu, cpu):
    """The CUDA result agrees with the CPU one (exactly for integers and bool)."""
    assert gpu.device.type == "cuda"
    got = gpu.cpu()
    assert got.dtype == cpu.dtype and tuple(got.shape) == tuple(cpu.shape)
    g = got.to(ec.float64).numpy() if got.dtype == ec.bfloat16 else got.numpy()
    c = cpu.to(ec.float64).numpy() if cpu.dtype == ec.bfloat16 else cpu.numpy()
    rtol, atol = tolerance(cpu.dtype)
    if rtol == 0:
        np.testing.assert_array_equal(g, c)
    else:
        np.testing.assert_allclose(g, c, rtol=rtol, atol=atol, equal_nan=True)


def run_emulated(code, devices=1, timeout=300, env=None, check=True):
    """Run `code` in a Python process on the emulator; returns it (stdout,
    stderr, returncode)."""
    e = ember_cuda_emu.environment(devices=devices)
    e.update(env or {})
    r = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env=e,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if check:
        assert r.returncode == 0, f"exit {r.returncode}\n{r.stdout}\n{r.stderr}"
    return r


SELFTEST_KERNELS = (
    "st_block_sum<256>",
    "st_block_scan",
    "st_warp_ops",
    "st_atomics",
    "st_intrinsics",
    "st_report",
    "st_out_of_bounds",
    "st_shfl_after_exit",
    "st_deadlock",
    "st_divide",
    "st_smem",
)


def selftest_group():
    src = '#include "prelude.cuh"\n#include "ember_codes.h"\n#include "selftest.cuh"\n'
    return driver_api.file_group("selftest", src, [EMU / "selftest.cuh"], SELFTEST_KERNELS)


def load_selftest():
    ec.zeros(1, device="cuda")  # the device's context is current on this thread
    drv = driver_api.Driver()
    return drv, driver_api.compile_and_load(drv, selftest_group())


def ptr(t):
    return ctypes.c_uint64(t.data_ptr())


# ------------------------------------------- ember on a CUDA device (marked)


@cuda
@pytest.mark.parametrize("kind", ["small", "0d", "empty", "big"])
@pytest.mark.parametrize("dtype", ALL, ids=str)
def test_fill_and_copy_back(kind, dtype):
    for _name, x in layouts(kind, dtype):
        g = x.to("cuda")
        same(g, x)
        out = ec.empty(x.shape, dtype=dtype, device="cuda")
        out.copy_(g)
        same(out, x)
        ref = x.clone()
        ref.fill_(3)
        same(g.clone().fill_(3), ref)
        same(ec.zeros(x.shape, dtype=dtype, device="cuda"), ec.zeros(x.shape, dtype=dtype))


@cuda
@pytest.mark.parametrize("dst", ALL, ids=str)
def test_casts_between_every_dtype(dst):
    for src in ALL:
        for _name, x in layouts("small", src)[:2]:
            same(x.to("cuda").to(dst), x.to(dst))


@cuda
@pytest.mark.parametrize("dtype", [ec.float16, ec.bfloat16, ec.int64, ec.float32])
def test_strided_copies_many_blocks(dtype):
    x = values((1024, 1030), dtype, 4)
    g = x.to("cuda")
    same(g.t().contiguous(), x.t().contiguous())
    same(g[::3, 5:].clone(), x[::3, 5:].clone())
    big = values((BIG,), dtype, 5)
    same(big.to("cuda")[7::2].to(ec.float32), big[7::2].to(ec.float32))


def _unary_ops(dtype):
    if dtype == ec.bool:
        return [ec.logical_not]
    ops = [ec.neg, ec.abs, ec.square]
    if dtype in FLOATS:
        ops += [ec.exp, ec.sqrt, ec.tanh, ec.sigmoid, ec.log1p, ec.floor]
    return ops


@cuda
@pytest.mark.parametrize("kind", ["small", "0d", "empty", "big"])
@pytest.mark.parametrize("dtype", [ec.bool, ec.int8, ec.int32, ec.int64, *FLOATS], ids=str)
def test_unary_ops(kind, dtype):
    for op in _unary_ops(dtype):
        for _name, x in layouts(kind, dtype):
            if op in (ec.sqrt, ec.log1p):
                x = x.abs()
            same(op(x.to("cuda")), op(x))


@cuda
@pytest.mark.parametrize("dtype", [ec.uint8, ec.int16, ec.int64, *FLOATS], ids=str)
def test_binary_ops_with_broadcasting_and_scalars(dtype):
    a = values((33, 65), dtype, 6)
    b = values((65,), dtype, 7)
    ops = [ec.add, ec.sub, ec.mul, ec.maximum]
    if dtype in FLOATS:
        ops += [ec.div, ec.atan2]
    for op in ops:
        for x, y in [(a, b), (a.t(), values((65, 1), dtype, 8)), (a[::2], b[None, :])]:
            same(op(x.to("cuda"), y.to("cuda")), op(x, y))
    zero_d = values((), dtype, 9)
    same(a.to("cuda") + zero_d, a + zero_d)  # a 0-d CPU tensor mixes in as a number
    same(a.to("cuda") * 3, a * 3)
    same(2 - a.to("cuda"), 2 - a)
    big = values((BIG,), dtype, 10)
    same(big.to("cuda") + big.to("cuda"), big + big)


@cuda
def test_in_place_and_out_forms():
    a = values((40, 70), ec.float32, 11)
    g = a.to("cuda")
    g.mul_(2).add_(1)
    ref = a.clone().mul_(2).add_(1)
    same(g, ref)
    out = ec.empty((40, 70), device="cuda")
    ec.exp(g, out=out)
    same(out, ec.exp(ref))
    view = g.t()[3:9]
    view.fill_(-1)
    r = ref.t()[3:9]
    r.fill_(-1)
    same(g, ref)


@cuda
@pytest.mark.parametrize("dtype", [ec.float32, ec.int64, ec.float16])
def test_where(dtype):
    c = values((30, 40), ec.bool, 12)
    a, b = values((30, 40), dtype, 13), values((40,), dtype, 14)
    same(ec.where(c.to("cuda"), a.to("cuda"), b.to("cuda")), ec.where(c, a, b))


@cuda
def test_side_stream_ordered_by_events():
    x = ec.arange(1 << 16, dtype=ec.float32).to("cuda")
    s = ec.cuda.Stream()
    s.wait_stream(ec.cuda.current_stream())
    with ec.cuda.stream(s):
        y = x * 2
        done = ec.cuda.Event()
        done.record()
    ec.cuda.current_stream().wait_event(done)
    z = y + 1
    y.record_stream(ec.cuda.current_stream())
    np.testing.assert_array_equal(z.cpu().numpy(), np.arange(1 << 16) * 2.0 + 1)
    start, end = ec.cuda.Event(enable_timing=True), ec.cuda.Event(enable_timing=True)
    start.record()
    w = z * z
    end.record()
    end.synchronize()
    assert start.query() and end.query()
    assert start.elapsed_time(end) >= 0
    zf = np.arange(1 << 16, dtype=np.float32) * 2 + 1
    np.testing.assert_array_equal(w.cpu().numpy(), zf * zf)


@cuda
def test_pinned_non_blocking_round_trip():
    x = values((1 << 18,), ec.float32, 15)
    p = x.pin_memory()
    assert p.is_pinned()
    g = p.to("cuda", non_blocking=True)
    back = ec.empty((1 << 18,), dtype=ec.float32).pin_memory()
    back.copy_(g * 2, non_blocking=True)
    ec.cuda.synchronize()
    np.testing.assert_array_equal(back.numpy(), x.numpy() * 2)


@cuda
def test_shared_memory_barriers_and_shuffles():
    drv, fns = load_selftest()
    n = 1000
    x = values((n,), ec.float32, 16)
    out = ec.empty(4, device="cuda")
    X = x.to("cuda")
    st = drv.launch(fns["st_block_sum<256>"], (4,), (256,), [ptr(X), ptr(out), ctypes.c_int(n)])
    drv.check(st, "st_block_sum")
    xs = np.concatenate([x.numpy(), np.zeros(24, np.float32)]).astype(np.float64)
    np.testing.assert_allclose(out.cpu().numpy(), xs.reshape(4, 256).sum(1), rtol=1e-5)

    xi = (np.arange(300) * 7919 % 13).astype(np.int32)
    XI, OI = ec.from_numpy(xi).to("cuda"), ec.empty(300, dtype=ec.int32, device="cuda")
    args = [ptr(XI), ptr(OI), ctypes.c_int(300)]
    drv.check(drv.launch(fns["st_block_scan"], (3,), (128,), args, smem=2 * 128 * 4), "scan")
    expect = np.concatenate([np.cumsum(xi[i : i + 128]) for i in range(0, 300, 128)])
    np.testing.assert_array_equal(OI.cpu().numpy(), expect)


def _warp_reference(v):
    """What st_warp_ops computes for one warp's values v (32 ints >= 0)."""
    out = np.zeros((32, 16), np.int64)
    lane = np.arange(32)
    seg8, seg16 = lane & ~7, lane & ~15
    out[:, 0] = v[seg8 + 3]
    up = lane - 3
    out[:, 1] = np.where(up >= seg16, v[np.maximum(up, 0)], v)
    down = lane + 2
    out[:, 2] = np.where(down <= seg8 + 7, v[np.minimum(down, 31)], v)
    out[:, 3] = v[lane ^ 5]
    x = lane ^ 12
    out[:, 4] = np.where(x <= seg8 + 7, v[x], v)
    out[:, 5] = sum(1 << i for i in range(32) if v[i] % 3 == 0)
    out[:, 6] = int((v > 90).any()) * 2 + int((v >= 0).all())
    out[:, 7] = [sum(1 << j for j in range(32) if v[j] % 4 == v[i] % 4) for i in range(32)]
    out[:, 8] = v.sum()
    out[:, 9] = ((v[31 - lane] + 0.25) * 4).astype(np.int64)
    out[:, 10] = np.where(lane < 31, v[np.minimum(lane + 1, 31)], v)
    out[:, 11] = np.where(lane < 20, v[19], -1)
    out[:, 12] = np.where(lane < 20, (1 << 20) - 1, 0)
    vu = v.astype(np.uint32)
    pop = np.array([bin(int(a)).count("1") for a in vu])
    clz = np.array([32 - int(a).bit_length() for a in vu])
    ffs = np.array([(int(a) & -int(a)).bit_length() for a in vu])
    out[:, 13] = pop + 100 * clz + 10000 * ffs
    out[:, 14] = [int(f"{int(a):032b}"[::-1], 2) >> 16 for a in vu]
    out[:, 15] = v[lane ^ 1]
    return out


@cuda
def test_warp_collectives():
    drv, fns = load_selftest()
    v = ((np.arange(64) * 37) % 101).astype(np.int32)
    X = ec.from_numpy(v).to("cuda")
    out = ec.empty((64, 16), dtype=ec.int64, device="cuda")
    drv.check(drv.launch(fns["st_warp_ops"], (1,), (64,), [ptr(X), ptr(out)]), "st_warp_ops")
    got = out.cpu().numpy()
    for w in range(2):
        np.testing.assert_array_equal(
            got[32 * w : 32 * w + 32], _warp_reference(v[32 * w : 32 * w + 32])
        )


@cuda
def test_atomics_and_barrier_reductions():
    drv, fns = load_selftest()
    n, blocks = 1000, 4
    v = ((np.arange(n) * 7) % 50).astype(np.int32)
    X = ec.from_numpy(v).to("cuda")
    hist = ec.zeros(16, dtype=ec.int32, device="cuda")
    fsum = ec.zeros(1, dtype=ec.float32, device="cuda")
    usum = ec.zeros(1, dtype=ec.int64, device="cuda")
    vmax = ec.zeros(1, dtype=ec.int32, device="cuda")
    counts = ec.zeros((blocks, 4), dtype=ec.int32, device="cuda")
    args = [ptr(X), ctypes.c_int(n), ptr(hist), ptr(fsum), ptr(usum), ptr(vmax), ptr(counts)]
    drv.check(drv.launch(fns["st_atomics"], (blocks,), (256,), args), "st_atomics")
    np.testing.assert_array_equal(hist.cpu().numpy(), np.bincount(v & 15, minlength=16))
    assert fsum.cpu().item() == float((v & 7).sum())
    assert usum.cpu().item() == int(v.sum()) and vmax.cpu().item() == int(v.max())
    padded = np.concatenate([v, np.zeros(blocks * 256 - n, np.int32)]).reshape(blocks, 256)
    expect = np.stack(
        [(padded & 1).sum(1), (padded >= 0).all(1), (padded == 7).any(1), np.full(blocks, 8)], 1
    )
    np.testing.assert_array_equal(counts.cpu().numpy(), expect)


@cuda
def test_math_and_integer_intrinsics():
    drv, fns = load_selftest()
    n = 300
    rng = np.random.default_rng(17)
    x = np.concatenate([[0.0, -0.0, 0.5, -1.5, 3.0, 2.5, -2.5, 1e-3], rng.standard_normal(n - 8)])
    x = x.astype(np.float32)
    u = rng.integers(0, 1 << 32, 2 * n, dtype=np.uint64).astype(np.uint32)
    u[:8] = [0, 0xFFFFFFFF, 0x80000000, 1, 0xDEADBEEF, 31, 12345, 64]
    X, U = ec.from_numpy(x).to("cuda"), ec.from_numpy(u.view(np.int32)).to("cuda")
    fo = ec.empty((n, 8), device="cuda")
    uo = ec.empty((n, 6), dtype=ec.int32, device="cuda")
    dsum = ec.zeros(1, dtype=ec.float64, device="cuda")
    imin = ec.full((1,), 1 << 30, dtype=ec.int32).to("cuda")
    inc = ec.zeros(1, dtype=ec.int32, device="cuda")
    args = [ptr(X), ptr(U), ctypes.c_int(n), ptr(fo), ptr(uo), ptr(dsum), ptr(imin), ptr(inc)]
    drv.check(drv.launch(fns["st_intrinsics"], (3,), (128,), args), "st_intrinsics")
    f = fo.cpu().numpy().astype(np.float64)
    xd = x.astype(np.float64)
    from math import erf

    np.testing.assert_allclose(f[:, 0], np.exp(xd), rtol=2e-6)  # __expf: ~2 ulp on a GPU
    np.testing.assert_allclose(f[:, 1], 1 / np.sqrt(np.abs(xd) + 1), rtol=1e-6)
    np.testing.assert_allclose(f[:, 2], xd / 3, rtol=1e-6)
    np.testing.assert_allclose(f[:, 3], [erf(v) for v in xd], rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(f[:, 4], np.maximum(x, 0) + np.minimum(x, -1))
    np.testing.assert_array_equal(f[:, 5], np.clip(x, 0, 1))
    big = (x * np.float32(1e9)).astype(np.float64)
    want6 = np.clip(np.round(big), -(2.0**31), 2.0**31 - 1)  # saturating, ties to even
    np.testing.assert_array_equal(f[:, 6], want6.astype(np.float32))
    want7 = np.trunc((x * np.float32(4.5)).astype(np.float64)) + np.floor(x) + np.sqrt(np.abs(x))
    np.testing.assert_array_equal(f[:, 7].astype(np.float32), want7.astype(np.float32))
    o = uo.cpu().numpy().view(np.uint32).astype(np.uint64)
    a, b = u[0::2].astype(np.uint64), u[1::2].astype(np.uint64)
    np.testing.assert_array_equal(o[:, 0], (a * b) >> 32)
    cat = (b << 32) | a  # funnel: hi:lo = b:a
    bytes8 = [[(int(c) >> (8 * k)) & 0xFF for k in range(8)] for c in cat]
    perm = [
        sum(bytes8[i][(int(0x5140 + (i & 7)) >> (4 * k)) & 7] << (8 * k) for k in range(4))
        for i in range(n)
    ]
    np.testing.assert_array_equal(o[:, 1], perm)
    s = b & 63
    np.testing.assert_array_equal(o[:, 2], ((cat << (s & 31)) >> 32) & 0xFFFFFFFF)
    np.testing.assert_array_equal(o[:, 3], (cat >> np.minimum(s, 32)) & 0xFFFFFFFF)
    ai, bi = u[0::2].view(np.int32).astype(np.int64), u[1::2].view(np.int32).astype(np.int64)
    np.testing.assert_array_equal(o[:, 4], ((ai * bi) >> 32).astype(np.uint32))
    pop = [bin(int((ai_ << 32) | bi_)).count("1") for ai_, bi_ in zip(a, b)]
    clz = [64 - int(v).bit_length() for v in b]
    np.testing.assert_array_equal(o[:, 5], np.array(pop) + 100 * np.array(clz))
    np.testing.assert_allclose(dsum.cpu().item(), xd.sum(), rtol=1e-12)
    assert imin.cpu().item() == int((x * np.float32(100)).astype(np.int32).min())
    assert inc.cpu().item() == n % 7  # atomicInc wraps to 0 after 6


def _error_word():
    lib = ctypes.CDLL(ec._C.__file__)
    lib.ecu_error_word.restype = ctypes.c_uint64
    return lib.ecu_error_word()


@cuda
def test_device_side_error_word():
    drv, fns = load_selftest()
    word = _error_word()
    assert word
    args = [ctypes.c_uint64(word), ctypes.c_longlong(17), ctypes.c_longlong(5)]
    drv.check(drv.launch(fns["st_report"], (2,), (32,), args), "st_report")
    with pytest.raises(IndexError, match="index 17 is out of bounds for a dimension of size 5"):
        ec.cuda.synchronize()
    ec.cuda.synchronize()  # reported once, then cleared


@cuda
def test_launch_limits():
    drv, fns = load_selftest()
    out = ec.empty(4, dtype=ec.uint8, device="cuda")
    f = fns["st_smem"]
    ok = drv.launch(f, (2,), (128,), [ptr(out), ctypes.c_int(1000)], smem=1000)
    assert ok == 0
    assert drv.launch(f, (2,), (256,), [ptr(out), ctypes.c_int(10)], smem=10) != 0  # > bounds
    assert drv.launch(f, (1,), (2048,), [ptr(out), ctypes.c_int(10)], smem=10) != 0
    big = 64 << 10
    assert drv.launch(f, (1,), (128,), [ptr(out), ctypes.c_int(big)], smem=big) != 0
    assert drv.set_attribute(f, 8, big) == 0  # MAX_DYNAMIC_SHARED_SIZE_BYTES
    assert drv.launch(f, (2,), (128,), [ptr(out), ctypes.c_int(big)], smem=big) == 0
    np.testing.assert_array_equal(out.cpu().numpy()[:2], [(big - 1) % 256] * 2)
    assert drv.set_attribute(f, 8, 1 << 20) != 0


# --------------------------------------------------- the emulator itself


@needs_cxx
@pytest.mark.skipif(ember_cuda_emu.is_emulated(), reason="runs the tests below on the emulator")
def test_cuda_tests_on_the_emulator():
    """The tests above (marked `cuda`) on two emulated devices, so that every
    `make test` runs ember's CUDA backend without a GPU."""
    e = ember_cuda_emu.environment(devices=2)
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "cuda"]
    r = subprocess.run(
        [*cmd, str(pathlib.Path(__file__))],
        env=e,
        cwd=HERE.parent,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert r.returncode == 0, r.stdout[-6000:] + r.stderr[-3000:]
    assert " passed" in r.stdout and " skipped" not in r.stdout.splitlines()[-1], r.stdout[-2000:]


@needs_cxx
def test_emulator_catches_what_a_gpu_would_not_show_reliably():
    r = run_emulated(
        """
        import ember_core as ec, ember_cuda_emu, numpy as np, ctypes
        from ember_core._base.lib import lib
        emu = ember_cuda_emu.driver()
        emu.ember_emu_counter.restype = ctypes.c_longlong
        x = ec.zeros(1 << 12, device="cuda")
        ec.cuda.synchronize()
        # work is queued, not run: a query finds it pending (and runs it)
        y = x + 1
        e = ec.cuda.Event()
        e.record()
        assert emu.ember_emu_counter(b"queued") > 0
        assert not e.query()
        assert e.query() and emu.ember_emu_counter(b"queued") == 0
        # a side stream's work is not ordered before the default stream's
        # without a wait: reading on the default stream sees stale data
        s = ec.cuda.Stream()
        with ec.cuda.stream(s):
            x.fill_(5)
        z = x * 1
        assert z.cpu().numpy().max() == 0, "missing wait not visible"
        ec.cuda.synchronize()
        assert x.cpu().numpy().min() == 5
        # record_stream keeps a block from reuse until the stream is done
        a = ec.empty(1 << 18, device="cuda")
        p = a.data_ptr()
        with ec.cuda.stream(s):
            a.fill_(1)
        a.record_stream(s)
        del a
        b = ec.empty(1 << 18, device="cuda")
        assert b.data_ptr() != p, "a block reused while its stream still used it"
        print("ok")
        """
    )
    assert r.stdout.strip().endswith("ok")


@needs_cxx
@pytest.mark.parametrize(
    "kernel, code, message",
    [
        ("st_out_of_bounds", 700, "an access to memory it may not use"),
        ("st_shfl_after_exit", 719, "exited"),
        ("st_deadlock", 719, "deadlocked"),
        ("st_divide", 719, "integer division by zero"),
    ],
)
def test_kernel_faults_are_sticky_errors(kernel, code, message):
    r = run_emulated(
        f"""
        import ctypes, sys
        sys.path.insert(0, {str(HERE)!r})
        import ember_core as ec, numpy as np
        import test_cuda_emu as t
        drv, fns = t.load_selftest()
        a = ec.from_numpy(np.arange(32, dtype=np.int32)).to("cuda")
        b = ec.from_numpy(np.arange(32, dtype=np.int32) % 4).to("cuda")
        o = ec.zeros(32, dtype=ec.int32, device="cuda")
        small = drv.alloc(4096)
        args = {{
            "st_out_of_bounds": [ctypes.c_uint64(small), ctypes.c_longlong(1024)],
            "st_shfl_after_exit": [t.ptr(o)],
            "st_deadlock": [t.ptr(o)],
            "st_divide": [t.ptr(a), t.ptr(b), t.ptr(o)],
        }}[{kernel!r}]
        assert drv.launch(fns[{kernel!r}], (1,), (32,), args) == 0  # fails when it runs
        try:
            ec.cuda.synchronize()
        except RuntimeError as e:
            print("raised:", e)
        else:
            raise SystemExit("no error")
        try:  # sticky: the context stays broken, as on a GPU
            ec.ones(3, device="cuda").cpu()
        except RuntimeError as e:
            print("again:", e)
        else:
            raise SystemExit("not sticky")
        """
    )
    assert f"code {code}" in r.stdout and message in r.stdout, r.stdout
    assert "again:" in r.stdout and message in r.stderr


@needs_cxx
def test_launches_the_hardware_would_reject():
    r = run_emulated(
        f"""
        import ctypes, sys
        sys.path.insert(0, {str(HERE)!r})
        import ember_core as ec, numpy as np
        import test_cuda_emu as t
        drv, fns = t.load_selftest()
        out = ec.empty(4, dtype=ec.uint8, device="cuda")
        f = fns["st_smem"]
        def err(*a, **k):
            code = drv.launch(f, *a, **k)
            text = ctypes.c_char_p()
            drv.lib.cuGetErrorString(code, ctypes.byref(text))
            return code, text.value.decode()
        print(err((1,), (256,), [t.ptr(out), ctypes.c_int(1)]))
        print(err((1,), (1025,), [t.ptr(out), ctypes.c_int(1)]))
        print(err((1, 70000), (32,), [t.ptr(out), ctypes.c_int(1)]))
        print(err((1,), (32,), [t.ptr(out), ctypes.c_int(1)], smem=50000))
        host = np.zeros(4, np.uint8)
        print(err((1,), (32,), [ctypes.c_uint64(host.ctypes.data), ctypes.c_int(1)]))
        assert drv.launch(f, (1,), (32,), [t.ptr(out), ctypes.c_int(1)], smem=8) == 0
        small = drv.alloc(4096)
        try:  # a copy that runs past its allocation
            drv.to_device(small + 4000, np.zeros(200, np.uint8))
        except Exception as e:
            print(e)
        drv.free(small)
        print(err((1,), (32,), [ctypes.c_uint64(small), ctypes.c_int(1)]))  # freed
        ec.cuda.synchronize()  # none of the rejected launches broke the context
        print("ok")
        """
    )
    lines = r.stdout.splitlines()
    assert lines[-1] == "ok"
    assert "(701," in lines[0] and "__launch_bounds__ allow 128" in lines[0]
    assert "(1," in lines[1] and "exceeds 1024 threads" in lines[1]
    assert "(1," in lines[2] and "grid (1,70000,1)" in lines[2]
    assert "(1," in lines[3] and "50000 bytes of dynamic shared memory" in lines[3]
    assert "(700," in lines[4] and "host memory a GPU cannot address" in lines[4]
    assert "CUresult 1" in lines[5] and "runs 104 bytes past the end" in lines[5]
    assert "(700," in lines[6] and "not allocated (freed, or never allocated)" in lines[6]


@needs_cxx
def test_two_devices_and_peer_copies():
    r = run_emulated(
        """
        import ember_core as ec, numpy as np
        assert ec.cuda.device_count() == 2
        x = ec.arange(1000, dtype=ec.float64).to("cuda:1")
        x2 = x * 2
        ec.cuda.synchronize(1)  # see test_copy_between_devices_waits_for_the_source
        y = x2.to("cuda:0")
        with ec.cuda.device(1):
            z = ec.ones(3, device="cuda")
        assert z.device.index == 1 and y.device.index == 0
        np.testing.assert_array_equal((y + 1).cpu().numpy(), np.arange(1000) * 2.0 + 1)
        try:
            x + y
        except RuntimeError as e:
            print("mixed:", e)
        import ctypes, sys
        sys.path.insert(0, {here!r})
        import test_cuda_emu as t
        drv, fns = t.load_selftest()  # on cuda:0
        args = [t.ptr(x), t.ptr(y), ctypes.c_int(1)]  # x is memory of cuda:1
        code = drv.launch(fns["st_block_sum<256>"], (1,), (256,), args)
        text = ctypes.c_char_p()
        drv.lib.cuGetErrorString(code, ctypes.byref(text))
        print(code, text.value.decode())
        print("ok")
        """.replace("{here!r}", repr(str(HERE))),
        devices=2,
    )
    lines = r.stdout.strip().splitlines()
    assert lines[-1] == "ok"
    assert lines[-2].startswith("700 ") and "memory of cuda:1, launched on cuda:0" in lines[-2]


@needs_cxx
def test_copy_between_devices_waits_for_the_source():
    # found by the emulator: a copy between two GPUs ran on the destination's
    # stream without waiting for the source device's stream (a race on GPUs)
    run_emulated(
        """
        import ember_core as ec, numpy as np
        x = ec.arange(1000, dtype=ec.float64).to("cuda:1")
        y = (x * 2).to("cuda:0")
        np.testing.assert_array_equal(y.cpu().numpy(), np.arange(1000) * 2.0)
        """,
        devices=2,
    )


@needs_cxx
def test_matrix_products_on_the_emulated_cublas():
    # ember's cuBLAS path (Note [cuBLAS] in csrc/cuda/blas_launch.c) on the
    # emulator's cuBLAS (Note [Emulated cuBLAS] in driver.c), which
    # _cuda_blas.load() finds by soname under EMBER_CUDA_EMULATE=1
    r = run_emulated(
        """
        import ctypes, numpy as np, ember_core as ec
        rng = np.random.default_rng(0)
        def t(shape, dt):
            return ec.from_numpy(rng.standard_normal(shape)).to(dt)
        tols = {ec.float32: 1e-5, ec.float64: 1e-12, ec.float16: 1e-2, ec.bfloat16: 5e-2}
        for dt, tol in tols.items():
            for sa, sb in [((5, 7), (7, 3)), ((2, 4, 6), (2, 6, 5)), ((3, 1, 4), (4,))]:
                a, b = t(sa, dt), t(sb, dt)
                pairs = [(a, b), (a.mT.contiguous().mT, b)] if len(sa) > 1 else [(a, b)]
                for x, y in pairs:
                    got = (x.to("cuda") @ y.to("cuda")).cpu().to(ec.float64).numpy()
                    want = (x @ y).to(ec.float64).numpy()
                    assert np.allclose(got, want, rtol=tol, atol=tol), (dt, sa, sb)
            c, a2, b2 = t((4, 5), dt), t((4, 3), dt), t((3, 5), dt)
            args = [v.to("cuda") for v in (c, a2, b2)]
            got = ec.addmm(*args, beta=0.5, alpha=2).cpu().to(ec.float64).numpy()
            want = ec.addmm(c, a2, b2, beta=0.5, alpha=2).to(ec.float64).numpy()
            assert np.allclose(got, want, rtol=tol, atol=tol), dt
        # an operand that runs past its allocation (a page) is refused
        blas = ctypes.CDLL("libcublas.so.13")
        h = ctypes.c_void_p()
        assert blas.cublasCreate_v2(ctypes.byref(h)) == 0
        p = ctypes.c_uint64()
        assert ctypes.CDLL("libcuda.so.1").cuMemAlloc_v2(ctypes.byref(p), 64) == 0
        one = ctypes.c_float(1.0)
        ptr = ctypes.c_void_p(p.value)
        code = blas.cublasGemmEx(h, 0, 0, 4, 4, 4, ctypes.byref(one), ptr, 0, 2000, ptr, 0, 4,
                                 ctypes.byref(one), ptr, 0, 4, 68, -1)
        print("bad lda:", code)
        print("ok")
        """
    )
    assert "bad lda: 7" in r.stdout and r.stdout.strip().endswith("ok")
    assert "operand A (4 x 4, ld 2000" in r.stderr and "runs past its allocation" in r.stderr


@needs_cxx
def test_compile_cache_is_reused(tmp_path):
    code = """
        import ember_core as ec, ember_cuda_emu, numpy as np
        if {forbid}:
            def no_compiler(*a, **k):
                raise AssertionError("compiled again")
            ember_cuda_emu._build = no_compiler
        x = ec.arange(10, dtype=ec.int16).to("cuda")
        np.testing.assert_array_equal((x * 3 - 1).cpu().numpy(), np.arange(10) * 3 - 1)
        print("ok")
    """
    env = {"EMBER_CACHE_DIR": str(tmp_path)}
    run_emulated(code.format(forbid=False), env=env)
    metas = list((tmp_path / "emu").glob("*.json"))
    assert metas and all(json.loads(m.read_text())["lowered"] for m in metas)
    run_emulated(code.format(forbid=True), env=env)


@needs_cxx
def test_float16_conversions_round_like_the_hardware():
    # every float16 bit pattern, and float32/float64 values around every
    # float16 rounding boundary, through the emulated cast kernels
    r = run_emulated(
        """
        import ember_core as ec, numpy as np
        h = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16)
        f = h.astype(np.float32)
        fin = f[np.isfinite(f)]
        up = np.nextafter(fin, np.float32(np.inf))
        mid = ((fin.astype(np.float64)[:-1] + fin.astype(np.float64)[1:]) / 2)
        for src in (f, up, np.sort(fin), mid.astype(np.float32), mid):
            t = ec.from_numpy(np.ascontiguousarray(src)).to("cuda").to(ec.float16)
            got = t.cpu().numpy()
            want = src.astype(np.float16)
            nan = np.isnan(want)
            assert (np.isnan(got) == nan).all()
            assert (got.view(np.uint16)[~nan] == want.view(np.uint16)[~nan]).all(), src.dtype
        back = ec.from_numpy(h.copy()).to("cuda").to(ec.float32).cpu().numpy()
        ok = ~np.isnan(f)
        assert (back[ok].view(np.uint32) == f[ok].view(np.uint32)).all()
        print("ok")
        """
    )
    assert r.stdout.strip() == "ok"


@needs_cxx
def test_lowered_names_are_nvrtcs():
    from ember_core._base.lib import lib
    from ember_core._cuda import compile as _cuda_compile
    from ember_core._cuda import kernels as _cuda_kernels

    try:
        _cuda_compile.nvrtc_version()
    except RuntimeError:
        pytest.skip("NVRTC (nvidia-cuda-nvrtc) not installed")
    groups = [
        _cuda_kernels.group(lib.ECU_FAM_BINARY, lib.EC_B_ADD, lib.EC_FLOAT16, 0),
        _cuda_kernels.group(lib.ECU_FAM_TERNARY, lib.EC_T_WHERE, lib.EC_INT64, 0),
        _cuda_kernels.group(lib.ECU_FAM_CAST, 0, lib.EC_BFLOAT16, lib.EC_UINT8),
        _cuda_kernels.group(lib.ECU_FAM_FILL, 0, lib.EC_BOOL, 0),
        selftest_group(),
    ]
    for g in groups:
        _, nvrtc = _cuda_compile.compile_source(g, 90, kind="ptx")
        (_, emulated), *_ = ember_cuda_emu._build([g], 90)
        assert emulated == nvrtc


def test_launch_bounds_and_shared_rewrites():
    src = """
    template <int B, class T> __global__ void __launch_bounds__(B * 2, 4) k(T* x) {
        extern __shared__ __align__(16) unsigned char smem[];
    }
    __global__ void __launch_bounds__(ECU_BLOCK) plain(int* y) {}
    """
    assert ember_cuda_emu.launch_bounds([src]) == {
        "k": ("int B, class T", "B * 2"),
        "plain": (None, "ECU_BLOCK"),
    }
    out = ember_cuda_emu.rewrite(src)
    assert "unsigned char* const smem = reinterpret_cast<unsigned char*>(" in out
    with pytest.raises(ember_cuda_emu.EmulationError):
        ember_cuda_emu.rewrite("extern __shared__ float s[][4];")
