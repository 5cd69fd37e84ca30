"""Gradients of the nn ops (formulas in _derivatives_nn.py): finite differences
in float64 (gradcheck), second derivatives where the formula has a composite
double-backward path (gradgradcheck), and PyTorch's gradients (-m parity)."""

import numpy as np
import pytest

import ember_autograd as ag
import ember_core as ec
from ember_autograd import gradcheck, gradgradcheck

D = ec.float64
REDUCTIONS = ["none", "mean", "sum"]


def rand(*shape, requires_grad=True, scale=1.0, seed=None):
    g = ec.Generator().manual_seed(hash((shape, seed)) % (2**31))
    return (ec.randn(*shape, dtype=D, generator=g) * scale).requires_grad_(requires_grad)


# ----------------------------------------------------------------- softmax


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_softmax_and_log_softmax(dim):
    x = rand(3, 4, 5)
    assert gradcheck(lambda t: ec.softmax(t, dim), (x,))
    assert gradcheck(lambda t: ec.log_softmax(t, dim), (x,))
    assert gradgradcheck(lambda t: ec.softmax(t, dim), (x,))
    assert gradgradcheck(lambda t: ec.log_softmax(t, dim), (x,))


def test_softmax_with_dtype_gives_input_dtype_gradient():
    x = ec.randn(2, 3).requires_grad_()
    y = ec.softmax(x, 1, dtype=ec.float64)
    (y * ec.arange(3, dtype=D)).sum().backward()
    assert x.grad.dtype is ec.float32


# ----------------------------------------------------------- normalization


@pytest.mark.parametrize("affine", [False, True])
def test_layer_norm(affine):
    x = rand(3, 4, 5)
    w, b = (rand(4, 5), rand(4, 5)) if affine else (None, None)
    args = (x, w, b) if affine else (x,)

    def f(x, w=None, b=None):
        return ec.layer_norm(x, (4, 5), w, b)

    assert gradcheck(f, args)
    assert gradgradcheck(f, args)


def test_rms_norm():
    x, w = rand(4, 6), rand(6)
    assert gradcheck(lambda x, w: ec.rms_norm(x, (6,), w), (x, w))
    assert gradgradcheck(lambda x, w: ec.rms_norm(x, (6,), w, 1e-3), (x, w))
    assert gradcheck(lambda x: ec.rms_norm(x, (6,)), (x,))


@pytest.mark.parametrize("shape", [(6, 3), (4, 3, 5), (2, 3, 2, 3)])
@pytest.mark.parametrize("training", [True, False])
def test_batch_norm(shape, training):
    x, w, b = rand(*shape), rand(3), rand(3)
    rm, rv = ec.zeros(3, dtype=D), ec.ones(3, dtype=D)

    def f(x, w, b):
        return ec.batch_norm(x, w, b, rm, rv, training, 0.1, 1e-5)

    assert gradcheck(f, (x, w, b))
    assert gradgradcheck(f, (x, w, b))
    assert gradcheck(lambda x: ec.batch_norm(x, None, None, None, None, True, 0.1, 1e-5), (x,))


def test_group_and_instance_norm():
    x, w, b = rand(2, 6, 5), rand(6), rand(6)
    assert gradcheck(lambda x, w, b: ec.group_norm(x, 3, w, b), (x, w, b))
    assert gradgradcheck(lambda x, w, b: ec.group_norm(x, 2, w, b), (x, w, b))
    assert gradcheck(lambda x: ec.group_norm(x, 6), (x,))
    assert gradcheck(
        lambda x, w, b: ec.instance_norm(x, w, b, None, None, True, 0.1, 1e-5), (x, w, b)
    )


# ------------------------------------------------------------------ losses


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
def test_nll_and_cross_entropy(reduction, weighted):
    x = rand(5, 4)
    t = ec.tensor([1, 0, 3, -100, 2])
    w = ec.rand(4, dtype=D) + 0.5 if weighted else None
    assert gradcheck(lambda x: ec.nll_loss(x, t, w, -100, reduction), (x,))
    assert gradgradcheck(lambda x: ec.nll_loss(ec.log_softmax(x, 1), t, w, -100, reduction), (x,))
    for smoothing in (0.0, 0.2):
        assert gradcheck(lambda x, s=smoothing: ec.cross_entropy(x, t, w, -100, reduction, s), (x,))
    # the fused (N, C) path differentiates twice through its composite fallback
    assert gradgradcheck(lambda x: ec.cross_entropy(x, t, w, -100, reduction), (x,))


