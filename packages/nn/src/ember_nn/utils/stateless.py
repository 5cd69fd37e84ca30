"""Calling a module with other parameters and buffers (``torch.nn.utils.stateless``).

``functional_call(module, {"weight": w}, x)`` runs ``module(x)`` with ``w``
standing in for ``module.weight``: the tensors are swapped into the module's
registries for the call and the originals put back afterwards, also when the
call raises.  ``ember.func.functional_call`` is the same function (without the
deprecation warning); it is how ember.func.grad/vmap differentiate or batch
over a module's parameters.
"""

import contextlib
import warnings

import ember_core as ec
from ember_nn.modules.module import Module

__all__ = ["functional_call"]

_MISSING = object()


def _untie_named_tensors_map(module, parameters_and_buffers):
    """Add the names tied (same tensor) to a given name, with the given value;
    ValueError if different values are given for names that are tied."""
    all_named = {}
    all_named.update(module.named_parameters(remove_duplicate=False))
    all_named.update(module.named_buffers(remove_duplicate=False))
    names_of = {}  # id(tensor) -> set of names
    for name, t in all_named.items():
        names_of.setdefault(id(t), set()).add(name)
    tied = {}
    for names in names_of.values():
        if len(names) > 1:
            for n in names:
                tied[n] = names
    given = {n for n in parameters_and_buffers if n in tied}
    for n in given:
        names = tied[n]
        if (
            len(names & given) > 1
            and len({id(parameters_and_buffers[m]) for m in names if m in given}) != 1
        ):
            raise ValueError(
                f"functional_call got multiple values for keys {sorted(names)}, "
                "which are tied. Consider using tie_weights=False"
            )
    untied = dict(parameters_and_buffers)
    for n in given:
        for m in tied[n]:
            untied[m] = parameters_and_buffers[n]
    return untied


def _swap_tensor(module, name, tensor):
    """Put ``tensor`` (or _MISSING: remove) under ``name`` of ``module``; returns
    what was there (_MISSING if nothing)."""
    if tensor is not _MISSING and tensor is not None and not isinstance(tensor, ec.Tensor):
        raise TypeError(f"{tensor} is not an instance of torch.Tensor")
    if name in module._parameters:
        orig = module._parameters[name]
        if tensor is _MISSING:
            del module._parameters[name]
        else:
            module._parameters[name] = tensor
        return orig
    if name in module._buffers:
        orig = module._buffers[name]
        if tensor is _MISSING:
            del module._buffers[name]
        else:
            module._buffers[name] = tensor
        return orig
    orig = getattr(module, name) if hasattr(module, name) else _MISSING
    if orig is not _MISSING and orig is not None and not isinstance(orig, ec.Tensor):
        raise TypeError(f"attribute `{name}`: {orig} is not an instance of torch.Tensor")
    if tensor is not _MISSING:
        object.__setattr__(module, name, tensor)
    elif orig is not _MISSING:
        delattr(module, name)
    return orig


def _swap_all(module, tensors):
    """Swap every ``dotted.name: tensor`` in; returns the originals."""
    orig = {}
    for name, t in tensors.items():
        prefix, _, attr = name.rpartition(".")
        owner = module.get_submodule(prefix) if prefix else module
        orig[name] = _swap_tensor(owner, attr, t)
    return orig


@contextlib.contextmanager
def _reparametrize_module(module, parameters_and_buffers, tie_weights=False, strict=False):
    if tie_weights:
        untied = _untie_named_tensors_map(module, parameters_and_buffers)
    else:
        untied = parameters_and_buffers
    if strict:
        valid = {n for n, _ in module.named_parameters(remove_duplicate=False)}
        valid |= {n for n, _ in module.named_buffers(remove_duplicate=False)}
        missing = sorted(valid - set(untied))
        unexpected = sorted(set(untied) - valid)
        msgs = []
        if unexpected:
            msgs.append(f"Unexpected key(s): {', '.join(map(repr, unexpected))}.")
        if missing:
            msgs.append(f"Missing key(s): {', '.join(map(repr, missing))}.")
        if msgs:
            raise RuntimeError(
                "Error(s) in reparametrizing for {}:\n\t{}".format(
                    module._get_name(), "\n\t".join(msgs)
                )
            )
    orig = {}
    try:
        # one by one, so that a failure half way still restores what was swapped
        for name, t in untied.items():
            orig.update(_swap_all(module, {name: t}))
        yield
    finally:
        new = _swap_all(module, orig)
        # a module that assigned to its own parameters/buffers in the call (e.g.
        # BatchNorm's running stats) leaves the new values in the caller's dict
        parameters_and_buffers.update(
            {k: new[k] for k in parameters_and_buffers if k in new and new[k] is not _MISSING}
        )


def _functional_call(
    module, parameters_and_buffers, args=None, kwargs=None, *, tie_weights=True, strict=False
):
    if not isinstance(module, Module):
        raise TypeError(f"{module} is not an instance of torch.nn.Module")
    if kwargs is None:
        kwargs = {}
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    with _reparametrize_module(
        module, parameters_and_buffers, tie_weights=tie_weights, strict=strict
    ):
        return module(*args, **kwargs)


def functional_call(
    module, parameters_and_buffers, args=None, kwargs=None, *, tie_weights=True, strict=False
):
    """``module(*args, **kwargs)`` with ``parameters_and_buffers`` (a dict of
    dotted names to tensors) in place of the module's own; deprecated in
    favour of ``ember.func.functional_call``.

    >>> functional_call(nn.Linear(3, 1), {"weight": w, "bias": b}, x)
    """
    warnings.warn(
        "`torch.nn.utils.stateless.functional_call` is deprecated as of PyTorch 2.0 and will "
        "be removed in a future version of PyTorch. Please use `torch.func.functional_call` "
        "instead which is a drop-in replacement.",
        FutureWarning,
        stacklevel=2,
    )
    return _functional_call(
        module, parameters_and_buffers, args, kwargs, tie_weights=tie_weights, strict=strict
    )
