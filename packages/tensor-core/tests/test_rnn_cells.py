"""lstm_cell, gru_cell, rnn_tanh_cell and rnn_relu_cell (and the fused
backward ops) against NumPy references."""

import numpy as np
import pytest

import ember_core as ec

rng = np.random.default_rng(0)
B, IN, H = 3, 5, 4


def T(a):
    return ec.from_numpy(np.ascontiguousarray(a))


def sig(x):
    return 1 / (1 + np.exp(-x))


def np_lstm(x, h, c, wi, wh, bi, bh):
    g = x @ wi.T + h @ wh.T + (0 if bi is None else bi) + (0 if bh is None else bh)
    i, f, gg, o = np.split(g, 4, axis=1)
    cy = sig(f) * c + sig(i) * np.tanh(gg)
    return sig(o) * np.tanh(cy), cy


def np_gru(x, h, wi, wh, bi, bh):
    gi = x @ wi.T + (0 if bi is None else bi)
    gh = h @ wh.T + (0 if bh is None else bh)
    ir, iz, in_ = np.split(gi, 3, axis=1)
    hr, hz, hn = np.split(gh, 3, axis=1)
    r, z = sig(ir + hr), sig(iz + hz)
    n = np.tanh(in_ + r * hn)
    return (1 - z) * n + z * h


def params(gates, dtype=np.float64, bias=True):
    x, h, c = rng.standard_normal((B, IN)), rng.standard_normal((B, H)), rng.standard_normal((B, H))
    wi, wh = rng.standard_normal((gates * H, IN)), rng.standard_normal((gates * H, H))
    bi = rng.standard_normal(gates * H) if bias else None
    bh = rng.standard_normal(gates * H) if bias else None
    return [None if a is None else a.astype(dtype) for a in (x, h, c, wi, wh, bi, bh)]


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_lstm_cell_values(bias, dtype):
    x, h, c, wi, wh, bi, bh = params(4, dtype, bias)
    hy, cy = ec.lstm_cell(
        T(x),
        (T(h), T(c)),
        T(wi),
        T(wh),
        None if bi is None else T(bi),
        None if bh is None else T(bh),
    )
    rh, rc = np_lstm(
        *(None if a is None else a.astype(np.float64) for a in (x, h, c, wi, wh, bi, bh))
    )
    tol = 1e-12 if dtype == np.float64 else 2e-6
    np.testing.assert_allclose(hy.numpy(), rh, rtol=tol, atol=tol)
    np.testing.assert_allclose(cy.numpy(), rc, rtol=tol, atol=tol)


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_gru_cell_values(bias, dtype):
    x, h, _, wi, wh, bi, bh = params(3, dtype, bias)
    hy = ec.gru_cell(
        T(x), T(h), T(wi), T(wh), None if bi is None else T(bi), None if bh is None else T(bh)
    )
    ref = np_gru(*(None if a is None else a.astype(np.float64) for a in (x, h, wi, wh, bi, bh)))
    tol = 1e-12 if dtype == np.float64 else 2e-6
    np.testing.assert_allclose(hy.numpy(), ref, rtol=tol, atol=tol)


def test_rnn_cells():
    x, h, _, wi, wh, bi, bh = params(1)
    pre = x @ wi.T + bi + h @ wh.T + bh
    np.testing.assert_allclose(
        ec.rnn_tanh_cell(T(x), T(h), T(wi), T(wh), T(bi), T(bh)).numpy(), np.tanh(pre)
    )
    np.testing.assert_allclose(
        ec.rnn_relu_cell(T(x), T(h), T(wi), T(wh), T(bi), T(bh)).numpy(), np.maximum(pre, 0)
    )
    np.testing.assert_allclose(
        ec.rnn_tanh_cell(T(x), T(h), T(wi), T(wh)).numpy(), np.tanh(x @ wi.T + h @ wh.T)
    )


def test_strided_inputs_and_half_precision():
    x, h, c, wi, wh, bi, bh = params(4)
    xs = T(np.concatenate([x, x], axis=1))[:, :IN]  # row stride 2I
    ws = T(wi.T.copy()).T  # column stride != 1: copied
    hy, cy = ec.lstm_cell(xs, (T(h), T(c).T.contiguous().T), ws, T(wh), T(bi), T(bh))
    rh, rc = np_lstm(x, h, c, wi, wh, bi, bh)
    np.testing.assert_allclose(hy.numpy(), rh, rtol=1e-12)
    args = [T(a).to(ec.bfloat16) for a in (x, h, c, wi, wh, bi, bh)]
    hb, cb = ec.lstm_cell(args[0], (args[1], args[2]), *args[3:])
    assert hb.dtype is ec.bfloat16
    np.testing.assert_allclose(hb.float().numpy(), rh, atol=0.05)


