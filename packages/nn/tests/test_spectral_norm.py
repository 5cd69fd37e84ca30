"""The hook-based spectral_norm: sigma against NumPy's SVD after power iteration,
state_dict keys and metadata, remove_spectral_norm, version-0 checkpoints, and
PyTorch parity (outputs, u/v updates, gradients of weight_orig)."""

import types

import numpy as np
import pytest
from _parity import to_numpy

import ember_autograd as ag
import ember_core as ec
import ember_nn as nn
from ember_nn.utils import remove_spectral_norm, spectral_norm
from ember_nn.utils.spectral_norm import SpectralNorm


def test_power_iteration_converges_to_top_singular_value(rng):
    lin = spectral_norm(nn.Linear(6, 5).double())
    for _ in range(50):
        lin(ec.randn(2, 6, dtype=ec.float64))
    w = to_numpy(lin.weight_orig)
    sigma = np.linalg.svd(w, compute_uv=False)[0]
    np.testing.assert_allclose(to_numpy(lin.weight), w / sigma, atol=1e-8)


def test_keys_metadata_and_remove():
    conv = spectral_norm(nn.Conv2d(2, 3, 3))
    sd = conv.state_dict()
    assert list(sd) == ["bias", "weight_orig", "weight_u", "weight_v"]
    assert sd._metadata[""]["spectral_norm"] == {"weight.version": 1}
    assert tuple(conv.weight_u.shape) == (3,) and tuple(conv.weight_v.shape) == (18,)
    with pytest.raises(RuntimeError, match="Cannot register two spectral_norm hooks"):
        spectral_norm(conv)
    conv.eval()
    before = to_numpy(conv.weight_orig) / float(
        ec.dot(conv.weight_u, ec.mv(conv.weight_orig.reshape(3, -1), conv.weight_v))
    )
    remove_spectral_norm(conv)
    assert sorted(n for n, _ in conv.named_parameters()) == ["bias", "weight"]
    assert list(conv.state_dict()) == ["bias", "weight"]  # re-registered last, as torch
    np.testing.assert_allclose(to_numpy(conv.weight), before, rtol=1e-5)
    with pytest.raises(ValueError, match="spectral_norm of 'weight' not found"):
        remove_spectral_norm(conv)
    with pytest.raises(ValueError, match="Expected n_power_iterations to be positive"):
        spectral_norm(nn.Linear(2, 2), n_power_iterations=0)


def test_transposed_conv_uses_dim_1():
    ct = spectral_norm(nn.ConvTranspose2d(3, 4, 2))
    assert tuple(ct.weight_u.shape) == (4,) and tuple(ct.weight_v.shape) == (12,)


def test_gradcheck(rng):
    """d(weight)/d(weight_orig) through the hook's own computation (u, v fixed)."""
    lin = spectral_norm(nn.Linear(4, 3).double())
    fn = next(h for h in lin._forward_pre_hooks.values() if isinstance(h, SpectralNorm))
    u, v = lin.weight_u, lin.weight_v

    def weight(w):
        holder = types.SimpleNamespace(weight_orig=w, weight_u=u, weight_v=v)
        return fn.compute_weight(holder, do_power_iteration=False)

    w = ec.tensor(rng.standard_normal((3, 4)), requires_grad=True)
    assert ag.gradcheck(weight, (w,))


@pytest.mark.parity
@pytest.mark.parametrize("n_iter", [1, 3])
def test_parity(torch, rng, n_iter):
    t = torch.nn.utils.spectral_norm(torch.nn.Conv2d(3, 4, 3).double(), n_power_iterations=n_iter)
    e = spectral_norm(nn.Conv2d(3, 4, 3).double(), n_power_iterations=n_iter)
    sd = t.state_dict()
    assert list(e.state_dict()) == list(sd)
    e.load_state_dict({k: ec.tensor(v.numpy()) for k, v in sd.items()})
    x = rng.standard_normal((2, 3, 6, 6))
    for train in (True, True, False):
        t.train(train)
        e.train(train)
        ty, ey = t(torch.tensor(x)), e(ec.tensor(x))
        np.testing.assert_allclose(to_numpy(ey), to_numpy(ty), atol=1e-10)
        np.testing.assert_allclose(to_numpy(e.weight_u), to_numpy(t.weight_u), atol=1e-10)
        np.testing.assert_allclose(to_numpy(e.weight_v), to_numpy(t.weight_v), atol=1e-10)
    t.train()
    e.train()
    ty, ey = t(torch.tensor(x)), e(ec.tensor(x))
    ty.sum().backward()
    ey.sum().backward()
    np.testing.assert_allclose(
        to_numpy(e.weight_orig.grad), to_numpy(t.weight_orig.grad), atol=1e-9
    )


@pytest.mark.parity
def test_parity_version_0_checkpoint(torch, rng):
    t = torch.nn.utils.spectral_norm(torch.nn.Linear(5, 3).double())
    t(torch.randn(2, 5, dtype=torch.float64))
    sd = t.state_dict()
    old = {
        "weight_orig": sd["weight_orig"],
        "weight_u": sd["weight_u"],
        "weight": t.weight.detach(),
        "bias": sd["bias"],
    }
    t2 = torch.nn.utils.spectral_norm(torch.nn.Linear(5, 3).double()).eval()
    t2.load_state_dict(old)
    e = spectral_norm(nn.Linear(5, 3).double()).eval()
    e.load_state_dict({k: ec.tensor(v.numpy()) for k, v in old.items()})
    x = rng.standard_normal((4, 5))
    np.testing.assert_allclose(to_numpy(e(ec.tensor(x))), to_numpy(t2(torch.tensor(x))), atol=1e-8)
