# Optimizer parity: same weights, same data -> identical trajectories for each optimizer.
import numpy as np
import torch
import torch.nn as nn

rng = np.random.RandomState(0)
X = torch.tensor(rng.randn(32, 5), dtype=torch.float32)
Y = torch.tensor(rng.randn(32, 2), dtype=torch.float32)
W0 = rng.randn(2, 5).astype(np.float32) * 0.3
B0 = rng.randn(2).astype(np.float32) * 0.1


def run(make_opt, steps=8):
    m = nn.Linear(5, 2)
    with torch.no_grad():
        m.weight.copy_(torch.from_numpy(W0))
        m.bias.copy_(torch.from_numpy(B0))
    o = make_opt(m.parameters())
    for _ in range(steps):
        o.zero_grad()
        loss = ((m(X) - Y) ** 2).mean()
        loss.backward()
        o.step()
    return [round(v, 5) for v in m.weight.detach().view(-1).tolist()[:4]] + [round(loss.item(), 5)]


O = torch.optim
cases = {
    "sgd": lambda p: O.SGD(p, lr=0.1),
    "sgd_mom_nest_wd": lambda p: O.SGD(p, lr=0.05, momentum=0.9, nesterov=True, weight_decay=1e-2),
    "sgd_dampening": lambda p: O.SGD(p, lr=0.05, momentum=0.9, dampening=0.5),
    "adam": lambda p: O.Adam(p, lr=1e-2),
    "adam_amsgrad_wd": lambda p: O.Adam(p, lr=1e-2, amsgrad=True, weight_decay=0.1),
    "adamw": lambda p: O.AdamW(p, lr=1e-2, weight_decay=0.1),
    "adamw_default": lambda p: O.AdamW(p),
    "rmsprop": lambda p: O.RMSprop(p, lr=1e-2),
    "rmsprop_centered_mom": lambda p: O.RMSprop(p, lr=1e-2, momentum=0.9, centered=True),
    "adagrad": lambda p: O.Adagrad(p, lr=0.1),
    "adadelta": lambda p: O.Adadelta(p, lr=1.0),
    "adamax": lambda p: O.Adamax(p, lr=1e-2),
    "nadam": lambda p: O.NAdam(p, lr=1e-2),
    "radam": lambda p: O.RAdam(p, lr=1e-2),
    "asgd": lambda p: O.ASGD(p, lr=1e-2),
    "rprop": lambda p: O.Rprop(p, lr=1e-2),
    "lbfgs_like_sgd_maximize": lambda p: O.SGD(p, lr=0.01, maximize=True),
}
for name, mk in cases.items():
    try:
        print("CHECK", name, run(mk))
    except Exception as e:
        print("CHECK", name, "ERROR", type(e).__name__, str(e)[:80])
m = nn.Linear(2, 2)
o = O.Adam(m.parameters(), lr=1e-3)
m(torch.ones(1, 2)).sum().backward()
o.step()
sd = o.state_dict()
print("CHECK adam_state_keys", sorted(sd["state"][0].keys()), type(sd["state"][0]["step"]).__name__)
print("CHECK param_group_keys", sorted(sd["param_groups"][0].keys()))
o.add_param_group({"params": [nn.Parameter(torch.zeros(1))], "lr": 0.5})
print("CHECK add_group", len(o.param_groups), o.param_groups[1]["betas"])
for g in o.param_groups:
    g["lr"] = 0.01
print("CHECK set_lr", [g["lr"] for g in o.param_groups])
print("OK")
