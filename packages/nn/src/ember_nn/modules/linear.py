"""Identity, Linear, Bilinear, LazyLinear."""

import math

import ember_core as ec

from ember_nn import functional as F
from ember_nn import init
from ember_nn.modules.module import Module
from ember_nn.parameter import Parameter, UninitializedParameter


class Identity(Module):
    """Returns its input; ignores constructor arguments."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, input):
        return input


class Linear(Module):
    """y = x W^T + b, W of shape (out_features, in_features), initialised as in PyTorch."""

    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.weight = Parameter(ec.empty((out_features, in_features), dtype=dtype, device=device))
        if bias:
            self.bias = Parameter(ec.empty(out_features, dtype=dtype, device=device))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input):
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self):
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class Bilinear(Module):
    """y = x1^T A x2 + b."""

    def __init__(self, in1_features, in2_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        self.in1_features, self.in2_features, self.out_features = in1_features, in2_features, out_features
        self.weight = Parameter(ec.empty((out_features, in1_features, in2_features), dtype=dtype))
        if bias:
            self.bias = Parameter(ec.empty(out_features, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        bound = 1 / math.sqrt(self.weight.shape[1])
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1, input2):
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self):
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")


class LazyLinear(Linear):
    """A Linear whose in_features is taken from the first input."""

    cls_to_become = Linear

    def __init__(self, out_features, bias=True, device=None, dtype=None):
        Module.__init__(self)
        self.in_features = 0
        self.out_features = out_features
        self.weight = UninitializedParameter(dtype=dtype)
        self.bias = UninitializedParameter(dtype=dtype) if bias else None
        if not bias:
            self.register_parameter("bias", None)
        self._pre = self.register_forward_pre_hook(LazyLinear._infer)

    def reset_parameters(self):
        if self.in_features:
            Linear.reset_parameters(self)

    @staticmethod
    def _infer(module, args):
        x = args[0]
        module.in_features = x.shape[-1]
        module.weight.materialize((module.out_features, module.in_features))
        if module.bias is not None:
            module.bias.materialize((module.out_features,))
        Linear.reset_parameters(module)
        module._pre.remove()
        module.__class__ = Linear
        return None


class NonDynamicallyQuantizableLinear(Linear):
    """The Linear MultiheadAttention uses as out_proj (PyTorch's name for it; it
    behaves as Linear)."""
