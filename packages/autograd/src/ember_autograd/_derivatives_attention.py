"""Backward formula of the fused attention op (ember_core._ops.nn.attention_fused,
Note [Fused attention]): its fused backward recomputes the probabilities from
the saved logsumexp.  When the backward must itself be differentiable (Note
[Fused backward, composite double backward] in _derivatives_nn), the same
gradients are written with differentiable ember ops instead:
    P = softmax(q k^T scale + mask), dV = P^T dO, dS = P (dO V^T - rowsum(dO O)),
    dQ = dS k scale, dK = dS^T q scale."""

import math

import ember_core as ec
from ember_autograd._derivatives_nn import _higher
from ember_autograd._formula import derivative


def _probabilities(query, key, attn_mask, is_causal, scale):
    """softmax of the masked scores, zero rows where no key takes part."""
    scores = query.matmul(key.transpose(-2, -1)) * scale
    L, S = scores.shape[-2], scores.shape[-1]
    neg_inf = ec.full((), -math.inf, dtype=scores.dtype, device=scores.device)
    if is_causal:
        keep = ec.ones((L, S), dtype=ec.bool, device=scores.device).tril(0)
        scores = ec.where(keep, scores, neg_inf)
    if attn_mask is not None:
        if attn_mask.dtype is ec.bool:
            scores = ec.where(attn_mask, scores, neg_inf)
        else:
            scores = scores + attn_mask
    dead = (scores == neg_inf).all(-1, keepdim=True)
    zero = ec.zeros((), dtype=scores.dtype, device=scores.device)
    return ec.where(dead, zero, ec.softmax(ec.where(dead, zero, scores), -1))


@derivative("_fused_attention", inputs=("query", "key", "value"), outputs=(0,))
def _(grad, query, key, value, attn_mask, is_causal, scale, result):
    if _higher(grad, query, key, value):
        p = _probabilities(query, key, attn_mask, is_causal, scale)
        out = p.matmul(value)
        dv = p.transpose(-2, -1).matmul(grad)
        dp = grad.matmul(value.transpose(-2, -1))
        ds = p * (dp - (grad * out).sum(-1, keepdim=True))
        return ds.matmul(key) * scale, ds.transpose(-2, -1).matmul(query) * scale, dv
    return ec._fused_attention_backward(
        grad, query, key, value, result[0], result[1], attn_mask, is_causal, scale
    )
