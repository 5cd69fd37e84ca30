"""Fractional max pooling: values and indices against a NumPy loop over ATen's
window placement, gradients by finite differences, errors, and PyTorch parity
(2d/3d, batched and not, output_size and output_ratio, the module)."""

import numpy as np
import pytest
from _parity import to_numpy

import ember_autograd as ag
import ember_core as ec
import ember_nn as nn
import ember_nn.functional as F


def _starts(u, n_in, n_out, k, dt):
    if n_out == 1:
        return [n_in - k]
    alpha = dt(n_in - k) / dt(n_out - 1)
    s = [int((dt(i) + dt(u)) * alpha) - int(dt(u) * alpha) for i in range(n_out - 1)]
    return s + [n_in - k]


def _reference_2d(x, k, out, u):
    n, c, h, w = x.shape
    vals = np.zeros((n, c) + out)
    idx = np.zeros((n, c) + out, dtype=np.int64)
    for b in range(n):
        for ch in range(c):
            hs = _starts(u[b, ch, 1], h, out[0], k[0], np.float64)
            ws = _starts(u[b, ch, 0], w, out[1], k[1], np.float64)
            for i, h0 in enumerate(hs):
                for j, w0 in enumerate(ws):
                    win = x[b, ch, h0 : h0 + k[0], w0 : w0 + k[1]]
                    a = np.unravel_index(np.argmax(win), win.shape)
                    vals[b, ch, i, j] = win[a]
                    idx[b, ch, i, j] = (h0 + a[0]) * w + w0 + a[1]
    return vals, idx


def test_values_and_indices_against_numpy(rng):
    x = rng.standard_normal((2, 3, 9, 10))
    u = rng.random((2, 3, 2))
    v, i = F.fractional_max_pool2d(
        ec.tensor(x),
        (2, 3),
        output_size=(5, 4),
        return_indices=True,
        _random_samples=ec.tensor(u),
    )
    rv, ri = _reference_2d(x, (2, 3), (5, 4), u)
    np.testing.assert_array_equal(to_numpy(v), rv)
    np.testing.assert_array_equal(to_numpy(i), ri)


def test_gradcheck(rng):
    x = ec.tensor(rng.standard_normal((1, 2, 7, 7)), requires_grad=True)
    u = ec.tensor(rng.random((1, 2, 2)))
    assert ag.gradcheck(lambda x: F.fractional_max_pool2d(x, 2, (4, 4), _random_samples=u), (x,))
    x3 = ec.tensor(rng.standard_normal((2, 5, 5, 6)), requires_grad=True)
    u3 = ec.tensor(rng.random((1, 2, 3)))
    assert ag.gradcheck(
        lambda x: F.fractional_max_pool3d(x, 2, (3, 3, 3), _random_samples=u3), (x3,)
    )


def test_errors():
    x = ec.randn(2, 3, 7, 9)
    with pytest.raises(RuntimeError, match="pool height 4 too large relative to input height 7"):
        F.fractional_max_pool2d(x, 4, output_size=5)
    with pytest.raises(RuntimeError, match="size\\(2\\) equals to 2; got 3"):
        F.fractional_max_pool2d(x, 2, output_size=3, _random_samples=ec.rand(2, 3, 3))
    with pytest.raises(RuntimeError, match="no less then input batch size"):
        F.fractional_max_pool2d(x, 2, output_size=3, _random_samples=ec.rand(1, 3, 2))
    with pytest.raises(ValueError, match="either an output_size or an output_ratio"):
        F.fractional_max_pool2d(x, 2)
    with pytest.raises(ValueError, match="either an output size, or a pooling ratio"):
        nn.FractionalMaxPool2d(2)
    with pytest.raises(ValueError, match="only one of output_size and output_ratio"):
        nn.FractionalMaxPool3d(2, output_size=3, output_ratio=0.5)
    with pytest.raises(ValueError, match="output_ratio must be between 0 and 1"):
        nn.FractionalMaxPool2d(2, output_ratio=1.5)


