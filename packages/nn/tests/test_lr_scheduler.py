"""Learning-rate schedulers: closed-form values, 20+ steps against PyTorch on
two parameter groups (learning rates and cycled momenta), state_dict round
trips, and the step-order warning."""

import math
import warnings

import pytest

import ember_core as ec
import ember_nn as nn
from ember_nn import optim
from ember_nn.optim import lr_scheduler as S


def make_opt(lib_optim, param_cls, tensor, kind="SGD"):
    a, b = param_cls(tensor([1.0, 2.0])), param_cls(tensor([3.0]))
    groups = [{"params": [a]}, {"params": [b], "lr": 0.05}]
    if kind == "SGD":
        return lib_optim.SGD(groups, lr=0.1, momentum=0.9)
    return lib_optim.Adam(groups, lr=0.1)


def ember_opt(kind="SGD"):
    return make_opt(optim, nn.Parameter, ec.tensor, kind)


def drive(opt, sched, steps, metrics=None):
    """lr (and momentum/beta1) of each group after each step."""
    out = []
    for i in range(steps):
        opt.step()
        if metrics is None:
            sched.step()
        else:
            sched.step(metrics[i])
        out.append(
            [(g["lr"], g.get("momentum", g.get("betas", (None,))[0])) for g in opt.param_groups]
        )
    return out


def test_step_and_multistep_closed_forms():
    opt = ember_opt()
    sched = S.StepLR(opt, step_size=3, gamma=0.5)
    lrs = [g for g in drive(opt, sched, 9)]
    assert [round(x[0][0], 12) for x in lrs] == [
        0.1,
        0.1,
        0.05,
        0.05,
        0.05,
        0.025,
        0.025,
        0.025,
        0.0125,
    ]
    opt = ember_opt()
    sched = S.MultiStepLR(opt, milestones=[2, 5, 5], gamma=0.1)
    vals = [x[1][0] for x in drive(opt, sched, 6)]
    assert vals == pytest.approx([0.05, 0.005, 0.005, 0.005, 0.00005, 0.00005])
    assert sched.get_last_lr() == pytest.approx([0.0001, 0.00005])


def test_cosine_annealing_closed_form():
    opt = ember_opt()
    sched = S.CosineAnnealingLR(opt, T_max=10, eta_min=0.01)
    vals = [x[0][0] for x in drive(opt, sched, 10)]
    expected = [0.01 + 0.09 * (1 + math.cos(math.pi * t / 10)) / 2 for t in range(1, 11)]
    assert vals == pytest.approx(expected, rel=1e-12)


def test_lambda_and_linear_warmup():
    opt = ember_opt()
    sched = S.LambdaLR(opt, lambda e: 0.5**e)
    assert [x[0][0] for x in drive(opt, sched, 3)] == pytest.approx([0.05, 0.025, 0.0125])
    opt = ember_opt()
    sched = S.LinearLR(opt, start_factor=0.25, total_iters=3)
    assert opt.param_groups[0]["lr"] == pytest.approx(0.025)
    assert [x[0][0] for x in drive(opt, sched, 4)] == pytest.approx([0.05, 0.075, 0.1, 0.1])


def test_reduce_on_plateau():
    opt = ember_opt()
    sched = S.ReduceLROnPlateau(opt, patience=1, factor=0.5, cooldown=1)
    lrs = [x[0][0] for x in drive(opt, sched, 7, metrics=[1.0, 1.0, 1.0, 1.0, 1.0, 0.5, 0.5])]
    assert lrs == pytest.approx([0.1, 0.1, 0.05, 0.05, 0.05, 0.05, 0.05])


def test_warning_when_scheduler_steps_before_optimizer():
    opt = ember_opt()
    sched = S.StepLR(opt, 1)
    with pytest.warns(UserWarning, match="before `optimizer.step\\(\\)`"):
        sched.step()
    opt = ember_opt()
    sched = S.StepLR(opt, 1)
    opt.step()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sched.step()


def test_errors():
    opt = ember_opt()
    with pytest.raises(TypeError, match="is not an Optimizer"):
        S.StepLR("sgd", 1)
    with pytest.raises(KeyError, match="initial_lr"):
        S.StepLR(opt, 1, last_epoch=3)
    with pytest.raises(ValueError, match="one more than the number of milestone"):
        S.SequentialLR(opt, [S.ConstantLR(opt), S.ExponentialLR(opt, 0.9)], milestones=[])
    with pytest.raises(ValueError, match="total_steps"):
        S.OneCycleLR(opt, 0.1)


