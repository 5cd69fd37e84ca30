"""Autograd on CUDA tensors: the same graphs as on the CPU, the same gradients,
gradients on the device of their leaves.

A small MLP (forward, cross-entropy, backward, two SGD steps) on CUDA equals the
CPU run; a table of ops (the backward kernels of the tensor core: softmax,
convolution, pooling, norms, losses, embedding, interpolation, grid_sample,
padding, RNN cells, CTC, indexing, dropout with Philox's shared masks, ...)
gives the CPU's gradients; backward of work queued on a side stream is right;
.grad accumulates on the device; autograd.grad works.
"""

import zlib

import numpy as np
import pytest

import ember_autograd as ag
import ember_core as ec

TOL = {ec.float64: (1e-9, 1e-9), ec.float32: (2e-4, 2e-4)}


def _rng(*parts):
    return np.random.default_rng(zlib.crc32("/".join(map(str, parts)).encode()))


def _np(t):
    return np.array(t.detach().cpu().numpy(), copy=True)


def _close(got, want, dtype, what):
    rtol, atol = TOL[dtype]
    np.testing.assert_allclose(_np(got), _np(want), rtol=rtol, atol=atol, err_msg=what)


class MLP:
    def __init__(self, device, dtype, rng_seed=0):
        rng = np.random.default_rng(rng_seed)
        shapes = [(20, 32), (32,), (32, 16), (16,), (16, 5), (5,)]
        self.params = [
            ec.tensor(rng.normal(0, 0.3, s), dtype=dtype, device=device, requires_grad=True)
            for s in shapes
        ]

    def __call__(self, x):
        w1, b1, w2, b2, w3, b3 = self.params
        h = ec.relu(x @ w1 + b1)
        h = ec.tanh(h @ w2 + b2)
        return h @ w3 + b3

    def sgd(self, lr):
        with ag.no_grad():
            for p in self.params:
                p.sub_(p.grad * lr)
                p.grad = None


@pytest.mark.cuda
@pytest.mark.parametrize("dtype", [ec.float32, ec.float64], ids=str)
def test_mlp_forward_backward_and_sgd_match_the_cpu(dtype):
    rng = np.random.default_rng(1)
    xs = rng.normal(0, 1, (64, 20))
    ys = rng.integers(0, 5, 64)
    runs = {}
    for dev in ("cpu", "cuda"):
        model = MLP(dev, dtype)
        x = ec.tensor(xs, dtype=dtype, device=dev)
        y = ec.tensor(ys, device=dev)
        losses, grads = [], []
        for _ in range(2):
            loss = ec.cross_entropy(model(x), y)
            loss.backward()
            for p in model.params:
                assert p.grad is not None and p.grad.device.type == dev, dev
                assert p.grad.dtype == dtype
            grads.append([p.grad.clone() for p in model.params])
            losses.append(loss.detach())
            model.sgd(0.1)
        runs[dev] = (losses, grads, model.params)
    (lc, gc, pc), (lg, gg, pg) = runs["cpu"], runs["cuda"]
    for step in range(2):
        assert lg[step].is_cuda
        _close(lg[step], lc[step], dtype, f"loss at step {step}")
        for i, (a, b) in enumerate(zip(gg[step], gc[step])):
            _close(a, b, dtype, f"grad of param {i} at step {step}")
    for i, (a, b) in enumerate(zip(pg, pc)):
        assert a.is_cuda and a.requires_grad and a.is_leaf
        _close(a, b, dtype, f"param {i} after two SGD steps")


def _leaf(vals, dtype, device):
    return ec.tensor(vals, dtype=dtype, device=device, requires_grad=True)


def _idx(vals, device):
    return ec.tensor(np.asarray(vals, dtype=np.int64), device=device)


