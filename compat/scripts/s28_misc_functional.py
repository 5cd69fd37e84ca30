# Knowledge distillation, label smoothing by hand, mixup, gumbel_softmax, activations, F.* helpers.
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

rng = np.random.RandomState(0)
s = torch.tensor(rng.randn(4, 5), dtype=torch.float32)
t = torch.tensor(rng.randn(4, 5), dtype=torch.float32)
T = 2.0
kd = F.kl_div(F.log_softmax(s / T, dim=1), F.softmax(t / T, dim=1), reduction="batchmean") * T * T
print("CHECK kd", round(kd.item(), 5))
lam = 0.3
idx = torch.tensor([1, 0, 3, 2])
mixed = lam * s + (1 - lam) * s[idx, :]
print("CHECK mixup", round(mixed.sum().item(), 4))
acts = {
    "relu": F.relu,
    "relu6": F.relu6,
    "gelu": F.gelu,
    "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
    "silu": F.silu,
    "mish": F.mish,
    "elu": F.elu,
    "selu": F.selu,
    "celu": F.celu,
    "softplus": F.softplus,
    "softsign": F.softsign,
    "hardswish": F.hardswish,
    "hardsigmoid": F.hardsigmoid,
    "hardtanh": F.hardtanh,
    "leaky": lambda x: F.leaky_relu(x, 0.1),
    "logsigmoid": F.logsigmoid,
    "tanhshrink": F.tanhshrink,
    "softshrink": F.softshrink,
    "hardshrink": F.hardshrink,
    "threshold": lambda x: F.threshold(x, 0.1, 20.0),
    "glu": lambda x: F.glu(x[:, :4], dim=1),
    "sigmoid": torch.sigmoid,
    "tanh": torch.tanh,
    "softmin": lambda x: F.softmin(x, dim=1),
    "log_softmax": lambda x: F.log_softmax(x, dim=-1),
    "prelu": lambda x: F.prelu(x, torch.tensor([0.25])),
    "rrelu_eval": lambda x: F.rrelu(x, training=False),
    "normalize": lambda x: F.normalize(x, dim=0),
    "layer_norm": lambda x: F.layer_norm(x, (5,)),
    "dropout_eval": lambda x: F.dropout(x, 0.5, training=False),
    "linear": lambda x: F.linear(x, torch.ones(2, 5)),
    "bilinear": lambda x: F.bilinear(x, x, torch.ones(2, 5, 5)),
    "local_resp": lambda x: F.local_response_norm(x.view(1, 4, 5), 2),
    "group_norm": lambda x: F.group_norm(x.view(1, 4, 5), 2),
    "instance_norm": lambda x: F.instance_norm(x.view(1, 4, 5)),
    "batch_norm_eval": lambda x: F.batch_norm(x, torch.zeros(5), torch.ones(5)),
    "embedding": lambda x: F.embedding(torch.tensor([1, 2]), x),
    "softmax_dtype": lambda x: F.softmax(x, dim=1, dtype=torch.float64),
    "logsumexp": lambda x: torch.logsumexp(x, dim=1),
    "cumlogsumexp": lambda x: torch.logcumsumexp(x, dim=1),
    "erf": torch.erf,
    "erfinv": lambda x: torch.erfinv(x.clamp(-0.9, 0.9)),
    "lgamma": lambda x: torch.lgamma(x.abs() + 0.1),
    "digamma": lambda x: torch.digamma(x.abs() + 0.1),
    "xlogy": lambda x: torch.xlogy(x.abs(), x.abs()),
    "sinc": torch.sinc,
    "logit": lambda x: torch.logit(torch.sigmoid(x)),
    "expm1": torch.expm1,
    "log1p": lambda x: torch.log1p(x.abs()),
}
for k, fn in acts.items():
    try:
        v = fn(s)
        print("CHECK", k, list(v.shape), round(v.double().sum().item(), 4))
    except Exception as e:
        print("CHECK", k, "ERROR", type(e).__name__)
torch.manual_seed(0)
g = F.gumbel_softmax(s, tau=1.0, hard=True)
print("CHECK gumbel_hard", g.sum(dim=1).tolist())
print("CHECK dropout_train", (F.dropout(torch.ones(1000), 0.5) == 0).float().mean().item() > 0.3)
print("CHECK one_hot_float", F.one_hot(torch.tensor([1, 0]), 3).float().dtype)
print(
    "CHECK label_smooth",
    round(((1 - 0.1) * F.one_hot(torch.tensor([1]), 5) + 0.1 / 5).sum().item(), 4),
)
print("CHECK softmax_implicit", F.softmax(torch.ones(2, 3), dim=-1).sum(-1).tolist())
print("OK")
