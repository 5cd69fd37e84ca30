"""Rprop and ASGD: a NumPy transcription of each update rule, and 20 steps
against PyTorch on the same parameters and gradients (every option), with the
state_dict layout."""

import numpy as np
import pytest
from _parity import to_numpy

import ember_core as ec
import ember_nn as nn
from ember_nn import optim

SHAPES = [(4, 3), (3,), (2, 2, 5)]
CONFIGS = [
    ("Rprop", dict()),
    ("Rprop", dict(lr=0.05, etas=(0.3, 1.5), step_sizes=(1e-3, 1.0), maximize=True)),
    ("ASGD", dict()),
    ("ASGD", dict(lr=0.05, lambd=1e-2, alpha=0.5, t0=5, weight_decay=0.1)),
    ("ASGD", dict(lr=0.02, t0=0, maximize=True)),
]
IDS = [f"{n}-{'-'.join(f'{k}={v}' for k, v in kw.items())}" for n, kw in CONFIGS]


def _problem(rng, dtype, steps=20):
    values = [rng.standard_normal(s).astype(dtype) for s in SHAPES]
    # grads with repeated signs and sign flips, so Rprop both grows and shrinks steps
    grads = [[rng.standard_normal(s).astype(dtype) for s in SHAPES] for _ in range(steps)]
    for k in range(1, steps, 3):
        grads[k] = [g.copy() for g in grads[k - 1]]
    return values, grads


def _run(name, kwargs, values, grads):
    params = [nn.Parameter(ec.tensor(v)) for v in values]
    opt = getattr(optim, name)(params, **kwargs)
    history = []
    for gs in grads:
        for p, g in zip(params, gs):
            p.grad = ec.tensor(g)
        opt.step()
        history.append([to_numpy(p).copy() for p in params])
    return opt, history


def _rprop_numpy(values, grads, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), maximize=False):
    out, ps = [], [v.copy() for v in values]
    prev = [np.zeros_like(v) for v in values]
    size = [np.full_like(v, lr) for v in values]
    for gs in grads:
        for i, g in enumerate(gs):
            g = -g if maximize else g.copy()
            s = np.sign(g * prev[i])
            factor = np.where(s > 0, etas[1], np.where(s < 0, etas[0], 1.0))
            size[i] = np.clip(size[i] * factor, *step_sizes)
            g[s < 0] = 0
            ps[i] = ps[i] - np.sign(g) * size[i]
            prev[i] = g
        out.append([p.copy() for p in ps])
    return out


def test_rprop_matches_numpy_rule(rng):
    values, grads = _problem(rng, np.float64)
    _, hist = _run("Rprop", dict(lr=0.05, etas=(0.3, 1.5), step_sizes=(1e-3, 1.0)), values, grads)
    ref = _rprop_numpy(values, grads, lr=0.05, etas=(0.3, 1.5), step_sizes=(1e-3, 1.0))
    for a, b in zip(hist, ref):
        for x, y in zip(a, b):
            np.testing.assert_allclose(x, y, rtol=1e-12, atol=1e-14)


def test_asgd_averages_after_t0(rng):
    values, grads = _problem(rng, np.float64, steps=6)
    opt, hist = _run("ASGD", dict(lr=0.1, lambd=0.0, t0=2), values, grads)
    # with lambd=0, eta stays lr (kept as a float32 scalar, as PyTorch); mu = 1 / (t - t0)
    # takes effect one step late, so ax is the mean of the iterates after step t0 + 1
    eta = float(np.float32(0.1))
    ps = [v.copy() for v in values]
    iterates = []
    for gs in grads:
        ps = [p - eta * g for p, g in zip(ps, gs)]
        iterates.append(ps)
    for i, p in enumerate(opt.param_groups[0]["params"]):
        np.testing.assert_allclose(to_numpy(p), iterates[-1][i], rtol=1e-12)
        mean = np.mean([it[i] for it in iterates[3:]], axis=0)
        np.testing.assert_allclose(to_numpy(opt.state[p]["ax"]), mean, rtol=1e-6)


def test_bad_arguments():
    p = [nn.Parameter(ec.zeros(2))]
    with pytest.raises(ValueError, match="eta"):
        optim.Rprop(p, etas=(1.5, 1.2))
    with pytest.raises(ValueError, match="learning rate"):
        optim.ASGD(p, lr=-1)
    with pytest.raises(ValueError, match="weight_decay"):
        optim.ASGD(p, weight_decay=-1)


@pytest.mark.parity
@pytest.mark.parametrize("name, kwargs", CONFIGS, ids=IDS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_twenty_steps_match_torch(torch, rng, name, kwargs, dtype):
    values, grads = _problem(rng, dtype)
    opt, history = _run(name, kwargs, values, grads)
    tparams = [torch.nn.Parameter(torch.from_numpy(v.copy())) for v in values]
    topt = getattr(torch.optim, name)(tparams, **kwargs)
    tol = dict(rtol=1e-10, atol=1e-12) if dtype == np.float64 else dict(rtol=1e-5, atol=1e-6)
    for step, gs in enumerate(grads):
        for p, g in zip(tparams, gs):
            p.grad = torch.from_numpy(g.copy())
        topt.step()
        for ours, theirs in zip(history[step], tparams):
            np.testing.assert_allclose(ours, theirs.detach().numpy(), err_msg=f"step {step}", **tol)
    ours_sd, theirs_sd = opt.state_dict(), topt.state_dict()
    assert ours_sd["param_groups"][0] == theirs_sd["param_groups"][0]
    for i, st in theirs_sd["state"].items():
        assert list(ours_sd["state"][i]) == list(st)
        for k, v in st.items():
            o = ours_sd["state"][i][k]
            assert str(o.dtype).split(".")[-1] == str(v.dtype).split(".")[-1], k
            np.testing.assert_allclose(to_numpy(o), v.numpy(), err_msg=k, **tol)
