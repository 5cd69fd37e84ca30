"""Sequential, ModuleList, ModuleDict, ParameterList, ParameterDict: indexing,
slicing, mutation, registration, state_dict keys and reprs as PyTorch."""

from collections import OrderedDict

import numpy as np
import pytest

import ember_core as ec
import ember_nn as nn


def test_sequential_runs_in_order_and_indexes():
    a, b, c = nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2)
    s = nn.Sequential(a, b, c)
    x = ec.randn(5, 3)
    np.testing.assert_allclose(s(x).detach().numpy(), c(b(a(x))).detach().numpy())
    assert s[0] is a and s[-1] is c and len(s) == 3
    assert list(s) == [a, b, c]
    sub = s[1:]
    assert (
        isinstance(sub, nn.Sequential) and list(sub) == [b, c] and list(sub._modules) == ["1", "2"]
    )
    with pytest.raises(IndexError):
        s[3]
    s[1] = nn.Tanh()
    assert isinstance(s[1], nn.Tanh)
    del s[1]
    assert list(s._modules) == ["0", "1"] and s[1] is c
    s.append(nn.Sigmoid())
    assert isinstance(s[2], nn.Sigmoid)
    s.insert(1, nn.ReLU())
    assert [type(m).__name__ for m in s] == ["Linear", "ReLU", "Linear", "Sigmoid"]
    assert s.pop(1).__class__ is nn.ReLU and len(s) == 3
    s.extend(nn.Sequential(nn.Identity()))
    assert isinstance(s[-1], nn.Identity)
    t = s + nn.Sequential(nn.ReLU())
    assert len(t) == len(s) + 1


def test_sequential_ordered_dict_names():
    s = nn.Sequential(OrderedDict([("fc", nn.Linear(2, 2)), ("act", nn.ReLU())]))
    assert list(s.state_dict()) == ["fc.weight", "fc.bias"]
    assert s.fc is s[0]


def test_module_list():
    layers = nn.ModuleList([nn.Linear(2, 2) for _ in range(3)])
    assert len(layers) == 3 and len(list(layers.parameters())) == 6
    assert [k for k, _ in layers.named_parameters()][:2] == ["0.weight", "0.bias"]
    layers.append(nn.ReLU())
    layers.insert(0, nn.Tanh())
    assert isinstance(layers[0], nn.Tanh) and isinstance(layers[-1], nn.ReLU)
    layers.extend([nn.Sigmoid()])
    assert len(layers) == 6
    del layers[0]
    assert list(layers._modules) == ["0", "1", "2", "3", "4"]
    assert isinstance(layers[1:3], nn.ModuleList) and len(layers[1:3]) == 2
    layers[0] = nn.Identity()
    assert isinstance(layers[0], nn.Identity)
    assert len(layers + nn.ModuleList([nn.ReLU()])) == 6
    with pytest.raises(IndexError):
        layers[10]


def test_module_dict():
    d = nn.ModuleDict({"a": nn.Linear(1, 1), "b": nn.ReLU()})
    assert list(d.keys()) == ["a", "b"] and "a" in d and len(d) == 2
    d["c"] = nn.Tanh()
    d.update([("e", nn.Identity())])
    assert list(d) == ["a", "b", "c", "e"]
    assert isinstance(d.pop("b"), nn.ReLU) and "b" not in d
    assert [k for k, _ in d.items()] == ["a", "c", "e"]
    assert list(d.state_dict()) == ["a.weight", "a.bias"]
    d.clear()
    assert len(d) == 0


def test_parameter_list_and_dict():
    pl = nn.ParameterList([nn.Parameter(ec.zeros(2)), ec.ones(3)])
    assert len(pl) == 2 and all(isinstance(p, nn.Parameter) for p in pl)
    pl.append(nn.Parameter(ec.ones(1)))
    assert [n for n, _ in pl.named_parameters()] == ["0", "1", "2"]
    pd = nn.ParameterDict({"w": nn.Parameter(ec.ones(2, 2))})
    pd["b"] = nn.Parameter(ec.zeros(2))
    assert list(pd.keys()) == ["w", "b"] and "w" in pd
    assert [n for n, _ in pd.named_parameters()] == ["w", "b"]
    model = nn.Module()
    model.params = pd
    assert list(model.state_dict()) == ["params.w", "params.b"]


@pytest.mark.parity
def test_container_reprs_match_torch(torch):
    def build(N, T):
        return N.Sequential(
            N.ModuleList([N.Linear(2, 3), N.ReLU()]),
            N.ModuleDict({"act": N.Tanh(), "lin": N.Linear(3, 1, bias=False)}),
            N.ParameterList([N.Parameter(T.zeros(2, 3)), N.Parameter(T.ones(4))]),
            N.ParameterDict({"a": N.Parameter(T.zeros(5))}),
        )

    assert repr(build(nn, ec)).replace("ember.", "torch.") == repr(build(torch.nn, torch))
