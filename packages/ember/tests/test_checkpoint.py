"""ember.utils.checkpoint: recomputation gives the same outputs and gradients as
the plain forward (dropout included, through the saved generator state), for
inputs, parameters only, tuple outputs and checkpoint_sequential; parity with
PyTorch on the same weights."""

import numpy as np
import pytest

import ember as torch
import ember.nn as nn
from ember.utils.checkpoint import checkpoint, checkpoint_sequential


def _model():
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Linear(4, 8), nn.Tanh(), nn.Dropout(0.5), nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 2)
    )


def _grads(m):
    return [p.grad.numpy().copy() for p in m.parameters()]


@pytest.mark.parametrize("use_reentrant", [False, True])
def test_same_outputs_and_gradients_as_plain_forward(use_reentrant):
    m = _model()
    x = torch.randn(5, 4, dtype=torch.float64, requires_grad=True)
    m.double()
    state = torch.get_rng_state()
    y = m(x)
    (y**2).sum().backward()
    ref, ref_x = _grads(m), x.grad.numpy().copy()
    m.zero_grad()
    x.grad = None
    torch.set_rng_state(state)
    y2 = checkpoint(m, x, use_reentrant=use_reentrant)
    np.testing.assert_array_equal(y2.detach().numpy(), y.detach().numpy())
    (y2**2).sum().backward()
    for a, p in zip(ref, m.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), a, rtol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), ref_x, rtol=1e-12)


def test_parameters_only_and_generator_left_as_after_forward():
    m = _model()
    x = torch.randn(3, 4)  # no input requires grad: parameters still get gradients
    y = checkpoint(m, x, use_reentrant=False)
    after_forward = torch.rand(4)
    y.sum().backward()
    assert all(p.grad is not None for p in m.parameters())
    # backward restored the generator it borrowed for the recomputation
    y = checkpoint(m, x, use_reentrant=False)
    state = torch.get_rng_state()
    y.sum().backward()
    np.testing.assert_array_equal(torch.get_rng_state().numpy(), state.numpy())
    assert after_forward.shape == (4,)


def test_tuple_outputs_kwargs_and_no_grad():
    w = torch.randn(3, requires_grad=True)

    def f(a, scale=1.0):
        return a * w * scale, (a + w).sum()

    a = torch.randn(3, requires_grad=True)
    u, v = checkpoint(f, a, scale=2.0, use_reentrant=False)
    (u.sum() + v).backward()
    np.testing.assert_allclose(w.grad.numpy(), 2 * a.detach().numpy() + 1, rtol=1e-6)
    np.testing.assert_allclose(a.grad.numpy(), 2 * w.detach().numpy() + 1, rtol=1e-6)
    with torch.no_grad():
        u, _ = checkpoint(f, a, use_reentrant=False)
    assert not u.requires_grad
    with pytest.warns(UserWarning, match="use_reentrant"):
        checkpoint(f, a)


def test_checkpoint_sequential_matches_plain():
    m = nn.Sequential(*[nn.Linear(4, 4) for _ in range(5)])
    x = torch.randn(2, 4, requires_grad=True)
    m(x).sum().backward()
    ref = _grads(m)
    m.zero_grad()
    out = checkpoint_sequential(m, 3, x, use_reentrant=False)
    out.sum().backward()
    for a, p in zip(ref, m.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), a, rtol=1e-5, atol=1e-7)


@pytest.mark.parity
def test_gradients_match_torch():
    real = pytest.importorskip("torch")
    import torch.utils.checkpoint as real_ckpt

    rng = np.random.default_rng(0)
    ws = [rng.standard_normal((4, 4)) for _ in range(3)]
    xv = rng.standard_normal((2, 4))

    def run(lib, ckpt):
        params = [lib.tensor(w, requires_grad=True) for w in ws]
        x = lib.tensor(xv, requires_grad=True)

        def block(h):
            for w in params[:2]:
                h = lib.tanh(h @ w)
            return h

        out = ckpt(block, x, use_reentrant=False) @ params[2]
        (out**2).sum().backward()
        return [p.grad.numpy() for p in params] + [x.grad.numpy()]

    for a, b in zip(run(torch, checkpoint), run(real, real_ckpt.checkpoint)):
        np.testing.assert_allclose(a, b, rtol=1e-12)
