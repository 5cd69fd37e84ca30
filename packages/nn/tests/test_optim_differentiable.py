"""Optimizer flags as PyTorch takes them: differentiable=True steps recorded by
autograd (gradients by finite differences, and against PyTorch's), capturable=True
refused on CPU at step time, and every optimizer's accepted/rejected combinations
of foreach/fused/capturable/differentiable/maximize compared with PyTorch's."""

import itertools

import numpy as np
import pytest
from _parity import to_numpy

import ember_autograd as ag
import ember_core as ec
import ember_nn as nn

CONFIGS = [
    ("SGD", {"lr": 0.1, "momentum": 0.9, "nesterov": True, "weight_decay": 0.1}),
    ("Adam", {"lr": 0.1}),
    ("AdamW", {"lr": 0.1, "weight_decay": 0.1}),
    ("Adagrad", {"lr": 0.1}),
    ("Adadelta", {"lr": 0.5}),
    ("NAdam", {"lr": 0.1}),
    ("RAdam", {"lr": 0.1}),
    ("ASGD", {"lr": 0.1}),
]


def _unrolled(lib, name, kwargs, w, grads):
    """The parameter after one step per gradient, starting from a copy of w."""
    p = w.clone()
    opt = getattr(lib.optim, name)([p], differentiable=True, **kwargs)
    for g in grads:
        p.grad = g * 1.0
        opt.step()
    return p


# SGD's first momentum buffer is a detached copy of the gradient in PyTorch (and so
# here): with momentum its steps are not the true derivative, so it is left out
@pytest.mark.parametrize(
    "name,kwargs", [("SGD", {"lr": 0.1, "weight_decay": 0.1, "maximize": True})] + CONFIGS[1:]
)
def test_gradcheck_through_steps(rng, name, kwargs):
    w = ec.tensor(rng.standard_normal(3), requires_grad=True)
    grads = [ec.tensor(rng.standard_normal(3), requires_grad=True) for _ in range(2)]
    assert ag.gradcheck(lambda w, g0, g1: _unrolled(nn, name, kwargs, w, [g0, g1]), (w, *grads))


def test_capturable_needs_an_accelerator():
    p = nn.Parameter(ec.ones(3))
    p.grad = ec.ones(3)
    opt = nn.optim.Adam([p], capturable=True)
    with pytest.raises(AssertionError, match="If capturable=True, params and state_steps"):
        opt.step()
    with pytest.raises(RuntimeError, match="`fused` does not support `differentiable`"):
        nn.optim.Adam([p], fused=True, differentiable=True)


@pytest.mark.parity
@pytest.mark.parametrize("name,kwargs", CONFIGS)
def test_parity_differentiable(torch, rng, name, kwargs):
    w0 = rng.standard_normal(3)
    gs = [rng.standard_normal(3) for _ in range(3)]
    out = []
    for lib, make in ((torch, torch.tensor), (nn, ec.tensor)):
        w = make(w0, requires_grad=True)
        grads = [make(g, requires_grad=True) for g in gs]
        p = _unrolled(lib if lib is torch else nn, name, kwargs, w, grads)
        grad_fn = torch.autograd.grad if lib is torch else ag.grad
        out.append([to_numpy(p)] + [to_numpy(t) for t in grad_fn((p**3).sum(), [w] + grads)])
    for e, t in zip(out[1], out[0]):
        np.testing.assert_allclose(e, t, rtol=1e-6, atol=1e-12)


NAMES = [
    "SGD",
    "Adam",
    "AdamW",
    "RMSprop",
    "Adagrad",
    "Adadelta",
    "Adamax",
    "NAdam",
    "RAdam",
    "ASGD",
    "Rprop",
    "Adafactor",
    "LBFGS",
]
VALUES = {
    "foreach": [None, False, True],
    "fused": [None, False, True],
    "capturable": [False, True],
    "differentiable": [False, True],
    "maximize": [False, True],
}


def _outcome(lib, make, name, kwargs):
    p = make(np.ones(3), requires_grad=True) if make else None
    try:
        opt = getattr(lib.optim, name)([p], lr=0.1, **kwargs)
    except Exception as e:  # noqa: BLE001 - the outcome is what is compared
        return "init", type(e).__name__, str(e)
    if kwargs.get("differentiable"):
        return "ok", dict((k, v) for k, v in opt.param_groups[0].items() if k != "params")
    p.grad = make(np.ones(3))
    try:
        if name == "LBFGS":
            opt.step(lambda: (p * p).sum())
        else:
            opt.step()
    except Exception as e:  # noqa: BLE001
        return "step", type(e).__name__, str(e)
    return "ok", dict((k, v) for k, v in opt.param_groups[0].items() if k != "params")


@pytest.mark.parity
@pytest.mark.parametrize("name", NAMES)
def test_parity_flag_combinations(torch, name):
    import inspect

    params = inspect.signature(getattr(torch.optim, name).__init__).parameters
    flags = [f for f in VALUES if f in params]
    for combo in itertools.product(*(VALUES[f] for f in flags)):
        kwargs = dict(zip(flags, combo))
        t = _outcome(torch, torch.tensor, name, kwargs)
        e = _outcome(nn, ec.tensor, name, kwargs)
        assert e == t, (name, kwargs)
