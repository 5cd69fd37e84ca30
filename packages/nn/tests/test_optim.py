"""Optimizers: 20 steps against PyTorch on the same parameters and gradients
(every option), the fused kernels against the per-tensor reference path,
parameter groups, state_dict round trips, hooks, closures and errors."""

import numpy as np
import pytest
from _parity import to_numpy

import ember_core as ec
import ember_nn as nn
from ember_nn import optim

SHAPES = [(4, 3), (3,), (2, 2, 5), (1,)]

CONFIGS = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.1, momentum=0.9)),
    ("SGD", dict(lr=0.05, momentum=0.9, dampening=0.3, weight_decay=0.01)),
    ("SGD", dict(lr=0.05, momentum=0.8, nesterov=True, weight_decay=0.1)),
    ("SGD", dict(lr=0.05, momentum=0.5, maximize=True)),
    ("Adam", dict(lr=0.01)),
    ("Adam", dict(lr=0.01, betas=(0.8, 0.9), eps=1e-6, weight_decay=0.1)),
    ("Adam", dict(lr=0.01, amsgrad=True, maximize=True)),
    ("Adam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True)),
    ("AdamW", dict(lr=0.01)),
    ("AdamW", dict(lr=0.01, amsgrad=True, weight_decay=0.05)),
    ("RMSprop", dict(lr=0.01)),
    ("RMSprop", dict(lr=0.01, alpha=0.9, momentum=0.9, centered=True, weight_decay=0.1)),
    ("RMSprop", dict(lr=0.01, momentum=0.5, maximize=True)),
    ("Adagrad", dict(lr=0.1)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.01, weight_decay=0.1, initial_accumulator_value=0.5)),
    ("Adadelta", dict()),
    ("Adadelta", dict(lr=0.5, rho=0.8, weight_decay=0.1, maximize=True)),
    ("Adamax", dict(lr=0.02)),
    ("Adamax", dict(lr=0.02, betas=(0.8, 0.95), weight_decay=0.1)),
    ("NAdam", dict(lr=0.02)),
    ("NAdam", dict(lr=0.02, weight_decay=0.1, momentum_decay=0.01)),
    ("NAdam", dict(lr=0.02, weight_decay=0.1, decoupled_weight_decay=True)),
    ("RAdam", dict(lr=0.02)),
    ("RAdam", dict(lr=0.02, weight_decay=0.1, decoupled_weight_decay=True)),
    ("RAdam", dict(lr=0.02, weight_decay=0.1, maximize=True)),
]
IDS = [f"{n}-{'-'.join(f'{k}={v}' for k, v in kw.items())}" for n, kw in CONFIGS]


def make_params(rng, dtype=np.float64):
    return [rng.standard_normal(s).astype(dtype) for s in SHAPES]


def run_ember(name, kwargs, values, grads_per_step, **extra):
    params = [nn.Parameter(ec.tensor(v)) for v in values]
    opt = getattr(optim, name)(params, **kwargs, **extra)
    history = []
    for grads in grads_per_step:
        for p, g in zip(params, grads):
            p.grad = ec.tensor(g)
        opt.step()
        history.append([to_numpy(p).copy() for p in params])
    return params, opt, history


def gradients(rng, steps=20, dtype=np.float64):
    return [[rng.standard_normal(s).astype(dtype) for s in SHAPES] for _ in range(steps)]


