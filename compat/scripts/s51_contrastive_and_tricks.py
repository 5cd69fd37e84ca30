# SimCLR-style contrastive loss, a Conv1d temporal model with causal dilation, EMA
# weights, gradient accumulation, weight norm / spectral norm, checkpointing and hooks.
import copy
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

torch.manual_seed(0)
rng = np.random.RandomState(0)


def nt_xent(z1, z2, tau=0.5):
    z = F.normalize(torch.cat([z1, z2]), dim=1)
    sim = z @ z.t() / tau
    n = z1.size(0)
    sim.fill_diagonal_(float("-inf"))
    targets = torch.cat([torch.arange(n, 2 * n), torch.arange(0, n)])
    return F.cross_entropy(sim, targets)


a = torch.tensor(rng.randn(4, 8), dtype=torch.float32)
b = a + 0.1 * torch.tensor(rng.randn(4, 8), dtype=torch.float32)
print("CHECK ntxent", round(nt_xent(a, b).item(), 5))
print("CHECK cos", F.cosine_similarity(a, b).round(decimals=4).tolist())
print("CHECK cdist", torch.cdist(a[:2], b[:3]).round(decimals=4).tolist())
print("CHECK pdist", F.pdist(a).round(decimals=4).tolist()[:3])
print("CHECK triplet", round(F.triplet_margin_loss(a, b, b.flip(0)).item(), 5))


class CausalConv(nn.Module):
    def __init__(self, c_in, c_out, k, d):
        super().__init__()
        self.pad = (k - 1) * d
        self.conv = nn.utils.parametrizations.weight_norm(nn.Conv1d(c_in, c_out, k, dilation=d))

    def forward(self, x):
        return self.conv(F.pad(x, (self.pad, 0)))


class TCN(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = CausalConv(3, 8, 3, 1)
        self.l2 = CausalConv(8, 8, 3, 2)
        self.head = nn.utils.parametrizations.spectral_norm(nn.Linear(8, 1))

    def forward(self, x):
        h = F.gelu(self.l1(x))
        h = h + checkpoint(lambda t: F.gelu(self.l2(t)), h, use_reentrant=False)
        return self.head(h.transpose(1, 2)).squeeze(-1)


model = TCN()
with torch.no_grad():
    for i, (name, p) in enumerate(sorted(model.named_parameters())):
        p.copy_(torch.tensor(np.random.RandomState(i).randn(*p.shape) * 0.3, dtype=torch.float32))
ema = copy.deepcopy(model)
for p in ema.parameters():
    p.requires_grad_(False)
feats = []
h = model.l1.register_forward_hook(lambda m, i, o: feats.append(o.shape))
x = torch.tensor(rng.randn(6, 3, 20), dtype=torch.float32)
y = x[:, 0].cumsum(-1) * 0.1
opt = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.01)
accum = 2
with torch.no_grad():  # one power iteration on the copied weights (exact for a 1-row
    model.train()  # weight), so sigma does not depend on the random u, v drawn at init
    model(x[:1])
model.eval()  # then frozen: deterministic
for step in range(12):
    for micro in range(accum):
        xb, yb = x[micro * 3 : (micro + 1) * 3], y[micro * 3 : (micro + 1) * 3]
        loss = F.mse_loss(model(xb), yb) / accum
        loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    with torch.no_grad():
        for pe, pm in zip(ema.parameters(), model.parameters()):
            pe.mul_(0.9).add_(pm.detach(), alpha=0.1)
    if step % 4 == 0:
        print("CHECK tcn", step, round(loss.item() * accum, 4))
h.remove()
print("CHECK hook_shapes", feats[0], len(feats))
out = model(x[:1])
print("CHECK causal", out.shape, bool(torch.isfinite(out).all()))
x2 = x[:1].clone()
x2[..., -1] += 10.0
print("CHECK causal_prefix", torch.allclose(model(x2)[..., :-1], out[..., :-1]))
print(
    "CHECK ema_diff",
    round(sum((a - b).abs().sum().item() for a, b in zip(ema.parameters(), model.parameters())), 3)
    > 0,
)
sd = model.state_dict()
print("CHECK keys", sorted(k for k in sd)[:4])
print("OK")
