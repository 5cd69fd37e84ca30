"""weight_norm and spectral_norm (parametrizations) and the hook-based
weight_norm: values against NumPy (norms, singular values), and outputs,
gradients, state_dict keys and power-iteration vectors against PyTorch."""

import importlib

import numpy as np
import pytest
from _parity import to_numpy

import ember_autograd as ag
import ember_core as ec
import ember_nn as nn
from ember_nn.utils import parametrizations as PZ

# the module, not the function of the same name that ember_nn.utils exports (as torch)
old_wn = importlib.import_module("ember_nn.utils.weight_norm")


def _set(module, **values):
    with ag.no_grad():
        for k, v in values.items():
            getattr(module, k).copy_(ec.tensor(v))


@pytest.mark.parametrize("dim", [0, 1, None])
def test_weight_norm_value_and_split(rng, dim):
    W = rng.standard_normal((4, 3, 2))
    conv = nn.Conv1d(3, 4, 2).double()
    _set(conv, weight=W)
    PZ.weight_norm(conv, dim=dim)
    g = to_numpy(conv.parametrizations.weight.original0)
    v = to_numpy(conv.parametrizations.weight.original1)
    if dim is None:
        np.testing.assert_allclose(g, np.linalg.norm(W))
    else:
        axes = tuple(a for a in range(3) if a != dim)
        np.testing.assert_allclose(g, np.sqrt((W**2).sum(axis=axes, keepdims=True)))
    np.testing.assert_allclose(v, W)
    np.testing.assert_allclose(to_numpy(conv.weight), W, rtol=1e-12)
    # doubling g doubles the weight
    with ag.no_grad():
        conv.parametrizations.weight.original0.mul_(2)
    np.testing.assert_allclose(to_numpy(conv.weight), 2 * W, rtol=1e-12)


def test_spectral_norm_divides_by_top_singular_value(rng):
    lin = nn.Linear(5, 4).double()
    W = rng.standard_normal((4, 5))
    _set(lin, weight=W)
    PZ.spectral_norm(lin, n_power_iterations=30)
    lin.train()
    out = to_numpy(lin.weight)
    np.testing.assert_allclose(out, W / np.linalg.svd(W, compute_uv=False)[0], rtol=1e-8)
    assert set(lin.state_dict()) == {
        "bias",
        "parametrizations.weight.original",
        "parametrizations.weight.0._u",
        "parametrizations.weight.0._v",
    }
    lin.eval()  # eval mode: no power iteration, the same vectors
    u = to_numpy(lin.parametrizations.weight[0]._u).copy()
    lin.weight  # noqa: B018
    np.testing.assert_array_equal(to_numpy(lin.parametrizations.weight[0]._u), u)


def test_hook_weight_norm_keys_and_removal(rng):
    lin = nn.Linear(3, 2).double()
    W = rng.standard_normal((2, 3))
    _set(lin, weight=W)
    with pytest.warns(FutureWarning):
        old_wn.weight_norm(lin)
    assert list(lin.state_dict()) == ["bias", "weight_g", "weight_v"]
    np.testing.assert_allclose(to_numpy(lin.weight_g), np.linalg.norm(W, axis=1, keepdims=True))
    with ag.no_grad():
        lin.weight_g.mul_(3)
    x = rng.standard_normal((1, 3))
    out = to_numpy(lin(ec.tensor(x)))
    np.testing.assert_allclose(out, x @ (3 * W).T + to_numpy(lin.bias), rtol=1e-12)
    old_wn.remove_weight_norm(lin)
    assert list(lin.state_dict()) == ["bias", "weight"]
    np.testing.assert_allclose(to_numpy(lin.weight), 3 * W, rtol=1e-12)
    with pytest.raises(ValueError, match="weight_norm"):
        old_wn.remove_weight_norm(lin)


@pytest.mark.parity
@pytest.mark.parametrize("dim", [0, 1, None])
def test_weight_norm_matches_torch(torch, rng, dim):
    W, x = rng.standard_normal((4, 3, 2)), rng.standard_normal((2, 3, 5))
    ours, theirs = nn.Conv1d(3, 4, 2).double(), torch.nn.Conv1d(3, 4, 2).double()
    _set(ours, weight=W, bias=np.zeros(4))
    with torch.no_grad():
        theirs.weight.copy_(torch.from_numpy(W))
        theirs.bias.zero_()
    PZ.weight_norm(ours, dim=dim)
    torch.nn.utils.parametrizations.weight_norm(theirs, dim=dim)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    a, b = ours(ec.tensor(x)), theirs(torch.from_numpy(x))
    (a**2).sum().backward()
    (b**2).sum().backward()
    np.testing.assert_allclose(to_numpy(a), b.detach().numpy(), rtol=1e-12)
    for p, q in zip(ours.parameters(), theirs.parameters()):
        np.testing.assert_allclose(to_numpy(p.grad), q.grad.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parity
def test_spectral_norm_matches_torch(torch, rng):
    W, x = rng.standard_normal((3, 2, 2, 2)), rng.standard_normal((1, 2, 4, 4))
    ours, theirs = nn.Conv2d(2, 3, 2).double(), torch.nn.Conv2d(2, 3, 2).double()
    _set(ours, weight=W, bias=np.zeros(3))
    with torch.no_grad():
        theirs.weight.copy_(torch.from_numpy(W))
        theirs.bias.zero_()
    PZ.spectral_norm(ours)
    torch.nn.utils.parametrizations.spectral_norm(theirs)
    # the random start vectors differ; give ours torch's, then step both
    for name in ("_u", "_v"):
        t = getattr(theirs.parametrizations.weight[0], name)
        getattr(ours.parametrizations.weight[0], name).copy_(ec.tensor(t.numpy()))
    for _ in range(3):
        a, b = ours(ec.tensor(x)), theirs(torch.from_numpy(x))
        np.testing.assert_allclose(to_numpy(a), b.detach().numpy(), rtol=1e-10)
    a.sum().backward()
    b.sum().backward()
    np.testing.assert_allclose(
        to_numpy(ours.parametrizations.weight.original.grad),
        theirs.parametrizations.weight.original.grad.numpy(),
        rtol=1e-8,
    )
    assert list(ours.state_dict()) == list(theirs.state_dict())


@pytest.mark.parity
def test_hook_weight_norm_matches_torch(torch, rng):
    W = rng.standard_normal((2, 3))
    ours, theirs = nn.Linear(3, 2).double(), torch.nn.Linear(3, 2).double()
    _set(ours, weight=W)
    with torch.no_grad():
        theirs.weight.copy_(torch.from_numpy(W))
    with pytest.warns(FutureWarning):
        old_wn.weight_norm(ours, dim=None)
    theirs = torch.nn.utils.weight_norm(theirs, dim=None)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    for k, v in theirs.state_dict().items():
        if k != "bias":
            np.testing.assert_allclose(to_numpy(ours.state_dict()[k]), v.numpy(), rtol=1e-12)