def test_cross_entropy_spatial_and_probabilities():
    x = rand(2, 3, 4)
    t = ec.tensor([[0, 2, -100, 1], [1, 1, 0, 2]])
    w = ec.tensor([0.2, 1.0, 3.0], dtype=D)
    assert gradcheck(lambda x: ec.cross_entropy(x, t, w, -100, "mean", 0.1), (x,))
    p = ec.softmax(rand(2, 3, 4, requires_grad=False), 1).requires_grad_()
    for reduction in REDUCTIONS:
        assert gradcheck(lambda x, p, r=reduction: ec.cross_entropy(x, p, w, -100, r, 0.3), (x, p))


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_binary_cross_entropy(reduction):
    x = (ec.rand(3, 4, dtype=D) * 0.8 + 0.1).requires_grad_()
    t = ec.rand(3, 4, dtype=D).requires_grad_()
    w = ec.rand(4, dtype=D)
    assert gradcheck(lambda x, t: ec.binary_cross_entropy(x, t, w, reduction), (x, t))
    assert gradgradcheck(lambda x, t: ec.binary_cross_entropy(x, t, None, reduction), (x, t))


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_binary_cross_entropy_with_logits(reduction):
    x, t = rand(3, 4), ec.rand(3, 4, dtype=D).requires_grad_()
    w, pw = ec.rand(4, dtype=D), ec.rand(4, dtype=D) + 0.5
    assert gradcheck(
        lambda x, t: ec.binary_cross_entropy_with_logits(x, t, w, pw, reduction), (x, t)
    )
    assert gradcheck(
        lambda x, t: ec.binary_cross_entropy_with_logits(x, t, None, None, reduction), (x, t)
    )
    assert gradgradcheck(
        lambda x, t: ec.binary_cross_entropy_with_logits(x, t, w, pw, reduction), (x, t)
    )


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_pointwise_losses(reduction):
    x, y = rand(3, 5, scale=2.0), rand(3, 5, scale=2.0)
    for fn in (ec.mse_loss, ec.l1_loss):
        assert gradcheck(lambda a, b, fn=fn: fn(a, b, reduction), (x, y))
    assert gradcheck(lambda a, b: ec.smooth_l1_loss(a, b, reduction, 0.5), (x, y))
    assert gradcheck(lambda a, b: ec.huber_loss(a, b, reduction, 0.8), (x, y))
    t = ec.softmax(rand(3, 5, requires_grad=False), 1).requires_grad_()
    assert gradcheck(lambda a, b: ec.kl_div(a, b, reduction, False), (x, t))
    assert gradcheck(lambda a, b: ec.kl_div(a, b, reduction, True), (x, y))


# ------------------------------------------------------------- activations


ACTIVATIONS = [
    ("leaky_relu", lambda t: ec.leaky_relu(t, 0.2)),
    ("elu", lambda t: ec.elu(t, 1.3)),
    ("celu", lambda t: ec.celu(t, 0.7)),
    ("hardtanh", lambda t: ec.hardtanh(t, -0.6, 0.9)),
    ("threshold", lambda t: ec.threshold(t, 0.1, 2.0)),
    ("hardshrink", lambda t: ec.hardshrink(t, 0.3)),
    ("softshrink", lambda t: ec.softshrink(t, 0.3)),
    ("glu", lambda t: ec.glu(t, 1)),
    ("rrelu_eval", lambda t: ec.rrelu(t, 0.1, 0.3)),
]


@pytest.mark.parametrize("name,fn", ACTIVATIONS, ids=[a[0] for a in ACTIVATIONS])
def test_activations(name, fn):
    x = rand(4, 6)
    assert gradcheck(fn, (x,))
    assert gradgradcheck(fn, (x,))