def grad_cases():
    """(label, fn(*leaves, device), shapes of the leaves [, low, high])"""
    return [
        (
            "sum mean prod",
            lambda x, d: x.sum() + x.mean(1).sum() + (x * 0.1 + 1).prod(0).sum(),
            [(4, 6)],
        ),
        ("max amax", lambda x, d: x.max(1)[0].sum() + x.amax(0).sum(), [(4, 6)]),
        ("var std norm", lambda x, d: x.var(1).sum() + x.std() + x.norm(), [(4, 6)]),
        (
            "logsumexp cumsum cumprod",
            lambda x, d: x.logsumexp(1).sum() + x.cumsum(0).sum() + (x * 0.1 + 1).cumprod(1).sum(),
            [(4, 6)],
        ),
        (
            "softmax log_softmax",
            lambda x, d: (
                (ec.softmax(x, 1) * ec.arange(6, device=d)).sum() + ec.log_softmax(x, 0)[1].sum()
            ),
            [(4, 6)],
        ),
        (
            "activations",
            lambda x, d: (
                ec.gelu(x)
                + ec.silu(x)
                + ec.elu(x)
                + ec.leaky_relu(x, 0.1)
                + ec.hardtanh(x)
                + ec.sigmoid(x)
                + ec.softplus(x)
                + ec.mish(x)
                + ec.hardswish(x)
            ).sum(),
            [(5, 7)],
        ),
        (
            "elementwise",
            lambda x, y, d: (
                x * y
                + x.exp()
                - y.sin()
                + x / (y.abs() + 1)
                + ec.maximum(x, y)
                + ec.where(x > 0, x, y)
            ).sum(),
            [(5, 7), (5, 7)],
        ),
        (
            "matmul bmm",
            lambda a, b, d: (a @ b).sum() + ec.bmm(a.unsqueeze(0), b.unsqueeze(0)).pow(2).sum(),
            [(5, 7), (7, 3)],
        ),
        (
            "conv2d",
            lambda x, w, b, d: ec.conv2d(x, w, b, stride=2, padding=1).pow(2).sum(),
            [(2, 3, 9, 10), (4, 3, 3, 3), (4,)],
        ),
        (
            "conv_transpose2d",
            lambda x, w, d: ec.conv_transpose2d(x, w, stride=2).pow(2).sum(),
            [(2, 3, 5, 6), (3, 2, 3, 3)],
        ),
        (
            "max_pool2d avg_pool2d",
            lambda x, d: ec.max_pool2d(x, 3, 2, 1).sum() + ec.avg_pool2d(x, 2).pow(2).sum(),
            [(2, 3, 9, 10)],
        ),
        (
            "adaptive pools",
            lambda x, d: (
                ec.adaptive_avg_pool2d(x, (4, 3)).pow(2).sum()
                + ec.adaptive_max_pool2d(x, 3)[0].sum()
            ),
            [(2, 3, 9, 10)],
        ),
        (
            "batch_norm",
            lambda x, w, b, d: (
                ec.batch_norm(x, w, b, None, None, True, 0.1, 1e-5)
                .pow(2)
                .mul(ec.arange(10, device=d))
                .sum()
            ),
            [(4, 3, 5, 10), (3,), (3,)],
        ),
        (
            "layer_norm",
            lambda x, w, b, d: ec.layer_norm(x, (10,), w, b).pow(3).sum(),
            [(4, 3, 10), (10,), (10,)],
        ),
        (
            "group_norm",
            lambda x, w, b, d: ec.group_norm(x, 2, w, b).pow(3).sum(),
            [(4, 6, 5), (6,), (6,)],
        ),
        ("rms_norm", lambda x, w, d: ec.rms_norm(x, (10,), w).pow(3).sum(), [(4, 10), (10,)]),
        (
            "embedding",
            lambda w, d: ec.embedding(w, _idx([[1, 5, 5], [0, 19, 1]], d)).pow(2).sum(),
            [(20, 8)],
        ),
        (
            "embedding_bag",
            lambda w, d: (
                ec.embedding_bag(w, _idx([1, 5, 19, 0, 7, 7], d), _idx([0, 2, 2], d), mode=1)[0]
                .pow(2)
                .sum()
            ),
            [(20, 8)],
        ),
        (
            "cross_entropy nll",
            lambda x, d: (
                ec.cross_entropy(x, _idx([0, 4, 1, 1, 3, 2], d), label_smoothing=0.1)
                + ec.nll_loss(ec.log_softmax(x, 1), _idx([1, 1, 1, 0, 0, 0], d))
                + ec.cross_entropy(x * 2, _idx([4, 4, 0, 1, 2, 3], d))
            ),
            [(6, 5)],
        ),
        (
            "mse bce",
            lambda x, t, d: (
                ec.mse_loss(x, t) + ec.binary_cross_entropy_with_logits(x, ec.sigmoid(t))
            ),
            [(6, 5), (6, 5)],
        ),
        (
            "interpolate",
            lambda x, d: (
                ec.interpolate(x, size=(5, 13), mode="bilinear").pow(2).sum()
                + ec.interpolate(x, scale_factor=2).pow(2).sum()
                + ec.interpolate(x, size=(4, 4), mode="bicubic", align_corners=True).pow(2).sum()
            ),
            [(2, 3, 9, 10)],
        ),
        (
            "grid_sample",
            lambda x, g, d: ec.grid_sample(x, g * 0.9, align_corners=False).pow(2).sum(),
            [(2, 3, 9, 10), (2, 4, 5, 2)],
        ),
        (
            "grid_sample bicubic reflection, 3-D border",
            lambda x, g, v, h, d: (
                ec.grid_sample(x, g * 1.1, "bicubic", "reflection", True).pow(2).sum()
                + ec.grid_sample(v, h, "bilinear", "border", False).pow(2).sum()
            ),
            [(1, 2, 5, 6), (1, 3, 4, 2), (1, 2, 3, 4, 5), (1, 2, 2, 3, 3)],
        ),
        (
            "affine_grid into grid_sample",
            lambda th, x, d: (
                ec.grid_sample(
                    x, ec.affine_grid_generator(th, (2, 3, 4, 5), False), align_corners=False
                )
                .pow(2)
                .sum()
            ),
            [(2, 2, 3), (2, 3, 6, 7)],
        ),
        (
            "max_unpool fractional_max_pool",
            lambda x, y, z, d: (
                ec.max_unpool2d(*ec.max_pool2d(x, 2, return_indices=True), 2).pow(2).sum()
                + ec.max_unpool1d(*ec.max_pool1d(y, 2, return_indices=True), 2).pow(2).sum()
                + ec.max_unpool3d(*ec.max_pool3d(z, 2, return_indices=True), 2).pow(2).sum()
                + ec.fractional_max_pool2d(
                    x, 2, output_size=3, _random_samples=ec.full((2, 3, 2), 0.4, device=d)
                )
                .pow(2)
                .sum()
                + ec.fractional_max_pool3d(
                    z, 2, output_size=2, _random_samples=ec.full((1, 2, 3), 0.6, device=d)
                )
                .pow(2)
                .sum()
            ),
            [(2, 3, 6, 6), (2, 3, 8), (1, 2, 4, 4, 4)],
        ),
        (
            "pad modes",
            lambda x, d: (
                ec.pad(x, (2, 1, 1, 2), mode="reflect").pow(2).sum()
                + ec.pad(x, (1, 1, 1, 1), mode="replicate").pow(2).sum()
                + ec.pad(x, (1, 2, 2, 1), mode="circular").pow(2).sum()
            ),
            [(2, 3, 9, 10)],
        ),
        (
            "lstm gru cells",
            lambda x, h, c, wi, wh, gi, gh, d: (
                sum(t.pow(2).sum() for t in ec.lstm_cell(x, (h, c), wi, wh))
                + ec.gru_cell(x, h, gi, gh).pow(2).sum()
            ),
            [(4, 5), (4, 6), (4, 6), (24, 5), (24, 6), (18, 5), (18, 6)],
        ),
        (
            "ctc_loss",
            lambda lp, d: ec.ctc_loss(
                ec.log_softmax(lp, 2), _idx([[1, 2, 2, 3], [4, 5, 1, 0]], d), [12, 10], [4, 3]
            ),
            [(12, 2, 6)],
        ),
        (
            "indexing",
            lambda x, d: (
                x[_idx([0, 2, 2], d)].pow(2).sum()
                + x[x > 0].sum()
                + x[:, 1::2].sum()
                + ec.gather(x, 1, _idx([[0, 1], [2, 2], [5, 0], [1, 1]], d)).sum()
                + ec.index_select(x, 0, _idx([3, 3, 1], d)).pow(2).sum()
            ),
            [(4, 6)],
        ),
        (
            "scatter masked",
            lambda x, s, d: (
                ec.scatter_add(x, 1, _idx([[0, 0], [1, 5], [2, 2], [3, 4]], d), s).pow(2).sum()
                + ec.masked_fill(x, x > 0.5, 0.0).pow(2).sum()
            ),
            [(4, 6), (4, 2)],
        ),
        (
            "sort topk",
            lambda x, d: (
                ec.sort(x, 1)[0].mul(ec.arange(6, device=d)).sum()
                + ec.topk(x, 2, 0)[0].pow(2).sum()
            ),
            [(4, 6)],
        ),
        (
            "sdpa",
            lambda q, k, v, d: (
                ec.scaled_dot_product_attention(q, k, v, is_causal=True).pow(2).sum()
            ),
            [(2, 2, 5, 4), (2, 2, 5, 4), (2, 2, 5, 4)],
        ),
        (
            "sdpa masks, permuted heads (fused in float32)",
            lambda q, k, v, d: (
                ec.scaled_dot_product_attention(
                    q.permute(0, 2, 1, 3),
                    k.permute(0, 2, 1, 3),
                    v.permute(0, 2, 1, 3),
                    attn_mask=ec.ones((6, 7), dtype=ec.bool, device=d).tril(1),
                )
                .pow(2)
                .sum()
                + ec.scaled_dot_product_attention(
                    q.permute(0, 2, 1, 3),
                    k.permute(0, 2, 1, 3),
                    v.permute(0, 2, 1, 3),
                    attn_mask=ec.arange(42, dtype=q.dtype, device=d).reshape(6, 7) * 0.05,
                )
                .pow(2)
                .sum()
            ),
            [(2, 6, 3, 4), (2, 7, 3, 4), (2, 7, 3, 5)],
        ),
        (
            "cat stack split",
            lambda a, b, d: (
                ec.cat([a, b], 0).pow(2).sum()
                + ec.stack([a, b]).sum()
                + sum(t.pow(3).sum() for t in ec.split(a, 2, 1))
            ),
            [(3, 4), (3, 4)],
        ),
    ]


