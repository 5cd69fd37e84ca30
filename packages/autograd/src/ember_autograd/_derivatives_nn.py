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
    return any(isinstance(t, ec.Tensor) and t.requires_grad for t in tensors)


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


@derivative("native_layer_norm", inputs=("input", "weight", "bias"), saved_outputs=(1, 2))
def _(grad, input, normalized_shape, weight, bias, eps, result, needs):
    k = 1 if isinstance(normalized_shape, int) else len(normalized_shape)
    if _higher(grad, input, weight, bias):
        return _row_norm_composite(grad, input, k, weight, eps, False, needs)
    return ec._native_layer_norm_backward(
        grad, input, normalized_shape, result[1], result[2], weight, bias, needs
    )


@derivative("_fused_rms_norm", inputs=("input", "weight"), saved_outputs=(1,))
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


@derivative("native_batch_norm", inputs=("input", "weight", "bias"), saved_outputs=(1, 2))
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
            gi = invstd * (
                h - h.mean(dims, keepdim=True) - xhat * (h * xhat).mean(dims, keepdim=True)
            )
        else:
            gi = h * invstd
    gw = (grad * xhat).sum(dims) if needs[1] else None
    gb = grad.sum(dims) if needs[2] else None
    return gi, gw, gb


@derivative("native_group_norm", inputs=("input", "weight", "bias"), saved_outputs=(1, 2))
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
        gi = (
            rstd * (hg - hg.mean(2, keepdim=True) - xh * (hg * xh).mean(2, keepdim=True))
        ).reshape(shape)
    dims = (0,) + tuple(range(2, len(shape)))
    gw = (grad * xhat).sum(dims) if needs[1] else None
    gb = grad.sum(dims) if needs[2] else None
    return gi, gw, gb


# ------------------------------------------------------------------ losses

_MEAN = ("mean", 1)


def _zero(like):
    return ec.zeros((), dtype=like.dtype)


@derivative("nll_loss")
def _(grad, input, target, weight, ignore_index, reduction):
    return ec._nll_loss_backward(grad, input, target, weight, reduction, ignore_index)


@derivative("_nll_loss_backward", inputs=("grad_output",))
def _(grad, target, weight, reduction, ignore_index):
    # the backward is linear in grad_output: its adjoint is nll_loss itself
    return ec.nll_loss(grad, target, weight, ignore_index, reduction)


@derivative("binary_cross_entropy", inputs=("input", "target"))
def _(grad, input, target, weight, reduction, needs):
    # PyTorch's formulas: the input gradient's denominator is clamped at 1e-12
    scale = grad / input.numel() if reduction in _MEAN else grad
    if weight is not None:
        scale = scale * weight
    gi = scale * (input - target) / ((1 - input) * input).clamp_min(1e-12) if needs[0] else None
    gt = scale * ((-input).log1p() - input.log()) if needs[1] else None
    return gi, gt


@derivative("binary_cross_entropy_with_logits", inputs=("input", "target"))
def _(grad, input, target, weight, pos_weight, reduction, needs):
    scale = grad / input.numel() if reduction in _MEAN else grad
    if weight is not None:
        scale = scale * weight
    gi = gt = None
    if pos_weight is not None:
        if needs[0]:
            t = pos_weight * target
            gi = scale * ((t + 1 - target) * input.sigmoid() - t)
        if needs[1]:
            gt = scale * ((1 - pos_weight) * input.logsigmoid() - input)
    else:
        if needs[0]:
            gi = scale * (input.sigmoid() - target)
        if needs[1]:
            gt = -scale * input
    return gi, gt


# ------------------------------------------------------------- activations


def _act_grad(grad, input, kind, p0, p1, composite):
    if _higher(grad, input):
        return composite()
    return ec._activation_backward(grad, input, kind, p0, p1)


@derivative("leaky_relu")
def _(grad, input, negative_slope):
    return _act_grad(
        grad,
        input,
        "leaky_relu",
        negative_slope,
        0.0,
        lambda: ec.where(input > 0, grad, grad * negative_slope),
    )


@derivative("elu")
def _(grad, input, alpha):
    return _act_grad(
        grad,
        input,
        "elu",
        alpha,
        1.0,
        lambda: ec.where(input > 0, grad, grad * input.exp() * alpha),
    )


@derivative("celu")
def _(grad, input, alpha):
    return _act_grad(
        grad,
        input,
        "celu",
        alpha,
        0.0,
        lambda: ec.where(input > 0, grad, grad * (input / alpha).exp()),
    )


