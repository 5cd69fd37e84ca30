"""Philox on the GPU gives the CPU's numbers, bit for bit (issue 15's RNG promise).

For the same seed and shape: rand, randn, randint, bernoulli (tensor p and
scalar p), normal_, uniform_, normal, dropout masks, rand_like/randn_like, in
every floating dtype, from 0-d to 2^20+3 elements; consecutive draws after one
seed stay in step (the generator's offset advances alike on both devices);
``ember_core.cuda.manual_seed`` / ``manual_seed_all`` seed the CUDA generator
and explicit ``Generator(device='cuda')`` objects work.
"""

import numpy as np
import pytest
from cuda_helpers import CUDA, LARGE, SELFTEST, bits, equal

import ember_core as ec

SELFTEST_OK = True
pytestmark = pytest.mark.cuda

SHAPES = [(), (1,), (7,), (3, 5), (1000, 3), (LARGE,)]
FLOATS = [ec.float32, ec.float16, ec.bfloat16, ec.float64]


def _same_bits(cpu, gpu, what):
    assert gpu.device.type == CUDA, f"{what}: on {gpu.device}"
    assert gpu.dtype == cpu.dtype and tuple(gpu.shape) == tuple(cpu.shape), what
    a, b = bits(cpu), bits(gpu)
    if not np.array_equal(a, b):
        diff = np.flatnonzero(a.reshape(-1) != b.reshape(-1))
        first = diff[0]
        raise AssertionError(
            f"{what}: {diff.size} of {a.size} values differ between CPU and CUDA Philox; "
            f"first at flat index {first}: CPU {cpu.reshape(-1)[first].item()!r} vs "
            f"CUDA {gpu.reshape(-1)[first].item()!r}"
        )


def _both(fn, seed=1234):
    ec.manual_seed(seed)
    cpu = fn("cpu")
    ec.manual_seed(seed)
    gpu = fn(CUDA)
    return cpu, gpu


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("op", ["rand", "randn"])
def test_rand_randn_bit_identical(op, shape, dtype):
    f = getattr(ec, op)
    cpu, gpu = _both(lambda d: f(shape, dtype=dtype, device=d))
    _same_bits(cpu, gpu, f"{op}{shape} {dtype}")


@pytest.mark.parametrize("dtype", [ec.int64, ec.int32, ec.uint8, ec.int16], ids=str)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_randint_bit_identical(shape, dtype):
    cpu, gpu = _both(
        lambda d: ec.randint(-5 if dtype is not ec.uint8 else 0, 100, shape, dtype=dtype, device=d)
    )
    _same_bits(cpu, gpu, f"randint{shape} {dtype}")
    big, bgpu = _both(lambda d: ec.randint(0, 2**40, shape, device=d))
    _same_bits(big, bgpu, f"randint(0, 2**40){shape}")


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("shape", [(), (9,), (33, 65), (LARGE,)], ids=str)
def test_inplace_samplers_bit_identical(shape, dtype):
    for name, fn in [
        ("uniform_", lambda t: t.uniform_(-2, 3)),
        ("normal_", lambda t: t.normal_(1.5, 0.5)),
        ("bernoulli_", lambda t: t.bernoulli_(0.3)),
    ]:
        cpu, gpu = _both(lambda d, fn=fn: fn(ec.empty(shape, dtype=dtype, device=d)))
        _same_bits(cpu, gpu, f"{name}{shape} {dtype}")