@pytest.mark.cuda
@pytest.mark.parametrize("dtype", [ec.float64, ec.float32], ids=str)
@pytest.mark.parametrize("case", grad_cases(), ids=lambda c: c[0])
def test_gradients_match_the_cpu(case, dtype):
    label, fn, shapes = case
    rng = _rng(label, dtype)
    vals = [rng.uniform(-1, 1, s) for s in shapes]
    res = {}
    for dev in ("cpu", "cuda"):
        leaves = [_leaf(v, dtype, dev) for v in vals]
        out = fn(*leaves, dev)
        out.backward()
        res[dev] = (out.detach(), [leaf.grad for leaf in leaves])
    (oc, gc), (og, gg) = res["cpu"], res["cuda"]
    assert og.is_cuda
    _close(og, oc, dtype, f"{label}: value")
    for i, (a, b) in enumerate(zip(gg, gc)):
        assert a is not None and a.is_cuda, f"{label}: grad {i} missing or not on CUDA"
        _close(a, b, dtype, f"{label}: grad of input {i}")


@pytest.mark.cuda
def test_dropout_backward_uses_the_forward_mask():
    """Philox gives the CPU's masks on CUDA, so dropout's gradients agree too."""
    vals = np.random.default_rng(2).normal(size=(64, 33))
    grads = {}
    for dev in ("cpu", "cuda"):
        ec.manual_seed(5)
        x = _leaf(vals, ec.float32, dev)
        y = ec.dropout(x, 0.3, True)
        (y * y).sum().backward()
        grads[dev] = x.grad
    _close(grads["cuda"], grads["cpu"], ec.float32, "dropout grad")


