"""Autograd on complex tensors in PyTorch's convention (Note [Complex gradients]):
the gradient of a real loss with respect to a complex leaf is dL/d(re) + i dL/d(im),
checked by finite differences (gradcheck takes complex inputs as pairs of reals)
and against PyTorch (parity)."""

import numpy as np
import pytest

import ember_autograd as ag
import ember_core as ec

RNG = np.random.default_rng(0)


def _z(shape, lo=0.5, hi=1.5):
    v = RNG.uniform(lo, hi, shape) + 1j * RNG.uniform(lo, hi, shape)
    return v.astype(np.complex128)


# f(ns, z, w): complex in, complex or real out
FUNCS = {
    "mul": lambda ns, z, w: z * w,
    "div": lambda ns, z, w: z / w,
    "exp-log": lambda ns, z, w: (z.exp() + w.log()) * z,
    "sqrt-sin": lambda ns, z, w: z.sqrt() * w.sin(),
    "tanh-sigmoid": lambda ns, z, w: z.tanh() + w.sigmoid(),
    "pow": lambda ns, z, w: z**3 + z**w,
    "matmul": lambda ns, z, w: z @ w.mT,
    "abs-angle": lambda ns, z, w: z.abs() * w.angle(),
    "conj-real-imag": lambda ns, z, w: z.conj() * w.real + w.imag,
    "sum-mean": lambda ns, z, w: (z * w).sum(1) + z.mean(1),
    "prod-cumprod": lambda ns, z, w: z.prod(1) + (z * w).cumprod(1)[:, -1] + w.prod(),
    "cumsum-var": lambda ns, z, w: z.cumsum(0) * w.var(),
    "lerp-addcmul-addcdiv": lambda ns, z, w: (
        ns.lerp(z, w, 0.3) + ns.addcmul(z, z, w, value=2) + ns.addcdiv(w, z, w, value=0.5)
    ),
    "logaddexp-sinc": lambda ns, z, w: ns.logaddexp(z, w) * ns.sinc(z * 0.3),
    "indexing": lambda ns, z, w: (
        z[ns.tensor([0, 2, 0])][:, :3] * w[:, ns.tensor([1, 1, 3])]
        + z.gather(1, ns.tensor([[0, 0, 2]] * 3))
        + z.take(ns.tensor([5, 5, -1]))
        + w[z.real > 1].sum()
    ),
    "view_as_real": lambda ns, z, w: ns.view_as_real(z * w),
    "fft": lambda ns, z, w: ns.fft.fft(z * w, n=5, norm="ortho"),
    "ifft2": lambda ns, z, w: ns.fft.ifft2(z) * w,
    "irfft": lambda ns, z, w: ns.fft.irfft(z * w, n=7),
    "hfft": lambda ns, z, w: ns.fft.hfft(z, n=4) * w.abs(),
}


@pytest.mark.parametrize("name", sorted(FUNCS))
def test_gradcheck_complex(name):
    z = ec.tensor(_z((3, 4)), requires_grad=True)
    w = ec.tensor(_z((3, 4)), requires_grad=True)
    assert ag.gradcheck(lambda a, b: FUNCS[name](ec, a, b), (z, w))


def test_gradcheck_real_to_complex():
    # a real leaf meeting complex values gets the real part of the gradient
    x = ec.tensor(RNG.standard_normal((2, 6)), requires_grad=True)
    assert ag.gradcheck(lambda t: ec.fft.rfft(t) * (1 + 2j), (x,))
    assert ag.gradcheck(lambda t: ec.complex(t, t * t), (x,))
    assert ag.gradcheck(lambda t: ec.fft.ihfft(t, n=5), (x,))
    (g,) = ag.grad((ec.fft.rfft(x).abs() ** 2).sum(), (x,))
    assert g.dtype is ec.float64


def test_gradgradcheck_complex():
    z = ec.tensor(_z((2, 3)), requires_grad=True)
    assert ag.gradgradcheck(lambda a: ec.view_as_real(a) * 2, (z,))
    assert ag.gradgradcheck(lambda a: ec.fft.fft(a), (z,))


def test_backward_of_a_real_loss():
    z = ec.tensor([1 + 2j, -0.5 + 1j], requires_grad=True)
    (z.abs() ** 2).sum().backward()
    # d|z|^2/da + i d|z|^2/db = 2a + 2ib = 2z
    np.testing.assert_allclose(z.grad.numpy(), 2 * z.detach().numpy())
    assert z.grad.dtype is ec.complex64
    with pytest.raises(RuntimeError, match="real scalar outputs"):
        (z * z).sum().backward()


@pytest.mark.parity
@pytest.mark.parametrize("name", sorted(FUNCS))
def test_parity_with_torch(name):
    torch = pytest.importorskip("torch")
    zv, wv = _z((3, 4)), _z((3, 4))
    grads = []
    for ns in (ec, torch):
        z = ns.tensor(zv, requires_grad=True)
        w = ns.tensor(wv, requires_grad=True)
        out = FUNCS[name](ns, z, w)
        # a real loss of every output element
        parts = ns.view_as_real(out) if out.is_complex() else out
        weights = ns.tensor(np.random.default_rng(1).standard_normal(tuple(parts.shape)))
        loss = (parts * weights).sum()
        grad = torch.autograd.grad if ns is torch else ag.grad
        grads.append([g.detach().resolve_conj().numpy() for g in grad(loss, (z, w))])
    for e, t in zip(*grads):
        np.testing.assert_allclose(e, t, rtol=1e-9, atol=1e-10)