@derivative("hardtanh")
def _(grad, input, min_val, max_val):
    return _act_grad(
        grad,
        input,
        "hardtanh",
        min_val,
        max_val,
        lambda: ec.where((input > min_val) & (input < max_val), grad, _zero(grad)),
    )


@derivative("threshold")
def _(grad, input, threshold):
    return _act_grad(
        grad,
        input,
        "threshold",
        threshold,
        0.0,
        lambda: ec.where(input > threshold, grad, _zero(grad)),
    )


def _shrink_grad(grad, input, lambd, kind):
    return _act_grad(
        grad,
        input,
        kind,
        lambd,
        0.0,
        lambda: ec.where((input >= -lambd) & (input <= lambd), _zero(grad), grad),
    )


@derivative("hardshrink")
def _(grad, input, lambd):
    return _shrink_grad(grad, input, lambd, "hardshrink")


@derivative("softshrink")
def _(grad, input, lambd):
    return _shrink_grad(grad, input, lambd, "softshrink")


# ----------------------------------------------------------------- dropout


@derivative("native_dropout", saved_outputs=(1,))
def _(grad, p, train, result):
    if train is False or p == 0:
        return grad
    return ec._native_dropout_backward(grad, result[1], 1.0 / (1.0 - p) if p < 1 else 0.0)


@derivative("_native_dropout_backward", inputs=("grad_output",))
def _(grad, mask, scale):
    return ec._native_dropout_backward(grad, mask, scale)


# --------------------------------------------------------------- embedding


@derivative("embedding", inputs=("weight",))
def _(grad, weight_shape, indices, padding_idx, scale_grad_by_freq):
    return ec._embedding_dense_backward(
        grad, indices, weight_shape[0], padding_idx, scale_grad_by_freq
    )


def _counts_at(indices, num_weights, dtype):
    """How often each element of indices occurs among them (shape indices + (1,))."""
    flat = indices.reshape(-1)
    ones = ec.ones((flat.numel(), 1), dtype=dtype, device=indices.device)
    return ec.embedding(ec._embedding_dense_backward(ones, flat, num_weights, -1, False), indices)


@derivative("_embedding_dense_backward", inputs=("grad_output",))
def _(grad, grad_output_shape, indices, num_weights, padding_idx, scale_grad_by_freq):
    # the backward is linear in grad_output; its adjoint gathers rows again
    r = ec.embedding(grad, indices)
    if padding_idx is not None and padding_idx >= 0:
        r = r * (indices != padding_idx).unsqueeze(-1).to(r.dtype)
    if scale_grad_by_freq:
        r = r / _counts_at(indices, num_weights, r.dtype)
    return r.reshape(grad_output_shape)


@derivative("embedding_bag", inputs=("weight", "per_sample_weights"))
def _(
    grad, weight, indices, scale_grad_by_freq, mode, per_sample_weights, padding_idx, result, needs
):
    if not _higher(grad, weight, per_sample_weights):
        return ec._embedding_bag_backward(
            grad,
            weight,
            indices,
            result[1],
            result[2],
            result[3],
            mode,
            per_sample_weights,
            padding_idx,
            scale_grad_by_freq,
            needs,
        )
    if mode in ("max", 2):
        raise RuntimeError("embedding_bag: double backward is not supported for mode='max'")
    # composite: route each bag's gradient to its positions, then scatter-add
    flat = indices.reshape(-1)
    o2b, bag_size = result[1], result[2]
    valid = o2b >= 0
    if padding_idx is not None and padding_idx >= 0:
        valid = valid & (flat != padding_idx)
    valid = valid.unsqueeze(-1).to(grad.dtype)
    at_pos = ec.embedding(grad, o2b.clamp_min(0)) * valid
    gw = gp = None
    if needs[0]:
        contrib = at_pos
        if per_sample_weights is not None:
            contrib = contrib * per_sample_weights.reshape(-1, 1)
        elif mode in ("mean", 1):
            sizes = ec.embedding(bag_size.to(grad.dtype).reshape(-1, 1), o2b.clamp_min(0))
            contrib = contrib / sizes.clamp_min(1)
        gw = ec._embedding_dense_backward(contrib, flat, weight.shape[0], -1, scale_grad_by_freq)
    if needs[1]:
        gp = (at_pos * ec.embedding(weight, flat)).sum(-1).reshape(per_sample_weights.shape)
    return gw, gp


# ---------------------------------------------------------- recurrent cells