CASES = [
    ("StepLR", lambda L, o: L.StepLR(o, step_size=4, gamma=0.5), "SGD", 20),
    ("MultiStepLR", lambda L, o: L.MultiStepLR(o, milestones=[3, 7, 7, 15], gamma=0.3), "SGD", 20),
    ("ExponentialLR", lambda L, o: L.ExponentialLR(o, gamma=0.9), "SGD", 20),
    ("CosineAnnealingLR", lambda L, o: L.CosineAnnealingLR(o, T_max=6, eta_min=0.001), "SGD", 20),
    (
        "CosineAnnealingWarmRestarts",
        lambda L, o: L.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=2, eta_min=1e-3),
        "SGD",
        25,
    ),
    ("OneCycleLR", lambda L, o: L.OneCycleLR(o, max_lr=[0.5, 0.2], total_steps=20), "SGD", 20),
    (
        "OneCycleLR-adam-linear-3phase",
        lambda L, o: L.OneCycleLR(
            o, max_lr=0.3, epochs=4, steps_per_epoch=5, anneal_strategy="linear", three_phase=True
        ),
        "Adam",
        20,
    ),
    (
        "LinearLR",
        lambda L, o: L.LinearLR(o, start_factor=0.1, end_factor=0.8, total_iters=8),
        "SGD",
        20,
    ),
    ("ConstantLR", lambda L, o: L.ConstantLR(o, factor=0.5, total_iters=4), "SGD", 20),
    ("PolynomialLR", lambda L, o: L.PolynomialLR(o, total_iters=10, power=2.0), "SGD", 20),
    ("LambdaLR", lambda L, o: L.LambdaLR(o, [lambda e: 0.95**e, lambda e: 1 / (e + 1)]), "SGD", 20),
    ("MultiplicativeLR", lambda L, o: L.MultiplicativeLR(o, lambda e: 0.9), "SGD", 20),
    (
        "SequentialLR",
        lambda L, o: L.SequentialLR(
            o,
            [L.LinearLR(o, 0.2, total_iters=4), L.ExponentialLR(o, 0.8), L.StepLR(o, 3)],
            milestones=[5, 12],
        ),
        "SGD",
        20,
    ),
    (
        "ChainedScheduler",
        lambda L, o: L.ChainedScheduler([L.ConstantLR(o, 0.5, 3), L.ExponentialLR(o, 0.9)]),
        "SGD",
        20,
    ),
    (
        "CyclicLR",
        lambda L, o: L.CyclicLR(
            o, base_lr=0.01, max_lr=[0.1, 0.2], step_size_up=3, step_size_down=2
        ),
        "SGD",
        20,
    ),
    (
        "CyclicLR-exp",
        lambda L, o: L.CyclicLR(
            o, base_lr=0.01, max_lr=0.1, step_size_up=4, mode="exp_range", gamma=0.9
        ),
        "SGD",
        20,
    ),
    (
        "CyclicLR-tri2-adam",
        lambda L, o: L.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=2, mode="triangular2"),
        "Adam",
        20,
    ),
]


def torch_opt(torch, kind):
    return make_opt(
        torch.optim, torch.nn.Parameter, lambda v: torch.tensor(v, dtype=torch.float32), kind
    )


@pytest.mark.parity
@pytest.mark.parametrize("name, build, kind, steps", CASES, ids=[c[0] for c in CASES])
def test_schedule_matches_torch(torch, name, build, kind, steps):
    topt, eopt = torch_opt(torch, kind), ember_opt(kind)
    tsched, esched = build(torch.optim.lr_scheduler, topt), build(S, eopt)
    assert esched.get_last_lr() == pytest.approx(tsched.get_last_lr(), rel=1e-12)
    theirs, ours = drive(topt, tsched, steps), drive(eopt, esched, steps)
    for step, (a, b) in enumerate(zip(ours, theirs)):
        for (lr_a, m_a), (lr_b, m_b) in zip(a, b):
            assert lr_a == pytest.approx(lr_b, rel=1e-12, abs=1e-15), f"lr at step {step}"
            assert m_a == pytest.approx(m_b, rel=1e-12), f"momentum at step {step}"
    assert esched.get_last_lr() == pytest.approx(tsched.get_last_lr(), rel=1e-12)
    assert getattr(esched, "last_epoch", None) == getattr(tsched, "last_epoch", None)


@pytest.mark.parity
def test_reduce_on_plateau_matches_torch(torch):
    metrics = [
        1.0,
        0.9,
        0.95,
        0.95,
        0.95,
        0.8,
        0.85,
        0.85,
        0.85,
        0.85,
        0.7,
        0.7,
        0.7,
        0.7,
        0.7,
        0.7,
    ]
    for kwargs in [
        dict(patience=2, factor=0.5),
        dict(
            mode="max",
            patience=1,
            threshold=0.1,
            threshold_mode="abs",
            cooldown=2,
            min_lr=[0.02, 0.01],
        ),
    ]:
        topt, eopt = torch_opt(torch, "SGD"), ember_opt()
        tsched = torch.optim.lr_scheduler.ReduceLROnPlateau(topt, **kwargs)
        esched = S.ReduceLROnPlateau(eopt, **kwargs)
        ours = [
            v for step in drive(eopt, esched, len(metrics), metrics) for pair in step for v in pair
        ]
        theirs = [
            v for step in drive(topt, tsched, len(metrics), metrics) for pair in step for v in pair
        ]
        assert ours == pytest.approx(theirs, rel=1e-12)


@pytest.mark.parity
@pytest.mark.parametrize("name, build, kind, steps", CASES[:6], ids=[c[0] for c in CASES[:6]])
def test_closed_form_with_epoch_matches_torch(torch, name, build, kind, steps):
    topt, eopt = torch_opt(torch, kind), ember_opt(kind)
    tsched, esched = build(torch.optim.lr_scheduler, topt), build(S, eopt)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for epoch in [3, 5, 2, 8]:
            topt.step(), eopt.step()
            tsched.step(epoch)
            esched.step(epoch)
            assert esched.get_last_lr() == pytest.approx(tsched.get_last_lr(), rel=1e-12)


@pytest.mark.parametrize("name, build, kind, steps", CASES, ids=[c[0] for c in CASES])
def test_state_dict_round_trip(name, build, kind, steps):
    opt = ember_opt(kind)
    sched = build(S, opt)
    drive(opt, sched, 7)
    opt_state, sched_state = opt.state_dict(), sched.state_dict()
    assert "optimizer" not in sched_state
    rest = drive(opt, sched, 8)
    opt2 = ember_opt(kind)
    sched2 = build(S, opt2)
    opt2.load_state_dict(opt_state)
    sched2.load_state_dict(sched_state)
    assert drive(opt2, sched2, 8) == rest
