# LR scheduler sequences (exact lrs), warmup idioms, ReduceLROnPlateau, OneCycle, SequentialLR.
import torch
import torch.nn as nn
from torch.optim import lr_scheduler


def seq(make_sched, n=12, opt_cls=torch.optim.SGD, metric=None, **okw):
    p = [nn.Parameter(torch.zeros(1))]
    opt = opt_cls(p, lr=0.1, **okw)
    s = make_sched(opt)
    lrs = []
    for i in range(n):
        opt.step()
        if metric is not None:
            s.step(metric[i])
        else:
            s.step()
        lrs.append(round(opt.param_groups[0]["lr"], 6))
    return lrs


def chk(name, *a, **k):
    try:
        print("CHECK", name, seq(*a, **k))
    except Exception as e:
        print("CHECK", name, "ERROR", type(e).__name__, str(e)[:80])


chk("step", lambda o: lr_scheduler.StepLR(o, step_size=3, gamma=0.5))
chk("multistep", lambda o: lr_scheduler.MultiStepLR(o, milestones=[2, 5], gamma=0.1))
chk("exp", lambda o: lr_scheduler.ExponentialLR(o, gamma=0.9))
chk("cos", lambda o: lr_scheduler.CosineAnnealingLR(o, T_max=5, eta_min=0.01))
chk("cos_wr", lambda o: lr_scheduler.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=2))
chk("lambda", lambda o: lr_scheduler.LambdaLR(o, lr_lambda=lambda e: min(1.0, (e + 1) / 4)))
chk("mult", lambda o: lr_scheduler.MultiplicativeLR(o, lr_lambda=lambda e: 0.95))
chk("linear", lambda o: lr_scheduler.LinearLR(o, start_factor=0.25, total_iters=4))
chk("const", lambda o: lr_scheduler.ConstantLR(o, factor=0.5, total_iters=3))
chk("poly", lambda o: lr_scheduler.PolynomialLR(o, total_iters=6, power=2.0))
chk("onecycle", lambda o: lr_scheduler.OneCycleLR(o, max_lr=1.0, total_steps=12))
chk(
    "onecycle_lin",
    lambda o: lr_scheduler.OneCycleLR(
        o, max_lr=1.0, epochs=3, steps_per_epoch=4, anneal_strategy="linear"
    ),
    opt_cls=torch.optim.Adam,
)
chk("cyclic", lambda o: lr_scheduler.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=3))
chk(
    "sequential",
    lambda o: lr_scheduler.SequentialLR(
        o,
        [lr_scheduler.LinearLR(o, 0.1, total_iters=3), lr_scheduler.ExponentialLR(o, 0.9)],
        milestones=[3],
    ),
)
chk(
    "chained",
    lambda o: lr_scheduler.ChainedScheduler(
        [lr_scheduler.ConstantLR(o, 0.5, total_iters=2), lr_scheduler.ExponentialLR(o, 0.9)]
    ),
)
chk(
    "plateau",
    lambda o: lr_scheduler.ReduceLROnPlateau(o, mode="min", factor=0.5, patience=1),
    metric=[1.0, 0.9, 0.9, 0.9, 0.9, 0.8, 0.8, 0.8, 0.8, 0.8, 0.8, 0.8],
)
p = [nn.Parameter(torch.zeros(1))]
opt = torch.optim.SGD(p, lr=0.1)
s = lr_scheduler.StepLR(opt, 2)
print("CHECK get_last_lr", s.get_last_lr(), s.last_epoch, sorted(s.state_dict().keys()))
print("CHECK initial_lr", opt.param_groups[0].get("initial_lr"))
o2 = torch.optim.SGD(
    [
        {"params": [nn.Parameter(torch.zeros(1))], "lr": 0.5},
        {"params": [nn.Parameter(torch.zeros(1))]},
    ],
    lr=0.1,
    momentum=0.9,
)
s2 = lr_scheduler.LambdaLR(o2, [lambda e: 0.5**e, lambda e: 1.0])
o2.step()
s2.step()
o2.step()
s2.step()
print("CHECK groups", [g["lr"] for g in o2.param_groups])
print("OK")
