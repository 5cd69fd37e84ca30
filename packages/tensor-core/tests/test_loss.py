"""Losses against NumPy references (and PyTorch with -m parity)."""

import numpy as np
import pytest

import ember_core as ec

rng = np.random.default_rng(0)


def T(a):
    return ec.from_numpy(np.ascontiguousarray(a))


def reduce(loss, reduction, denom=None):
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    return loss.sum() / (loss.size if denom is None else denom)


def np_log_softmax(x, axis):
    m = x.max(axis=axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=axis, keepdims=True))


def np_nll(logp, target, weight=None, ignore_index=-100, reduction="mean"):
    """logp (N, C, *) and target (N, *): PyTorch's nll_loss."""
    c = logp.shape[1]
    w = np.ones(c) if weight is None else weight
    lp = np.moveaxis(logp, 1, -1).reshape(-1, c)
    t = target.reshape(-1)
    keep = t != ignore_index
    tt = np.where(keep, t, 0)
    wt = np.where(keep, w[tt], 0.0)
    loss = -lp[np.arange(len(t)), tt] * wt
    if reduction == "none":
        return loss.reshape(target.shape)
    if reduction == "sum":
        return loss.sum()
    return loss.sum() / wt.sum()


def np_cross_entropy(x, target, weight=None, ignore_index=-100, reduction="mean", smoothing=0.0):
    logp = np_log_softmax(x.astype(np.float64), 1)
    c = x.shape[1]
    w = np.ones(c) if weight is None else weight
    wshape = (1, c) + (1,) * (x.ndim - 2)
    if target.dtype.kind == "f":  # probabilities
        t = target * (1 - smoothing) + smoothing / c
        prod = logp * t * w.reshape(wshape)
        if reduction == "none":
            return -prod.sum(1)
        if reduction == "sum":
            return -prod.sum()
        return -prod.sum() / (x.size / c)
    nll = np_nll(logp, target, weight, ignore_index, reduction)
    if smoothing == 0:
        return nll
    ignore = target == ignore_index
    smooth = np.where(ignore, 0.0, -(logp * w.reshape(wshape)).sum(1))
    if reduction == "none":
        ret = smooth
    elif reduction == "sum":
        ret = smooth.sum()
    else:
        ret = smooth.sum() / np.where(ignore, 0.0, w[np.where(ignore, 0, target)]).sum()
    return (1 - smoothing) * nll + ret * smoothing / c


# -------------------------------------------------------------- nll / CE


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("shape", [(6, 5), (3, 4, 7), (2, 3, 4, 5)])
def test_nll_loss(reduction, weighted, shape):
    logp = rng.standard_normal(shape)
    target = rng.integers(0, shape[1], (shape[0],) + shape[2:])
    target.reshape(-1)[::3] = -100
    w = rng.random(shape[1]) if weighted else None
    got = ec.nll_loss(T(logp), T(target), None if w is None else T(w), -100, reduction)
    np.testing.assert_allclose(got.numpy(), np_nll(logp, target, w, -100, reduction), rtol=1e-12)


def test_nll_loss_unbatched_and_empty():
    logp = rng.standard_normal(5)
    assert ec.nll_loss(T(logp), ec.tensor(3)).item() == pytest.approx(-logp[3])
    assert np.isnan(ec.nll_loss(ec.zeros(0, 5), ec.zeros(0, dtype=ec.int64)).item())
    assert ec.nll_loss(ec.zeros(0, 5), ec.zeros(0, dtype=ec.int64), reduction="sum").item() == 0
    all_ignored = ec.nll_loss(ec.zeros(2, 5), ec.tensor([-100, -100]))
    assert np.isnan(all_ignored.item())


