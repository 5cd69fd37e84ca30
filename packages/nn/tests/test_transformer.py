"""MultiheadAttention and the Transformer layers: NumPy attention, mask
semantics, parameter names, and PyTorch parity of outputs, attention weights
and gradients (dropout off, or in eval mode)."""

import numpy as np
import pytest
from _parity import check_layer, to_numpy

import ember_core as ec
import ember_nn as nn


def softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def mha_numpy(q, k, v, m, mask=None):
    """(L, N, E) attention with m's weights, averaged weights (N, L, S)."""
    e, h = m.embed_dim, m.num_heads
    w, b = to_numpy(m.in_proj_weight), to_numpy(m.in_proj_bias)
    qp, kp, vp = (
        q @ w[:e].T + b[:e],
        k @ w[e : 2 * e].T + b[e : 2 * e],
        v @ w[2 * e :].T + b[2 * e :],
    )
    L, N, _ = q.shape
    S = k.shape[0]
    d = e // h
    qh = qp.reshape(L, N, h, d).transpose(1, 2, 0, 3)
    kh = kp.reshape(S, N, h, d).transpose(1, 2, 0, 3)
    vh = vp.reshape(S, N, h, d).transpose(1, 2, 0, 3)
    scores = qh @ kh.transpose(0, 1, 3, 2) / np.sqrt(d)
    if mask is not None:
        scores = scores + mask
    a = softmax(scores)
    out = (a @ vh).transpose(2, 0, 1, 3).reshape(L, N, e)
    out = out @ to_numpy(m.out_proj.weight).T + to_numpy(m.out_proj.bias)
    return out, a.mean(1)


