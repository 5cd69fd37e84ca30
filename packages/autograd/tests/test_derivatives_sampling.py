"""Gradients of the sampling ops (ember_core._ops.nn.sampling, formulas in
_derivatives_sampling.py): gradcheck in float64, and PyTorch's gradients
(parity), PyTorch's own CTC gradient convention included."""

import numpy as np
import pytest

import ember_autograd as ag
import ember_core as ec


def _t(a):
    t = ec.tensor(a)
    t.requires_grad_(True)
    return t


@pytest.mark.parametrize(
    "dim,mode", [(2, "bilinear"), (2, "nearest"), (2, "bicubic"), (3, "bilinear"), (3, "nearest")]
)
@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sample_gradcheck(dim, mode, padding, align_corners):
    rng = np.random.default_rng(0)
    shape = (1, 2, 3, 4) if dim == 2 else (1, 2, 2, 3, 3)
    gshape = (1, 2, 3, 2) if dim == 2 else (1, 2, 2, 2, 3)
    x = _t(rng.standard_normal(shape))
    g = rng.uniform(-1.2, 1.2, gshape)
    grid = _t(g)
    if mode == "nearest":  # piecewise constant in the grid: only the input's gradient
        grid.requires_grad_(False)
    assert ag.gradcheck(
        lambda a, b: ec.grid_sample(a, b, mode, padding, align_corners), (x, grid), atol=1e-6
    )


def test_affine_grid_then_grid_sample_gradcheck():
    rng = np.random.default_rng(1)
    theta = _t(
        np.array([[[0.9, 0.2, 0.1], [-0.1, 1.1, 0.05]]]) + 0.01 * rng.standard_normal((1, 2, 3))
    )
    x = _t(rng.standard_normal((1, 1, 4, 5)))

    def stn(th, inp):
        grid = ec.affine_grid_generator(th, (1, 1, 3, 4), False)
        return ec.grid_sample(inp, grid, "bilinear", "zeros", False)

    assert ag.gradcheck(stn, (theta, x))


def test_max_unpool_gradcheck_and_gradgrad():
    rng = np.random.default_rng(2)
    x = ec.tensor(rng.standard_normal((1, 2, 4, 4)))
    values, idx = ec.max_pool2d(x, 2, return_indices=True)
    v = _t(values.numpy())
    assert ag.gradcheck(lambda a: ec.max_unpool(a, idx, (4, 4)), (v,))
    assert ag.gradgradcheck(lambda a: ec.max_unpool(a, idx, (4, 4)), (v,))


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("zero_infinity", [False, True])
def test_ctc_loss_gradcheck(reduction, zero_infinity):
    # PyTorch's CTC gradient assumes log_probs come out of a log_softmax, so the
    # check goes through one (Note [CTC in log space])
    rng = np.random.default_rng(3)
    z = _t(rng.standard_normal((6, 3, 4)))
    tg = ec.tensor([[1, 2, 2], [3, 1, 0], [1, 1, 1]])
    # with zero_infinity the last element is impossible (3 symbols with repeats
    # in 3 frames: an infinite loss, zeroed with its gradient)
    il, tl = [6, 5, 3], ([3, 2, 3] if zero_infinity else [3, 2, 1])

    def loss(a):
        return ec.ctc_loss(a.log_softmax(2), tg, il, tl, 0, reduction, zero_infinity)

    assert ag.gradcheck(loss, (z,))


@pytest.mark.parity
@pytest.mark.parametrize(
    "dim,mode", [(2, "bilinear"), (2, "nearest"), (2, "bicubic"), (3, "bilinear"), (3, "nearest")]
)
@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sample_grad_parity(dim, mode, padding, align_corners):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(4)
    shape = (2, 3, 5, 6) if dim == 2 else (2, 2, 3, 4, 5)
    gshape = (2, 4, 7, 2) if dim == 2 else (2, 2, 3, 4, 3)
    x = rng.standard_normal(shape)
    g = rng.uniform(-1.4, 1.4, gshape)
    g.reshape(-1)[:4] = [-1.0, 1.0, 0.0, 1.0]  # exact edges (clipped: zero gradient)
    go = rng.standard_normal(shape[:2] + gshape[1:-1])
    tx, tg = torch.tensor(x, requires_grad=True), torch.tensor(g, requires_grad=True)
    torch.nn.functional.grid_sample(tx, tg, mode, padding, align_corners).backward(torch.tensor(go))
    ex, eg = _t(x), _t(g)
    ec.grid_sample(ex, eg, mode, padding, align_corners).backward(ec.tensor(go))
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(eg.grad.numpy(), tg.grad.numpy(), rtol=1e-10, atol=1e-10)


@pytest.mark.parity
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("concatenated", [False, True])
@pytest.mark.parametrize("zero_infinity", [False, True])
def test_ctc_loss_grad_parity(reduction, concatenated, zero_infinity):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    T, N, C = 10, 4, 5
    lp_np = torch.tensor(rng.standard_normal((T, N, C))).log_softmax(2).numpy()
    tg = rng.integers(1, C, (N, 4))
    tg[3, :3] = [2, 2, 2]
    il, tl = [10, 8, 4, 4], [4, 2, 0, 3]  # the last is impossible: inf loss
    if concatenated:
        tg = np.concatenate([tg[b, : tl[b]] for b in range(N)])
    lp = torch.tensor(lp_np, requires_grad=True)
    want = torch.nn.functional.ctc_loss(
        lp, torch.tensor(tg), il, tl, reduction=reduction, zero_infinity=zero_infinity
    )
    elp = _t(lp_np)
    got = ec.ctc_loss(elp, ec.tensor(tg), il, tl, 0, reduction, zero_infinity)
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-12)
    if zero_infinity:
        want.sum().backward()
        got.sum().backward()
        np.testing.assert_allclose(elp.grad.numpy(), lp.grad.numpy(), rtol=1e-10, atol=1e-12)
