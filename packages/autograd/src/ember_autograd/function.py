"""``ember_autograd.function``: where PyTorch code imports custom-Function
helpers from (``from torch.autograd.function import once_differentiable``)."""

from ember_autograd._function import BackwardCFunction, Function, FunctionCtx, once_differentiable

__all__ = ["BackwardCFunction", "Function", "FunctionCtx", "once_differentiable"]