@pytest.mark.parametrize("name, kwargs", CONFIGS, ids=IDS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_fused_kernel_matches_reference_path(rng, name, kwargs, dtype):
    values, grads = make_params(rng, dtype), gradients(rng, 20, dtype)
    _, fused_opt, fused = run_ember(name, kwargs, values, grads)
    _, ref_opt, ref = run_ember(name, kwargs, values, grads, foreach=False)
    tol = dict(rtol=1e-12, atol=1e-14) if dtype == np.float64 else dict(rtol=2e-5, atol=1e-6)
    for step, (a, b) in enumerate(zip(fused, ref)):
        for x, y in zip(a, b):
            np.testing.assert_allclose(x, y, err_msg=f"step {step}", **tol)
    fs, rs = fused_opt.state_dict(), ref_opt.state_dict()
    assert fs["param_groups"][0]["foreach"] is None and rs["param_groups"][0]["foreach"] is False
    for i in fs["state"]:
        assert list(fs["state"][i]) == list(rs["state"][i])
        for k in fs["state"][i]:
            np.testing.assert_allclose(
                to_numpy(fs["state"][i][k]), to_numpy(rs["state"][i][k]), **tol, err_msg=k
            )


@pytest.mark.parity
@pytest.mark.parametrize("name, kwargs", CONFIGS, ids=IDS)
@pytest.mark.parametrize("path", ["fused", "reference"])
def test_twenty_steps_match_torch(torch, rng, name, kwargs, path):
    values, grads = make_params(rng), gradients(rng)
    extra = {"foreach": False} if path == "reference" else {}
    params, opt, history = run_ember(name, kwargs, values, grads, **extra)
    tparams = [torch.nn.Parameter(torch.from_numpy(v.copy())) for v in values]
    topt = getattr(torch.optim, name)(tparams, **kwargs)
    for step, gs in enumerate(grads):
        for p, g in zip(tparams, gs):
            p.grad = torch.from_numpy(g.copy())
        topt.step()
        for ours, theirs in zip(history[step], tparams):
            np.testing.assert_allclose(
                ours, theirs.detach().numpy(), rtol=1e-10, atol=1e-12, err_msg=f"step {step}"
            )
    ours_sd, theirs_sd = opt.state_dict(), topt.state_dict()
    tg = dict(theirs_sd["param_groups"][0])
    og = dict(ours_sd["param_groups"][0])
    og.pop("foreach"), tg.pop("foreach")
    assert list(og) == list(tg) and og == tg
    assert list(ours_sd["state"]) == list(theirs_sd["state"])
    for i, st in theirs_sd["state"].items():
        assert list(ours_sd["state"][i]) == list(st)
        for k, v in st.items():
            o = ours_sd["state"][i][k]
            assert str(o.dtype).split(".")[-1] == str(v.dtype).split(".")[-1], k
            np.testing.assert_allclose(to_numpy(o), v.numpy(), rtol=1e-10, atol=1e-12, err_msg=k)


@pytest.mark.parity
def test_float32_steps_match_torch(torch, rng):
    values, grads = make_params(rng, np.float32), gradients(rng, 20, np.float32)
    for name, kwargs in [
        ("Adam", dict(lr=0.01)),
        ("SGD", dict(lr=0.1, momentum=0.9)),
        ("RMSprop", dict(lr=0.01)),
    ]:
        _, _, history = run_ember(name, kwargs, values, grads)
        tparams = [torch.nn.Parameter(torch.from_numpy(v.copy())) for v in values]
        topt = getattr(torch.optim, name)(tparams, **kwargs)
        for gs in grads:
            for p, g in zip(tparams, gs):
                p.grad = torch.from_numpy(g.copy())
            topt.step()
        for ours, theirs in zip(history[-1], tparams):
            np.testing.assert_allclose(ours, theirs.detach().numpy(), rtol=1e-4, atol=1e-5)


def test_param_groups_have_their_own_options(rng):
    a, b = nn.Parameter(ec.ones(2)), nn.Parameter(ec.ones(2))
    opt = optim.SGD([{"params": [a]}, {"params": b, "lr": 1.0}], lr=0.1, momentum=0.0)
    assert opt.param_groups[1]["lr"] == 1.0 and opt.param_groups[0]["lr"] == 0.1
    a.grad, b.grad = ec.ones(2), ec.ones(2)
    opt.step()
    np.testing.assert_allclose(to_numpy(a), [0.9, 0.9])
    np.testing.assert_allclose(to_numpy(b), [0.0, 0.0])
    c = nn.Parameter(ec.ones(1))
    opt.add_param_group({"params": c, "momentum": 0.9})
    assert len(opt.param_groups) == 3 and opt.param_groups[2]["lr"] == 0.1
    with pytest.raises(ValueError, match="more than one parameter group"):
        opt.add_param_group({"params": [a]})
    with pytest.raises(TypeError, match="ordered collections"):
        optim.SGD([{"params": {a}}], lr=0.1)
    with pytest.raises(ValueError, match="empty parameter list"):
        optim.Adam([])
    with pytest.raises(TypeError, match="iterable of Tensors"):
        optim.Adam(a)


def test_named_parameters():
    model = nn.Linear(2, 2)
    opt = optim.Adam(model.named_parameters(), lr=0.1)
    assert opt.param_groups[0]["param_names"] == ["weight", "bias"]
    assert opt.param_groups[0]["params"][0] is model.weight
    assert "param_names" in opt.state_dict()["param_groups"][0]


def test_zero_grad():
    p = nn.Parameter(ec.ones(3))
    opt = optim.SGD([p], lr=0.1)
    p.grad = ec.ones(3)
    opt.zero_grad(set_to_none=False)
    assert np.all(to_numpy(p.grad) == 0)
    opt.zero_grad()
    assert p.grad is None


def test_state_dict_round_trip_continues_identically(rng):
    values, grads = make_params(rng), gradients(rng, 10)
    params, opt, _ = run_ember("Adam", dict(lr=0.01, amsgrad=True), values, grads[:5])
    sd = opt.state_dict()
    clone_params = [nn.Parameter(p.detach().clone()) for p in params]
    opt2 = optim.Adam(clone_params, lr=0.5)
    opt2.load_state_dict(sd)
    assert opt2.param_groups[0]["lr"] == 0.01
    assert opt2.state[clone_params[0]]["step"].item() == 5
    assert opt2.state[clone_params[0]]["exp_avg"] is not opt.state[params[0]]["exp_avg"]
    for gs in grads[5:]:
        for p, q, g in zip(params, clone_params, gs):
            p.grad, q.grad = ec.tensor(g), ec.tensor(g)
        opt.step()
        opt2.step()
    for p, q in zip(params, clone_params):
        np.testing.assert_array_equal(to_numpy(p), to_numpy(q))


def test_load_state_dict_checks_groups_and_casts_state():
    p = nn.Parameter(ec.ones(2))
    opt = optim.SGD([p], lr=0.1, momentum=0.9)
    p.grad = ec.ones(2)
    opt.step()
    sd = opt.state_dict()
    q = nn.Parameter(ec.ones(2, dtype=ec.float64))
    opt2 = optim.SGD([q], lr=0.1, momentum=0.9)
    opt2.load_state_dict(sd)
    assert opt2.state[q]["momentum_buffer"].dtype is ec.float64
    with pytest.raises(ValueError, match="different number of parameter groups"):
        optim.SGD(
            [{"params": [q]}, {"params": [nn.Parameter(ec.ones(1))]}], lr=0.1
        ).load_state_dict(sd)
    with pytest.raises(ValueError, match="doesn't match the size"):
        optim.SGD([q, nn.Parameter(ec.ones(1))], lr=0.1).load_state_dict(sd)


def test_closure_and_hooks():
    p = nn.Parameter(ec.tensor([2.0]))
    opt = optim.SGD([p], lr=0.25)
    calls = []
    opt.register_step_pre_hook(lambda o, args, kwargs: calls.append("pre"))
    h = opt.register_step_post_hook(lambda o, args, kwargs: calls.append("post"))
    g = optim.register_optimizer_step_pre_hook(lambda o, args, kwargs: calls.append("global"))

    def closure():
        opt.zero_grad()
        loss = (p * p).sum()
        loss.backward()
        calls.append("closure")
        return loss

    try:
        loss = opt.step(closure)
    finally:
        g.remove()
    assert loss.item() == 4.0 and calls == ["global", "pre", "closure", "post"]
    np.testing.assert_allclose(to_numpy(p), [1.0])  # 2 - 0.25 * 4
    h.remove()
    calls.clear()
    opt.step(closure)
    assert calls == ["pre", "closure"]


def test_parameters_without_gradients_are_skipped():
    a, b = nn.Parameter(ec.ones(2)), nn.Parameter(ec.ones(2))
    opt = optim.Adam([a, b], lr=0.1)
    a.grad = ec.ones(2)
    opt.step()
    np.testing.assert_array_equal(to_numpy(b), [1.0, 1.0])
    assert b not in opt.state and a in opt.state


def test_fused_true_demands_supported_tensors():
    p = nn.Parameter(ec.ones(2, dtype=ec.float16))
    opt = optim.Adam([p], lr=0.1, fused=True)
    p.grad = ec.ones(2, dtype=ec.float16)
    with pytest.raises(RuntimeError, match="fused=True"):
        opt.step()
    with pytest.raises(RuntimeError, match="cannot be `True` together"):
        optim.Adam([p], fused=True, foreach=True)


def test_half_precision_parameters_use_the_reference_path():
    p = nn.Parameter(ec.ones(2, dtype=ec.float16))
    opt = optim.SGD([p], lr=0.5)
    p.grad = ec.ones(2, dtype=ec.float16)
    opt.step()
    np.testing.assert_array_equal(to_numpy(p), [0.5, 0.5])


@pytest.mark.parametrize(
    "bad",
    [
        dict(lr=-1.0),
        dict(lr=0.1, betas=(1.0, 0.9)),
        dict(lr=0.1, eps=-1.0),
        dict(lr=0.1, weight_decay=-0.1),
    ],
)
def test_invalid_arguments(bad):
    with pytest.raises(ValueError, match="Invalid"):
        optim.Adam([nn.Parameter(ec.ones(1))], **bad)
    with pytest.raises(ValueError, match="Nesterov"):
        optim.SGD([nn.Parameter(ec.ones(1))], lr=0.1, nesterov=True)


def test_repr():
    opt = optim.SGD([nn.Parameter(ec.ones(1))], lr=0.1)
    assert repr(opt) == (
        "SGD (\nParameter Group 0\n    dampening: 0\n    differentiable: False\n    foreach: "
        "None\n    fused: None\n"
        "    lr: 0.1\n    maximize: False\n    momentum: 0\n    nesterov: False\n    "
        "weight_decay: 0\n)"
    )


def test_one_kernel_call_per_group(monkeypatch):
    from ember_nn import _lib

    calls = []
    real = _lib.lib.en_adam

    class Spy:
        def __getattr__(self, name):
            attr = getattr(_lib.lib, name)
            if name == "en_adam":

                def wrapped(*args):
                    calls.append(args[2])  # (dtype, nthreads, n, ...)
                    return real(*args)

                return wrapped
            return attr

    import ember_nn.optim.optimizer as optimizer_module  # fused_step calls lib there

    monkeypatch.setattr(optimizer_module, "lib", Spy())
    model = nn.Sequential(*[nn.Linear(4, 4) for _ in range(50)])
    opt = optim.Adam(model.parameters(), lr=0.1)
    model(ec.randn(2, 4)).sum().backward()
    opt.step()
    assert calls == [100], "100 tensors step in one fused call"
