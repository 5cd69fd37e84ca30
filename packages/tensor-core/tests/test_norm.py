"""Normalization ops (layer/RMS/batch/group/instance norm and their backward
ops) against NumPy references."""

import numpy as np
import pytest

import ember_core as ec

rng = np.random.default_rng(0)


def T(a):
    return ec.from_numpy(np.ascontiguousarray(a))


def np_layer_norm(x, k, w=None, b=None, eps=1e-5, rms=False):
    axes = tuple(range(x.ndim - k, x.ndim))
    x = x.astype(np.float64)
    mu = 0.0 if rms else x.mean(axis=axes, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=axes, keepdims=True)
    y = (x - mu) / np.sqrt(var + eps)
    if w is not None:
        y = y * w
    if b is not None:
        y = y + b
    return y, np.broadcast_to(mu, var.shape), 1 / np.sqrt(var + eps)


def np_batch_norm(x, w, b, rm, rv, training, momentum, eps):
    axes = (0,) + tuple(range(2, x.ndim))
    shape = (1, -1) + (1,) * (x.ndim - 2)
    x = x.astype(np.float64)
    if training:
        mean, var = x.mean(axis=axes), x.var(axis=axes)
        n = x.size // x.shape[1]
        if rm is not None:
            rm = (1 - momentum) * rm + momentum * mean
            rv = (1 - momentum) * rv + momentum * var * n / (n - 1)
    else:
        mean, var = rm, rv
    y = (x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + eps)
    if w is not None:
        y = y * w.reshape(shape)
    if b is not None:
        y = y + b.reshape(shape)
    return y, rm, rv


def np_group_norm(x, g, w, b, eps):
    n, c = x.shape[:2]
    xg = x.reshape(n, g, -1).astype(np.float64)
    mu = xg.mean(axis=2, keepdims=True)
    var = xg.var(axis=2, keepdims=True)
    y = ((xg - mu) / np.sqrt(var + eps)).reshape(x.shape)
    shape = (1, -1) + (1,) * (x.ndim - 2)
    if w is not None:
        y = y * w.reshape(shape)
    if b is not None:
        y = y + b.reshape(shape)
    return y, mu.reshape(n, g), 1 / np.sqrt(var.reshape(n, g) + eps)


# ---------------------------------------------------------------- layer norm


