"""multinomial on CUDA: the same samples as the CPU for the same seed, bit for
bit (csrc/cuda/multinomial.cuh draws the CPU's Philox numbers and repeats its
double arithmetic), and invalid weights raise by the next synchronisation; the
per-element samplers (random_dist.h on both devices) follow the CPU; plus the
device-side index errors of the indexing kernels, in process (the error word
leaves the context usable)."""

import numpy as np
import pytest

import ember_core as ec

pytestmark = pytest.mark.cuda
HAVE_CUDA = ec.cuda.is_available()
needs_cuda = pytest.mark.skipif(not HAVE_CUDA, reason="no CUDA device")


def _same(fn):
    ec.manual_seed(321)
    a = fn("cpu")
    ec.manual_seed(321)
    b = fn("cuda")
    assert b.device.type == "cuda" and a.shape == b.shape and a.dtype == b.dtype
    np.testing.assert_array_equal(a.numpy(), b.cpu().numpy())


@needs_cuda
@pytest.mark.parametrize("dtype", [ec.float32, ec.float64, ec.float16, ec.bfloat16], ids=str)
@pytest.mark.parametrize("replacement", [True, False])
def test_multinomial_is_bit_identical(dtype, replacement):
    rng = np.random.default_rng(5)
    w = rng.random((37, 50))
    w[:, 3] = 0.0  # a category never drawn
    w[5, :] = 0.0
    w[5, 7] = w[5, 9] = w[5, 11] = 1.0  # a row with three categories

    def run(d):
        t = ec.tensor(w, dtype=dtype, device=d)
        n = 3 if not replacement else 200
        return ec.multinomial(t, n, replacement=replacement)

    _same(run)
    # a 1-d distribution, and the generator advancing alike afterwards
    _same(
        lambda d: ec.cat(
            [ec.multinomial(ec.tensor(w[0], device=d), 40, True), ec.randint(0, 9, (5,), device=d)]
        )
    )


@needs_cuda
def test_multinomial_draws_never_repeat_without_replacement():
    w = ec.rand(64, 1000, device="cuda") + 0.01
    s = ec.multinomial(w, 20)
    srt = s.sort(1).values
    assert not (srt[:, 1:] == srt[:, :-1]).any().item()


@needs_cuda
@pytest.mark.parametrize("bad", [-1.0, float("nan"), float("inf")])
def test_multinomial_invalid_weights_raise(bad):
    w = ec.tensor([[0.2, 0.3, bad], [0.5, 0.5, 0.0]], device="cuda")
    with pytest.raises(RuntimeError, match="multinomial"):
        ec.multinomial(w, 2, replacement=True)
        ec.cuda.synchronize()
    ok = ec.multinomial(ec.tensor([0.0, 1.0], device="cuda"), 3, replacement=True)
    assert ok.tolist() == [1, 1, 1]  # the device is usable afterwards


@needs_cuda
@pytest.mark.parametrize(
    "op",
    [
        lambda x, i: ec.gather(x, 0, i),
        lambda x, i: x[i],
        lambda x, i: x.index_put((i,), ec.ones(3, device="cuda"), accumulate=True),
        lambda x, i: ec.searchsorted(x.sort().values, x + 1, sorter=i),
    ],
    ids=["gather", "getitem", "index_put accumulate", "searchsorted sorter"],
)
def test_out_of_range_indices_raise_at_the_next_synchronisation(op):
    x = ec.zeros(3, device="cuda")
    i = ec.tensor([0, 2, 7], device="cuda")
    with pytest.raises(RuntimeError, match="out of bounds"):
        op(x, i)
        ec.cuda.synchronize()
    assert ec.arange(4, device="cuda").sum().item() == 6  # still usable


@needs_cuda
@pytest.mark.parametrize("dtype", [ec.float32, ec.float64], ids=str)
def test_per_element_samplers_follow_the_cpu(dtype):
    """gamma, its derivative, poisson, binomial and dirichlet run random_dist.h's
    code on the same Philox streams as the CPU: equal up to the platforms'
    log/exp/lgamma rounding (bit for bit where both use the same libm, as on the
    emulator); a rejection test landing within that rounding may rarely change
    a sample."""
    shapes = ec.tensor(np.linspace(0.05, 30.0, 4000), dtype=dtype)

    def draws(d):
        a = shapes.to(d)
        g = ec._standard_gamma(a)
        p = ec.poisson(a)
        b = ec.binomial(ec.full_like(a, 40.0), (a / 31).clamp(0, 1))
        gg = ec._standard_gamma_grad(a, g)
        di = ec._sample_dirichlet(a.reshape(1000, 4)).reshape(-1)
        return ec.stack([g, p, b, gg, di])

    ec.manual_seed(11)
    c = draws("cpu").numpy()
    ec.manual_seed(11)
    u = draws("cuda")
    assert u.device.type == "cuda"
    u = u.cpu().numpy()
    rtol = 1e-5 if dtype == ec.float32 else 1e-12
    close = np.isclose(u, c, rtol=rtol, atol=0)
    assert close.mean() > 0.999, f"{(~close).sum()} of {close.size} samples differ"
    assert np.all(u[1] == np.floor(u[1])) and np.all(u[2] <= 40)
