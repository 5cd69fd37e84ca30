"""Full backward hooks: identity Functions around a module's tensor inputs and
outputs catch the gradients flowing through them, so hooks see (grad_input,
grad_output) for the module as a whole."""

import ember_autograd as ag
import ember_core as ec

Tensor = ec.Tensor


class _OutputHook(ag.Function):
    @staticmethod
    def forward(ctx, state, *tensors):
        ctx.state = state
        return tuple(t.view_as(t) for t in tensors)

    @staticmethod
    def backward(ctx, *grads):
        state = ctx.state
        grads = tuple(grads)
        for hook in list(state.module._backward_pre_hooks.values()):
            result = hook(state.module, grads)
            if result is not None:
                grads = tuple(result) if isinstance(result, (tuple, list)) else (result,)
        state.grad_outputs = grads
        if not state.inputs_need_grad:
            for hook in list(state.module._backward_hooks.values()):
                hook(state.module, (None,) * state.n_inputs, grads)
        return (None,) + grads


class _InputHook(ag.Function):
    @staticmethod
    def forward(ctx, state, *tensors):
        ctx.state = state
        return tuple(t.view_as(t) for t in tensors)

    @staticmethod
    def backward(ctx, *grads):
        state = ctx.state
        grad_input = tuple(grads)
        for hook in list(state.module._backward_hooks.values()):
            result = hook(state.module, grad_input, state.grad_outputs)
            if result is not None:
                result = tuple(result) if isinstance(result, (tuple, list)) else (result,)
                if len(result) != len(grad_input):
                    raise RuntimeError(
                        f"Backward hook returned an invalid number of grad_input, got "
                        f"{len(result)}, but expected {len(grad_input)}"
                    )
                grad_input = result
        return (None,) + grad_input


class BackwardHook:
    def __init__(self, module):
        self.module = module
        self.grad_outputs = None
        self.inputs_need_grad = False
        self.n_inputs = 0

    def setup_input_hook(self, args):
        idx = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        self.n_inputs = len(idx)
        self.inputs_need_grad = ag.is_grad_enabled() and any(args[i].requires_grad for i in idx)
        if not self.inputs_need_grad:
            return args
        wrapped = _InputHook.apply(self, *(args[i] for i in idx))
        out = list(args)
        for i, w in zip(idx, wrapped):
            out[i] = w
        return tuple(out)

    def setup_output_hook(self, output):
        single = isinstance(output, Tensor)
        items = (output,) if single else (output if isinstance(output, tuple) else None)
        if items is None or not ag.is_grad_enabled():
            return output
        idx = [i for i, o in enumerate(items) if isinstance(o, Tensor) and o.requires_grad]
        if not idx:
            return output
        wrapped = _OutputHook.apply(self, *(items[i] for i in idx))
        out = list(items)
        for i, w in zip(idx, wrapped):
            out[i] = w
        return out[0] if single else tuple(out)
