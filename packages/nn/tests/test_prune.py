"""ember.nn.utils.prune: masks, the reparametrization, iterative and global pruning,
removal, and bad input; the deterministic methods against PyTorch's."""

import numpy as np
import pytest

import ember_autograd as ag
import ember_core as ec
import ember_nn as nn
from ember_nn.utils import prune


def _linear(seed=0, i=6, o=4):
    layer = nn.Linear(i, o)
    rng = np.random.RandomState(seed)
    with ag.no_grad():
        layer.weight.copy_(ec.tensor(rng.randn(o, i).astype(np.float32)))
        layer.bias.copy_(ec.tensor(rng.randn(o).astype(np.float32)))
    return layer


def test_l1_unstructured_reparametrizes_and_masks_the_smallest():
    layer = _linear()
    w = layer.weight.detach().clone()
    prune.l1_unstructured(layer, "weight", amount=0.25)
    names = [n for n, _ in layer.named_parameters()]
    assert "weight_orig" in names and "weight" not in names
    assert "weight_mask" in dict(layer.named_buffers())
    mask = layer.weight_mask
    assert int((mask == 0).sum()) == 6  # round(0.25 * 24)
    cutoff = np.sort(np.abs(w.numpy()).ravel())[5]
    assert (np.abs(w.numpy())[mask.numpy() == 0] <= cutoff).all()
    np.testing.assert_array_equal(layer.weight.detach().numpy(), (w * mask).numpy())
    assert prune.is_pruned(layer)


def test_the_hook_reapplies_the_mask_and_gradients_reach_orig():
    layer = _linear()
    prune.l1_unstructured(layer, "weight", amount=3)
    with ag.no_grad():
        layer.weight_orig.add_(1.0)  # a training step changes orig; forward re-masks
    x = ec.randn(2, 6)
    out = layer(x)
    np.testing.assert_allclose(
        layer.weight.detach().numpy(),
        (layer.weight_orig * layer.weight_mask).detach().numpy(),
    )
    out.sum().backward()
    g = layer.weight_orig.grad.numpy()
    assert (g[layer.weight_mask.numpy() == 0] == 0).all()
    assert (g[layer.weight_mask.numpy() == 1] != 0).any()


def test_iterative_pruning_only_prunes_what_is_left_and_remove_makes_it_permanent():
    layer = _linear()
    prune.l1_unstructured(layer, "weight", amount=4)
    prune.l1_unstructured(layer, "weight", amount=4)
    hooks = [h for h in layer._forward_pre_hooks.values() if isinstance(h, prune.BasePruningMethod)]
    assert len(hooks) == 1 and isinstance(hooks[0], prune.PruningContainer) and len(hooks[0]) == 2
    assert int((layer.weight_mask == 0).sum()) == 8
    prune.ln_structured(layer, "weight", amount=1, n=2, dim=0)
    assert int((layer.weight_mask.sum(1) == 0).sum()) >= 1
    pruned = layer.weight.detach().clone()
    prune.remove(layer, "weight")
    assert isinstance(layer.weight, nn.Parameter)
    assert "weight_orig" not in dict(layer.named_parameters())
    assert "weight_mask" not in dict(layer.named_buffers())
    np.testing.assert_array_equal(layer.weight.detach().numpy(), pruned.numpy())
    assert not prune.is_pruned(layer)
    with pytest.raises(ValueError, match="has to be pruned before"):
        prune.remove(layer, "weight")


