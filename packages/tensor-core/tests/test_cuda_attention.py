"""The fused attention kernel on CUDA (csrc/cuda/attention.cuh,
_ops/nn/attention_fused.py): scaled_dot_product_attention on CUDA against the CPU's
math path (causal, bool and additive masks, rows with no key, several key
tiles, 2-D to 4-D inputs, permuted heads, head dims at the lane boundaries,
float32/float16/bfloat16), the output's logsumexp and the backward op's
gradients against a float64 NumPy reference, the cases left to the math path,
and the errors of the ops called where the kernel does not apply."""

import zlib

import numpy as np
import pytest
from cuda_helpers import CUDA, Spec, check_op, maker, values

import ember_core as ec
from ember_core._ops.nn import attention_fused as _attention_fused

SELFTEST_OK = True
pytestmark = pytest.mark.cuda

TOL = {
    ec.float32: (2e-5, 2e-5),
    ec.float64: (1e-10, 1e-10),
    ec.float16: (1e-2, 1e-2),
    ec.bfloat16: (5e-2, 5e-2),
}


def _rng(*parts):
    return np.random.default_rng(zlib.crc32("/".join(map(str, parts)).encode()))


def _cases(dtype, rng):
    def S(*shape, layout="contiguous"):
        return Spec(values(shape, dtype, rng, -1, 1), dtype, layout)

    dead = rng.random((2, 1, 7, 9)) < 0.6
    dead[1, 0, 3] = False  # a row with no key: zeros
    return [
        ("plain", maker(S(2, 3, 7, 8), S(2, 3, 9, 8), S(2, 3, 9, 4))),
        ("causal", maker(S(2, 3, 7, 8), S(2, 3, 7, 8), S(2, 3, 7, 8), is_causal=True)),
        (
            "causal, several tiles, L < S",
            maker(S(1, 2, 41, 16), S(1, 2, 70, 16), S(1, 2, 70, 24), is_causal=True),
        ),
        (
            "additive mask",
            maker(S(2, 3, 7, 8), S(2, 3, 9, 8), S(2, 3, 9, 4), attn_mask=S(7, 9)),
        ),
        (
            "bool mask, broadcast heads, dead row",
            maker(S(2, 3, 7, 8), S(2, 3, 9, 8), S(2, 3, 9, 4), attn_mask=Spec(dead, ec.bool)),
        ),
        ("2-D, scale", maker(S(5, 33), S(6, 33), S(6, 65), scale=0.3)),
        (
            "3-D transposed",
            maker(
                S(3, 9, 8, layout="transposed"),
                S(3, 9, 8),
                S(3, 9, 8, layout="transposed"),
                is_causal=True,
            ),
        ),
        ("head dim 128", maker(S(1, 1, 4, 128), S(1, 1, 35, 128), S(1, 1, 35, 128))),
    ]


@pytest.mark.parametrize("dtype", [ec.float32, ec.float16, ec.bfloat16], ids=str)
def test_sdpa_matches_the_cpu(dtype):
    for label, make in _cases(dtype, _rng("sdpa", dtype)):
        check_op(
            lambda q, k, v, **kw: ec.scaled_dot_product_attention(q, k, v, **kw),
            make,
            op_name="scaled_dot_product_attention",
            tol=TOL,
            where=label,
        )


def test_sdpa_permuted_heads_need_no_copy():
    """(N, L, H, E) projections permuted to (N, H, L, E): the kernel reads the strides."""
    rng = _rng("sdpa-permuted")
    q, k, v = (values((2, 6, 3, 8), ec.float32, rng, -1, 1) for _ in range(3))

    def fn(q, k, v):
        return ec.scaled_dot_product_attention(
            q.permute(0, 2, 1, 3), k.permute(0, 2, 1, 3), v.permute(0, 2, 1, 3), is_causal=True
        )

    specs = [Spec(a, ec.float32) for a in (q, k, v)]
    check_op(fn, maker(*specs), op_name="scaled_dot_product_attention", tol=TOL)


def _reference(q, k, v, bias, scale, go):
    """float64 NumPy: output, logsumexp and the three gradients."""
    s = q @ np.swapaxes(k, -1, -2) * scale + bias
    m = s.max(-1, keepdims=True)
    with np.errstate(invalid="ignore"):
        e = np.exp(s - np.where(np.isfinite(m), m, 0))
    tot = e.sum(-1, keepdims=True)
    p = np.where(tot > 0, e / np.where(tot > 0, tot, 1), 0)
    lse = np.where(tot[..., 0] > 0, np.log(np.where(tot > 0, tot, 1))[..., 0] + m[..., 0], -np.inf)
    o = p @ v
    dv = np.swapaxes(p, -1, -2) @ go
    ds = p * (go @ np.swapaxes(v, -1, -2) - (go * o).sum(-1, keepdims=True))
    return o, lse, ds @ k * scale, np.swapaxes(ds, -1, -2) @ q * scale, dv


