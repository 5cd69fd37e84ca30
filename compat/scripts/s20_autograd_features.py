# Grad accumulation, detach_, backward(gradient=...), retain_graph, no_grad/enable_grad nesting, anomaly.
import torch

x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
for _ in range(3):
    y = (x**2).sum()
    y.backward()
print("CHECK accum", x.grad.tolist())
x.grad = None
y = x * 2
y.backward(torch.tensor([1.0, 0.1, 0.01]))
print("CHECK vjp", x.grad.tolist())
z = (x * x).sum()
z.backward(retain_graph=True)
z.backward()
print("CHECK retain", x.grad.tolist())
try:
    w = (x * x).sum()
    w.backward()
    w.backward()
    print("CHECK double_backward_err none")
except RuntimeError as e:
    print("CHECK double_backward_err RuntimeError")
with torch.no_grad():
    a = x * 2
    with torch.enable_grad():
        b = x * 2
print("CHECK modes", a.requires_grad, b.requires_grad, torch.is_grad_enabled())


@torch.no_grad()
def f(t):
    return t * 3


print("CHECK decorator", f(x).requires_grad)
with torch.set_grad_enabled(False):
    print("CHECK set_grad_enabled", (x * 2).requires_grad)
with torch.inference_mode():
    i = x * 2
print("CHECK inference", i.requires_grad)
d = (x * 2).detach()
print("CHECK detach", d.requires_grad, d.grad_fn is None)
e = x * 2
e.detach_()
print("CHECK detach_", e.requires_grad)
try:
    (x * 2).numpy()
    print("CHECK numpy_rg none")
except RuntimeError:
    print("CHECK numpy_rg RuntimeError")
try:
    x.add_(1)
    print("CHECK leaf_inplace none")
except RuntimeError:
    print("CHECK leaf_inplace RuntimeError")
try:
    torch.tensor([1.0, 2.0]).sum().backward()
    print("CHECK no_grad_backward none")
except RuntimeError:
    print("CHECK no_grad_backward RuntimeError")
try:
    (x * 2).backward()
    print("CHECK nonscalar none")
except RuntimeError:
    print("CHECK nonscalar RuntimeError")
t = torch.ones(2, requires_grad=True)
u = t.clone()
u[0] = 5
u.sum().backward()
print("CHECK clone_setitem_grad", t.grad.tolist())
s = torch.tensor(1.0, requires_grad=True)
(g,) = torch.autograd.grad(s * 2, s)
print("CHECK autograd_grad", g.item(), s.grad)
q = torch.ones(2, requires_grad=True)
r = torch.ones(2, requires_grad=True)
gq, gr = torch.autograd.grad((q * 2).sum(), [q, r], allow_unused=True)
print("CHECK allow_unused", gq.tolist(), gr)
with torch.autograd.set_detect_anomaly(True):
    v = torch.tensor([1.0], requires_grad=True)
    (v * 2).sum().backward()
print("CHECK anomaly_ok", v.grad.tolist())
m = torch.tensor([2.0], requires_grad=True)
out = m.exp()
out.sum().backward()
print("CHECK exp_grad", round(m.grad.item(), 4))
p = torch.zeros(3, requires_grad=True)
p.requires_grad_(False)
print("CHECK requires_grad_", p.requires_grad)
l = torch.nn.Linear(2, 2)
out = l(torch.ones(1, 2)).sum()
out.backward()
gsum = l.weight.grad.sum().item()
out = l(torch.ones(1, 2)).sum()
out.backward()
print("CHECK module_accum", l.weight.grad.sum().item() == 2 * gsum)
print(
    "CHECK grad_fn_name",
    type((x * 2).sum().grad_fn).__name__,
    (x * 2).grad_fn.name() if hasattr((x * 2).grad_fn, "name") else "",
)
print("CHECK next_functions", len((x * 2 + 1).grad_fn.next_functions))
print("OK")