def test_module_buffer_and_random_samples():
    u = ec.rand(1, 2, 2)
    pool = nn.FractionalMaxPool2d(2, output_ratio=0.5, _random_samples=u)
    assert list(pool.state_dict()) == ["_random_samples"]
    x = ec.randn(1, 2, 8, 8)
    np.testing.assert_array_equal(to_numpy(pool(x)), to_numpy(pool(x)))  # fixed samples
    free = nn.FractionalMaxPool2d(2, output_size=4, return_indices=True)
    out, idx = free(x)
    assert tuple(out.shape) == (1, 2, 4, 4) and idx.dtype == ec.int64
    # every value is the input at its index
    np.testing.assert_array_equal(
        to_numpy(out).reshape(1, 2, -1),
        np.take_along_axis(to_numpy(x).reshape(1, 2, -1), to_numpy(idx).reshape(1, 2, -1), 2),
    )


@pytest.mark.parity
@pytest.mark.parametrize(
    "nd,shape,kernel,kw",
    [
        (2, (2, 3, 9, 11), (2, 3), {"output_size": (4, 5)}),
        (2, (3, 8, 8), 2, {"output_size": 5}),
        (2, (2, 2, 10, 7), 3, {"output_ratio": (0.5, 0.7)}),
        (2, (1, 1, 6, 6), 2, {"output_size": 1}),
        (3, (2, 2, 6, 7, 8), (2, 2, 3), {"output_size": (3, 4, 3)}),
        (3, (2, 5, 6, 7), 2, {"output_ratio": (0.5, 0.5, 0.6)}),
    ],
)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_parity(torch, rng, nd, shape, kernel, kw, dtype):
    x = rng.standard_normal(shape).astype(dtype)
    batch = shape[0] if len(shape) == nd + 2 else 1
    u = rng.random((batch, shape[-nd - 1], nd)).astype(dtype)
    tf = getattr(torch.nn.functional, f"fractional_max_pool{nd}d")
    ef = getattr(F, f"fractional_max_pool{nd}d")
    tx = torch.tensor(x, requires_grad=True)
    ex = ec.tensor(x, requires_grad=True)
    tv, ti = tf(tx, kernel, return_indices=True, _random_samples=torch.tensor(u), **kw)
    ev, ei = ef(ex, kernel, return_indices=True, _random_samples=ec.tensor(u), **kw)
    np.testing.assert_array_equal(to_numpy(ev), to_numpy(tv))
    np.testing.assert_array_equal(to_numpy(ei), to_numpy(ti))
    g = rng.standard_normal(tuple(tv.shape)).astype(dtype)
    tv.backward(torch.tensor(g))
    ev.backward(ec.tensor(g))
    np.testing.assert_allclose(to_numpy(ex.grad), to_numpy(tx.grad), atol=1e-6)
    tm = getattr(torch.nn, f"FractionalMaxPool{nd}d")(kernel, _random_samples=torch.tensor(u), **kw)
    em = getattr(nn, f"FractionalMaxPool{nd}d")(kernel, _random_samples=ec.tensor(u), **kw)
    np.testing.assert_array_equal(to_numpy(em(ec.tensor(x))), to_numpy(tm(torch.tensor(x))))
    assert repr(em) == repr(tm)


@pytest.mark.parity
def test_parity_nan_and_ties(torch, rng):
    # ATen's scan: a later element wins when greater or NaN; ties keep the first
    x = rng.integers(0, 3, (2, 2, 8, 9)).astype("float32")
    x[0, 0, 1, 1] = x[0, 0, 2, 2] = x[1, 1, 5, 3] = np.nan
    u = rng.random((2, 2, 2)).astype("float32")
    tv, ti = torch.nn.functional.fractional_max_pool2d(
        torch.tensor(x), 3, (4, 4), return_indices=True, _random_samples=torch.tensor(u)
    )
    ev, ei = F.fractional_max_pool2d(
        ec.tensor(x), 3, (4, 4), return_indices=True, _random_samples=ec.tensor(u)
    )
    np.testing.assert_array_equal(to_numpy(ev), to_numpy(tv))
    np.testing.assert_array_equal(to_numpy(ei), to_numpy(ti))
