"""ember.utils.checkpoint: trade compute for memory by recomputing a block's
forward pass during backward instead of keeping its intermediate tensors.

>>> out = checkpoint(block, x, use_reentrant=False)
>>> out.sum().backward()        # block(x) runs again here, under grad mode

Note [Checkpoint by recomputation]: the block runs once under no_grad (nothing
inside it is saved); one autograd node stands for it, holding only its inputs
and, when asked, the default generator's state. That node's backward detaches
the inputs, restores the generator state (so dropout draws the same masks),
reruns the block with grad enabled and back-propagates the incoming gradients
through the fresh graph: gradients reach the block's inputs through the node
and its parameters directly (they are leaves), which is what PyTorch's
``use_reentrant=False`` gives for ``backward()``. A zero-size anchor tensor that
requires grad is always among the node's inputs, so the node exists even when
only the block's parameters require grad (PyTorch's non-reentrant behaviour).
"""

import contextlib
import warnings

import ember_autograd as ag
import ember_core as ec

__all__ = ["checkpoint", "checkpoint_sequential"]


class _Checkpoint(ag.Function):
    @staticmethod
    def forward(ctx, run_function, preserve_rng_state, kwargs, _anchor, *args):
        ctx.run_function = run_function
        ctx.kwargs = kwargs
        ctx.rng_state = ec.get_rng_state() if preserve_rng_state else None
        tensor_idx = [i for i, a in enumerate(args) if isinstance(a, ec.Tensor)]
        ctx.tensor_idx = tensor_idx
        ctx.args = [None if i in tensor_idx else a for i, a in enumerate(args)]
        ctx.save_for_backward(*[args[i] for i in tensor_idx])
        with ag.no_grad():
            outputs = run_function(*args, **kwargs)
        ctx.single = not isinstance(outputs, tuple)
        outs = (outputs,) if ctx.single else outputs
        ctx.tensor_outputs = [i for i, o in enumerate(outs) if isinstance(o, ec.Tensor)]
        return outputs

    @staticmethod
    def backward(ctx, *grad_outputs):
        args = list(ctx.args)
        inputs = []
        for i, t in zip(ctx.tensor_idx, ctx.saved_tensors):
            d = t.detach()
            d.requires_grad_(t.requires_grad)
            args[i] = d
            inputs.append(d)
        rng = _restored_rng(ctx.rng_state)
        with rng, ag.enable_grad():
            outputs = ctx.run_function(*args, **ctx.kwargs)
        outs = (outputs,) if ctx.single else outputs
        roots, grads = [], []
        for o, g in zip(outs, grad_outputs):
            if isinstance(o, ec.Tensor) and o.requires_grad and g is not None:
                roots.append(o)
                grads.append(g)
        if roots:
            ag.backward(roots, grads)
        input_grads = [None] * len(ctx.args)
        for i, d in zip(ctx.tensor_idx, inputs):
            input_grads[i] = d.grad if d.requires_grad else None
        return (None, None, None, None, *input_grads)


@contextlib.contextmanager
def _restored_rng(state):
    """Run the block with the generator at `state`, then put back the current one."""
    if state is None:
        yield
        return
    current = ec.get_rng_state()
    ec.set_rng_state(state)
    try:
        yield
    finally:
        ec.set_rng_state(current)


def checkpoint(
    function,
    *args,
    use_reentrant=None,
    context_fn=None,
    determinism_check="default",
    debug=False,
    preserve_rng_state=True,
    **kwargs,
):
    """Run ``function(*args, **kwargs)`` without keeping its intermediate tensors;
    they are recomputed in backward (Note [Checkpoint by recomputation]).

    Both ``use_reentrant`` values recompute the same way; as PyTorch, leaving it
    unset warns. ``context_fn`` (a pair of context managers for the two runs) is
    not supported and raises.
    """
    if use_reentrant is None:
        warnings.warn(
            "torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. "
            "Pass use_reentrant=False (recommended) or use_reentrant=True.",
            stacklevel=2,
        )
    if context_fn is not None:
        raise NotImplementedError("ember.utils.checkpoint: context_fn is not supported")
    if use_reentrant and kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    if not ag.is_grad_enabled():
        return function(*args, **kwargs)
    anchor = ec.empty(0, requires_grad=True)
    return _Checkpoint.apply(function, preserve_rng_state, kwargs, anchor, *args)


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):
    """Split a Sequential (or a list of modules) into ``segments`` chunks and
    checkpoint each chunk but the last.

    >>> out = checkpoint_sequential(model, 2, x, use_reentrant=False)
    """
    if use_reentrant is None:
        warnings.warn(
            "torch.utils.checkpoint.checkpoint_sequential: the use_reentrant parameter should "
            "be passed explicitly.",
            stacklevel=2,
        )
    if hasattr(functions, "children") and not isinstance(functions, (list, tuple)):
        functions = list(functions.children())
    functions = list(functions)
    if segments < 1:
        raise ValueError(f"checkpoint_sequential: segments must be >= 1, got {segments}")
    size = len(functions) // segments

    def run(start, end):
        def forward(x):
            for j in range(start, end + 1):
                x = functions[j](x)
            return x

        return forward

    end = -1
    for start in range(0, size * (segments - 1), size):
        end = start + size - 1
        input = checkpoint(
            run(start, end),
            input,
            use_reentrant=bool(use_reentrant),
            preserve_rng_state=kwargs.get("preserve_rng_state", True),
        )
    return run(end + 1, len(functions) - 1)(input)