def test_structured_random_custom_identity_and_global():
    conv = nn.Conv2d(3, 8, 3)
    prune.ln_structured(conv, "weight", amount=0.5, n=1, dim=0)
    per_channel = conv.weight_mask.sum(dim=(1, 2, 3)).numpy()
    assert sorted(set(per_channel.tolist())) == [0.0, 27.0] and (per_channel == 0).sum() == 4
    norms = conv.weight_orig.detach().abs().sum(dim=(1, 2, 3)).numpy()
    assert norms[per_channel == 0].max() <= norms[per_channel > 0].min()
    lin = _linear()
    prune.random_unstructured(lin, "bias", amount=2)
    assert int((lin.bias_mask == 0).sum()) == 2
    prune.random_structured(lin, "weight", amount=2, dim=1)
    assert int((lin.weight_mask.sum(0) == 0).sum()) == 2
    lin2 = _linear(1)
    mask = ec.tensor([[1, 0] * 3] * 4)
    prune.custom_from_mask(lin2, "weight", mask)
    np.testing.assert_array_equal(lin2.weight_mask.numpy(), mask.float().numpy())
    prune.identity(lin2, "bias")
    assert float(lin2.bias_mask.sum()) == 4
    a, b = _linear(2), _linear(3, i=4, o=4)
    every = np.concatenate([a.weight.detach().numpy().ravel(), b.weight.detach().numpy().ravel()])
    prune.global_unstructured([(a, "weight"), (b, "weight")], prune.L1Unstructured, amount=10)
    zeroed = np.concatenate([a.weight_mask.numpy().ravel(), b.weight_mask.numpy().ravel()]) == 0
    assert zeroed.sum() == 10
    assert np.abs(every[zeroed]).max() <= np.abs(every[~zeroed]).min()
    with pytest.raises(TypeError, match="unstructured"):
        prune.global_unstructured([(a, "bias")], prune.LnStructured, amount=1, n=2, dim=0)


def test_bad_amounts_and_shapes_raise_and_leave_the_module_alone():
    layer = _linear()
    with pytest.raises(ValueError, match="amount=1.5"):
        prune.l1_unstructured(layer, "weight", amount=1.5)
    with pytest.raises(ValueError, match="amount=-1"):
        prune.l1_unstructured(layer, "weight", amount=-1)
    with pytest.raises(TypeError, match="Must be int or float"):
        prune.l1_unstructured(layer, "weight", amount="half")
    with pytest.raises(ValueError, match="should be smaller than the number"):
        prune.l1_unstructured(layer, "weight", amount=100)
    assert "weight" in dict(layer.named_parameters()) and not prune.is_pruned(layer)
    with pytest.raises(ValueError, match="multidimensional"):
        prune.ln_structured(layer, "bias", amount=1, n=2, dim=0)
    with pytest.raises(IndexError, match="Invalid index 3"):
        prune.ln_structured(layer, "weight", amount=1, n=2, dim=3)
    with pytest.raises(ValueError, match="importance_scores"):
        prune.l1_unstructured(layer, "weight", amount=1, importance_scores=ec.ones(3))


@pytest.mark.parity
def test_deterministic_methods_match_pytorch(torch):
    import torch.nn.utils.prune  # noqa: F401 - a submodule torch does not import itself

    rng = np.random.RandomState(0)
    signs = rng.choice([-1.0, 1.0], size=(6, 8))
    w = ((rng.permutation(48).reshape(6, 8) + 1) * signs).astype(np.float32)  # no ties
    results = {}
    for lib, p, make in (
        ("ember", prune, lambda: nn.Linear(8, 6)),
        ("torch", torch.nn.utils.prune, lambda: torch.nn.Linear(8, 6)),
    ):
        layer = make()
        layer.weight.data = (ec if lib == "ember" else torch).tensor(w)
        p.l1_unstructured(layer, "weight", amount=0.3)
        p.ln_structured(layer, "weight", amount=2, n=1, dim=0)
        p.l1_unstructured(layer, "weight", amount=5)
        masks = [layer.weight_mask.numpy().copy()]
        p.remove(layer, "weight")
        other = make()
        other.weight.data = (ec if lib == "ember" else torch).tensor(w[::-1].copy())
        p.global_unstructured([(layer, "weight"), (other, "weight")], p.L1Unstructured, amount=0.4)
        masks += [layer.weight_mask.numpy().copy(), other.weight_mask.numpy().copy()]
        results[lib] = masks
    for mine, theirs in zip(results["ember"], results["torch"]):
        np.testing.assert_array_equal(mine, theirs)
