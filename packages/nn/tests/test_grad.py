"""nn.grad: convolution input/weight gradients against autograd's, gradients of
those gradients by finite differences, and PyTorch parity."""

import numpy as np
import pytest
from _parity import to_numpy

import ember_autograd as ag
import ember_core as ec
import ember_nn as nn

CASES = [
    (1, (2, 4, 11), (6, 2, 3), dict(stride=2, padding=1, dilation=1, groups=2)),
    (2, (2, 3, 7, 8), (4, 3, 3, 2), dict(stride=1, padding=2, dilation=2, groups=1)),
    (3, (1, 2, 5, 6, 4), (3, 2, 2, 3, 2), dict(stride=(1, 2, 1), padding=1)),
]


@pytest.mark.parametrize("nd,xs,ws,kw", CASES)
def test_against_autograd(rng, nd, xs, ws, kw):
    conv = getattr(ec, f"conv{nd}d")
    x = ec.tensor(rng.standard_normal(xs), requires_grad=True)
    w = ec.tensor(rng.standard_normal(ws), requires_grad=True)
    out = conv(x, w, None, **kw)
    go = ec.tensor(rng.standard_normal(tuple(out.shape)))
    gx, gw = ag.grad(out, (x, w), go)
    ix = getattr(nn.grad, f"conv{nd}d_input")(x.shape, w.detach(), go, **kw)
    iw = getattr(nn.grad, f"conv{nd}d_weight")(x.detach(), w.shape, go, **kw)
    np.testing.assert_allclose(to_numpy(ix), to_numpy(gx), atol=1e-10)
    np.testing.assert_allclose(to_numpy(iw), to_numpy(gw), atol=1e-10)
    assert not ix.requires_grad and not iw.requires_grad


def test_differentiable(rng):
    w = ec.tensor(rng.standard_normal((2, 1, 3)), requires_grad=True)
    go = ec.tensor(rng.standard_normal((1, 2, 4)), requires_grad=True)
    assert ag.gradcheck(lambda w, go: nn.grad.conv1d_input((1, 1, 6), w, go), (w, go))
    x = ec.tensor(rng.standard_normal((1, 1, 6)), requires_grad=True)
    assert ag.gradcheck(lambda x, go: nn.grad.conv1d_weight(x, (2, 1, 3), go), (x, go))


def test_shape_error():
    with pytest.raises(RuntimeError, match="grad_output has shape"):
        nn.grad.conv2d_input((1, 1, 5, 5), ec.randn(1, 1, 3, 3), ec.randn(1, 1, 4, 4))


@pytest.mark.parity
@pytest.mark.parametrize("nd,xs,ws,kw", CASES)
def test_parity(torch, rng, nd, xs, ws, kw):
    x, w = rng.standard_normal(xs), rng.standard_normal(ws)
    out_shape = tuple(
        getattr(torch.nn.functional, f"conv{nd}d")(torch.tensor(x), torch.tensor(w), **kw).shape
    )
    go = rng.standard_normal(out_shape)
    for suffix, args_t, args_e in [
        ("input", (xs, torch.tensor(w), torch.tensor(go)), (xs, ec.tensor(w), ec.tensor(go))),
        ("weight", (torch.tensor(x), ws, torch.tensor(go)), (ec.tensor(x), ws, ec.tensor(go))),
    ]:
        t = getattr(torch.nn.grad, f"conv{nd}d_{suffix}")(*args_t, **kw)
        e = getattr(nn.grad, f"conv{nd}d_{suffix}")(*args_e, **kw)
        np.testing.assert_allclose(to_numpy(e), to_numpy(t), atol=1e-10)
