"""parametrize: a registered parametrization recomputes the tensor from its
original (values against NumPy), assignment goes through right_inverse,
chains, caching, removal, state_dict keys, and the errors."""

import numpy as np
import pytest
from _parity import to_numpy

import ember_autograd as ag
import ember_core as ec
import ember_nn as nn
from ember_nn.utils import parametrize as P


class Symmetric(nn.Module):
    def forward(self, X):
        return X.triu() + X.triu(1).transpose(-1, -2)


class Scale(nn.Module):
    def __init__(self, k):
        super().__init__()
        self.k = k

    def forward(self, X):
        return X * self.k

    def right_inverse(self, X):
        return X / self.k


def test_symmetric_weight_and_gradients(rng):
    layer = nn.Linear(3, 3, bias=False).double()
    W = rng.standard_normal((3, 3))
    with ag.no_grad():
        layer.weight.copy_(ec.tensor(W))
    original = layer.weight
    P.register_parametrization(layer, "weight", Symmetric())
    sym = np.triu(W) + np.triu(W, 1).T
    np.testing.assert_allclose(to_numpy(layer.weight), sym)
    assert type(layer).__name__ == "ParametrizedLinear" and isinstance(layer, nn.Linear)
    assert P.type_before_parametrizations(layer) is nn.Linear
    assert P.is_parametrized(layer) and P.is_parametrized(layer, "weight")
    assert not P.is_parametrized(layer, "bias")
    assert layer.parametrizations.weight.original is original  # the same Parameter
    assert list(layer.state_dict()) == ["parametrizations.weight.original"]
    x = rng.standard_normal((2, 3))
    layer(ec.tensor(x)).sum().backward()
    # d/dW of sum(x @ S(W).T): upper triangle gets both (i,j) and (j,i) contributions
    g = np.ones((2, 3)).T @ x
    expected = np.triu(g) + np.triu(g.T, 1)
    np.testing.assert_allclose(to_numpy(original.grad), expected, rtol=1e-12)


def test_right_inverse_assignment_and_chain():
    layer = nn.Linear(2, 2).double()
    P.register_parametrization(layer, "weight", Scale(2.0))
    target = ec.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=ec.float64)
    layer.weight = target
    np.testing.assert_allclose(
        to_numpy(layer.parametrizations.weight.original), [[0.5, 1], [1.5, 2]]
    )
    np.testing.assert_allclose(to_numpy(layer.weight), to_numpy(target))
    P.register_parametrization(layer, "weight", Scale(3.0))
    np.testing.assert_allclose(to_numpy(layer.weight), 3 * to_numpy(target))
    assert len(layer.parametrizations.weight) == 2


def test_cached_evaluates_once():
    calls = []

    class Counting(nn.Module):
        def forward(self, X):
            calls.append(1)
            return X

    layer = nn.Linear(2, 2)
    P.register_parametrization(layer, "weight", Counting())
    calls.clear()
    with P.cached():
        a, b = layer.weight, layer.weight
    assert a is b and len(calls) == 1
    layer.weight, layer.weight  # noqa: B018 - outside the block, once per access
    assert len(calls) == 3


@pytest.mark.parametrize("leave", [True, False])
def test_remove_parametrizations(leave):
    layer = nn.Linear(2, 2).double()
    original = to_numpy(layer.weight).copy()
    P.register_parametrization(layer, "weight", Scale(2.0))
    P.remove_parametrizations(layer, "weight", leave_parametrized=leave)
    assert type(layer) is nn.Linear and not hasattr(layer, "parametrizations")
    assert isinstance(layer.weight, nn.Parameter)
    # right_inverse stored W / 2, so the parametrized value is W itself
    expected = original if leave else original / 2
    np.testing.assert_allclose(to_numpy(layer.weight), expected)
    assert [n for n, _ in layer.named_parameters()] == ["bias", "weight"]


def test_errors():
    layer = nn.Linear(2, 3)
    with pytest.raises(ValueError, match="does not have a parameter"):
        P.register_parametrization(layer, "nope", Scale(1.0))

    class Shrink(nn.Module):
        def forward(self, X):
            return X[:1]

    with pytest.raises(ValueError, match="may not change the shape"):
        P.register_parametrization(layer, "weight", Shrink())
    with pytest.raises(ValueError, match="does not have a parametrization"):
        P.remove_parametrizations(layer, "weight")


@pytest.mark.parity
def test_state_dict_keys_and_values_match_torch(torch, rng):
    import torch.nn.utils.parametrize as TP

    W = rng.standard_normal((3, 3))
    ours, theirs = nn.Linear(3, 3).double(), torch.nn.Linear(3, 3).double()
    with ag.no_grad():
        ours.weight.copy_(ec.tensor(W))
    with torch.no_grad():
        theirs.weight.copy_(torch.from_numpy(W))
    P.register_parametrization(ours, "weight", Symmetric())

    class TSym(torch.nn.Module):
        def forward(self, X):
            return X.triu() + X.triu(1).transpose(-1, -2)

    TP.register_parametrization(theirs, "weight", TSym())
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    np.testing.assert_allclose(to_numpy(ours.weight), theirs.weight.detach().numpy())
