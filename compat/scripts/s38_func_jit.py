# torch.func and TorchScript-era idioms: per-sample gradients with
# vmap(grad(functional_call)), jacrev/hessian/jvp of small functions, an ensemble with
# stack_module_state, a model using @torch.jit.script helpers and is_scripting() branches,
# saved_tensors_hooks counting packs, legacy Variable, custom_fwd/custom_bwd.
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.autograd import Variable
from torch.func import (
    functional_call,
    grad,
    hessian,
    jacfwd,
    jacrev,
    jvp,
    stack_module_state,
    vjp,
    vmap,
)


def r(t, n=4):
    return [round(v, n) for v in t.reshape(-1).tolist()]


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(3, 4)
        self.fc2 = nn.Linear(4, 2)

    def forward(self, x):
        return self.fc2(torch.tanh(self.fc1(x)))


def fixed_mlp():
    m = MLP()
    with torch.no_grad():
        m.fc1.weight.copy_(torch.arange(12.0).reshape(4, 3) / 10 - 0.5)
        m.fc1.bias.copy_(torch.tensor([0.1, -0.1, 0.2, 0.0]))
        m.fc2.weight.copy_(torch.arange(8.0).reshape(2, 4) / 8 - 0.4)
        m.fc2.bias.copy_(torch.tensor([0.05, -0.05]))
    return m


model = fixed_mlp()
xs = torch.tensor(
    [[1.0, 2.0, 3.0], [0.0, 1.0, -1.0], [2.0, 0.0, 1.0], [1.0, 1.0, 1.0], [-1.0, 0.5, 0.0]]
)
ys = torch.tensor([0, 1, 1, 0, 1])

# --- per-sample gradients: the main use of torch.func
params = {k: v.detach() for k, v in model.named_parameters()}
buffers = {k: v.detach() for k, v in model.named_buffers()}


def sample_loss(p, b, x, y):
    out = functional_call(model, (p, b), (x.unsqueeze(0),))
    return F.cross_entropy(out, y.unsqueeze(0))


per_sample = vmap(grad(sample_loss), in_dims=(None, None, 0, 0))(params, buffers, xs, ys)
print("CHECK psg_keys", sorted(per_sample))
print("CHECK psg_shapes", [list(per_sample[k].shape) for k in sorted(per_sample)])
print("CHECK psg_fc1w_0", r(per_sample["fc1.weight"][0]))
print("CHECK psg_fc2b", r(per_sample["fc2.bias"]))
model.zero_grad()
F.cross_entropy(model(xs), ys, reduction="sum").backward()
print(
    "CHECK psg_matches_batch",
    all(
        torch.allclose(per_sample[k].sum(0), p.grad, atol=1e-5) for k, p in model.named_parameters()
    ),
)
print("CHECK psg_requires_grad", per_sample["fc1.weight"].requires_grad)
print("CHECK params_restored", model.fc1.weight is dict(model.named_parameters())["fc1.weight"])

# --- jacobians and Hessians of a small function
x = torch.tensor([0.5, -1.0, 2.0])


def f(x):
    return torch.stack([x[0] * x[1], x[1].sin() + x[2] ** 2])


print("CHECK jacrev", r(jacrev(f)(x)))
print("CHECK jacfwd", r(jacfwd(f)(x)))
print("CHECK hessian", r(hessian(lambda x: (x.sin() * x).sum())(x)))
print("CHECK grad_grad", round(grad(grad(lambda t: t.exp() * t))(torch.tensor(0.3)).item(), 5))
out, vjp_fn = vjp(f, x)
print("CHECK vjp", r(out), r(vjp_fn(torch.tensor([1.0, -1.0]))[0]))
print("CHECK jvp", r(jvp(f, (x,), (torch.tensor([1.0, 0.0, 1.0]),))[1]))
print("CHECK autograd_jacobian", r(torch.autograd.functional.jacobian(f, x)))
print("CHECK autograd_hessian", r(torch.autograd.functional.hessian(lambda x: (x**3).sum(), x)))

# --- vmap: dims, nesting, errors
mat = torch.arange(12.0).reshape(3, 4)
print("CHECK vmap_dot", r(vmap(torch.dot)(mat, mat)))
print("CHECK vmap_in1", r(vmap(lambda c: c.sum(), in_dims=1)(mat)))
print("CHECK vmap_out1", list(vmap(lambda row: row * 2, out_dims=1)(mat).shape))
print("CHECK vmap_nested", list(vmap(vmap(lambda a, b: a * b))(mat, mat).shape))
print("CHECK vmap_none", r(vmap(lambda row, w: row @ w, in_dims=(0, None))(mat, torch.ones(4))))
for name, fn in [
    ("nontensor", lambda: vmap(lambda row: 1.0)(mat)),
    ("sizes", lambda: vmap(torch.add)(mat, torch.ones(2, 4))),
    ("random", lambda: vmap(lambda row: row + torch.rand(4))(mat)),
    ("in_dims", lambda: vmap(torch.sin, in_dims=(0, 0))(mat)),
]:
    try:
        fn()
        print("CHECK vmap_err", name, "none")
    except Exception as e:
        print("CHECK vmap_err", name, type(e).__name__)
