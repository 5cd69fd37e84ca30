"""The fused attention kernel (CUDA; Note [Fused attention] in
csrc/cuda/attention.cuh) as two ops: ``_fused_attention`` (output and the
rows' logsumexp) and its backward, ``_fused_attention_backward``, which
recomputes the probabilities from the logsumexp.  scaled_dot_product_attention
(attention.py) calls them where ``applies`` says the kernel covers the case
and takes its math path (matmuls around the softmax) everywhere else: on the
CPU, float64, dropout, head dims over 128, broadcast batch dims, more than two
batch dims, or a float mask that wants a gradient.

The kernel reads q, k, v and the mask through their strides (a permuted
(N, L, H, E) projection needs no copy, a broadcast mask has stride 0) as
(N, H, rows, dim) with unit strides along the head dim.
"""

from ember_core._base.dispatch import defop
from ember_core._base.lib import check
from ember_core._tensor import dtype as D
from ember_core._tensor.tensor import Tensor, empty

_DTYPES = (D.float16, D.bfloat16, D.float32)
MAX_HEAD_DIM = 128  # ECU_ATTN_MAXD


def applies(query, key, value, attn_mask, dropout_p):
    """Whether the fused kernel computes this scaled_dot_product_attention call."""
    dev = query._storage._device
    if dev.type != "cuda" or dropout_p > 0.0:
        return False
    if query._dtype not in _DTYPES or key._dtype is not query._dtype:
        return False
    if value._dtype is not query._dtype:
        return False
    nd = len(query._shape)
    if nd not in (2, 3, 4) or len(key._shape) != nd or len(value._shape) != nd:
        return False
    if key._storage._device != dev or value._storage._device != dev:
        return False
    if query._shape[:-2] != key._shape[:-2] or key._shape[:-1] != value._shape[:-1]:
        return False
    L, E = query._shape[-2:]
    S, Ev = value._shape[-2:]
    if min(L, S, E, Ev) < 1 or E > MAX_HEAD_DIM or Ev > MAX_HEAD_DIM:
        return False
    if query._numel == 0:
        return False
    if attn_mask is not None:
        if attn_mask._storage._device != dev or len(attn_mask._shape) > nd:
            return False
        if attn_mask._dtype is not D.bool_ and not attn_mask._dtype.is_floating_point:
            return False
        if attn_mask._dtype is not D.bool_ and attn_mask.requires_grad:
            return False  # the kernel gives no gradient for the mask
    return True


def _as4(t):
    """t (..., rows, dim) as (N, H, rows, dim) with a unit stride along dim."""
    if t._stride[-1] != 1 and t._shape[-1] != 1:
        t = t.contiguous()
    while len(t._shape) < 4:
        t = t.unsqueeze(0)
    return t


def _strides3(t):
    return [t._stride[0], t._stride[1], t._stride[2]]


def _geometry(q, k, v, mask):
    """(geo array, q4, k4, v4, mask4, mask kind) for the kernels."""
    from ember_core._ops.nn.spatial import _new

    q4, k4, v4 = _as4(q), _as4(k), _as4(v)
    N, H, L, E = q4._shape
    S, Ev = v4._shape[2:]
    kind, m4, mst = 0, None, [0, 0, 0, 0]
    if mask is not None:
        kind = 1 if mask._dtype is D.bool_ else 2
        m = mask if kind == 1 else mask.to(D.float32)
        m4 = m.expand((N, H, L, S)) if len(m._shape) <= 4 else m
        mst = list(m4._stride)
    geo = [N, H, L, S, E, Ev] + _strides3(q4) + _strides3(k4) + _strides3(v4) + mst
    return _new("int64_t[19]", geo), q4, k4, v4, m4, kind


def _check_inputs(op, query, key, value, attn_mask):
    for t, name in ((query, "query"), (key, "key"), (value, "value")):
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}(): argument '{name}' must be Tensor")
    if not applies(query, key, value, attn_mask, 0.0):
        raise RuntimeError(
            f"{op}: the fused kernel does not cover query {list(query.shape)} {query.dtype} on "
            f"{query.device}, key {list(key.shape)}, value {list(value.shape)}"
            + ("" if attn_mask is None else f", mask {list(attn_mask.shape)} {attn_mask.dtype}")
            + " (CUDA float16/bfloat16/float32, equal batch dims, head dims up to "
            f"{MAX_HEAD_DIM}); scaled_dot_product_attention takes the math path there"
        )


@defop(method=False)
def _fused_attention(query, key, value, attn_mask=None, is_causal=False, scale=1.0):
    """(output, logsumexp) of softmax(query key^T scale + mask) value in one
    kernel; logsumexp (..., L) is float32 (-inf for a row with no key taking
    part, whose output is zeros)."""
    op = "_fused_attention"
    _check_inputs(op, query, key, value, attn_mask)
    geo, q4, k4, v4, m4, kind = _geometry(query, key, value, attn_mask)
    N, H, L, _ = q4._shape
    Ev = v4._shape[3]
    dev = query._storage._device
    out = empty((N, H, L, Ev), query._dtype, dev)
    lse = empty((N, H, L), D.float32, dev)
    check(
        dev._k.ec_attention_forward(
            query._dtype.code,
            geo,
            float(scale),
            bool(is_causal),
            kind,
            q4._ptr,
            k4._ptr,
            v4._ptr,
            0 if m4 is None else m4._ptr,
            out._ptr,
            lse._ptr,
        ),
        op,
    )
    lead = query._shape[:-2]
    return out.reshape(lead + (L, Ev)), lse.reshape(lead + (L,))


@defop(method=False, differentiable=False)
def _fused_attention_backward(
    grad_out, query, key, value, out, logsumexp, attn_mask=None, is_causal=False, scale=1.0
):
    """(grad_query, grad_key, grad_value) of _fused_attention from its output
    and logsumexp (the probabilities are recomputed, not stored)."""
    op = "_fused_attention_backward"
    _check_inputs(op, query, key, value, attn_mask)
    L, Ev = query._shape[-2], value._shape[-1]
    want = query._shape[:-2] + (L, Ev)
    if tuple(grad_out._shape) != want or tuple(out._shape) != want:
        raise RuntimeError(
            f"{op}: grad_out {list(grad_out.shape)} and out {list(out.shape)} must both be "
            f"{list(want)}"
        )
    if tuple(logsumexp._shape) != want[:-1] or logsumexp._dtype is not D.float32:
        raise RuntimeError(
            f"{op}: logsumexp must be float32 of shape {list(want[:-1])}, got "
            f"{list(logsumexp.shape)} {logsumexp.dtype}"
        )
    geo, q4, k4, v4, m4, kind = _geometry(query, key, value, attn_mask)
    dev = query._storage._device
    dt = query._dtype
    go = grad_out.to(dt).contiguous()
    o = out.to(dt).contiguous()
    lse = logsumexp.contiguous()
    delta = empty(lse._shape, D.float32, dev)
    dq = empty(q4._shape, dt, dev)
    dk = empty(k4._shape, dt, dev)
    dv = empty(v4._shape, dt, dev)
    check(
        dev._k.ec_attention_backward(
            dt.code,
            geo,
            float(scale),
            bool(is_causal),
            kind,
            q4._ptr,
            k4._ptr,
            v4._ptr,
            0 if m4 is None else m4._ptr,
            o._ptr,
            lse._ptr,
            go._ptr,
            delta._ptr,
            dq._ptr,
            dk._ptr,
            dv._ptr,
        ),
        op,
    )
    return dq.reshape(query._shape), dk.reshape(key._shape), dv.reshape(value._shape)
