"""Random numbers: the shared Philox header (csrc/philox.h, Note [Bit-identical
random numbers]) checked through the CPU kernels against an independent NumPy
model, the per-device generators (Note [Generators per device]), and -- on a
GPU, marked ``cuda`` -- the same numbers bit for bit on CUDA as on the CPU."""

import numpy as np
import pytest

import ember_core as ec
from ember_core._ops.random import random as _random
from ember_core._tensor.device import device

HAVE_CUDA = ec.cuda.is_available()
needs_cuda = pytest.mark.skipif(not HAVE_CUDA, reason="no CUDA GPU")

# ------------------------------------------------------- a model in NumPy


def philox(counters, seed):
    """Philox4x32-10 of each counter (uint64 array): (n, 4) uint32 words."""
    c = np.asarray(counters, dtype=np.uint64)
    c0 = (c & 0xFFFFFFFF).astype(np.uint64)
    c1 = (c >> np.uint64(32)).astype(np.uint64)
    c2 = np.zeros_like(c0)
    c3 = np.zeros_like(c0)
    k0 = np.uint64(seed & 0xFFFFFFFF)
    k1 = np.uint64(seed >> 32)
    m32 = np.uint64(0xFFFFFFFF)
    for _ in range(10):
        p0 = np.uint64(0xD2511F53) * c0
        p1 = np.uint64(0xCD9E8D57) * c2
        n0 = (p1 >> np.uint64(32)) ^ c1 ^ k0
        n2 = (p0 >> np.uint64(32)) ^ c3 ^ k1
        c0, c1, c2, c3 = n0 & m32, p1 & m32, n2 & m32, p0 & m32
        k0 = (k0 + np.uint64(0x9E3779B9)) & m32
        k1 = (k1 + np.uint64(0xBB67AE85)) & m32
    return np.stack([c0, c1, c2, c3], axis=1).astype(np.uint32)