same = vmap(lambda row: torch.rand(2), randomness="same")(mat)
print("CHECK vmap_same", bool((same[0] == same[1]).all()), list(same.shape))

# --- an ensemble with stack_module_state
models = [fixed_mlp() for _ in range(3)]
with torch.no_grad():
    for i, m in enumerate(models):
        m.fc2.bias.add_(i)
ens_params, ens_buffers = stack_module_state(models)
ens = vmap(lambda p, b, x: functional_call(models[0], (p, b), (x,)), in_dims=(0, 0, None))(
    ens_params, ens_buffers, xs
)
print("CHECK ensemble", list(ens.shape), r(ens[:, 0]))


# --- TorchScript-era model code, run as eager Python
@torch.jit.script
def fused_gelu(x: torch.Tensor) -> torch.Tensor:
    return x * 0.5 * (1.0 + torch.erf(x / 1.41421))


@torch.jit.script
def clamp_norm(x: torch.Tensor, max_norm: float = 1.0) -> torch.Tensor:
    n = (x * x).sum(-1, keepdim=True).sqrt().clamp(min=max_norm)
    return x / n * max_norm


class ScriptFriendly(nn.Module):
    scale: torch.jit.Final[float]

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)
        self.scale = 2.0
        with torch.no_grad():
            self.lin.weight.copy_(torch.eye(3) * 0.5)
            self.lin.bias.zero_()

    @torch.jit.ignore
    def debug_stats(self, x):
        return float(x.abs().mean())

    @torch.jit.unused
    def training_only(self, x):
        return x * 0

    @torch.jit.export
    def embed(self, x):
        return clamp_norm(self.lin(x))

    def forward(self, x):
        if torch.jit.is_scripting():  # (both branches compute the same, as in real code)
            y = fused_gelu(self.lin(x)) * self.scale
        else:
            y = fused_gelu(self.lin(x)).mul(self.scale)
        if not torch.jit.is_tracing():
            y = y + 0.0
        fut = torch.jit.fork(self.embed, x)
        return y + torch.jit.wait(fut)


sm = ScriptFriendly()
print("CHECK jit_flags", torch.jit.is_scripting(), torch.jit.is_tracing())
print("CHECK jit_forward", r(sm(xs[:2])))
scripted = torch.jit.script(sm)
print("CHECK jit_script_same", torch.allclose(scripted(xs[:2]), sm(xs[:2])))
traced = torch.jit.trace(fused_gelu, torch.ones(3))
print("CHECK jit_trace", r(traced(torch.tensor([-1.0, 0.0, 1.0]))))
print("CHECK jit_annotate", torch.jit.annotate(list, [1, 2]))
print(
    "CHECK jit_modifiers",
    hasattr(ScriptFriendly.debug_stats, "_torchscript_modifier"),
    sm.debug_stats(xs),
)

# --- saved tensor hooks
packed, unpacked = [], []


def pack(t):
    packed.append(tuple(t.shape))
    return t.detach().clone()


def unpack(t):
    unpacked.append(tuple(t.shape))
    return t


a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
    y = (a * a).sin().sum()
y.backward()
print("CHECK hooks_counts", len(packed), len(unpacked), r(a.grad))
a.grad = None
with torch.autograd.graph.save_on_cpu():
    z = (a.exp() * a).sum()
z.backward()
print("CHECK save_on_cpu", r(a.grad))
with torch.autograd.graph.disable_saved_tensors_hooks("hooks are off here"):
    try:
        with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
            pass
        print("CHECK hooks_disabled none")
    except RuntimeError as e:
        print("CHECK hooks_disabled", str(e))

# --- legacy Variable, batched grads, custom_fwd/custom_bwd
v = Variable(torch.ones(2), requires_grad=True)
print(
    "CHECK variable",
    isinstance(v, Variable),
    isinstance(torch.ones(1), Variable),
    v.is_leaf,
    v.requires_grad,
)
w = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
(jac,) = torch.autograd.grad(w * w, w, torch.eye(3), is_grads_batched=True)
print("CHECK grads_batched", r(jac))


class ScaledSquare(torch.autograd.Function):
    @staticmethod
    @torch.amp.custom_fwd(device_type="cpu", cast_inputs=torch.float32)
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    @torch.amp.custom_bwd(device_type="cpu")
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * x * g


q = torch.tensor([1.5, -2.0], requires_grad=True)
with torch.autocast("cpu", dtype=torch.bfloat16):
    out = ScaledSquare.apply(q)
out.sum().backward()
print("CHECK custom_fwd", out.dtype, r(q.grad))
print("OK")