def test_nll_loss_backward_op():
    logp, g = rng.standard_normal((4, 3)), rng.standard_normal(4)
    t, w = np.array([0, 2, -1, 1]), rng.random(3)
    got = ec._nll_loss_backward(T(g), T(logp), T(t), T(w), "none", -1).numpy()
    ref = np.zeros((4, 3))
    for i, c in enumerate(t):
        if c != -1:
            ref[i, c] = -w[c] * g[i]
    np.testing.assert_allclose(got, ref)
    mean = ec._nll_loss_backward(
        ec.tensor(2.0, dtype=ec.float64), T(logp), T(t), T(w), "mean", -1
    ).numpy()
    tw = w[[0, 2, 1]].sum()
    np.testing.assert_allclose(mean[1, 2], -2.0 * w[2] / tw)


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("smoothing", [0.0, 0.1])
@pytest.mark.parametrize("weighted", [False, True])
def test_cross_entropy_indices(reduction, smoothing, weighted):
    x = rng.standard_normal((5, 6, 3)).astype(np.float32) * 3
    target = rng.integers(0, 6, (5, 3))
    target[1, 2] = target[4, 0] = -100
    w = rng.random(6).astype(np.float32) if weighted else None
    got = ec.cross_entropy(T(x), T(target), None if w is None else T(w), -100, reduction, smoothing)
    ref = np_cross_entropy(
        x, target, None if w is None else w.astype(np.float64), -100, reduction, smoothing
    )
    np.testing.assert_allclose(got.numpy(), ref, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fused_cross_entropy_of_2d_logits(reduction, weighted, dtype):
    # (N, C) logits with class indices take the fused kernel (no log-probabilities written)
    x = (rng.standard_normal((9, 13)) * 4).astype(dtype)
    target = rng.integers(0, 13, 9)
    target[[2, 7]] = -1
    w = rng.random(13).astype(dtype) if weighted else None
    got = ec.cross_entropy(T(x), T(target), None if w is None else T(w), -1, reduction)
    ref = np_cross_entropy(
        x.astype(np.float64), target, None if w is None else w.astype(np.float64), -1, reduction
    )
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got.numpy(), ref, rtol=tol, atol=tol)
    loss, lse = ec._fused_cross_entropy(T(x), T(target), None if w is None else T(w), -1, reduction)
    np.testing.assert_allclose(lse.numpy(), np.log(np.exp(x.astype(np.float64)).sum(1)), rtol=tol)
    g = rng.standard_normal(9).astype(dtype) if reduction == "none" else np.array(1.5, dtype)
    gi = ec._fused_cross_entropy_backward(
        T(g), T(x), T(target), None if w is None else T(w), -1, reduction, lse
    ).numpy()
    p = np.exp(np_log_softmax(x.astype(np.float64), 1))
    wt = np.where(target == -1, 0.0, (np.ones(13) if w is None else w.astype(np.float64))[target])
    coef = (g if reduction == "none" else np.full(9, float(g))) * wt
    if reduction == "mean":
        coef = coef / wt.sum()
    ref_g = coef[:, None] * (p - np.eye(13)[np.where(target == -1, 0, target)])
    np.testing.assert_allclose(gi, ref_g, rtol=tol * 10, atol=tol)


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("smoothing", [0.0, 0.25])
def test_cross_entropy_probabilities(reduction, smoothing):
    x = rng.standard_normal((4, 5))
    p = np.exp(np_log_softmax(rng.standard_normal((4, 5)), 1))
    w = rng.random(5)
    got = ec.cross_entropy(T(x), T(p), T(w), -100, reduction, smoothing)
    np.testing.assert_allclose(
        got.numpy(), np_cross_entropy(x, p, w, -100, reduction, smoothing), rtol=1e-12
    )


def test_cross_entropy_unbatched_custom_ignore_and_int_reduction():
    x = rng.standard_normal(7)
    got = ec.cross_entropy(T(x), ec.tensor(2))
    assert got.item() == pytest.approx(-np_log_softmax(x, 0)[2])
    x2 = rng.standard_normal((3, 4))
    t = np.array([1, 3, 0])
    got = ec.cross_entropy(T(x2), T(t), ignore_index=3, reduction=2)  # PyTorch's enum: sum
    np.testing.assert_allclose(got.item(), np_cross_entropy(x2, t, None, 3, "sum"))