@pytest.mark.parametrize("shape,k", [((4, 7), 1), ((2, 3, 8), 1), ((2, 3, 8), 2), ((5, 1000), 1)])
@pytest.mark.parametrize("affine", [False, True])
def test_layer_norm_values(shape, k, affine):
    x = (rng.standard_normal(shape) * 3 + 2).astype(np.float32)
    ns = shape[-k:]
    w = rng.standard_normal(ns).astype(np.float32) if affine else None
    b = rng.standard_normal(ns).astype(np.float32) if affine else None
    y, mean, rstd = ec.native_layer_norm(
        T(x), ns, None if w is None else T(w), None if b is None else T(b), 1e-5
    )
    ry, rmean, rrstd = np_layer_norm(x, k, w, b)
    np.testing.assert_allclose(y.numpy(), ry, rtol=1e-5, atol=1e-5)
    assert mean.shape == shape[:-k] + (1,) * k
    np.testing.assert_allclose(mean.numpy(), rmean, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(rstd.numpy(), rrstd, rtol=1e-5)
    np.testing.assert_allclose(
        ec.layer_norm(T(x), list(ns)).numpy(), np_layer_norm(x, k)[0], rtol=1e-5, atol=1e-5
    )


def test_layer_norm_large_mean_keeps_precision():
    x = (rng.standard_normal((3, 64)) + 1e4).astype(np.float32)
    np.testing.assert_allclose(
        ec.layer_norm(T(x), (64,)).numpy(), np_layer_norm(x, 1)[0], atol=2e-3
    )


def test_layer_norm_backward_op():
    x = rng.standard_normal((6, 5))
    g = rng.standard_normal((6, 5))
    w, b = rng.standard_normal(5), rng.standard_normal(5)
    _, mean, rstd = ec.native_layer_norm(T(x), (5,), T(w), T(b), 1e-5)
    gi, gw, gb = ec._native_layer_norm_backward(
        T(g), T(x), (5,), mean, rstd, T(w), T(b), (True, True, True)
    )
    xhat = (x - x.mean(1, keepdims=True)) / np.sqrt(x.var(1, keepdims=True) + 1e-5)
    h = g * w
    ref = (h - h.mean(1, keepdims=True) - xhat * (h * xhat).mean(1, keepdims=True)) / np.sqrt(
        x.var(1, keepdims=True) + 1e-5
    )
    np.testing.assert_allclose(gi.numpy(), ref, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(gw.numpy(), (g * xhat).sum(0), rtol=1e-10)
    np.testing.assert_allclose(gb.numpy(), g.sum(0), rtol=1e-10)
    gi2, gw2, gb2 = ec._native_layer_norm_backward(
        T(g), T(x), (5,), mean, rstd, T(w), T(b), (True, False, False)
    )
    assert gw2 is None and gb2 is None
    np.testing.assert_allclose(gi2.numpy(), gi.numpy())


def test_layer_norm_non_contiguous_and_dtypes():
    x = rng.standard_normal((8, 6)).astype(np.float32)
    t = T(x).T  # (6, 8) strided
    np.testing.assert_allclose(
        ec.layer_norm(t, (8,)).numpy(), np_layer_norm(x.T, 1)[0], rtol=1e-5, atol=1e-5
    )
    for dt in (ec.float16, ec.bfloat16):
        h = T(x).to(dt)
        y = ec.layer_norm(h, (6,))
        assert y.dtype is dt
        np.testing.assert_allclose(
            y.float().numpy(), np_layer_norm(h.float().numpy(), 1)[0], atol=3e-2
        )
        # float32 parameters with a half input are allowed (PyTorch's mixed case)
        assert ec.layer_norm(h, (6,), ec.ones(6), ec.zeros(6)).dtype is dt
    with pytest.raises(RuntimeError, match="mixed dtype"):
        ec.layer_norm(T(x).double(), (6,), ec.ones(6))


def test_layer_norm_errors():
    with pytest.raises(RuntimeError, match=r"normalized_shape=\[3\].*\[2, 3, 4\]"):
        ec.layer_norm(ec.ones(2, 3, 4), (3,))
    with pytest.raises(RuntimeError, match=r"weight of shape \[3\].*normalized_shape = \[4\]"):
        ec.layer_norm(ec.ones(2, 3, 4), (4,), ec.ones(3))
    with pytest.raises(RuntimeError, match="floating point"):
        ec.layer_norm(ec.ones(2, 4, dtype=ec.int64), (4,))


# ------------------------------------------------------------------ RMS norm


@pytest.mark.parametrize("eps", [None, 1e-3])
def test_rms_norm_values(eps):
    x = rng.standard_normal((3, 4, 10)).astype(np.float32)
    w = rng.standard_normal(10).astype(np.float32)
    y = ec.rms_norm(T(x), (10,), T(w), eps)
    ref = np_layer_norm(x, 1, w, eps=np.finfo(np.float32).eps if eps is None else eps, rms=True)[0]
    np.testing.assert_allclose(y.numpy(), ref, rtol=1e-5, atol=1e-6)
    out, rstd = ec._fused_rms_norm(T(x), (10,), None, eps)
    assert rstd.shape == (3, 4, 1)


def test_rms_norm_backward_op():
    x, g, w = rng.standard_normal((4, 6)), rng.standard_normal((4, 6)), rng.standard_normal(6)
    _, rstd = ec._fused_rms_norm(T(x), (6,), T(w), 1e-6)
    gi, gw = ec._fused_rms_norm_backward(T(g), T(x), (6,), rstd, T(w), (True, True))
    r = 1 / np.sqrt((x * x).mean(1, keepdims=True) + 1e-6)
    xhat, h = x * r, g * w
    np.testing.assert_allclose(
        gi.numpy(), r * (h - xhat * (h * xhat).mean(1, keepdims=True)), rtol=1e-10
    )
    np.testing.assert_allclose(gw.numpy(), (g * xhat).sum(0), rtol=1e-10)


# --------------------------------------------------------------- batch norm


@pytest.mark.parametrize("shape", [(16, 5), (4, 3, 7), (2, 3, 4, 5), (2, 2, 2, 3, 3)])
@pytest.mark.parametrize("affine", [False, True])
def test_batch_norm_training_and_running_stats(shape, affine):
    c = shape[1]
    x = (rng.standard_normal(shape) * 2 + 1).astype(np.float32)
    w = rng.standard_normal(c).astype(np.float32) if affine else None
    b = rng.standard_normal(c).astype(np.float32) if affine else None
    rm, rv = rng.standard_normal(c).astype(np.float32), rng.random(c).astype(np.float32) + 0.5
    erm, erv = T(rm.copy()), T(rv.copy())
    v0 = erm._version
    y = ec.batch_norm(
        T(x), None if w is None else T(w), None if b is None else T(b), erm, erv, True, 0.3, 1e-5
    )
    ry, rrm, rrv = np_batch_norm(
        x, w, b, rm.astype(np.float64), rv.astype(np.float64), True, 0.3, 1e-5
    )
    np.testing.assert_allclose(y.numpy(), ry, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(erm.numpy(), rrm, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(erv.numpy(), rrv, rtol=1e-5)
    assert erm._version > v0
    # evaluation uses (and does not change) the running statistics
    y2 = ec.batch_norm(
        T(x), None if w is None else T(w), None if b is None else T(b), erm, erv, False, 0.3, 1e-5
    )
    ry2 = np_batch_norm(
        x, w, b, erm.numpy().astype(np.float64), erv.numpy().astype(np.float64), False, 0.3, 1e-5
    )[0]
    np.testing.assert_allclose(y2.numpy(), ry2, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(erm.numpy(), rrm, rtol=1e-5, atol=1e-6)


def test_batch_norm_without_running_stats_and_save_stats():
    x = rng.standard_normal((6, 4, 3))
    y, mean, invstd = ec.native_batch_norm(T(x), None, None, None, None, True, 0.1, 1e-5)
    np.testing.assert_allclose(mean.numpy(), x.mean(axis=(0, 2)), rtol=1e-12)
    np.testing.assert_allclose(invstd.numpy(), 1 / np.sqrt(x.var(axis=(0, 2)) + 1e-5), rtol=1e-12)
    np.testing.assert_allclose(
        y.numpy(), np_batch_norm(x, None, None, None, None, True, 0.1, 1e-5)[0], rtol=1e-10
    )


def test_batch_norm_non_contiguous_running_stats_are_updated():
    x = rng.standard_normal((8, 3)).astype(np.float32)
    buf = ec.zeros(3, 2)
    rm, rv = buf[:, 0], ec.ones(3)
    ec.batch_norm(T(x), None, None, rm, rv, True, 1.0, 1e-5)
    np.testing.assert_allclose(buf.numpy()[:, 0], x.mean(0), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(buf.numpy()[:, 1], 0)


@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_backward_op(training):
    x, g, w = rng.standard_normal((5, 3, 4)), rng.standard_normal((5, 3, 4)), rng.standard_normal(3)
    rm, rv = T(rng.standard_normal(3)), T(rng.random(3) + 0.5)
    _, mean, invstd = ec.native_batch_norm(T(x), T(w), None, rm, rv, training, 0.1, 1e-5)
    gi, gw, gb = ec._native_batch_norm_backward(
        T(g), T(x), T(w), mean, invstd, training, (True, True, True)
    )
    axes, shape = (0, 2), (1, 3, 1)
    m, s = mean.numpy().reshape(shape), invstd.numpy().reshape(shape)
    xhat = (x - m) * s
    h = g * w.reshape(shape)
    if training:
        ref = s * (
            h - h.mean(axis=axes, keepdims=True) - xhat * (h * xhat).mean(axis=axes, keepdims=True)
        )
    else:
        ref = h * s
    np.testing.assert_allclose(gi.numpy(), ref, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(gw.numpy(), (g * xhat).sum(axis=axes), rtol=1e-10)
    np.testing.assert_allclose(gb.numpy(), g.sum(axis=axes), rtol=1e-10)


def test_batch_norm_half_input_with_float_stats():
    x = rng.standard_normal((8, 3, 2)).astype(np.float32)
    h = T(x).to(ec.bfloat16)
    rm, rv = ec.zeros(3), ec.ones(3)
    y, mean, _ = ec.native_batch_norm(h, ec.ones(3), ec.zeros(3), rm, rv, True, 0.1, 1e-5)
    assert y.dtype is ec.bfloat16 and mean.dtype is ec.float32
    np.testing.assert_allclose(
        rm.numpy(), 0.1 * h.float().numpy().mean(axis=(0, 2)), rtol=1e-4, atol=1e-6
    )


def test_batch_norm_errors():
    x = ec.ones(2, 3, 4)
    with pytest.raises(RuntimeError, match="running_mean should contain 3 elements not 4"):
        ec.batch_norm(x, None, None, ec.zeros(4), ec.ones(4), True, 0.1, 1e-5)
    with pytest.raises(RuntimeError, match="running_mean must be defined in evaluation mode"):
        ec.batch_norm(x, None, None, None, None, False, 0.1, 1e-5)
    with pytest.raises(RuntimeError, match="weight should contain 3 elements not 4"):
        ec.batch_norm(x, ec.ones(4), None, None, None, True, 0.1, 1e-5)
    with pytest.raises(RuntimeError, match=r"at least 2 dims.*\[3\]"):
        ec.batch_norm(ec.ones(3), None, None, None, None, True, 0.1, 1e-5)
    with pytest.raises(RuntimeError, match="mixed dtype"):
        ec.batch_norm(x.double(), None, None, ec.zeros(3), ec.ones(3), True, 0.1, 1e-5)


# --------------------------------------------------------------- group norm


@pytest.mark.parametrize(
    "shape,groups", [((2, 6, 5), 3), ((3, 4), 2), ((2, 8, 3, 3), 4), ((2, 4, 7), 1), ((1, 4, 2), 4)]
)
def test_group_norm_values(shape, groups):
    x = (rng.standard_normal(shape) * 2 - 1).astype(np.float32)
    c = shape[1]
    w, b = rng.standard_normal(c).astype(np.float32), rng.standard_normal(c).astype(np.float32)
    y, mean, rstd = ec.native_group_norm(
        T(x), T(w), T(b), shape[0], c, x.size // (shape[0] * c), groups, 1e-5
    )
    ry, rmean, rrstd = np_group_norm(x, groups, w, b, 1e-5)
    np.testing.assert_allclose(y.numpy(), ry, rtol=1e-4, atol=2e-5)
    np.testing.assert_allclose(mean.numpy(), rmean, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(rstd.numpy(), rrstd, rtol=1e-4)
    np.testing.assert_allclose(
        ec.group_norm(T(x), groups).numpy(),
        np_group_norm(x, groups, None, None, 1e-5)[0],
        rtol=1e-4,
        atol=2e-5,
    )


def test_group_norm_backward_op():
    x, g, w = rng.standard_normal((3, 4, 5)), rng.standard_normal((3, 4, 5)), rng.standard_normal(4)
    _, mean, rstd = ec.native_group_norm(T(x), T(w), None, 3, 4, 5, 2, 1e-5)
    gi, gw, gb = ec._native_group_norm_backward(
        T(g), T(x), mean, rstd, T(w), 3, 4, 5, 2, (True, True, True)
    )
    xg = x.reshape(3, 2, -1)
    r = 1 / np.sqrt(xg.var(axis=2, keepdims=True) + 1e-5)
    xhat = ((xg - xg.mean(axis=2, keepdims=True)) * r).reshape(x.shape)
    h = (g * w.reshape(1, 4, 1)).reshape(3, 2, -1)
    xh = xhat.reshape(3, 2, -1)
    ref = (
        r * (h - h.mean(axis=2, keepdims=True) - xh * (h * xh).mean(axis=2, keepdims=True))
    ).reshape(x.shape)
    np.testing.assert_allclose(gi.numpy(), ref, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(gw.numpy(), (g * xhat).sum(axis=(0, 2)), rtol=1e-10)
    np.testing.assert_allclose(gb.numpy(), g.sum(axis=(0, 2)), rtol=1e-10)


def test_group_norm_errors():
    with pytest.raises(
        RuntimeError, match=r"divisible by num_groups.*\[2, 6, 4\] and num_groups=4"
    ):
        ec.group_norm(ec.ones(2, 6, 4), 4)
    with pytest.raises(RuntimeError, match="weight should contain 6 elements not 3"):
        ec.group_norm(ec.ones(2, 6, 4), 3, ec.ones(3))


# ------------------------------------------------------------ instance norm


def test_instance_norm_with_running_stats():
    x = rng.standard_normal((3, 2, 5, 4)).astype(np.float32)
    rm, rv = ec.zeros(2), ec.ones(2)
    w, b = rng.standard_normal(2).astype(np.float32), rng.standard_normal(2).astype(np.float32)
    y = ec.instance_norm(T(x), T(w), T(b), rm, rv, True, 0.1, 1e-5)
    xs = x.reshape(3, 2, -1).astype(np.float64)
    norm = (xs - xs.mean(2, keepdims=True)) / np.sqrt(xs.var(2, keepdims=True) + 1e-5)
    ref = norm.reshape(x.shape) * w.reshape(1, 2, 1, 1) + b.reshape(1, 2, 1, 1)
    np.testing.assert_allclose(y.numpy(), ref, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(rm.numpy(), 0.1 * xs.mean(2).mean(0), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(rv.numpy(), 0.9 + 0.1 * xs.var(2, ddof=1).mean(0), rtol=1e-5)
    assert y.shape == x.shape


@pytest.mark.parity
def test_parity_with_torch():
    torch = pytest.importorskip("torch")
    x = rng.standard_normal((4, 6, 5, 3)).astype(np.float32) * 2 + 0.5
    w, b = rng.standard_normal(6).astype(np.float32), rng.standard_normal(6).astype(np.float32)
    tx, tw, tb = torch.from_numpy(x), torch.from_numpy(w), torch.from_numpy(b)
    np.testing.assert_allclose(
        ec.layer_norm(T(x), (5, 3)).numpy(), torch.layer_norm(tx, (5, 3)).numpy(), atol=1e-5
    )
    np.testing.assert_allclose(
        ec.rms_norm(T(x), (3,)).numpy(), torch.rms_norm(tx, (3,)).numpy(), atol=1e-5
    )
    np.testing.assert_allclose(
        ec.group_norm(T(x), 3, T(w), T(b)).numpy(),
        torch.group_norm(tx, 3, tw, tb).numpy(),
        atol=1e-5,
    )
    erm, erv, trm, trv = ec.zeros(6), ec.ones(6), torch.zeros(6), torch.ones(6)
    for training in (True, True, False):
        ours = ec.batch_norm(T(x), T(w), T(b), erm, erv, training, 0.1, 1e-5)
        theirs = torch.batch_norm(tx, tw, tb, trm, trv, training, 0.1, 1e-5, False)
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), atol=1e-5)
        np.testing.assert_allclose(erm.numpy(), trm.numpy(), atol=1e-6)
        np.testing.assert_allclose(erv.numpy(), trv.numpy(), rtol=1e-6)
    erm, erv, trm, trv = ec.zeros(6), ec.ones(6), torch.zeros(6), torch.ones(6)
    ours = ec.instance_norm(T(x), T(w), T(b), erm, erv, True, 0.1, 1e-5)
    theirs = torch.instance_norm(tx, tw, tb, trm, trv, True, 0.1, 1e-5, False)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), atol=1e-5)
    np.testing.assert_allclose(erv.numpy(), trv.numpy(), rtol=1e-6)
