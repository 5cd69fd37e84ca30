"""Dropout ops: masks from the Philox stream (reproducible under manual_seed,
independent of the thread count), scaling, feature and alpha variants."""

import math

import numpy as np
import pytest

import ember_core as ec

ALPHA = 1.7580993408473766


def test_native_dropout_mask_and_scale():
    x = ec.randn(200, 300)
    ec.manual_seed(7)
    out, mask = ec.native_dropout(x, 0.3, True)
    assert mask.dtype is ec.bool and mask.shape == x.shape
    keep = mask.numpy()
    assert abs(keep.mean() - 0.7) < 0.01
    np.testing.assert_allclose(out.numpy(), np.where(keep, x.numpy() / 0.7, 0.0), rtol=1e-6)
    ec.manual_seed(7)
    out2, mask2 = ec.native_dropout(x, 0.3, True)
    np.testing.assert_array_equal(mask2.numpy(), keep)
    out3, mask3 = ec.native_dropout(x, 0.3, True)  # the stream moved on
    assert (mask3.numpy() != keep).any()


def test_results_do_not_depend_on_thread_count():
    x = ec.randn(512, 512)
    n = ec.get_num_threads()
    try:
        ec.set_num_threads(1)
        ec.manual_seed(1)
        a = ec.dropout(x, 0.5, True).numpy()
        ec.set_num_threads(2)
        ec.manual_seed(1)
        b = ec.dropout(x, 0.5, True).numpy()
    finally:
        ec.set_num_threads(n)
    np.testing.assert_array_equal(a, b)


def test_dropout_identity_cases():
    x = ec.randn(4, 5)
    assert ec.dropout(x, 0.5, False) is x
    assert ec.dropout(x, 0.0, True) is x
    np.testing.assert_array_equal(ec.dropout(x, 1.0, True).numpy(), np.zeros((4, 5), np.float32))
    out, mask = ec.native_dropout(x, 0.5, False)
    np.testing.assert_array_equal(out.numpy(), x.numpy())
    assert out is not x and mask.numpy().all()
    e = ec.empty(0, 3)
    assert ec.dropout(e, 0.5, True) is e


@pytest.mark.parametrize("dtype", [ec.float64, ec.float16, ec.bfloat16])
def test_dtypes_and_non_contiguous(dtype):
    x = ec.randn(30, 40).to(dtype).T
    ec.manual_seed(2)
    y = ec.dropout(x, 0.25, True)
    assert y.dtype is dtype and y.shape == (40, 30)
    yv, xv = y.float().numpy(), x.float().numpy()
    kept = yv != 0
    np.testing.assert_allclose(yv[kept], xv[kept] / 0.75, rtol=1e-2)


def test_dropout_backward_op():
    g = ec.randn(3, 4, dtype=ec.float64)
    mask = ec.tensor([[True, False, True, True]] * 3)
    got = ec._native_dropout_backward(g, mask, 2.0)
    np.testing.assert_allclose(got.numpy(), np.where(mask.numpy(), 2.0 * g.numpy(), 0.0))


def test_inplace_dropout():
    x = ec.randn(10, 10)
    ref = x.clone()
    ec.manual_seed(4)
    r = ec.dropout_(x, 0.5, True)
    assert r is x
    ec.manual_seed(4)
    np.testing.assert_array_equal(x.numpy(), ec.dropout(ref, 0.5, True).numpy())


def test_feature_dropout_drops_whole_channels():
    x = ec.randn(8, 16, 5, 5) + 10  # no zero inputs
    ec.manual_seed(0)
    y = ec.feature_dropout(x, 0.5, True).numpy()
    zero = (y == 0).reshape(8, 16, -1)
    assert (zero.all(axis=2) | ~zero.any(axis=2)).all()  # all or nothing per channel
    assert 0.3 < zero.all(axis=2).mean() < 0.7
    kept = ~zero.all(axis=2)
    np.testing.assert_allclose(
        y.reshape(8, 16, -1)[kept], x.numpy().reshape(8, 16, -1)[kept] * 2, rtol=1e-6
    )
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        ec.feature_dropout(ec.ones(5), 0.5, True)


@pytest.mark.parametrize("feature", [False, True])
def test_alpha_dropout(feature):
    p = 0.2
    a = 1 / math.sqrt((ALPHA**2 * p + 1) * (1 - p))
    x = ec.randn(64, 32, 8)
    ec.manual_seed(5)
    y = (ec.feature_alpha_dropout if feature else ec.alpha_dropout)(x, p, True).numpy()
    xv = x.numpy()
    kept = np.isclose(y, xv * a + ALPHA * a * p, rtol=1e-5, atol=1e-6)
    dropped = np.isclose(y, ALPHA * a * (p - 1), rtol=1e-5)
    assert (kept | dropped).all()
    assert abs(dropped.mean() - p) < 0.03
    # SELU-normalised activations keep (about) zero mean and unit variance
    assert abs(y.mean()) < 0.05 and abs(y.std() - 1) < 0.05
    assert ec.alpha_dropout(x, p, False) is x


def test_bad_probability():
    for fn in (ec.dropout, ec.native_dropout, ec.alpha_dropout, ec.feature_dropout):
        with pytest.raises(RuntimeError, match="between 0 and 1, but got 1.5"):
            fn(ec.ones(2, 2), 1.5, True)
    with pytest.raises(RuntimeError, match="floating point"):
        ec.native_dropout(ec.ones(3, dtype=ec.int64), 0.5, True)