def test_mha_matches_numpy(rng):
    m = nn.MultiheadAttention(8, 2).double()
    q, k = rng.standard_normal((4, 3, 8)), rng.standard_normal((5, 3, 8))
    out, w = m(ec.tensor(q), ec.tensor(k), ec.tensor(k))
    ref_out, ref_w = mha_numpy(q, k, k, m)
    np.testing.assert_allclose(to_numpy(out), ref_out, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(to_numpy(w), ref_w, rtol=1e-10, atol=1e-12)


def test_mha_bool_mask_is_minus_infinity_where_true(rng):
    m = nn.MultiheadAttention(4, 1).double()
    x = rng.standard_normal((3, 1, 4))
    mask = np.triu(np.ones((3, 3), dtype=bool), 1)
    out, w = m(ec.tensor(x), ec.tensor(x), ec.tensor(x), attn_mask=ec.tensor(mask))
    ref_out, ref_w = mha_numpy(x, x, x, m, np.where(mask, -np.inf, 0.0))
    np.testing.assert_allclose(to_numpy(w), ref_w, rtol=1e-10, atol=1e-12)
    assert np.all(to_numpy(w)[0][mask] == 0)
    np.testing.assert_allclose(to_numpy(out), ref_out, rtol=1e-10, atol=1e-12)


def test_mha_parameters_and_errors():
    m = nn.MultiheadAttention(6, 3)
    assert [n for n, _ in m.named_parameters()] == [
        "in_proj_weight",
        "in_proj_bias",
        "out_proj.weight",
        "out_proj.bias",
    ]
    m2 = nn.MultiheadAttention(6, 2, kdim=4, vdim=5, add_bias_kv=True, bias=False)
    assert [n for n, _ in m2.named_parameters()] == [
        "q_proj_weight",
        "k_proj_weight",
        "v_proj_weight",
        "bias_k",
        "bias_v",
        "out_proj.weight",
    ]
    with pytest.raises(AssertionError, match="divisible"):
        nn.MultiheadAttention(7, 2)
    x = ec.randn(3, 1, 6)
    with pytest.raises(RuntimeError, match="Need attn_mask"):
        m(x, x, x, is_causal=True)
    with pytest.raises(RuntimeError, match="2D attn_mask"):
        m(x, x, x, attn_mask=ec.zeros(2, 2))


def test_encoder_layers_are_independent_copies():
    layer = nn.TransformerEncoderLayer(8, 2, 16)
    enc = nn.TransformerEncoder(layer, 3)
    ws = [layer.linear1.weight for layer in enc.layers]
    assert len({id(w) for w in ws}) == 3
    np.testing.assert_array_equal(to_numpy(ws[0]), to_numpy(ws[1]))
    assert len(list(enc.parameters())) == 3 * len(list(layer.parameters()))


def test_square_subsequent_mask():
    m = nn.Transformer.generate_square_subsequent_mask(3)
    np.testing.assert_array_equal(to_numpy(m), [[0, -np.inf, -np.inf], [0, 0, -np.inf], [0, 0, 0]])


def _mha_call(**kwargs):
    def call(m, q, k, v, *masks):
        kw = dict(kwargs)
        for name, mask in zip(kw.pop("mask_names", ()), masks):
            kw[name] = mask
        return m(q, k, v, **kw)

    return call


def _bool(lib, a):
    return lib.from_numpy(a) if lib.__name__ == "torch" else ec.tensor(a)


MHA = [
    ("self", lambda N: N.MultiheadAttention(8, 2), [(4, 3, 8)] * 3, {}),
    ("cross", lambda N: N.MultiheadAttention(8, 4), [(4, 3, 8), (6, 3, 8), (6, 3, 8)], {}),
    (
        "no-weights",
        lambda N: N.MultiheadAttention(8, 2),
        [(4, 3, 8), (6, 3, 8), (6, 3, 8)],
        {"need_weights": False},
    ),
    (
        "per-head",
        lambda N: N.MultiheadAttention(8, 2),
        [(4, 3, 8)] * 3,
        {"average_attn_weights": False},
    ),
    (
        "batch-first",
        lambda N: N.MultiheadAttention(8, 2, batch_first=True),
        [(3, 4, 8), (3, 5, 8), (3, 5, 8)],
        {},
    ),
    (
        "kv-dims",
        lambda N: N.MultiheadAttention(8, 2, kdim=5, vdim=3),
        [(4, 2, 8), (6, 2, 5), (6, 2, 3)],
        {},
    ),
    (
        "bias-kv-zero-attn",
        lambda N: N.MultiheadAttention(8, 2, add_bias_kv=True, add_zero_attn=True),
        [(4, 2, 8), (5, 2, 8), (5, 2, 8)],
        {},
    ),
    ("no-bias", lambda N: N.MultiheadAttention(8, 2, bias=False), [(4, 2, 8)] * 3, {}),
    ("unbatched", lambda N: N.MultiheadAttention(8, 2), [(4, 8), (5, 8), (5, 8)], {}),
]


@pytest.mark.parity
@pytest.mark.parametrize("name, build, shapes, kwargs", MHA, ids=[c[0] for c in MHA])
def test_mha_parity(torch, rng, name, build, shapes, kwargs):
    check_layer(torch, build, [rng.standard_normal(s) for s in shapes], call=_mha_call(**kwargs))


@pytest.mark.parity
@pytest.mark.parametrize("need_weights", [True, False])
def test_mha_masks_parity(torch, rng, need_weights):
    L, S, N = 4, 5, 3
    q, kv = rng.standard_normal((L, N, 8)), rng.standard_normal((S, N, 8))
    float_mask = rng.standard_normal((L, S))
    kpm = np.zeros((N, S), dtype=bool)
    kpm[0, -2:] = True
    kpm[2, -1] = True
    build = lambda N_: N_.MultiheadAttention(8, 2)  # noqa: E731

    def call(m, q, k, v, fm):
        lib = torch if type(m).__module__.startswith("torch") else ec
        return m(q, k, v, attn_mask=fm, key_padding_mask=_bool(lib, kpm), need_weights=need_weights)

    check_layer(torch, build, [q, kv, kv, float_mask], call=call, grad=(0, 1, 2))
    mask3 = rng.standard_normal((N * 2, L, S))
    check_layer(
        torch,
        build,
        [q, kv, kv, mask3],
        call=lambda m, q, k, v, am: m(q, k, v, attn_mask=am, need_weights=need_weights),
        grad=(0, 1, 2),
    )

    causal = np.triu(np.ones((L, L), dtype=bool), 1)

    def causal_call(m, x):
        lib = torch if type(m).__module__.startswith("torch") else ec
        return m(x, x, x, attn_mask=_bool(lib, causal), need_weights=need_weights, is_causal=True)

    check_layer(torch, build, [q], call=causal_call)


ENCODER = [
    ("post-norm", lambda N: N.TransformerEncoderLayer(8, 2, 16, dropout=0.0), [(5, 3, 8)]),
    (
        "pre-norm-gelu",
        lambda N: N.TransformerEncoderLayer(
            8, 2, 16, dropout=0.0, activation="gelu", norm_first=True, batch_first=True
        ),
        [(3, 5, 8)],
    ),
    (
        "no-bias",
        lambda N: N.TransformerEncoderLayer(8, 4, 16, dropout=0.0, bias=False),
        [(5, 3, 8)],
    ),
    (
        "stack",
        lambda N: N.TransformerEncoder(
            N.TransformerEncoderLayer(8, 2, 16, dropout=0.0),
            2,
            norm=N.LayerNorm(8),
            enable_nested_tensor=False,
        ),
        [(5, 3, 8)],
    ),
    (
        "decoder-layer",
        lambda N: N.TransformerDecoderLayer(8, 2, 16, dropout=0.0),
        [(4, 3, 8), (5, 3, 8)],
    ),
    (
        "decoder-pre-norm",
        lambda N: N.TransformerDecoderLayer(
            8, 2, 16, dropout=0.0, norm_first=True, batch_first=True
        ),
        [(3, 4, 8), (3, 5, 8)],
    ),
    (
        "decoder-stack",
        lambda N: N.TransformerDecoder(N.TransformerDecoderLayer(8, 2, 16, dropout=0.0), 2),
        [(4, 3, 8), (5, 3, 8)],
    ),
    ("transformer", lambda N: N.Transformer(8, 2, 1, 1, 16, dropout=0.0), [(5, 2, 8), (4, 2, 8)]),
]


@pytest.mark.parity
@pytest.mark.parametrize("name, build, shapes", ENCODER, ids=[c[0] for c in ENCODER])
def test_transformer_parity(torch, rng, name, build, shapes):
    check_layer(torch, build, [rng.standard_normal(s) for s in shapes], rtol=1e-6, atol=1e-9)


@pytest.mark.parity
def test_transformer_masks_parity(torch, rng):
    src, tgt = rng.standard_normal((5, 2, 8)), rng.standard_normal((4, 2, 8))
    pad = np.zeros((2, 5), dtype=bool)
    pad[1, -2:] = True

    def call(m, src, tgt):
        lib = torch if type(m).__module__.startswith("torch") else ec
        tgt_mask = m.generate_square_subsequent_mask(4).to(src.dtype)
        return m(
            src,
            tgt,
            tgt_mask=tgt_mask,
            src_key_padding_mask=_bool(lib, pad),
            memory_key_padding_mask=_bool(lib, pad),
        )

    check_layer(torch, lambda N: N.Transformer(8, 2, 2, 2, 16, dropout=0.0), [src, tgt], call=call)


@pytest.mark.parity
def test_encoder_eval_mode_parity(torch, rng):
    # in eval mode PyTorch may take its fused fast path; the values must agree
    check_layer(
        torch,
        lambda N: N.TransformerEncoder(
            N.TransformerEncoderLayer(8, 2, 16, batch_first=True), 2, enable_nested_tensor=False
        ),
        [rng.standard_normal((3, 5, 8))],
        train=False,
        grad=False,
    )
