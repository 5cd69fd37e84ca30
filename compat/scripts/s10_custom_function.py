# Custom autograd.Function, gradcheck, higher-order grads, torch.autograd.grad, hooks.
import torch
from torch.autograd import Function, gradcheck


class MyReLU(Function):
    @staticmethod
    def forward(ctx, input):
        ctx.save_for_backward(input)
        return input.clamp(min=0)

    @staticmethod
    def backward(ctx, grad_output):
        (input,) = ctx.saved_tensors
        grad_input = grad_output.clone()
        grad_input[input < 0] = 0
        return grad_input


class LinearFunction(Function):
    @staticmethod
    def forward(ctx, input, weight, bias=None):
        ctx.save_for_backward(input, weight, bias)
        output = input.mm(weight.t())
        if bias is not None:
            output += bias.unsqueeze(0).expand_as(output)
        return output

    @staticmethod
    def backward(ctx, grad_output):
        input, weight, bias = ctx.saved_tensors
        grad_input = grad_weight = grad_bias = None
        if ctx.needs_input_grad[0]:
            grad_input = grad_output.mm(weight)
        if ctx.needs_input_grad[1]:
            grad_weight = grad_output.t().mm(input)
        if bias is not None and ctx.needs_input_grad[2]:
            grad_bias = grad_output.sum(0)
        return grad_input, grad_weight, grad_bias


class ScaleBy(Function):
    @staticmethod
    def forward(ctx, x, k):
        ctx.k = k
        return x * k

    @staticmethod
    def backward(ctx, g):
        return g * ctx.k, None


torch.manual_seed(0)
x = torch.tensor([[-1.0, 2.0], [3.0, -4.0]], requires_grad=True)
y = MyReLU.apply(x)
y.sum().backward()
print("CHECK relu_grad", x.grad.tolist())

inp = (
    torch.randn(5, 4, dtype=torch.double, requires_grad=True),
    torch.randn(3, 4, dtype=torch.double, requires_grad=True),
    torch.randn(3, dtype=torch.double, requires_grad=True),
)
print("CHECK gradcheck", gradcheck(LinearFunction.apply, inp, eps=1e-6, atol=1e-4))
z = ScaleBy.apply(x, 3.0)
print("CHECK scale_grad_fn", type(z.grad_fn).__name__ != "NoneType")
(g,) = torch.autograd.grad(z.sum(), x)
print("CHECK scale_grad", g.tolist())

# higher order
t = torch.tensor(2.0, requires_grad=True)
f = t**3
(df,) = torch.autograd.grad(f, t, create_graph=True)
(d2f,) = torch.autograd.grad(df, t)
print("CHECK d1", df.item(), "d2", d2f.item())

# gradient penalty idiom
inter = torch.randn(4, 3, requires_grad=True)
out = (inter**2).sum(dim=1)
grads = torch.autograd.grad(
    outputs=out,
    inputs=inter,
    grad_outputs=torch.ones_like(out),
    create_graph=True,
    retain_graph=True,
    only_inputs=True,
)[0]
gp = ((grads.norm(2, dim=1) - 1) ** 2).mean()
gp.backward()
print("CHECK gp_grad_shape", list(inter.grad.shape))

# hooks & retain_grad
a = torch.ones(3, requires_grad=True)
b = a * 2
b.retain_grad()
h = b.register_hook(lambda grad: grad * 10)
(b * b).sum().backward()
print("CHECK hook_a_grad", a.grad.tolist(), "b_grad", b.grad.tolist())
h.remove()
print("CHECK is_leaf", a.is_leaf, b.is_leaf, "grad_fn", b.grad_fn is not None)
print("OK")