@pytest.mark.parametrize("dtype", [ec.float32, ec.bfloat16], ids=str)
@pytest.mark.parametrize("masking", ["none", "causal", "bool", "additive"])
def test_fused_ops_against_numpy(dtype, masking):
    if CUDA == "cpu":
        pytest.skip("the fused kernel is CUDA's")
    rng = _rng("fused", dtype, masking)
    N, H, L, S, E, Ev = 2, 2, 37, 45, 16, 40
    q, k, v = (rng.uniform(-1, 1, sh) for sh in ((N, H, L, E), (N, H, S, E), (N, H, S, Ev)))
    go = rng.uniform(-1, 1, (N, H, L, Ev))
    if dtype is ec.bfloat16:  # the reference sees the values the kernel reads
        q, k, v, go = (ec.tensor(a, dtype=dtype).double().numpy() for a in (q, k, v, go))
    bias = np.zeros((L, S))
    mask = None
    if masking == "causal":
        bias = np.where(np.tri(L, S, dtype=bool), 0.0, -np.inf)
    elif masking == "bool":
        keep = rng.random((N, 1, L, S)) < 0.5
        keep[0, 0, 5] = False
        bias = np.where(keep, 0.0, -np.inf)
        mask = ec.tensor(keep, device=CUDA)
    elif masking == "additive":
        bias = rng.uniform(-2, 2, (L, S)).astype(np.float32).astype(np.float64)
        mask = ec.tensor(bias, dtype=ec.float32, device=CUDA)
    scale = 0.25
    ref = _reference(q, k, v, bias, scale, go)
    tq, tk, tv, tgo = (ec.tensor(a, dtype=dtype, device=CUDA) for a in (q, k, v, go))
    causal = masking == "causal"
    out, lse = ec._fused_attention(tq, tk, tv, mask, causal, scale)
    assert out.dtype is dtype and lse.dtype is ec.float32 and tuple(lse.shape) == (N, H, L)
    grads = ec._fused_attention_backward(tgo, tq, tk, tv, out, lse, mask, causal, scale)
    rtol, atol = {ec.float32: (1e-4, 1e-5), ec.bfloat16: (3e-2, 3e-2)}[dtype]
    got = [out, lse, *grads]
    for name, g, r in zip(("out", "lse", "dq", "dk", "dv"), got, ref):
        np.testing.assert_allclose(
            g.cpu().double().numpy(), r, rtol=rtol, atol=atol, err_msg=f"{name} ({masking})"
        )


def test_the_math_path_takes_the_rest():
    rng = _rng("math-path")
    dev = CUDA

    def t(*shape, dtype=ec.float32):
        return ec.tensor(values(shape, dtype, rng, -1, 1), dtype=dtype, device=dev)

    q, k, v = t(2, 4, 8), t(2, 5, 8), t(2, 5, 8)
    fused = dev != "cpu"
    assert _attention_fused.applies(q, k, v, None, 0.0) is fused
    assert not _attention_fused.applies(q, k, v, None, 0.1)  # dropout
    d = [x.double() for x in (q, k, v)]
    assert not _attention_fused.applies(*d, None, 0.0)  # float64
    assert not _attention_fused.applies(t(1, 4, 129), t(1, 5, 129), v[:1], None, 0.0)
    assert not _attention_fused.applies(q, k[:1], v[:1], None, 0.0)  # broadcast batch
    assert not _attention_fused.applies(
        t(1, 1, 1, 4, 8), t(1, 1, 1, 5, 8), t(1, 1, 1, 5, 8), None, 0.0
    )
    grad_mask = t(4, 5).requires_grad_()
    assert not _attention_fused.applies(q, k, v, grad_mask, 0.0)
    check_op(
        lambda q, k, v: ec.scaled_dot_product_attention(q, k, v, is_causal=True),
        maker(*(Spec(x.cpu().numpy(), ec.float64) for x in d)),
        op_name="scaled_dot_product_attention",
        tol=TOL,
    )


def test_fused_op_refuses_what_it_does_not_cover():
    if CUDA == "cpu":
        pytest.skip("the fused kernel is CUDA's")
    q = ec.zeros(1, 2, 4, device=CUDA)
    with pytest.raises(RuntimeError, match="_fused_attention: the fused kernel does not cover"):
        ec._fused_attention(q.double(), q.double(), q.double())
    with pytest.raises(RuntimeError, match="_fused_attention: .*cpu"):
        ec._fused_attention(q.cpu(), q.cpu(), q.cpu())
    with pytest.raises(RuntimeError, match="_fused_attention_backward: grad_out"):
        out, lse = ec._fused_attention(q, q, q)
        ec._fused_attention_backward(q[..., :2], q, q, q, out, lse.float())
