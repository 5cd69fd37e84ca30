"""scaled_dot_product_attention against a NumPy reference."""

import math

import numpy as np
import pytest

import ember_core as ec

rng = np.random.default_rng(0)


def T(a):
    return ec.from_numpy(np.ascontiguousarray(a))


def np_sdpa(q, k, v, mask=None, causal=False, scale=None):
    s = (q @ np.swapaxes(k, -1, -2)) * (1 / math.sqrt(q.shape[-1]) if scale is None else scale)
    L, S = s.shape[-2:]
    if causal:
        s = np.where(np.tril(np.ones((L, S), bool)), s, -np.inf)
    if mask is not None:
        s = np.where(mask, s, -np.inf) if mask.dtype == bool else s + mask
    m = s.max(-1, keepdims=True)
    dead = np.isneginf(m)
    e = np.exp(s - np.where(dead, 0, m))
    p = np.where(dead, 0, e / np.where(dead, 1, e.sum(-1, keepdims=True)))
    return p @ v


Q = rng.standard_normal((2, 3, 5, 8))
K = rng.standard_normal((2, 3, 7, 8))
V = rng.standard_normal((2, 3, 7, 4))


def test_plain_and_scaled():
    np.testing.assert_allclose(
        ec.scaled_dot_product_attention(T(Q), T(K), T(V)).numpy(), np_sdpa(Q, K, V), rtol=1e-10
    )
    got = ec.scaled_dot_product_attention(T(Q), T(K), T(V), scale=0.3)
    np.testing.assert_allclose(got.numpy(), np_sdpa(Q, K, V, scale=0.3), rtol=1e-10)


def test_causal_and_masks():
    np.testing.assert_allclose(
        ec.scaled_dot_product_attention(T(Q), T(K), T(V), is_causal=True).numpy(),
        np_sdpa(Q, K, V, causal=True),
        rtol=1e-10,
    )
    bool_mask = rng.random((5, 7)) > 0.4
    bool_mask[2] = False  # a fully masked row gives zeros, as PyTorch
    got = ec.scaled_dot_product_attention(T(Q), T(K), T(V), T(bool_mask)).numpy()
    np.testing.assert_allclose(got, np_sdpa(Q, K, V, bool_mask), rtol=1e-10)
    assert (got[:, :, 2] == 0).all()
    float_mask = rng.standard_normal((3, 5, 7))
    np.testing.assert_allclose(
        ec.scaled_dot_product_attention(T(Q), T(K), T(V), T(float_mask)).numpy(),
        np_sdpa(Q, K, V, float_mask),
        rtol=1e-10,
    )
    both = ec.scaled_dot_product_attention(T(Q), T(K), T(V), T(bool_mask), is_causal=True)
    np.testing.assert_allclose(
        both.numpy(), np_sdpa(Q, K, V, bool_mask & np.tril(np.ones((5, 7), bool))), rtol=1e-10
    )


def test_grouped_query_attention_and_broadcast_batch():
    k, v = K[:, :1], V[:, :1]
    got = ec.scaled_dot_product_attention(T(Q), T(k), T(v), enable_gqa=True).numpy()
    np.testing.assert_allclose(got, np_sdpa(Q, np.repeat(k, 3, 1), np.repeat(v, 3, 1)), rtol=1e-10)
    q6 = rng.standard_normal((2, 6, 5, 8))
    k3, v3 = rng.standard_normal((2, 3, 7, 8)), rng.standard_normal((2, 3, 7, 4))
    got = ec.scaled_dot_product_attention(T(q6), T(k3), T(v3), enable_gqa=True).numpy()
    np.testing.assert_allclose(
        got, np_sdpa(q6, np.repeat(k3, 2, 1), np.repeat(v3, 2, 1)), rtol=1e-10
    )
    two_d = ec.scaled_dot_product_attention(T(Q[0, 0]), T(K[0, 0]), T(V[0, 0]))
    np.testing.assert_allclose(two_d.numpy(), np_sdpa(Q[0, 0], K[0, 0], V[0, 0]), rtol=1e-10)


def test_float32_and_non_contiguous():
    q = Q.astype(np.float32)
    kt = np.swapaxes(K, -1, -2).astype(np.float32).copy()
    got = ec.scaled_dot_product_attention(T(q), T(kt).transpose(-1, -2), T(V.astype(np.float32)))
    assert got.dtype is ec.float32
    np.testing.assert_allclose(got.numpy(), np_sdpa(Q, K, V), rtol=1e-4, atol=1e-5)


def test_dropout_is_reproducible():
    ec.manual_seed(0)
    a = ec.scaled_dot_product_attention(T(Q), T(K), T(V), dropout_p=0.5).numpy()
    ec.manual_seed(0)
    b = ec.scaled_dot_product_attention(T(Q), T(K), T(V), dropout_p=0.5).numpy()
    np.testing.assert_array_equal(a, b)
    assert np.abs(a - np_sdpa(Q, K, V)).max() > 1e-3


def test_errors():
    with pytest.raises(RuntimeError, match="same floating point dtype"):
        ec.scaled_dot_product_attention(T(Q), T(K).float(), T(V))
    with pytest.raises(RuntimeError, match="same embedding size"):
        ec.scaled_dot_product_attention(T(Q), T(K[..., :4]), T(V))
    with pytest.raises(RuntimeError, match="divisible"):
        ec.scaled_dot_product_attention(
            T(Q), T(rng.standard_normal((2, 2, 7, 8))), T(V), enable_gqa=True
        )


@pytest.mark.parity
def test_parity_with_torch():
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    q, k, v = (a.astype(np.float32) for a in (Q, K, V))
    tq, tk, tv = torch.from_numpy(q), torch.from_numpy(k), torch.from_numpy(v)
    mask = rng.random((5, 7)) > 0.3
    for kwargs, tkwargs in [
        ({}, {}),
        ({"is_causal": True}, {"is_causal": True}),
        ({"attn_mask": T(mask)}, {"attn_mask": torch.from_numpy(mask)}),
        ({"scale": 0.1}, {"scale": 0.1}),
    ]:
        ours = ec.scaled_dot_product_attention(T(q), T(k), T(v), **kwargs).numpy()
        theirs = F.scaled_dot_product_attention(tq, tk, tv, **tkwargs).numpy()
        np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-5)