@pytest.mark.parametrize(
    "name,fn_",
    [
        ("leaky_relu_", lambda t: ec.leaky_relu_(t, 0.2)),
        ("elu_", lambda t: ec.elu_(t)),
        ("celu_", lambda t: ec.celu_(t, 0.5)),
        ("hardtanh_", lambda t: ec.hardtanh_(t)),
        ("threshold_", lambda t: ec.threshold_(t, 0.0, 1.5)),
    ],
)
def test_inplace_activations(name, fn_):
    x = rand(3, 5)
    assert gradcheck(lambda t: fn_(t.clone()), (x,))


def test_prelu_and_rrelu_training():
    x, w = rand(2, 3, 4), (ec.rand(3, dtype=D) * 0.5).requires_grad_()
    assert gradcheck(lambda x, w: ec.prelu(x, w), (x, w))
    assert gradcheck(lambda x, w: ec.prelu(x, w), (x, (ec.rand(1, dtype=D)).requires_grad_()))

    def f(x):
        ec.manual_seed(3)
        return ec.rrelu(x, 0.1, 0.3, True)

    assert gradcheck(f, (x,))


# ----------------------------------------------------------------- dropout


@pytest.mark.parametrize(
    "fn", [ec.dropout, ec.feature_dropout, ec.alpha_dropout, ec.feature_alpha_dropout]
)
def test_dropouts(fn):
    x = rand(4, 3, 5)

    def f(x):
        ec.manual_seed(11)
        return fn(x, 0.4, True)

    assert gradcheck(f, (x,))
    assert gradgradcheck(f, (x,))


def test_dropout_gradient_is_the_mask():
    x = rand(50, 40)
    ec.manual_seed(2)
    y = ec.dropout(x, 0.25, True)
    y.sum().backward()
    keep = y.detach().numpy() != 0
    np.testing.assert_allclose(x.grad.numpy(), np.where(keep, 1 / 0.75, 0.0))


# --------------------------------------------------------------- embedding


def test_embedding():
    w = rand(10, 4)
    idx = ec.tensor([[1, 3, 3], [0, 9, 2]])
    assert gradcheck(lambda w: ec.embedding(w, idx), (w,))
    assert gradgradcheck(lambda w: ec.embedding(w, idx), (w,))
    # scale_grad_by_freq deliberately scales the gradient: compare with the rule,
    # and check that the scaled backward is differentiated consistently
    ec.embedding(w, idx, -1, True).sum().backward()
    counts = np.bincount(idx.numpy().reshape(-1), minlength=10)
    np.testing.assert_allclose(
        w.grad.numpy(), np.where(counts > 0, 1.0, 0.0)[:, None] * np.ones((10, 4))
    )
    assert gradgradcheck(lambda w: ec.embedding(w, idx, -1, True), (w,))


def test_embedding_padding_row_gets_no_gradient():
    w = rand(10, 4)
    idx = ec.tensor([[1, 3, 3], [0, 9, 3]])
    g = rand(2, 3, 4, requires_grad=False)
    (ec.embedding(w, idx, 3) * g).sum().backward()
    ref = np.zeros((10, 4))
    for k, r in enumerate(idx.numpy().reshape(-1)):
        if r != 3:
            ref[r] += g.numpy().reshape(-1, 4)[k]
    np.testing.assert_allclose(w.grad.numpy(), ref)


@pytest.mark.parametrize("mode", [0, 1, 2])
@pytest.mark.parametrize("padding_idx", [None, 3])
def test_embedding_bag(mode, padding_idx):
    w = rand(10, 4)
    idx, off = ec.tensor([1, 3, 3, 0, 9, 2, 5]), ec.tensor([0, 2, 2, 5])
    if padding_idx is None:
        assert gradcheck(lambda w: ec.embedding_bag(w, idx, off, False, mode)[0], (w,))
    else:  # the padding row is skipped in the forward too, so the gradient is exact
        assert gradcheck(
            lambda w: ec.embedding_bag(w, idx, off, False, mode, False, None, False, 3)[0], (w,)
        )
    if mode != 2:
        assert gradgradcheck(lambda w: ec.embedding_bag(w, idx, off, False, mode)[0], (w,))