def test_nll_and_cross_entropy_errors():
    x = ec.randn(3, 5)
    with pytest.raises(IndexError, match="Target 5 is out of bounds"):
        ec.cross_entropy(x, ec.tensor([1, 2, 5]))
    with pytest.raises(IndexError, match="Target -1 is out of bounds"):
        ec.nll_loss(x, ec.tensor([1, 2, -1]))
    with pytest.raises(RuntimeError, match="Long or Byte, but got Int"):
        ec.nll_loss(x, ec.tensor([1, 2, 3], dtype=ec.int32))
    with pytest.raises(
        ValueError, match=r"input batch_size \(3\) to match target batch_size \(4\)"
    ):
        ec.nll_loss(x, ec.tensor([1, 2, 3, 4]))
    with pytest.raises(RuntimeError, match=r"Expected target size \[2, 4\], got \[2, 5\]"):
        ec.nll_loss(ec.randn(2, 3, 4), ec.zeros(2, 5, dtype=ec.int64))
    with pytest.raises(
        RuntimeError, match=r"all 5 classes or no classes but got weight tensor of shape: \[4\]"
    ):
        ec.nll_loss(x, ec.tensor([1, 2, 3]), ec.ones(4))
    with pytest.raises(RuntimeError, match="label_smoothing must be between 0.0 and 1.0"):
        ec.cross_entropy(x, ec.tensor([1, 2, 3]), label_smoothing=1.5)
    with pytest.raises(ValueError, match="not a valid value for reduction"):
        ec.nll_loss(x, ec.tensor([1, 2, 3]), reduction="avg")


# -------------------------------------------------------------- binary


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_binary_cross_entropy(reduction):
    x = rng.random((4, 5)) * 0.98 + 0.01
    x[0, 0], x[0, 1] = 0.0, 1.0  # PyTorch clamps the logs at -100
    t = rng.random((4, 5))
    w = rng.random(5)
    log_x = np.maximum(np.log(np.where(x > 0, x, 1e-300)), -100)
    log_x[0, 0] = -100
    log_1mx = np.maximum(np.log(np.where(x < 1, 1 - x, 1e-300)), -100)
    log_1mx[0, 1] = -100
    loss = -(t * log_x + (1 - t) * log_1mx) * w
    got = ec.binary_cross_entropy(T(x), T(t), T(w), reduction)
    np.testing.assert_allclose(got.numpy(), reduce(loss, reduction), rtol=1e-12)


def test_binary_cross_entropy_errors():
    with pytest.raises(RuntimeError, match="between 0 and 1"):
        ec.binary_cross_entropy(ec.tensor([0.5, 1.5]), ec.tensor([1.0, 0.0]))
    with pytest.raises(RuntimeError, match="between 0 and 1"):
        ec.binary_cross_entropy(ec.tensor([0.5, float("nan")]), ec.tensor([1.0, 0.0]))
    with pytest.raises(ValueError, match="target size"):
        ec.binary_cross_entropy(ec.tensor([0.5, 0.5]), ec.tensor([1.0]))


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("pos_weighted", [False, True])
def test_binary_cross_entropy_with_logits(reduction, pos_weighted):
    x = rng.standard_normal((4, 3)) * 30  # large logits: the stable formula matters
    t = rng.random((4, 3))
    w, pw = rng.random(3), rng.random(3) + 0.5
    log_sig = np.minimum(x, 0) - np.log1p(np.exp(-np.abs(x)))  # log(sigmoid(x)), stably
    log_1msig = -x + log_sig
    p = pw if pos_weighted else 1.0
    loss = -(p * t * log_sig + (1 - t) * log_1msig) * w
    got = ec.binary_cross_entropy_with_logits(
        T(x), T(t), T(w), T(pw) if pos_weighted else None, reduction
    )
    np.testing.assert_allclose(got.numpy(), reduce(loss, reduction), rtol=1e-10)


# ------------------------------------------------------------ pointwise


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_pointwise_losses(reduction):
    x, y = rng.standard_normal((5, 4)) * 2, rng.standard_normal((5, 4)) * 2
    d = np.abs(x - y)
    cases = [
        (ec.mse_loss(T(x), T(y), reduction), (x - y) ** 2),
        (ec.l1_loss(T(x), T(y), reduction), d),
        (
            ec.smooth_l1_loss(T(x), T(y), reduction, 0.7),
            np.where(d < 0.7, 0.5 * d * d / 0.7, d - 0.35),
        ),
        (ec.smooth_l1_loss(T(x), T(y), reduction, 0.0), d),
        (
            ec.huber_loss(T(x), T(y), reduction, 1.3),
            np.where(d < 1.3, 0.5 * d * d, 1.3 * (d - 0.65)),
        ),
    ]
    for got, loss in cases:
        np.testing.assert_allclose(got.numpy(), reduce(loss, reduction), rtol=1e-12)