@pytest.mark.cuda
def test_backward_of_work_on_a_side_stream():
    s = ec.cuda.Stream()
    vals = np.random.default_rng(3).normal(size=(512, 512))
    x = _leaf(vals, ec.float32, "cuda")
    s.wait_stream(ec.cuda.current_stream())
    with ec.cuda.stream(s):
        y = (x @ x).tanh().sum()
        y.backward()
    s.synchronize()
    xc = _leaf(vals, ec.float32, "cpu")
    (xc @ xc).tanh().sum().backward()
    _close(x.grad, xc.grad, ec.float32, "grad computed on a side stream")
    # backward called outside the stream context: the engine uses the forward's stream
    x.grad = None
    with ec.cuda.stream(s):
        y2 = (x * 3).exp().sum()
    y2.backward()
    ec.cuda.synchronize()
    np.testing.assert_allclose(_np(x.grad), 3 * np.exp(3 * vals), rtol=1e-5)


@pytest.mark.cuda
def test_grad_accumulates_on_the_device_and_autograd_grad():
    x = ec.ones(3, device="cuda", requires_grad=True)
    (x * 2).sum().backward()
    (x * 3).sum().backward()
    assert x.grad.is_cuda and x.grad.tolist() == [5.0, 5.0, 5.0]
    y = ec.arange(4, device="cuda", dtype=ec.float64).requires_grad_()
    (g,) = ag.grad((y**2).sum(), [y])
    assert g.is_cuda and g.tolist() == [0.0, 2.0, 4.0, 6.0]
    with ag.no_grad():
        z = y * 2
    assert not z.requires_grad and z.is_cuda


@pytest.mark.cuda
def test_mixed_devices_in_a_graph_raise():
    x = ec.ones(3, device="cuda", requires_grad=True)
    c = ec.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="device"):
        (x * c).sum()
    # .to() is differentiable: the gradient goes back to the CPU leaf
    (x * c.to("cuda")).sum().backward()
    assert c.grad.device.type == "cpu" and x.grad.is_cuda
    assert c.grad.tolist() == [1.0, 1.0, 1.0]