def test_embedding_bag_per_sample_weights():
    w, psw = rand(10, 4), rand(7)
    idx, off = ec.tensor([1, 3, 3, 0, 9, 2, 5]), ec.tensor([0, 2, 2, 5])
    f = lambda w, p: ec.embedding_bag(w, idx, off, False, 0, False, p)[0]  # noqa: E731
    assert gradcheck(f, (w, psw))
    assert gradgradcheck(f, (w, psw))


# --------------------------------------------------------------- attention


def test_scaled_dot_product_attention():
    q, k, v = rand(2, 3, 4), rand(2, 5, 4), rand(2, 5, 3)
    mask = ec.tensor([[True, False, True, True, False]] * 3)
    assert gradcheck(lambda q, k, v: ec.scaled_dot_product_attention(q, k, v), (q, k, v))
    assert gradcheck(lambda q, k, v: ec.scaled_dot_product_attention(q, k, v, mask), (q, k, v))
    assert gradcheck(
        lambda q, k, v: ec.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.3),
        (q, k, v),
    )
    fmask = rand(3, 5, requires_grad=True)
    assert gradcheck(lambda q, m: ec.scaled_dot_product_attention(q, k, v, m), (q, fmask))
    dead = ec.tensor([[True] * 5, [False] * 5, [True, False, False, False, True]])
    q.grad = None
    ec.scaled_dot_product_attention(q, k, v, dead).sum().backward()
    assert np.isfinite(q.grad.numpy()).all() and (q.grad.numpy()[:, 1] == 0).all()


# ------------------------------------------------------------ RNN cells


def _cell_inputs(gates, bias=True):
    b, i, h = 3, 4, 5
    ins = [
        rand(b, i),
        rand(b, h),
        rand(b, h),
        rand(gates * h, i, scale=0.5),
        rand(gates * h, h, scale=0.5),
    ]
    if bias:
        ins += [rand(gates * h), rand(gates * h)]
    return ins


@pytest.mark.parametrize("bias", [True, False])
def test_lstm_cell(bias):
    ins = _cell_inputs(4, bias)

    def f(x, h, c, wi, wh, bi=None, bh=None):
        return ec.lstm_cell(x, (h, c), wi, wh, bi, bh)

    assert gradcheck(f, tuple(ins))
    assert gradcheck(lambda *a: f(*a)[1], tuple(ins))  # only cy used: grad of hy is zero
    assert gradgradcheck(f, tuple(ins))


@pytest.mark.parametrize("bias", [True, False])
def test_gru_and_rnn_cells(bias):
    ins = _cell_inputs(3, bias)
    del ins[2]
    assert gradcheck(lambda *a: ec.gru_cell(*a), tuple(ins))
    assert gradgradcheck(lambda *a: ec.gru_cell(*a), tuple(ins))
    ins1 = _cell_inputs(1, bias)
    del ins1[2]
    assert gradcheck(lambda *a: ec.rnn_tanh_cell(*a), tuple(ins1))
    assert gradcheck(lambda *a: ec.rnn_relu_cell(*a), tuple(ins1))


def test_every_nn_op_has_a_formula():
    from ember_autograd import _derivatives_nn  # noqa: F401

    # the differentiable kernel ops the nn modules of ember_core declare
    modules = {
        f"ember_core._ops.nn.{name}"
        for name in ("softmax", "norm", "loss", "activation", "dropout", "embedding", "rnn")
    }
    ops = [
        op
        for op in ec.OPS.values()
        if op.module in modules and op.differentiable and not op.composite
    ]
    assert {"softmax", "native_layer_norm", "nll_loss", "embedding_bag"} <= {op.name for op in ops}
    missing = [
        op.name
        for op in ops
        if op not in ag.DERIVATIVES and not (op.inplace_of and op.inplace_of in ag.DERIVATIVES)
    ]
    assert missing == []


# ------------------------------------------------------------------ parity


def _torch_pair(shape, seed):
    torch = pytest.importorskip("torch")
    a = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return ec.from_numpy(a.copy()).requires_grad_(), torch.from_numpy(a.copy()).requires_grad_()


def _same_grads(ours, theirs, rtol=1e-4, atol=1e-5):
    for a, b in zip(ours, theirs):
        if a.grad is None:
            assert b.grad is None or not b.grad.abs().sum().item()
            continue
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=rtol, atol=atol)


