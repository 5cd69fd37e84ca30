# nn.init functions (shapes/stats), calculate_gain, fan computation, weight sharing.
import torch
import torch.nn as nn

torch.manual_seed(0)
w = torch.empty(256, 128)
nn.init.xavier_uniform_(w)
print("CHECK xavier_u_bound", w.abs().max().item() <= (6 / (256 + 128)) ** 0.5 + 1e-6)
nn.init.xavier_normal_(w, gain=nn.init.calculate_gain("relu"))
print("CHECK xavier_n_std", round(w.std().item(), 2))
nn.init.kaiming_uniform_(w, a=5**0.5)
print("CHECK kaiming_u_bound", w.abs().max().item() <= (1 / 128) ** 0.5 + 1e-6)
nn.init.kaiming_normal_(w, mode="fan_out", nonlinearity="relu")
print("CHECK kaiming_n_std", round(w.std().item(), 2))
nn.init.trunc_normal_(w, std=0.02, a=-0.04, b=0.04)
print("CHECK trunc", w.abs().max().item() <= 0.04)
nn.init.orthogonal_(w)
print("CHECK ortho", torch.allclose(w.T @ w, torch.eye(128), atol=1e-4))
nn.init.uniform_(w, -0.1, 0.1)
nn.init.normal_(w, mean=1.0, std=0.01)
print("CHECK normal_mean", round(w.mean().item(), 1))
nn.init.constant_(w, 0.3)
nn.init.ones_(w)
nn.init.zeros_(w)
print("CHECK zeros", w.abs().sum().item())
e = torch.empty(3, 5)
nn.init.eye_(e)
print("CHECK eye", e.tolist())
c = torch.empty(4, 4, 3)
nn.init.dirac_(c)
print("CHECK dirac", c.sum().item())
print(
    "CHECK gains",
    nn.init.calculate_gain("tanh"),
    nn.init.calculate_gain("leaky_relu", 0.2),
    nn.init.calculate_gain("selu"),
)
conv = nn.Conv2d(3, 8, 3)
print("CHECK conv_default_bound", conv.weight.abs().max().item() <= 1 / (27**0.5) + 1e-6)
print("CHECK fan", nn.init._calculate_fan_in_and_fan_out(conv.weight))
r = nn.init.normal_(torch.empty(2))
print("CHECK init_returns", type(r).__name__)
emb = nn.Embedding(10, 4)
lin = nn.Linear(4, 10)
lin.weight = emb.weight
opt = torch.optim.SGD(list(emb.parameters()) + list(lin.parameters()), lr=0.1)
print("CHECK n_distinct", len({id(p) for p in opt.param_groups[0]["params"]}))
print(
    "CHECK param_is_param",
    isinstance(lin.weight, nn.Parameter),
    isinstance(lin.weight, torch.Tensor),
)
p = nn.Parameter(torch.randn(2), requires_grad=False)
print("CHECK param_rg", p.requires_grad)
print("OK")
