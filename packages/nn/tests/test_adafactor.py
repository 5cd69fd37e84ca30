"""Adafactor: one step against a NumPy transcription of the algorithm (factored
second moments for matrices, full for vectors), argument errors, and PyTorch
parity over 10 steps (parameters, state, state_dict round trip)."""

import numpy as np
import pytest
from _parity import to_numpy

import ember_core as ec
import ember_nn as nn


def _numpy_steps(p, grads, lr=1e-2, beta2_decay=-0.8, eps2=1e-3, d=1.0):
    eps1 = np.finfo(np.float64).eps
    row = np.zeros(p.shape[:-1] + (1,))
    col = np.zeros(p.shape[:-2] + (1,) + p.shape[-1:])
    for t, g in enumerate(grads, start=1):
        beta = t**beta2_decay
        rho = min(lr, 1 / np.sqrt(t))
        alpha = max(eps2, np.linalg.norm(p) / np.sqrt(p.size)) * rho
        row += beta * ((g**2).mean(-1, keepdims=True) - row)
        col += beta * ((g**2).mean(-2, keepdims=True) - col)
        var = row @ col / np.maximum(row.mean(-2, keepdims=True), eps1)
        upd = g / np.sqrt(np.maximum(var, eps1 * eps1))
        denom = max(1.0, np.linalg.norm(upd) / (np.sqrt(upd.size) * d))
        p = p - alpha / denom * upd
    return p


def test_matrix_steps_against_numpy(rng):
    p0 = rng.standard_normal((4, 3))
    grads = [rng.standard_normal((4, 3)) for _ in range(3)]
    p = nn.Parameter(ec.tensor(p0))
    opt = nn.optim.Adafactor([p])
    for g in grads:
        p.grad = ec.tensor(g)
        opt.step()
    np.testing.assert_allclose(to_numpy(p), _numpy_steps(p0, grads), atol=1e-12)
    assert sorted(opt.state[p]) == ["col_var", "row_var", "step"]


@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"lr": -1.0}, "Learning rate should be >= 0"),
        ({"beta2_decay": 0.5}, "beta2_decay should be <= 0"),
        ({"eps": (-1.0, 1e-3)}, "epsilon1 should be >= 0"),
        ({"eps": (None, -1.0)}, "epsilon2 should be >= 0"),
        ({"d": 0.5}, "Clipping threshold d should be >= 1"),
        ({"weight_decay": -0.1}, "weight_decay should be >= 0"),
    ],
)
def test_argument_errors(kwargs, message):
    with pytest.raises(ValueError, match=message):
        nn.optim.Adafactor([nn.Parameter(ec.zeros(2))], **kwargs)


@pytest.mark.parity
@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"lr": 0.1, "weight_decay": 0.1, "maximize": True},
        {"eps": (1e-20, 1e-3), "d": 2.0, "beta2_decay": -0.5},
    ],
)
def test_parity(torch, rng, kwargs):
    shapes = [(4, 3), (5,), (2, 3, 4)]
    arrays = [rng.standard_normal(s) for s in shapes]
    tp = [torch.tensor(a, requires_grad=True) for a in arrays]
    ep = [nn.Parameter(ec.tensor(a)) for a in arrays]
    to, eo = torch.optim.Adafactor(tp, **kwargs), nn.optim.Adafactor(ep, **kwargs)
    for _ in range(10):
        for a, b in zip(tp, ep):
            g = rng.standard_normal(tuple(a.shape))
            a.grad, b.grad = torch.tensor(g), ec.tensor(g)
        to.step()
        eo.step()
    for a, b in zip(tp, ep):
        np.testing.assert_allclose(to_numpy(b), to_numpy(a), atol=1e-10)
    tsd, esd = to.state_dict(), eo.state_dict()
    assert esd["param_groups"] == tsd["param_groups"]
    for i in tsd["state"]:
        assert sorted(esd["state"][i]) == sorted(tsd["state"][i])
        for k in tsd["state"][i]:
            np.testing.assert_allclose(
                to_numpy(esd["state"][i][k]), to_numpy(tsd["state"][i][k]), atol=1e-10
            )
    # torch's state dict loads into ember's optimizer and steps on identically
    eo2 = nn.optim.Adafactor(ep, **kwargs)
    eo2.load_state_dict(
        {
            "state": {
                i: {k: ec.tensor(v.numpy()) for k, v in s.items()} for i, s in tsd["state"].items()
            },
            "param_groups": tsd["param_groups"],
        }
    )
    for a, b in zip(tp, ep):
        g = rng.standard_normal(tuple(a.shape))
        a.grad, b.grad = torch.tensor(g), ec.tensor(g)
    to.step()
    eo2.step()
    for a, b in zip(tp, ep):
        np.testing.assert_allclose(to_numpy(b), to_numpy(a), atol=1e-10)