@pytest.mark.parity
def test_parity_gradients_with_torch():
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    import ember_nn.functional as EF

    x, tx = _torch_pair((6, 5, 3), 0)
    w, tw = _torch_pair((5,), 1)
    b, tb = _torch_pair((5,), 2)
    t = np.random.default_rng(3).integers(0, 5, (6, 3))
    t[0, 0] = -100
    gy = np.random.default_rng(4).standard_normal((6, 5, 3)).astype(np.float32)

    def check(ember_loss, torch_loss, pairs):
        for p in pairs:
            p[0].grad = None
            p[1].grad = None
        ember_loss().backward()
        torch_loss().backward()
        _same_grads([p[0] for p in pairs], [p[1] for p in pairs])

    ew = w.detach()
    cases = [
        (
            lambda: EF.cross_entropy(x, ec.from_numpy(t), ew, label_smoothing=0.1),
            lambda: F.cross_entropy(tx, torch.from_numpy(t), tw.detach(), label_smoothing=0.1),
        ),
        (
            lambda: (EF.batch_norm(x, None, None, w, b, True) * ec.from_numpy(gy)).sum(),
            lambda: (F.batch_norm(tx, None, None, tw, tb, True) * torch.from_numpy(gy)).sum(),
        ),
        (
            lambda: (EF.group_norm(x, 5, w, b) * ec.from_numpy(gy)).sum(),
            lambda: (F.group_norm(tx, 5, tw, tb) * torch.from_numpy(gy)).sum(),
        ),
        (
            lambda: (EF.layer_norm(x, (3,)) * ec.from_numpy(gy)).sum(),
            lambda: (F.layer_norm(tx, (3,)) * torch.from_numpy(gy)).sum(),
        ),
        (
            lambda: (EF.log_softmax(x, 1) * ec.from_numpy(gy)).sum(),
            lambda: (F.log_softmax(tx, 1) * torch.from_numpy(gy)).sum(),
        ),
        (
            lambda: (EF.elu(x, 0.7) * ec.from_numpy(gy)).sum(),
            lambda: (F.elu(tx, 0.7) * torch.from_numpy(gy)).sum(),
        ),
        (
            lambda: (EF.hardtanh(x, -0.3, 0.4) * ec.from_numpy(gy)).sum(),
            lambda: (F.hardtanh(tx, -0.3, 0.4) * torch.from_numpy(gy)).sum(),
        ),
        (
            lambda: EF.binary_cross_entropy_with_logits(
                x, ec.from_numpy(np.abs(gy) / 4), pos_weight=ec.ones(3) * 2
            ),
            lambda: F.binary_cross_entropy_with_logits(
                tx, torch.from_numpy(np.abs(gy) / 4), pos_weight=torch.ones(3) * 2
            ),
        ),
    ]
    for ember_loss, torch_loss in cases:
        check(ember_loss, torch_loss, [(x, tx), (w, tw), (b, tb)])

    emb, temb = _torch_pair((12, 4), 5)
    idx = np.random.default_rng(6).integers(0, 12, (3, 5))
    emb.grad = temb.grad = None
    (EF.embedding(ec.from_numpy(idx), emb, padding_idx=2) ** 2).sum().backward()
    (F.embedding(torch.from_numpy(idx), temb, padding_idx=2) ** 2).sum().backward()
    _same_grads([emb], [temb])
    emb.grad = temb.grad = None
    EF.embedding_bag(ec.from_numpy(idx), emb, mode="max").sum().backward()
    F.embedding_bag(torch.from_numpy(idx), temb, mode="max").sum().backward()
    _same_grads([emb], [temb])

    cell = [
        _torch_pair(s, 10 + i)
        for i, s in enumerate([(3, 4), (3, 5), (3, 5), (20, 4), (20, 5), (20,), (20,)])
    ]
    ours, theirs = [p[0] for p in cell], [p[1] for p in cell]
    hy, cy = ec.lstm_cell(ours[0], (ours[1], ours[2]), *ours[3:])
    thy, tcy = torch.lstm_cell(theirs[0], (theirs[1], theirs[2]), *theirs[3:])
    ((hy * hy).sum() + cy.sum()).backward()
    ((thy * thy).sum() + tcy.sum()).backward()
    _same_grads(ours, theirs)
