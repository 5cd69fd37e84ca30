# nn.Module API: containers, named_*, hooks, freezing, state_dict, load_state_dict(strict=False), train/eval.
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 8))
        self.heads = nn.ModuleList([nn.Linear(8, 2) for _ in range(3)])
        self.extra = nn.ModuleDict({"a": nn.Linear(8, 1), "b": nn.Identity()})
        self.scale = nn.Parameter(torch.ones(1))
        self.plist = nn.ParameterList([nn.Parameter(torch.zeros(2)) for _ in range(2)])
        self.register_buffer("step", torch.tensor(0))
        self.register_buffer("tmp", torch.zeros(1), persistent=False)

    def forward(self, x):
        h = self.backbone(x) * self.scale
        return [head(h) for head in self.heads], self.extra["a"](h)


torch.manual_seed(0)
net = Net()
print("CHECK named_params", [n for n, _ in net.named_parameters()])
print("CHECK state_keys", list(net.state_dict().keys()))
print("CHECK named_modules", [n for n, _ in net.named_modules()])
print("CHECK children", [type(c).__name__ for c in net.children()])
print("CHECK buffers", [n for n, _ in net.named_buffers()])
print(
    "CHECK seq_index",
    type(net.backbone[0]).__name__,
    type(net.backbone[-1]).__name__,
    len(net.backbone[:2]),
    type(net.backbone[:2]).__name__,
)
print("CHECK modulelist", len(net.heads), type(net.heads[1]).__name__)
print("CHECK moduledict", list(net.extra.keys()), "a" in net.extra)
feats = {}


def hook(module, inp, out):
    feats["bb"] = out.detach()


h = net.backbone.register_forward_hook(hook)
pre = net.backbone[0].register_forward_pre_hook(lambda m, inp: None)
outs, e = net(torch.randn(5, 4))
print("CHECK hook", feats["bb"].shape)
h.remove()
pre.remove()
for p in net.backbone.parameters():
    p.requires_grad = False
net.heads.requires_grad_(False)
trainable = [n for n, p in net.named_parameters() if p.requires_grad]
print("CHECK trainable", trainable)
opt = torch.optim.SGD(filter(lambda p: p.requires_grad, net.parameters()), lr=0.1)
loss = sum(o.sum() for o in outs) + e.sum()
loss.backward()
print(
    "CHECK frozen_grad", net.backbone[0].weight.grad is None, net.extra["a"].weight.grad is not None
)
opt.step()
sd = net.state_dict()
sd.pop("extra.a.bias")
sd["junk"] = torch.zeros(1)
r = net.load_state_dict(sd, strict=False)
print("CHECK strict_false", r.missing_keys, r.unexpected_keys)
try:
    net.load_state_dict(sd)
    print("CHECK strict_err none")
except RuntimeError as ex:
    print("CHECK strict_err RuntimeError", "Missing key" in str(ex), "Unexpected key" in str(ex))
net.eval()
print("CHECK training", net.training, net.backbone[0].training)
net.train()
print("CHECK training2", net.training, net.heads[0].training)
net.apply(lambda m: nn.init.zeros_(m.bias) if isinstance(m, nn.Linear) else None)
print("CHECK apply_bias", net.heads[0].bias.abs().sum().item())
net.zero_grad()
print("CHECK zero_grad_none", net.extra["a"].weight.grad is None)
print(
    "CHECK get_submodule",
    type(net.get_submodule("backbone.2")).__name__,
    net.get_parameter("scale").shape,
)
seq = nn.Sequential()
seq.add_module("fc", nn.Linear(2, 2))
seq.append(nn.ReLU())
print("CHECK seq_dyn", len(seq), [n for n, _ in seq.named_children()])
from collections import OrderedDict

od = nn.Sequential(OrderedDict([("conv", nn.Conv1d(1, 2, 3)), ("act", nn.ReLU())]))
print("CHECK od", od.conv.kernel_size, list(od._modules.keys()))
tied = nn.Module()
tied.enc = nn.Embedding(10, 4)
tied.dec = nn.Linear(4, 10, bias=False)
tied.dec.weight = tied.enc.weight
print("CHECK tied", len(list(tied.parameters())), len(tied.state_dict()))
print("CHECK extra_repr", nn.Linear(2, 3).extra_repr())
print("CHECK double", net.double().scale.dtype)
print("OK")
