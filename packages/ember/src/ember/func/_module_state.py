"""functional_call and stack_module_state: a module's parameters as a dict,
for grad/vmap over them (``torch.func``)."""

from collections.abc import Sequence

import ember_core as ec
from ember_nn.utils import stateless


def functional_call(
    module, parameter_and_buffer_dicts, args=None, kwargs=None, *, tie_weights=True, strict=False
):
    """``module(*args, **kwargs)`` with the tensors of ``parameter_and_buffer_dicts``
    (a dict of dotted names, or a tuple of such dicts with distinct keys) in
    place of the module's own parameters and buffers, which are restored after
    the call, also when it raises.

    >>> params = {k: v.detach() for k, v in model.named_parameters()}
    >>> grad(lambda p, x: functional_call(model, p, (x,)).sum())(params, x)
    """
    if isinstance(parameter_and_buffer_dicts, dict):
        merged = parameter_and_buffer_dicts
    elif isinstance(parameter_and_buffer_dicts, Sequence):
        if not all(isinstance(d, dict) for d in parameter_and_buffer_dicts):
            raise ValueError(
                "Expected all elements of parameter_and_buffer_dicts to be dictionaries"
            )
        counts = {}
        for d in parameter_and_buffer_dicts:
            for k in d:
                counts[k] = counts.get(k, 0) + 1
        repeated = [k for k, n in counts.items() if n > 1]
        if repeated:
            raise ValueError(
                f"{repeated} appeared in multiple dictionaries; behavior of functional call is "
                "ambiguous"
            )
        merged = {k: v for d in parameter_and_buffer_dicts for k, v in d.items()}
    else:
        raise ValueError(
            "Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of dicts, but got "
            f"{type(parameter_and_buffer_dicts)}"
        )
    return stateless._functional_call(
        module, merged, args, kwargs, tie_weights=tie_weights, strict=strict
    )


def _stacked_leaf(tensors, name):
    all_rg = all(t.requires_grad for t in tensors)
    if not all_rg and any(t.requires_grad for t in tensors):
        raise RuntimeError(f"Expected {name} from each model to have the same .requires_grad")
    result = ec.stack([t.detach() for t in tensors])
    if all_rg:
        result = result.requires_grad_()
    return result


def stack_module_state(models):
    """``(params, buffers)``: each a dict of the models' tensors stacked along a
    new first dimension, for ``vmap(functional_call)`` over an ensemble.

    >>> params, buffers = stack_module_state([nn.Linear(3, 3) for _ in range(5)])
    >>> params["weight"].shape
    ember.Size([5, 3, 3])
    """
    models = list(models)
    if len(models) == 0:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if not (all(m.training for m in models) or all(not m.training for m in models)):
        raise RuntimeError(
            "stack_module_state: Expected all models to have the same training/eval mode."
        )
    typ = type(models[0])
    if not all(type(m) is typ for m in models):
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")
    all_params = [dict(m.named_parameters()) for m in models]
    params = {k: _stacked_leaf([p[k] for p in all_params], k) for k in all_params[0]}
    all_buffers = [dict(m.named_buffers()) for m in models]
    buffers = {k: _stacked_leaf([b[k] for b in all_buffers], k) for k in all_buffers[0]}
    return params, buffers
