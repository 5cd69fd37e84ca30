# nn.utils.parametrize / weight_norm / spectral_norm, fusion, SWA + EMA averaging,
# torch.utils.checkpoint and LBFGS on a fixed problem (copied weights, no RNG in CHECKs).
import numpy as np
import torch
import torch.nn as nn
import torch.nn.utils.parametrize as P
from torch.nn.utils import parametrizations
from torch.optim.swa_utils import SWALR, AveragedModel, get_ema_multi_avg_fn, update_bn
from torch.utils.checkpoint import checkpoint

rng = np.random.RandomState(0)


def fixed(module):
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.tensor(rng.uniform(-0.5, 0.5, tuple(p.shape)), dtype=torch.float32))
    return module


class Symmetric(nn.Module):
    def forward(self, X):
        return X.triu() + X.triu(1).transpose(-1, -2)


lin = fixed(nn.Linear(3, 3))
P.register_parametrization(lin, "weight", Symmetric())
print(
    "CHECK sym",
    torch.allclose(lin.weight, lin.weight.T),
    type(lin).__name__,
    P.is_parametrized(lin),
)
print("CHECK sym_keys", list(lin.state_dict().keys()))
P.remove_parametrizations(lin, "weight")
print("CHECK removed", type(lin).__name__, [n for n, _ in lin.named_parameters()])

conv = fixed(nn.Conv2d(2, 4, 3))
conv = parametrizations.weight_norm(conv, name="weight", dim=0)
print("CHECK wn_keys", list(conv.state_dict().keys()))
g = conv.parametrizations.weight.original0
print("CHECK wn_g", list(g.shape), round(g.sum().item(), 4))
x = torch.tensor(rng.randn(1, 2, 5, 5), dtype=torch.float32)
print("CHECK wn_out", round(conv(x).sum().item(), 4))
old = nn.utils.weight_norm(fixed(nn.Linear(4, 2)))
print("CHECK old_wn_keys", sorted(old.state_dict().keys()))

disc = nn.Sequential(
    parametrizations.spectral_norm(fixed(nn.Linear(4, 8))),
    nn.LeakyReLU(0.2),
    parametrizations.spectral_norm(fixed(nn.Linear(8, 1))),
)
for _ in range(20):
    disc(torch.ones(2, 4))
W0 = disc[0].parametrizations.weight.original.detach().numpy()
sigma = np.linalg.svd(W0, compute_uv=False)[0]
print("CHECK sn_unit", np.allclose(disc[0].weight.detach().numpy(), W0 / sigma, atol=1e-4))

model = fixed(nn.Sequential(nn.Conv2d(1, 4, 3), nn.BatchNorm2d(4), nn.ReLU()))
img = torch.tensor(rng.randn(2, 1, 6, 6), dtype=torch.float32)
model.train()
model(img)
model.eval()
fused = nn.utils.fuse_conv_bn_eval(model[0], model[1])
print("CHECK fused", torch.allclose(fused(img), model[1](model[0](img)), atol=1e-5))

net = fixed(nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Linear(8, 1)))
swa = AveragedModel(net)
ema = AveragedModel(net, multi_avg_fn=get_ema_multi_avg_fn(0.9))
opt = torch.optim.SGD(net.parameters(), lr=0.1)
swa_sched = SWALR(opt, swa_lr=0.05, anneal_epochs=3)
data = torch.tensor(rng.randn(16, 4), dtype=torch.float32)
target = data.sum(1, keepdim=True)
lrs = []
for step in range(6):
    opt.zero_grad()
    nn.functional.mse_loss(net(data), target).backward()
    opt.step()
    swa.update_parameters(net)
    ema.update_parameters(net)
    swa_sched.step()
    lrs.append(round(opt.param_groups[0]["lr"], 6))
print("CHECK swalr", lrs)
print(
    "CHECK swa_n",
    swa.n_averaged.item(),
    round(swa.module[0].weight.sum().item(), 4),
    round(ema.module[0].weight.sum().item(), 4),
)
update_bn([(data[:8], 0), (data[8:], 1)], swa)
print("CHECK update_bn", round(swa.module[1].running_mean.sum().item(), 4))

block = fixed(nn.Sequential(nn.Linear(4, 4), nn.Tanh(), nn.Linear(4, 4)))
inp = torch.tensor(rng.randn(3, 4), dtype=torch.float32, requires_grad=True)
out = checkpoint(block, inp, use_reentrant=False)
out.pow(2).sum().backward()
g_ckpt = [p.grad.clone() for p in block.parameters()] + [inp.grad.clone()]
block.zero_grad()
inp.grad = None
block(inp).pow(2).sum().backward()
g_ref = [p.grad for p in block.parameters()] + [inp.grad]
print("CHECK checkpoint_grads", all(torch.allclose(a, b, atol=1e-6) for a, b in zip(g_ckpt, g_ref)))

xs = torch.tensor([-1.2, 1.0], requires_grad=True)
lbfgs = torch.optim.LBFGS([xs], lr=1, max_iter=100, line_search_fn="strong_wolfe")


def rosen():
    lbfgs.zero_grad()
    f = (1 - xs[0]) ** 2 + 100 * (xs[1] - xs[0] ** 2) ** 2
    f.backward()
    return f


for _ in range(3):
    lbfgs.step(rosen)
print("CHECK lbfgs_rosen", [round(v, 3) for v in xs.tolist()])
rp = torch.optim.Rprop([nn.Parameter(torch.tensor([3.0, -2.0]))], lr=0.1)
print("CHECK rprop_group", sorted(rp.param_groups[0].keys()))
print("OK")
