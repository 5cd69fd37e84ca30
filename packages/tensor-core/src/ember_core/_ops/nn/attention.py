"""scaled_dot_product_attention as a composite: on CUDA, where the fused
kernel covers the call (attention_fused.applies: float16/bfloat16/float32,
no dropout, head dims up to 128), one flash-style op; otherwise the math path,
matmul (BLAS), the fused softmax kernel, matmul, whose gradient comes from
those ops' formulas."""

import math

from ember_core._base.dispatch import defop
from ember_core._ops.nn import attention_fused
from ember_core._ops.nn.dropout import dropout
from ember_core._ops.nn.softmax import softmax
from ember_core._ops.pointwise.elementwise import where
from ember_core._tensor import dtype as D
from ember_core._tensor.creation import full, ones, zeros
from ember_core._tensor.tensor import Tensor


def _repeat_heads(t, groups):
    """(..., H, S, E) -> (..., H * groups, S, E), each head repeated groups times
    in a row (repeat_interleave along dim -3)."""
    shape = tuple(t.shape)
    expanded = t.unsqueeze(-3).expand(shape[:-2] + (groups,) + shape[-2:])
    return expanded.reshape(shape[:-3] + (shape[-3] * groups,) + shape[-2:])


@defop(
    method=False,
    composite=True,
    autocast="lower_precision_fp",
)
def scaled_dot_product_attention(
    query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False
):
    """softmax(query @ key^T * scale + mask) @ value over (..., L, E) queries and
    (..., S, E) keys.  A bool mask marks the positions that take part; a float
    mask is added.  Rows with every position masked give zeros (as PyTorch's
    safe softmax)."""
    for t, name in ((query, "query"), (key, "key"), (value, "value")):
        if not isinstance(t, Tensor):
            raise TypeError(f"scaled_dot_product_attention(): argument '{name}' must be Tensor")
        if t.dim() < 2:
            raise RuntimeError(f"scaled_dot_product_attention: {name} must have at least 2 dims")
    if (
        not query.dtype.is_floating_point
        or query.dtype is not key.dtype
        or query.dtype is not value.dtype
    ):
        raise RuntimeError(
            "Expected query, key, and value to have the same floating point dtype, but got "
            f"query.dtype: {query.dtype.name}, key.dtype: {key.dtype.name}, value.dtype: "
            f"{value.dtype.name} instead."
        )
    if query.shape[-1] != key.shape[-1]:
        raise RuntimeError(
            f"scaled_dot_product_attention: query and key must have the same embedding size, "
            f"got {list(query.shape)} and {list(key.shape)}"
        )
    L, S = query.shape[-2], key.shape[-2]
    scale_factor = 1.0 / math.sqrt(query.shape[-1]) if scale is None else float(scale)
    if enable_gqa and query.dim() >= 3 and key.dim() >= 3:
        hq, hk, hv = query.shape[-3], key.shape[-3], value.shape[-3]
        if hq % hk or hq % hv:
            raise RuntimeError(
                f"scaled_dot_product_attention: number of heads in query ({hq}) must be divisible "
                f"by those of key ({hk}) and value ({hv}) with enable_gqa=True"
            )
        key = _repeat_heads(key, hq // hk) if hk != hq else key
        value = _repeat_heads(value, hq // hv) if hv != hq else value
    if attention_fused.applies(query, key, value, attn_mask, dropout_p):
        return attention_fused._fused_attention(
            query, key, value, attn_mask, is_causal, scale_factor
        )[0]
    scores = (query * scale_factor).matmul(key.transpose(-2, -1))
    neg_inf = full((), -math.inf, dtype=scores.dtype)
    if is_causal:
        # every causal row keeps at least its first column: no row is fully masked
        causal = ones((L, S), dtype=D.bool_, device=scores._storage._device).tril(0)
        scores = where(causal, scores, neg_inf)
    if attn_mask is not None:
        if attn_mask.dtype is D.bool_:
            scores = where(attn_mask, scores, neg_inf)
        else:
            scores = scores + attn_mask
    if attn_mask is not None:
        # softmax of a row of -inf is NaN; PyTorch gives such rows zero weights
        # (without reading back whether there is one: no host synchronisation)
        dead = (scores == neg_inf).all(-1, keepdim=True)
        zero = zeros((), dtype=scores.dtype, device=scores._storage._device)
        attn = where(dead, zero, softmax(where(dead, zero, scores), -1))
    else:
        attn = softmax(scores, -1)
    if dropout_p > 0.0:
        attn = dropout(attn, dropout_p, True)
    return attn.matmul(value)