def test_pointwise_losses_float32_non_contiguous_and_errors():
    x = rng.standard_normal((4, 6)).astype(np.float32)
    y = rng.standard_normal((6, 4)).astype(np.float32)
    got = ec.mse_loss(T(x), T(y).T)
    np.testing.assert_allclose(got.item(), ((x - y.T) ** 2).mean(), rtol=1e-5)
    with pytest.raises(NotImplementedError, match="Long"):
        ec.mse_loss(ec.tensor([1]), ec.tensor([2]))
    with pytest.raises(RuntimeError, match="negative values for beta"):
        ec.smooth_l1_loss(ec.ones(2), ec.ones(2), beta=-1.0)


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("log_target", [False, True])
def test_kl_div(reduction, log_target):
    x = np_log_softmax(rng.standard_normal((3, 5)), 1)
    t = np.exp(np_log_softmax(rng.standard_normal((3, 5)), 1))
    t[0, 0] = 0.0  # 0 * log 0 counts as 0
    if log_target:
        tt = np.log(np.where(t > 0, t, 1e-300))
        loss = np.exp(tt) * (tt - x)
        got = ec.kl_div(T(x), T(tt), reduction, True)
    else:
        loss = np.where(t > 0, t * np.log(np.where(t > 0, t, 1.0)), 0.0) - t * x
        got = ec.kl_div(T(x), T(t), reduction, False)
    np.testing.assert_allclose(got.numpy(), reduce(loss, reduction), rtol=1e-10, atol=1e-300)


@pytest.mark.parity
def test_parity_with_torch():
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    x = rng.standard_normal((6, 5, 2)).astype(np.float32)
    t = rng.integers(0, 5, (6, 2))
    t[0, 0] = -100
    w = rng.random(5).astype(np.float32)
    tx, tt, tw = torch.from_numpy(x), torch.from_numpy(t), torch.from_numpy(w)
    for red in ("none", "mean", "sum"):
        for ls in (0.0, 0.2):
            np.testing.assert_allclose(
                ec.cross_entropy(T(x), T(t), T(w), -100, red, ls).numpy(),
                F.cross_entropy(tx, tt, tw, reduction=red, label_smoothing=ls).numpy(),
                rtol=1e-5,
                atol=1e-6,
            )
        p = rng.random((6, 5)).astype(np.float32)
        np.testing.assert_allclose(
            ec.binary_cross_entropy(T(p), T(p[::-1]), None, red).numpy(),
            F.binary_cross_entropy(
                torch.from_numpy(p), torch.from_numpy(p[::-1].copy()), reduction=red
            ).numpy(),
            rtol=1e-5,
        )
        lg = x[:, :, 0] * 10
        np.testing.assert_allclose(
            ec.binary_cross_entropy_with_logits(T(lg), T(p), None, T(w), red).numpy(),
            F.binary_cross_entropy_with_logits(
                torch.from_numpy(lg), torch.from_numpy(p), pos_weight=tw, reduction=red
            ).numpy(),
            rtol=1e-5,
            atol=1e-6,
        )
        a, b = T(x), T(x[::-1].copy())
        ta, tb = torch.from_numpy(x), torch.from_numpy(x[::-1].copy())
        for ours, theirs in [
            (ec.mse_loss(a, b, red), F.mse_loss(ta, tb, reduction=red)),
            (ec.l1_loss(a, b, red), F.l1_loss(ta, tb, reduction=red)),
            (ec.smooth_l1_loss(a, b, red, 0.5), F.smooth_l1_loss(ta, tb, reduction=red, beta=0.5)),
            (ec.huber_loss(a, b, red, 0.5), F.huber_loss(ta, tb, reduction=red, delta=0.5)),
            (ec.kl_div(a, b, red, True), F.kl_div(ta, tb, reduction=red, log_target=True)),
        ]:
            np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-5, atol=1e-6)