@pytest.mark.parametrize("shape", [(), (9,), (33, 65), (LARGE,)], ids=str)
def test_bernoulli_normal_and_likes_bit_identical(shape):
    p = np.random.default_rng(5).random(shape).astype(np.float32)
    cpu, gpu = _both(lambda d: ec.bernoulli(ec.tensor(p, device=d)))
    _same_bits(cpu, gpu, f"bernoulli(p tensor){shape}")
    cpu, gpu = _both(lambda d: ec.bernoulli(ec.tensor(p, device=d), 0.7))
    _same_bits(cpu, gpu, f"bernoulli(p=0.7){shape}")
    cpu, gpu = _both(lambda d: ec.normal(0.5, 2.0, shape if shape else (1,), device=d))
    _same_bits(cpu, gpu, f"normal(0.5, 2.0, {shape})")
    mean = ec.tensor(p)
    cpu, gpu = _both(lambda d: ec.normal(mean.to(d), 1.0))
    _same_bits(cpu, gpu, f"normal(mean tensor){shape}")
    cpu, gpu = _both(lambda d: ec.rand_like(ec.zeros(shape, device=d)))
    _same_bits(cpu, gpu, f"rand_like{shape}")
    cpu, gpu = _both(lambda d: ec.randn_like(ec.zeros(shape, device=d, dtype=ec.float64)))
    _same_bits(cpu, gpu, f"randn_like{shape}")


@pytest.mark.parametrize("dtype", [ec.float32, ec.bfloat16, ec.float16], ids=str)
@pytest.mark.parametrize("p", [0.1, 0.5])
def test_dropout_masks_bit_identical(p, dtype):
    shape = (257, 1031)
    cpu, gpu = _both(lambda d: ec.dropout(ec.ones(shape, dtype=dtype, device=d), p, True))
    _same_bits(cpu, gpu, f"dropout(p={p}) {dtype}")
    cpu, gpu = _both(lambda d: ec.native_dropout(ec.ones(shape, dtype=dtype, device=d), p, True))
    _same_bits(cpu[1], gpu[1], f"native_dropout mask (p={p}) {dtype}")
    _same_bits(cpu[0], gpu[0], f"native_dropout output (p={p}) {dtype}")


def test_consecutive_draws_stay_in_step():
    """The offset advances the same on both devices: a sequence of different draws
    after one seed matches draw by draw."""

    def seq(d):
        return [
            ec.rand(100, device=d),
            ec.randn(7, 3, device=d),
            ec.randint(0, 10, (5,), device=d),
            ec.rand(LARGE, device=d),
            ec.empty(33, device=d).normal_(),
            ec.rand((), device=d),
        ]

    cpu, gpu = _both(seq, seed=99)
    for i, (c, g) in enumerate(zip(cpu, gpu)):
        _same_bits(c, g, f"draw {i}")


def test_generator_objects():
    gc = ec.Generator().manual_seed(7)
    gg = ec.Generator(device=CUDA).manual_seed(7)
    a = ec.rand(1000, generator=gc)
    b = ec.rand(1000, generator=gg, device=CUDA)
    _same_bits(a, b, "rand with explicit generators")
    a2 = ec.randn(50, generator=gc)
    b2 = ec.randn(50, generator=gg, device=CUDA)
    _same_bits(a2, b2, "second draw with explicit generators")


@pytest.mark.skipif(SELFTEST, reason="needs a real GPU")
def test_cuda_manual_seed_seeds_the_cuda_generator():
    ec.cuda.manual_seed(4321)
    g = ec.rand(500, device="cuda")
    ec.manual_seed(4321)
    c = ec.rand(500)
    _same_bits(c, g, "cuda.manual_seed vs manual_seed")
    ec.cuda.manual_seed_all(11)
    g2 = ec.randn(500, device="cuda")
    ec.manual_seed(11)
    c2 = ec.randn(500)
    _same_bits(c2, g2, "cuda.manual_seed_all vs manual_seed")
    # different seeds differ
    ec.cuda.manual_seed(1)
    x = ec.rand(100, device="cuda")
    ec.cuda.manual_seed(2)
    y = ec.rand(100, device="cuda")
    assert not equal(x, y)


def test_distribution_sanity_on_cuda():
    """Not only equal to the CPU: the numbers look like what was asked for."""
    ec.manual_seed(3)
    u = ec.rand(LARGE, device=CUDA).cpu().numpy()
    n = ec.randn(LARGE, device=CUDA).cpu().numpy()
    assert u.min() >= 0.0 and u.max() < 1.0
    assert abs(u.mean() - 0.5) < 2e-3 and abs(n.mean()) < 5e-3 and abs(n.std() - 1) < 5e-3