def test_uniform_float32_matches_the_model():
    g = ec.Generator().manual_seed(1234)
    x = ec.rand(1001, generator=g).numpy()
    r = philox(np.arange((1001 + 3) // 4), 1234).reshape(-1)[:1001]
    want = ((r >> 8).astype(np.float64) / 2.0**24).astype(np.float32)
    np.testing.assert_array_equal(x, want)


def test_uniform_float64_and_randint_match_the_model():
    g = ec.Generator().manual_seed(99)
    x = ec.rand(501, generator=g, dtype=ec.float64).numpy()
    r = philox(np.arange(251), 99)
    bits = r.astype(np.uint64)
    u = ((bits[:, 0::2] << np.uint64(32) | bits[:, 1::2]) >> np.uint64(11)).reshape(-1)[:501]
    np.testing.assert_array_equal(x, u.astype(np.float64) / 2.0**53)
    # randint: the high 64 bits of bits * range, from the next counters
    y = ec.randint(-3, 1000, (7,), generator=g).numpy()
    r = philox(np.arange(251, 255), 99).astype(np.uint64)
    b64 = (r[:, 0::2] << np.uint64(32) | r[:, 1::2]).reshape(-1)[:7]
    want = [-3 + (int(b) * 1003 >> 64) for b in b64]
    assert y.tolist() == want


def test_float32_normals_are_box_muller_with_correctly_rounded_log_sin_cos():
    # ember's own log/sin/cos in philox.h, evaluated in double and rounded,
    # give float32 Box-Muller the correctly rounded values (NumPy's float64
    # functions rounded to float32 serve as the reference)
    n = 40000
    g = ec.Generator().manual_seed(7)
    z = ec.randn(n, generator=g).numpy()
    r = philox(np.arange(n // 4), 7).astype(np.float64)
    u = (np.floor(r / 256) / 2.0**24).astype(np.float32)
    u1, u2 = u[:, 0::2], u[:, 1::2]
    lg = np.log((np.float32(1) - u1).astype(np.float64)).astype(np.float32)
    rad = np.sqrt(np.float32(-2) * lg)
    t = (np.float32(6.283185307179586) * u2).astype(np.float64)
    c, s = np.cos(t).astype(np.float32), np.sin(t).astype(np.float32)
    want = np.stack([rad * c, rad * s], axis=2).reshape(-1).astype(np.float32)
    mismatch = np.mean(z != want)
    assert mismatch <= 1e-4  # rounding of the reference's own float64 functions
    np.testing.assert_allclose(z, want, rtol=2e-7, atol=1e-30)


def test_double_precision_transforms_are_accurate():
    # ember's float64 log/sin/cos are within a few ulps of NumPy's
    n = 20000
    g = ec.Generator().manual_seed(11)
    z = ec.randn(n, generator=g, dtype=ec.float64).numpy()
    bits = philox(np.arange(n // 2), 11).astype(np.uint64)
    u1 = ((bits[:, 0] << np.uint64(32) | bits[:, 1]) >> np.uint64(11)).astype(np.float64) / 2.0**53
    u2 = ((bits[:, 2] << np.uint64(32) | bits[:, 3]) >> np.uint64(11)).astype(np.float64) / 2.0**53
    rad = np.sqrt(-2.0 * np.log(1.0 - u1))
    want = np.stack([rad * np.cos(2 * np.pi * u2), rad * np.sin(2 * np.pi * u2)], 1).reshape(-1)
    ulps = np.abs(z - want) / np.spacing(np.maximum(np.abs(want), 1e-300))
    assert np.max(ulps[np.abs(want) > 1e-3]) <= 8
    e = ec.empty(n, dtype=ec.float64).exponential_(generator=ec.Generator().manual_seed(3)).numpy()
    assert e.min() >= 0 and abs(e.mean() - 1) < 0.03


def test_dropout_keeps_the_bernoulli_stream():
    ec.manual_seed(21)
    x = ec.randn(999)
    seed, offset = _random.default_generator._seed, _random.default_generator._offset
    y, keep = ec.native_dropout(x, 0.25, True)
    r = philox(np.arange(offset, offset + 250), seed).reshape(-1)[:999]
    want = ((r >> 8).astype(np.float64) / 2.0**24) < 0.75
    np.testing.assert_array_equal(keep.numpy(), want)
    scale = np.float32(1 / 0.75)
    np.testing.assert_array_equal(y.numpy(), np.where(want, x.numpy() * scale, 0))


# ------------------------------------------------------------- generators


def test_manual_seed_seeds_every_device_generator():
    ec.manual_seed(5)
    g = _random.default_generator_for(device("cuda", 0))
    assert g.device == device("cuda:0") and g.initial_seed() == 5 and g._offset == 0
    ec.manual_seed(6)
    assert g.initial_seed() == 6
    # a device seen later starts from the last seed too
    assert _random.default_generator_for(device("cuda", 3)).initial_seed() == 6
    ec.cuda.manual_seed_all(8)
    assert g.initial_seed() == 8 and ec.default_generator.initial_seed() == 6
    assert _random.default_generator_for(device("cpu")) is ec.default_generator


def test_generator_device_must_match_the_tensor():
    with pytest.raises(RuntimeError, match="Expected a 'cuda' device type for generator"):
        _random._gen(ec.Generator(), device("cuda", 0))
    with pytest.raises(RuntimeError, match="Expected a 'cpu' device type for generator"):
        ec.rand(3, generator=ec.Generator("cuda"))
    assert ec.Generator("cuda:1").device == device("cuda", 1)


# ----------------------------------------------------- CUDA, bit for bit


def _same(fn, cpu_dtype_view=None):
    """fn(device) on the CPU and on CUDA from the same seed: identical bits."""
    ec.manual_seed(123)
    a = fn("cpu")
    ec.manual_seed(123)
    b = fn("cuda")
    assert b.device.type == "cuda" and a.dtype == b.dtype and a.shape == b.shape
    a, b = a.cpu(), b.cpu()
    if a.dtype in (ec.float16, ec.bfloat16):
        a, b = a.view(ec.int16), b.view(ec.int16)
    np.testing.assert_array_equal(a.numpy(), b.numpy())


SIZES = [0, 1, 3, 4, 5, 1023, (1 << 20) + 7]
FLOATS = [ec.float32, ec.float64, ec.float16, ec.bfloat16]


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.cuda
@needs_cuda
def test_float_draws_are_bit_identical(dtype, n):
    _same(lambda d: ec.rand(n, dtype=dtype, device=d))
    _same(lambda d: ec.randn(n, dtype=dtype, device=d))
    _same(lambda d: ec.empty(n, dtype=dtype, device=d).uniform_(-2.5, 7))
    _same(lambda d: ec.empty(n, dtype=dtype, device=d).normal_(3, 0.5))
    _same(lambda d: ec.empty(n, dtype=dtype, device=d).bernoulli_(0.3))
    _same(lambda d: ec.empty(n, dtype=dtype, device=d).exponential_(2.0))
    _same(lambda d: ec.empty(n, dtype=dtype, device=d).cauchy_(1.0, 2.0))
    _same(lambda d: ec.empty(n, dtype=dtype, device=d).log_normal_(0.5, 0.7))
    _same(lambda d: ec.empty(n, dtype=dtype, device=d).geometric_(0.2))
    _same(lambda d: ec.empty(n, dtype=dtype, device=d).random_(0, 100))


@pytest.mark.parametrize("dtype", [ec.int64, ec.int32, ec.int16, ec.int8, ec.uint8, ec.bool])
@pytest.mark.cuda
@needs_cuda
def test_integer_draws_are_bit_identical(dtype):
    hi = 2 if dtype is ec.bool else 100
    for n in (1, 7, 100003):
        _same(lambda d, n=n: ec.randint(0, hi, (n,), dtype=dtype, device=d))
        _same(lambda d, n=n: ec.empty(n, dtype=dtype, device=d).random_())
        _same(lambda d, n=n: ec.empty(n, dtype=dtype, device=d).bernoulli_(0.5))
    _same(lambda d: ec.empty(1001, dtype=ec.int64, device=d).random_(-(2**63), 2**63))


@pytest.mark.cuda
@needs_cuda
def test_sequences_of_calls_and_layouts_are_bit_identical():
    def calls(d):
        a = ec.randn(4, 33, device=d)
        b = ec.rand(17, dtype=ec.float64, device=d)
        c = ec.empty(8, 6, device=d).t().normal_()  # not contiguous: drawn, then copied
        p = ec.rand(5000, device=d)
        e = ec.bernoulli(p)  # a probability per element
        f = ec.bernoulli(p.double())
        return ec.cat([a.reshape(-1), b.float(), c.reshape(-1), e, f.float()])

    _same(calls)
    # the generators advance alike: the next draw matches too
    ec.manual_seed(9)
    ec.randn(10)
    x = ec.rand(100)
    ec.manual_seed(9)
    ec.randn(10, device="cuda")
    y = ec.rand(100, device="cuda")
    np.testing.assert_array_equal(x.numpy(), y.cpu().numpy())


@pytest.mark.parametrize("dtype", [ec.float32, ec.float64, ec.float16, ec.bfloat16])
@pytest.mark.cuda
@needs_cuda
def test_dropout_is_bit_identical(dtype):
    def run(d):
        x = ec.randn(257, 129, dtype=dtype, device=d)
        y, keep = ec.native_dropout(x, 0.4, True)
        g = ec.randn(257, 129, dtype=dtype, device=d)
        back = ec._native_dropout_backward(g, keep, 1 / 0.6)
        t = back.t()  # a strided masked scale
        back2 = ec._native_dropout_backward(t, keep.t(), 2.0)
        return ec.cat(
            [
                y.reshape(-1).float(),
                keep.reshape(-1).float(),
                back.reshape(-1).float(),
                back2.reshape(-1).float(),
            ]
        )

    _same(run)


@pytest.mark.cuda
@needs_cuda
def test_randperm_is_the_cpus():
    for n in (0, 1, 2, 3, 1000, 20001):
        _same(lambda d, n=n: ec.randperm(n, device=d))
    _same(lambda d: ec.randperm(77, dtype=ec.int32, device=d))


@pytest.mark.cuda
@needs_cuda
def test_bernoulli_probabilities_out_of_range_raise_at_synchronisation():
    p = ec.tensor([0.5, 1.5, 0.2], device="cuda")
    with pytest.raises(RuntimeError):
        ec.bernoulli(p)
        ec.cuda.synchronize()
    ec.cuda.synchronize()  # the error was reported once and cleared


@pytest.mark.cuda
@needs_cuda
def test_cuda_generator_is_separate_from_the_cpu_one():
    ec.manual_seed(0)
    ec.rand(1000, device="cuda")
    assert ec.default_generator._offset == 0
    assert _random.default_generator_for(device("cuda", 0))._offset == 250
    g = ec.Generator("cuda").manual_seed(4)
    a = ec.rand(10, generator=g, device="cuda")
    b = ec.rand(10, generator=ec.Generator().manual_seed(4))
    np.testing.assert_array_equal(a.cpu().numpy(), b.numpy())
