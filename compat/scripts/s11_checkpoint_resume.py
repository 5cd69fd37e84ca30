# Train, clip grads, schedule LR, checkpoint (dict with state_dicts), resume, verify identical continuation.
import copy
import os
import tempfile

import numpy as np
import torch
import torch.nn as nn

path = os.path.join(tempfile.mkdtemp(), "ckpt.pt")
rng = np.random.RandomState(0)
X = torch.from_numpy(rng.randn(64, 5).astype(np.float32))
y = torch.from_numpy((rng.randn(64) > 0).astype(np.int64))


def build():
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(5, 16), nn.ReLU(), nn.BatchNorm1d(16), nn.Linear(16, 2))
    o = torch.optim.Adam(m.parameters(), lr=1e-2)
    s = torch.optim.lr_scheduler.CosineAnnealingLR(o, T_max=10, eta_min=1e-4)
    return m, o, s


def train_steps(m, o, s, n):
    out = []
    for _ in range(n):
        o.zero_grad()
        loss = nn.functional.cross_entropy(m(X), y)
        loss.backward()
        total_norm = torch.nn.utils.clip_grad_norm_(m.parameters(), max_norm=0.5)
        o.step()
        s.step()
        out.append(loss.item())
    return out, total_norm


model, opt, sched = build()
l1, tn = train_steps(model, opt, sched, 5)
print("CHECK total_norm_is_tensor", isinstance(tn, torch.Tensor))
torch.save(
    {
        "epoch": 5,
        "model_state_dict": model.state_dict(),
        "optimizer_state_dict": opt.state_dict(),
        "scheduler": sched.state_dict(),
        "loss": l1[-1],
        "rng": torch.get_rng_state(),
    },
    path,
)
ref_model = copy.deepcopy(model)
l2, _ = train_steps(model, opt, sched, 5)

model2, opt2, sched2 = build()
ckpt = torch.load(path, map_location="cpu", weights_only=False)
model2.load_state_dict(ckpt["model_state_dict"])
opt2.load_state_dict(ckpt["optimizer_state_dict"])
sched2.load_state_dict(ckpt["scheduler"])
torch.set_rng_state(ckpt["rng"])
start_epoch = ckpt["epoch"]
print("CHECK lr_after_load", round(opt2.param_groups[0]["lr"], 6), start_epoch)
for (k, v), (k2, v2) in zip(ref_model.state_dict().items(), model2.state_dict().items()):
    assert k == k2 and torch.equal(v, v2), k
l3, _ = train_steps(model2, opt2, sched2, 5)
print("CHECK resumed_equal", np.allclose(l2, l3, rtol=1e-5), l2 == l3)
torch.save(model.state_dict(), path)
sd = torch.load(path, weights_only=True)
print("CHECK sd_keys", list(sd.keys()))
m3, _, _ = build()
res = m3.load_state_dict(sd, strict=True)
print("CHECK load_result", res.missing_keys, res.unexpected_keys)
print(
    "CHECK opt_state_keys",
    sorted(opt.state_dict().keys()),
    sorted(opt.state_dict()["param_groups"][0].keys()),
)
os.remove(path)
print("OK")