def test_other_samplers_run_on_cuda():
    """Samplers without the bit-identity promise: they run on CUDA, stay on CUDA,
    and give values of the right kind (ranges, integrality, permutations)."""
    d = CUDA
    ec.manual_seed(0)
    n = 1 << 16
    e = ec.empty(n, device=d).exponential_(2.0)
    assert e.device.type == CUDA and e.min().item() >= 0 and abs(e.mean().item() - 0.5) < 0.02
    g = ec.empty(n, device=d).geometric_(0.25)
    assert g.min().item() >= 1 and float(ec.all(g == g.floor())) == 1.0
    ln = ec.empty(n, device=d).log_normal_(0.0, 0.5)
    assert ln.min().item() > 0
    c = ec.empty(n, device=d).cauchy_()
    assert ec.isfinite(c).all().item()
    r = ec.empty(n, dtype=ec.int64, device=d).random_(0, 10)
    assert r.min().item() >= 0 and r.max().item() <= 9
    r2 = ec.randint_like(ec.empty(n, device=d), 3, 7)
    assert r2.min().item() >= 3 and r2.max().item() <= 6
    p = ec.randperm(10_000, device=d)
    assert p.device.type == CUDA and equal(p.sort()[0].cpu(), ec.arange(10_000))
    probs = ec.tensor([[0.1, 0.0, 0.9], [0.5, 0.5, 0.0]], device=d)
    m = ec.multinomial(probs, 50, replacement=True)
    assert m.shape == (2, 50) and not (m[0] == 1).any().item() and not (m[1] == 2).any().item()
    po = ec.poisson(ec.full((n,), 3.0, device=d))
    assert float(ec.all(po == po.floor())) == 1.0 and abs(po.mean().item() - 3.0) < 0.1
    bi = ec.binomial(ec.full((n,), 10.0, device=d), ec.full((n,), 0.3, device=d))
    assert bi.max().item() <= 10 and abs(bi.mean().item() - 3.0) < 0.1
    ga = ec._standard_gamma(ec.full((n,), 2.0, device=d))
    assert ga.min().item() > 0 and abs(ga.mean().item() - 2.0) < 0.1
    di = ec._sample_dirichlet(ec.ones(100, 4, device=d))
    np.testing.assert_allclose(di.sum(1).cpu().numpy(), 1.0, atol=1e-5)
    x = ec.ones(1000, 8, device=d)
    for f in (ec.alpha_dropout, ec.feature_alpha_dropout, ec.feature_dropout):
        y = f(x, 0.5, True)
        assert y.device.type == CUDA and y.shape == x.shape
    for f in (ec.alpha_dropout_, ec.feature_alpha_dropout_, ec.feature_dropout_, ec.dropout_):
        y = f(x.clone(), 0.5, True)
        assert y.device.type == CUDA
    rr = ec.rrelu_(ec.full((n,), -1.0, device=d), 0.1, 0.3, True)
    assert rr.max().item() <= -0.1 + 1e-6 and rr.min().item() >= -0.3 - 1e-6


RANDOM_OPS = (
    "rand",
    "randn",
    "randint",
    "bernoulli",
    "bernoulli_",
    "normal",
    "normal_",
    "uniform_",
    "rand_like",
    "randn_like",
    "dropout",
    "native_dropout",
    "exponential_",
    "geometric_",
    "log_normal_",
    "cauchy_",
    "random_",
    "randint_like",
    "randperm",
    "multinomial",
    "poisson",
    "binomial",
    "_standard_gamma",
    "_sample_dirichlet",
    "alpha_dropout",
    "alpha_dropout_",
    "feature_alpha_dropout",
    "feature_alpha_dropout_",
    "feature_dropout",
    "feature_dropout_",
    "dropout_",
    "rrelu_",
)
