"""Backward formulas of the nn ops of ember_core: softmax, normalization,
losses, activations, dropout, embedding and recurrent cells (same table and
conventions as _derivatives.py).

Note [Fused backward, composite double backward]
Most nn ops have a fused backward kernel exposed as an op (``_native_*_backward``,
``_activation_backward``, ...) which is fast but not itself differentiable.  A
formula calls it when the backward records no graph.  When it does
(``create_graph=True`` and a saved tensor or the incoming gradient requires
grad), the formula instead writes the same gradient with differentiable ember
ops, recomputing what the forward's statistics depend on, so higher
derivatives stay exact.
"""

import ember_core as ec

from ember_autograd._formula import derivative
from ember_autograd._grad_mode import state


def _higher(*tensors):
    """Whether this backward must itself be differentiable (Note [Fused backward,
    composite double backward])."""
    if not state.enabled:
        return False
    for t in tensors:
        if isinstance(t, ec.Tensor) and t.requires_grad:
            return True
    return False


def _sum_lead(t, k):
    """Sum over the first k dims (none: t itself)."""
    return t.sum(tuple(range(k))) if k else t


# ---------------------------------------------------------------- softmax


@derivative("softmax")
def _(grad, result, dim):
    return ec._softmax_backward_data(grad, result, dim, result.dtype)


@derivative("log_softmax")
def _(grad, result, dim):
    return ec._log_softmax_backward_data(grad, result, dim, result.dtype)


@derivative("_softmax_backward_data", inputs=("grad_output", "output"))
def _(grad, grad_output, output, dim, needs):
    # gi = y * (g - sum(g * y))
    gg = ec._softmax_backward_data(grad, output, dim, output.dtype) if needs[0] else None
    gy = None
    if needs[1]:
        s = (grad_output * output).sum(dim, keepdim=True)
        t = (grad * output).sum(dim, keepdim=True)
        gy = grad * (grad_output - s) - grad_output * t
    return gg, gy


@derivative("_log_softmax_backward_data", inputs=("grad_output", "output"))
def _(grad, grad_output, output, dim, needs):
    # gi = g - exp(y) * sum(g)
    e = output.exp()
    gg = grad - (grad * e).sum(dim, keepdim=True) if needs[0] else None
    gy = -grad * e * grad_output.sum(dim, keepdim=True) if needs[1] else None
    return gg, gy


# ---------------------------------------------------------- normalization


def _row_norm_composite(grad, x, k, weight, eps, rms, needs):
    """Layer/RMS norm gradients over the last k dims, as differentiable ops."""
    dims = tuple(range(x.dim() - k, x.dim()))
    lead = x.dim() - k
    if rms:
        rstd = ((x * x).mean(dims, keepdim=True) + eps).rsqrt()
        xhat = x * rstd
    else:
        xc = x - x.mean(dims, keepdim=True)
        rstd = ((xc * xc).mean(dims, keepdim=True) + eps).rsqrt()
        xhat = xc * rstd
    h = grad * weight if weight is not None else grad
    gi = None
    if needs[0]:
        proj = xhat * (h * xhat).mean(dims, keepdim=True)
        gi = rstd * (h - proj) if rms else rstd * (h - h.mean(dims, keepdim=True) - proj)
    gw = _sum_lead(grad * xhat, lead) if len(needs) > 1 and needs[1] else None
    gb = _sum_lead(grad, lead) if len(needs) > 2 and needs[2] else None
    return gi, gw, gb


@derivative("native_layer_norm", inputs=("input", "weight", "bias"))
def _(grad, input, normalized_shape, weight, bias, eps, result, needs):
    k = 1 if isinstance(normalized_shape, int) else len(normalized_shape)
    if _higher(grad, input, weight, bias):
        return _row_norm_composite(grad, input, k, weight, eps, False, needs)
    return ec._native_layer_norm_backward(
        grad, input, normalized_shape, result[1], result[2], weight, bias, needs
    )


@derivative("_fused_rms_norm", inputs=("input", "weight"))
def _(grad, input, normalized_shape, weight, eps, result, needs):
    k = 1 if isinstance(normalized_shape, int) else len(normalized_shape)
    if _higher(grad, input, weight):
        if eps is None:
            eps = _machine_eps(input.dtype)
        return _row_norm_composite(grad, input, k, weight, eps, True, needs)[:2]
    return ec._fused_rms_norm_backward(grad, input, normalized_shape, result[1], weight, needs)


def _machine_eps(dtype):
    return {"float16": 0.0009765625, "bfloat16": 0.0078125, "float32": 1.1920928955078125e-07}.get(
        dtype.name, 2.220446049250313e-16
    )


def _channel_view(t, ndim):
    """A (C,) tensor shaped (1, C, 1, ...) to broadcast over (N, C, *)."""
    return t.reshape((1, -1) + (1,) * (ndim - 2))


@derivative("native_batch_norm", inputs=("input", "weight", "bias"))
def _(grad, input, weight, training, eps, result, needs):
    if not _higher(grad, input, weight):
        return ec._native_batch_norm_backward(
            grad, input, weight, result[1], result[2], training, needs
        )
    nd = input.dim()
    dims = (0,) + tuple(range(2, nd))
    if training:
        xc = input - input.mean(dims, keepdim=True)
        invstd = ((xc * xc).mean(dims, keepdim=True) + eps).rsqrt()
    else:
        xc = input - _channel_view(result[1], nd)
        invstd = _channel_view(result[2], nd)
    xhat = xc * invstd
    h = grad * _channel_view(weight, nd) if weight is not None else grad
    gi = None
    if needs[0]:
        if training:
            gi = invstd * (h - h.mean(dims, keepdim=True) - xhat * (h * xhat).mean(dims, keepdim=True))
        else:
            gi = h * invstd
    gw = (grad * xhat).sum(dims) if needs[1] else None
    gb = grad.sum(dims) if needs[2] else None
    return gi, gw, gb


@derivative("native_group_norm", inputs=("input", "weight", "bias"))
def _(grad, input, weight, N, C, HxW, group, eps, result, needs):
    if not _higher(grad, input, weight):
        return ec._native_group_norm_backward(
            grad, input, result[1], result[2], weight, N, C, HxW, group, needs
        )
    shape = input.shape
    xg = input.reshape(N, group, -1)
    xc = xg - xg.mean(2, keepdim=True)
    rstd = ((xc * xc).mean(2, keepdim=True) + eps).rsqrt()
    xhat = (xc * rstd).reshape(shape)
    h = grad * _channel_view(weight, len(shape)) if weight is not None else grad
    gi = None
    if needs[0]:
        hg, xh = h.reshape(N, group, -1), xhat.reshape(N, group, -1)
        gi = (rstd * (hg - hg.mean(2, keepdim=True) - xh * (hg * xh).mean(2, keepdim=True))).reshape(shape)
    dims = (0,) + tuple(range(2, len(shape)))
    gw = (grad * xhat).sum(dims) if needs[1] else None
    gb = grad.sum(dims) if needs[2] else None
    return gi, gw, gb
