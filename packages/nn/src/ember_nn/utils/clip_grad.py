"""Gradient clipping (ember.nn.utils.clip_grad_norm_ and friends), as
torch.nn.utils: the total norm is the norm of the per-tensor norms, and every
gradient is scaled by min(1, max_norm / (total_norm + 1e-6))."""

import types
import warnings

import ember_autograd as ag
import ember_core as ec


def _tensors(parameters):
    return [parameters] if isinstance(parameters, ec.Tensor) else list(parameters)


def get_total_norm(tensors, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """The norm of the norms of tensors (the gradients' total norm), a 0-d tensor."""
    tensors = _tensors(tensors)
    norm_type = float(norm_type)
    if not tensors:
        return ec.tensor(0.0)
    with ag.no_grad():
        norms = [ec.vector_norm(t, norm_type) for t in tensors]
        if len({n.dtype for n in norms}) > 1:
            norms = [n.to(norms[0].dtype) for n in norms]
        total = ec.vector_norm(ec.stack(norms), norm_type)
    if error_if_nonfinite and not bool(total.isfinite()):
        raise RuntimeError(
            f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, "
            "so it cannot be "
            "clipped. To disable this error and scale the gradients by the non-finite norm "
            "anyway, set "
            "`error_if_nonfinite=False`"
        )
    return total


def clip_grads_with_norm_(parameters, max_norm, total_norm, foreach=None):
    """Scale the gradients by min(1, max_norm / (total_norm + 1e-6))."""
    grads = [p.grad for p in _tensors(parameters) if p.grad is not None]
    if not grads:
        return
    with ag.no_grad():
        coef = (float(max_norm) / (total_norm + 1e-6)).clamp(max=1.0)
        for g in grads:
            g.mul_(coef.to(g.dtype) if coef.dtype is not g.dtype else coef)


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Scale gradients so their total norm is at most max_norm; returns the total
    norm before clipping.

    >>> total = clip_grad_norm_(model.parameters(), max_norm=1.0)
    """
    is_generator = isinstance(parameters, types.GeneratorType)
    parameters = _tensors(parameters)
    if is_generator and not parameters:
        warnings.warn(
            "`parameters` is an empty generator, no gradient clipping will occur.", stacklevel=2
        )
    grads = [p.grad for p in parameters if p.grad is not None]
    total = get_total_norm(grads, norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(parameters, max_norm, total, foreach)
    return total


def clip_grad_norm(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    warnings.warn(
        "`torch.nn.utils.clip_grad_norm` is now deprecated in favor of "
        "`torch.nn.utils.clip_grad_norm_`.",
        FutureWarning,
        stacklevel=2,
    )
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def clip_grad_value_(parameters, clip_value, foreach=None):
    """Clamp every gradient element to [-clip_value, clip_value]."""
    clip_value = float(clip_value)
    with ag.no_grad():
        for p in _tensors(parameters):
            if p.grad is not None:
                p.grad.clamp_(min=-clip_value, max=clip_value)