@pytest.mark.cuda
def test_fused_attention_double_backward():
    """create_graph through the fused attention writes its gradient with
    differentiable ops (Note [Fused backward, composite double backward])."""
    rng = np.random.default_rng(7)
    vals = [rng.uniform(-1, 1, s) for s in ((2, 5, 4), (2, 6, 4), (2, 6, 3))]
    res = {}
    for dev in ("cpu", "cuda"):
        q, k, v = (_leaf(a, ec.float32, dev) for a in vals)
        out = ec.scaled_dot_product_attention(q, k, v, is_causal=True)
        grads = ag.grad(out.pow(2).sum(), [q, k, v], create_graph=True)
        sum(g.pow(2).sum() for g in grads).backward()
        res[dev] = [_np(g) for g in grads] + [_np(x.grad) for x in (q, k, v)]
    for i, (a, b) in enumerate(zip(res["cuda"], res["cpu"])):
        np.testing.assert_allclose(a, b, rtol=2e-4, atol=2e-5, err_msg=f"item {i}")


@pytest.mark.cuda
def test_fused_attention_forward_mode():
    """jvp through scaled_dot_product_attention where CUDA runs the fused kernel,
    against central differences of the CPU's float64 result."""
    from ember_autograd import forward_ad as fwAD

    rng = np.random.default_rng(8)
    shapes = ((2, 5, 4), (2, 6, 4), (2, 6, 3))
    vals = [rng.uniform(-1, 1, s) for s in shapes]
    tans = [rng.uniform(-1, 1, s) for s in shapes]
    mask = rng.random((5, 6)) < 0.7

    def f(xs, dev="cpu", dtype=ec.float64):
        q, k, v = (ec.tensor(a, dtype=dtype, device=dev) for a in xs)
        m = ec.tensor(mask, device=dev)
        return ec.scaled_dot_product_attention(q, k, v, attn_mask=m)

    h = 1e-6
    plus = f([a + h * t for a, t in zip(vals, tans)]).numpy()
    minus = f([a - h * t for a, t in zip(vals, tans)]).numpy()
    want = (plus - minus) / (2 * h)
    with fwAD.dual_level():
        q, k, v = (
            fwAD.make_dual(
                ec.tensor(a, dtype=ec.float32, device="cuda"),
                ec.tensor(t, dtype=ec.float32, device="cuda"),
            )
            for a, t in zip(vals, tans)
        )
        out = ec.scaled_dot_product_attention(q, k, v, attn_mask=ec.tensor(mask, device="cuda"))
        got = _np(fwAD.unpack_dual(out).tangent)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


# The tensor core's backward kernels that the table above exercises (tensor-core's
# test_cuda_coverage.py counts them as covered by this file).  Runs on the CPU.
BACKWARD_KERNELS = {
    "_activation_backward",
    "_adaptive_avg_pool_backward",
    "_avg_pool_backward",
    "_ctc_loss_backward",
    "_embedding_bag_backward",
    "_embedding_dense_backward",
    "_fused_cross_entropy_backward",
    "_fused_rms_norm_backward",
    "_getitem_backward",
    "_grid_sampler_backward",
    "_gru_cell_backward",
    "_log_softmax_backward_data",
    "_lstm_cell_backward",
    "_max_pool_backward",
    "_native_batch_norm_backward",
    "_native_dropout_backward",
    "_native_group_norm_backward",
    "_native_layer_norm_backward",
    "_nll_loss_backward",
    "_pad_mode_backward",
    "_softmax_backward_data",
    "_upsample_bicubic_backward",
    "_upsample_linear_backward",
    "_upsample_nearest_backward",
    "convolution_backward",
}


def test_the_gradient_table_exercises_the_backward_kernels():
    from ember_core._base import dispatch as _dispatch

    seen = set()

    def record(op, args, kwargs, call):
        seen.add(op.name)
        return call(args, kwargs)

    _dispatch.register_handler(record)
    try:
        for label, fn, shapes in grad_cases():
            rng = _rng(label, "trace")
            leaves = [_leaf(rng.uniform(-1, 1, s), ec.float64, "cpu") for s in shapes]
            fn(*leaves, "cpu").backward()
        ec.manual_seed(0)
        x = _leaf(np.ones((4, 4)), ec.float32, "cpu")
        ec.dropout(x, 0.3, True).sum().backward()
    finally:
        _dispatch.remove_handler(record)
    missing = sorted(BACKWARD_KERNELS - seen)
    assert not missing, f"backward kernels the CUDA gradient table does not reach: {missing}"