@derivative(
    "_lstm_cell", inputs=("input", "hx", "cx", "w_ih", "w_hh", "b_ih", "b_hh"), outputs=(0, 1)
)
def _(grads, input, hx, cx, w_ih, w_hh, b_ih, b_hh, result, needs):
    ghy, gcy = grads
    if _higher(ghy, gcy, input, hx, cx, w_ih, w_hh, b_ih, b_hh):
        return _lstm_composite(ghy, gcy, input, hx, cx, w_ih, w_hh, b_ih, b_hh, needs)
    mask = needs[:5] + (needs[5] or needs[6],)
    gx, gh, gc, gwi, gwh, gb = ec._lstm_cell_backward(
        ghy, gcy, input, hx, cx, w_ih, w_hh, result[2], result[1], mask
    )
    return gx, gh, gc, gwi, gwh, gb if needs[5] else None, gb if needs[6] else None


def _gates(input, hx, w_ih, w_hh, b_ih, b_hh):
    g = input.matmul(w_ih.t()) + hx.matmul(w_hh.t())
    if b_ih is not None:
        g = g + b_ih
    if b_hh is not None:
        g = g + b_hh
    return g


def _lstm_composite(ghy, gcy, input, hx, cx, w_ih, w_hh, b_ih, b_hh, needs):
    i, f, g, o = _gates(input, hx, w_ih, w_hh, b_ih, b_hh).chunk(4, 1)
    i, f, g, o = i.sigmoid(), f.sigmoid(), g.tanh(), o.sigmoid()
    tc = (f * cx + i * g).tanh()
    dc = gcy + ghy * o * (1 - tc * tc)
    dgates = ec.cat(
        [dc * g * i * (1 - i), dc * cx * f * (1 - f), dc * i * (1 - g * g), ghy * tc * o * (1 - o)],
        1,
    )
    db = dgates.sum(0)
    return (
        dgates.matmul(w_ih) if needs[0] else None,
        dgates.matmul(w_hh) if needs[1] else None,
        dc * f if needs[2] else None,
        dgates.t().matmul(input) if needs[3] else None,
        dgates.t().matmul(hx) if needs[4] else None,
        db if needs[5] else None,
        db if needs[6] else None,
    )


@derivative("_gru_cell", inputs=("input", "hx", "w_ih", "w_hh", "b_ih", "b_hh"))
def _(grad, input, hx, w_ih, w_hh, b_ih, b_hh, result, needs):
    if _higher(grad, input, hx, w_ih, w_hh, b_ih, b_hh):
        return _gru_composite(grad, input, hx, w_ih, w_hh, b_ih, b_hh, needs)
    return ec._gru_cell_backward(grad, input, hx, w_ih, w_hh, result[1], needs)


def _gru_composite(grad, input, hx, w_ih, w_hh, b_ih, b_hh, needs):
    gi = input.matmul(w_ih.t())
    gh = hx.matmul(w_hh.t())
    if b_ih is not None:
        gi = gi + b_ih
    if b_hh is not None:
        gh = gh + b_hh
    i_r, i_z, i_n = gi.chunk(3, 1)
    h_r, h_z, h_n = gh.chunk(3, 1)
    r, z = (i_r + h_r).sigmoid(), (i_z + h_z).sigmoid()
    n = (i_n + r * h_n).tanh()
    dn = grad * (1 - z) * (1 - n * n)
    dz = grad * (hx - n) * z * (1 - z)
    dr = dn * h_n * r * (1 - r)
    d_in = ec.cat([dr, dz, dn], 1)
    d_h = ec.cat([dr, dz, dn * r], 1)
    return (
        d_in.matmul(w_ih) if needs[0] else None,
        d_h.matmul(w_hh) + grad * z if needs[1] else None,
        d_in.t().matmul(input) if needs[2] else None,
        d_h.t().matmul(hx) if needs[3] else None,
        d_in.sum(0) if needs[4] else None,
        d_h.sum(0) if needs[5] else None,
    )


@derivative("_fused_cross_entropy")
def _(grad, input, target, weight, ignore_index, reduction, result):
    if _higher(grad, input):
        # the same gradient through log_softmax and nll_loss, whose formulas chain
        logp = ec.log_softmax(input, 1)
        g = ec._nll_loss_backward(grad, logp, target, weight, reduction, ignore_index)
        return ec._log_softmax_backward_data(g, logp, 1, logp.dtype)
    return ec._fused_cross_entropy_backward(
        grad, input, target, weight, ignore_index, reduction, result[1]
    )
