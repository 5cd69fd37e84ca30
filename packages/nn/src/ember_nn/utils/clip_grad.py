"""Gradient clipping."""

import math

import ember_autograd as ag
import ember_core as ec


def _grads(parameters):
    if isinstance(parameters, ec.Tensor):
        parameters = [parameters]
    return [p.grad for p in parameters if p.grad is not None]


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Scale gradients so their total norm is at most max_norm; returns the total
    norm (before clipping)."""
    grads = _grads(parameters)
    max_norm, norm_type = float(max_norm), float(norm_type)
    if not grads:
        return ec.tensor(0.0)
    with ag.no_grad():
        norms = ec.stack([g.detach().reshape(-1).to(ec.float32).norm(norm_type) if g.dtype is not ec.float64 else g.detach().reshape(-1).norm(norm_type) for g in grads])
        if math.isinf(norm_type):
            total = norms.max()
        else:
            total = norms.norm(norm_type)
        if error_if_nonfinite and not bool(total.isfinite()):
            raise RuntimeError(
                f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, so it cannot be clipped. To disable this error and scale the gradients by the non-finite norm anyway, set `error_if_nonfinite=False`"
            )
        coef = (max_norm / (total + 1e-6)).clamp(max=1.0)
        c = coef.item()
        if c < 1.0 or c != c:
            for g in grads:
                g.mul_(c)
    return total


def clip_grad_value_(parameters, clip_value, foreach=None):
    """Clamp every gradient element to [-clip_value, clip_value]."""
    clip_value = float(clip_value)
    with ag.no_grad():
        for g in _grads(parameters):
            g.clamp_(min=-clip_value, max=clip_value)


def clip_grad_norm(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)
