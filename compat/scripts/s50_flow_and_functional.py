# A RealNVP-style normalising flow (log-determinants, masks, torch.distributions), plus
# torch.func / torch.autograd.functional tools and numerically careful idioms.
import math
import numpy as np
import torch
import torch.nn as nn
from torch.distributions import MultivariateNormal, Normal, Independent, Categorical, kl_divergence

torch.manual_seed(0)
rng = np.random.RandomState(0)
data = torch.tensor(
    rng.randn(64, 2) @ np.array([[1.0, 0.6], [0.0, 0.5]]) + [1.0, -2.0], dtype=torch.float32
)


class Coupling(nn.Module):
    def __init__(self, mask, seed):
        super().__init__()
        self.register_buffer("mask", mask)
        self.s = nn.Sequential(nn.Linear(2, 16), nn.Tanh(), nn.Linear(16, 2), nn.Tanh())
        self.t = nn.Sequential(nn.Linear(2, 16), nn.ReLU(), nn.Linear(16, 2))
        r = np.random.RandomState(seed)
        with torch.no_grad():
            for p in self.parameters():
                p.copy_(torch.tensor(r.randn(*p.shape) * 0.2, dtype=torch.float32))

    def forward(self, x):
        xm = x * self.mask
        s = self.s(xm) * (1 - self.mask)
        t = self.t(xm) * (1 - self.mask)
        y = xm + (1 - self.mask) * (x * torch.exp(s) + t)
        return y, s.sum(-1)


flows = nn.ModuleList(
    [Coupling(torch.tensor([1.0, 0.0]), 3), Coupling(torch.tensor([0.0, 1.0]), 4)] * 2
)
base = MultivariateNormal(torch.zeros(2), torch.eye(2))
opt = torch.optim.Adam(flows.parameters(), lr=1e-2)
for it in range(60):
    z, logdet = data, torch.zeros(data.size(0))
    for f in flows:
        z, ld = f(z)
        logdet = logdet + ld
    nll = -(base.log_prob(z) + logdet).mean()
    opt.zero_grad()
    nll.backward()
    opt.step()
    if it % 20 == 0:
        print("CHECK nll", it, round(nll.item(), 3))

n = Normal(torch.tensor([0.0, 1.0]), torch.tensor([1.0, 2.0]))
print(
    "CHECK normal",
    n.log_prob(torch.tensor([0.5, 0.5])).tolist(),
    n.entropy().tolist(),
    n.cdf(torch.tensor([0.0, 1.0])).tolist(),
)
ind = Independent(n, 1)
print(
    "CHECK independent",
    round(ind.log_prob(torch.tensor([0.5, 0.5])).item(), 5),
    ind.event_shape,
    ind.batch_shape,
)
p, q = (
    Categorical(probs=torch.tensor([0.2, 0.3, 0.5])),
    Categorical(logits=torch.tensor([0.0, 1.0, -1.0])),
)
print("CHECK kl", round(kl_divergence(p, q).item(), 5), round(p.entropy().item(), 5))
mvn = MultivariateNormal(
    torch.tensor([1.0, -1.0]), scale_tril=torch.tensor([[1.0, 0.0], [0.5, 2.0]])
)
print(
    "CHECK mvn",
    round(mvn.log_prob(torch.tensor([0.0, 0.0])).item(), 5),
    mvn.covariance_matrix.tolist(),
)


def f(x):
    return (x.sin() * x.pow(2)).sum()


x0 = torch.tensor([0.3, -1.2, 2.0])
J = torch.autograd.functional.jacobian(lambda x: x.exp() * x.sum(), x0)
Hs = torch.autograd.functional.hessian(f, x0)
print("CHECK jac", J.round(decimals=4).tolist())
print("CHECK hess", Hs.round(decimals=4).tolist())
g = torch.func.grad(f)(x0)
print("CHECK func_grad", g.round(decimals=4).tolist())
batched = torch.func.vmap(torch.func.grad(f))(torch.stack([x0, 2 * x0]))
print("CHECK vmap_grad", batched.round(decimals=4).tolist())
jf = torch.func.jacrev(lambda x: x.cumsum(0) * x)(x0)
print("CHECK jacrev", jf.round(decimals=4).tolist())
_, jvp_out = torch.func.jvp(lambda x: x.tanh(), (x0,), (torch.ones(3),))
print("CHECK jvp", jvp_out.round(decimals=4).tolist())
print("CHECK logsumexp_stable", torch.logsumexp(torch.tensor([1000.0, 1000.0]), 0).item())
print("CHECK log1p_exp", torch.nn.functional.softplus(torch.tensor([-100.0, 0.0, 100.0])).tolist())
print("CHECK xlogy", torch.xlogy(torch.tensor([0.0, 2.0]), torch.tensor([0.0, 3.0])).tolist())
print(
    "CHECK cholesky_logdet",
    round(2 * torch.linalg.cholesky(mvn.covariance_matrix).diagonal().log().sum().item(), 5),
    round(torch.logdet(mvn.covariance_matrix).item(), 5),
    round(math.log(4.0), 5),
)
print("OK")