def test_lstm_backward_op():
    x, h, c, wi, wh, bi, bh = params(4)
    hy, cy, ws = ec._lstm_cell(T(x), T(h), T(c), T(wi), T(wh), T(bi), T(bh))
    ghy, gcy = rng.standard_normal((B, H)), rng.standard_normal((B, H))
    gx, gh, gc, gwi, gwh, gb = ec._lstm_cell_backward(
        T(ghy), T(gcy), T(x), T(h), T(c), T(wi), T(wh), ws, cy, (True,) * 6
    )
    g = x @ wi.T + h @ wh.T + bi + bh
    i, f, gg, o = (sig(a) for a in np.split(g, 4, axis=1))
    gg = np.tanh(np.split(g, 4, axis=1)[2])
    tc = np.tanh(f * c + i * gg)
    dc = gcy + ghy * o * (1 - tc**2)
    dg = np.concatenate(
        [dc * gg * i * (1 - i), dc * c * f * (1 - f), dc * i * (1 - gg**2), ghy * tc * o * (1 - o)],
        1,
    )
    for got, ref in [
        (gx, dg @ wi),
        (gh, dg @ wh),
        (gc, dc * f),
        (gwi, dg.T @ x),
        (gwh, dg.T @ h),
        (gb, dg.sum(0)),
    ]:
        np.testing.assert_allclose(got.numpy(), ref, rtol=1e-10, atol=1e-12)
    only_x = ec._lstm_cell_backward(
        T(ghy),
        None,
        T(x),
        T(h),
        T(c),
        T(wi),
        T(wh),
        ws,
        cy,
        (True, False, False, False, False, False),
    )
    assert only_x[1] is None and only_x[3] is None
    dc0 = ghy * o * (1 - tc**2)
    dg0 = np.concatenate(
        [
            dc0 * gg * i * (1 - i),
            dc0 * c * f * (1 - f),
            dc0 * i * (1 - gg**2),
            ghy * tc * o * (1 - o),
        ],
        1,
    )
    np.testing.assert_allclose(only_x[0].numpy(), dg0 @ wi, rtol=1e-10)


def test_gru_backward_op():
    x, h, _, wi, wh, bi, bh = params(3)
    hy, ws = ec._gru_cell(T(x), T(h), T(wi), T(wh), T(bi), T(bh))
    gy = rng.standard_normal((B, H))
    gx, gh, gwi, gwh, gbi, gbh = ec._gru_cell_backward(
        T(gy), T(x), T(h), T(wi), T(wh), ws, (True,) * 6
    )
    gi, ghh = x @ wi.T + bi, h @ wh.T + bh
    ir, iz, in_ = np.split(gi, 3, axis=1)
    hr, hz, hn = np.split(ghh, 3, axis=1)
    r, z = sig(ir + hr), sig(iz + hz)
    n = np.tanh(in_ + r * hn)
    dn = gy * (1 - z) * (1 - n**2)
    dz = gy * (h - n) * z * (1 - z)
    dr = dn * hn * r * (1 - r)
    d_in, d_h = np.concatenate([dr, dz, dn], 1), np.concatenate([dr, dz, dn * r], 1)
    for got, ref in [
        (gx, d_in @ wi),
        (gh, d_h @ wh + gy * z),
        (gwi, d_in.T @ x),
        (gwh, d_h.T @ h),
        (gbi, d_in.sum(0)),
        (gbh, d_h.sum(0)),
    ]:
        np.testing.assert_allclose(got.numpy(), ref, rtol=1e-10, atol=1e-12)


def test_errors():
    x, h, c, wi, wh, bi, bh = (None if a is None else T(a) for a in params(4))
    with pytest.raises(RuntimeError, match="input has inconsistent input_size: got 4 expected 5"):
        ec.lstm_cell(x[:, :4], (h, c), wi, wh)
    with pytest.raises(RuntimeError, match="Input batch size 2 doesn't match hidden0 batch size 3"):
        ec.lstm_cell(x[:2], (h, c), wi, wh)
    with pytest.raises(
        RuntimeError, match="hidden1 has inconsistent hidden_size: got 3, expected 4"
    ):
        ec.lstm_cell(x, (h, c[:, :3]), wi, wh)
    with pytest.raises(RuntimeError, match="hx must be a pair"):
        ec.lstm_cell(x, h, wi, wh)
    with pytest.raises(RuntimeError, match="4 gates"):
        ec.lstm_cell(x, (h, c), wi[:12], wh[:12])
    with pytest.raises(RuntimeError, match="dtype"):
        ec.gru_cell(x.float(), h, wi[:12], wh[:12])
    with pytest.raises(RuntimeError, match="2-D"):
        ec.gru_cell(x[0], h, wi[:12], wh[:12])


@pytest.mark.parity
def test_parity_with_torch():
    torch = pytest.importorskip("torch")
    x, h, c, wi, wh, bi, bh = params(4, np.float32)
    tt = [torch.from_numpy(a) for a in (x, h, c, wi, wh, bi, bh)]
    ours = ec.lstm_cell(T(x), (T(h), T(c)), T(wi), T(wh), T(bi), T(bh))
    theirs = torch.lstm_cell(tt[0], (tt[1], tt[2]), *tt[3:])
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)
    x, h, _, wi, wh, bi, bh = params(3, np.float32)
    tt = [torch.from_numpy(a) for a in (x, h, wi, wh, bi, bh)]
    np.testing.assert_allclose(
        ec.gru_cell(T(x), T(h), T(wi), T(wh), T(bi), T(bh)).numpy(),
        torch.gru_cell(*tt).numpy(),
        rtol=1e-5,
        atol=1e-6,
    )
