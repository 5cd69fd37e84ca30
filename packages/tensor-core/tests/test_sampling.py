"""grid_sampler, affine_grid_generator, max_unpool and the CTC loss
(ember_core._ops.nn.sampling) against NumPy references, and against PyTorch (parity)."""

import itertools

import numpy as np
import pytest

import ember_core as ec

MODES = ("bilinear", "nearest", "bicubic")
PADDINGS = ("zeros", "border", "reflection")


def _np_unnormalize(c, size, align_corners):
    return (c + 1) / 2 * (size - 1) if align_corners else ((c + 1) * size - 1) / 2


def _np_grid_sample_zeros(x, grid, mode, align_corners):
    """Bilinear/nearest with zero padding, one output pixel at a time."""
    n, c, h, w = x.shape
    _, ho, wo, _ = grid.shape
    out = np.zeros((n, c, ho, wo))
    for b, i, j in itertools.product(range(n), range(ho), range(wo)):
        ix = _np_unnormalize(grid[b, i, j, 0], w, align_corners)
        iy = _np_unnormalize(grid[b, i, j, 1], h, align_corners)

        def px(yy, xx, b=b):
            return x[b, :, yy, xx] if 0 <= yy < h and 0 <= xx < w else np.zeros(c)

        if mode == "nearest":
            out[b, :, i, j] = px(int(np.rint(iy)), int(np.rint(ix)))
            continue
        x0, y0 = int(np.floor(ix)), int(np.floor(iy))
        fx, fy = ix - x0, iy - y0
        out[b, :, i, j] = (
            px(y0, x0) * (1 - fx) * (1 - fy)
            + px(y0, x0 + 1) * fx * (1 - fy)
            + px(y0 + 1, x0) * (1 - fx) * fy
            + px(y0 + 1, x0 + 1) * fx * fy
        )
    return out


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sample_matches_numpy(mode, align_corners):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 3, 5, 4))
    grid = rng.uniform(-1.3, 1.3, (2, 3, 6, 2))
    got = ec.grid_sample(ec.tensor(x), ec.tensor(grid), mode, "zeros", align_corners)
    np.testing.assert_allclose(
        got.numpy(), _np_grid_sample_zeros(x, grid, mode, align_corners), rtol=1e-12, atol=1e-12
    )


def test_grid_sample_identity_grid_reproduces_input():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((1, 2, 4, 5))
    theta = ec.tensor([[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]], dtype=ec.float64)
    for ac in (False, True):
        grid = ec.affine_grid_generator(theta, (1, 2, 4, 5), ac)
        for mode in MODES:
            y = ec.grid_sample(ec.tensor(x), grid, mode, "zeros", ac)
            np.testing.assert_allclose(y.numpy(), x, atol=1e-12)


def test_grid_sample_border_and_reflection_stay_inside():
    # far outside the image, border padding reads the edge pixel, reflection a mirror one
    x = np.arange(6.0).reshape(1, 1, 2, 3)
    grid = np.array([[[[5.0, 0.0], [-7.0, 0.0]]]])
    y = ec.grid_sample(ec.tensor(x), ec.tensor(grid), "nearest", "border", True).numpy()
    assert y.tolist() == [[[[2.0, 0.0]]]]
    y = ec.grid_sample(ec.tensor(x), ec.tensor(grid), "nearest", "reflection", True).numpy()
    assert np.all((y >= 0) & (y <= 5))


def test_grid_sample_float32_and_errors():
    x = ec.ones(1, 1, 3, 3)
    g = ec.zeros(1, 2, 2, 2)
    assert ec.grid_sample(x, g, align_corners=False).dtype == ec.float32
    with pytest.raises(ValueError, match="mode"):
        ec.grid_sample(x, g, "cubic")
    with pytest.raises(ValueError, match="padding_mode"):
        ec.grid_sample(x, g, padding_mode="wrap")
    with pytest.raises(RuntimeError, match="same batch size"):
        ec.grid_sample(x, ec.zeros(2, 2, 2, 2))
    with pytest.raises(RuntimeError, match="size 2 in last dimension"):
        ec.grid_sample(x, ec.zeros(1, 2, 2, 3))
    with pytest.raises(RuntimeError, match="same dtype"):
        ec.grid_sample(x, g.double())
    with pytest.raises(RuntimeError, match="bicubic interpolation only supports 4D"):
        ec.grid_sample(ec.ones(1, 1, 2, 2, 2), ec.zeros(1, 1, 1, 1, 3), "bicubic")
    with pytest.raises(NotImplementedError):
        ec.grid_sample(ec.ones(1, 1, 2, 2, dtype=ec.int64), ec.zeros(1, 1, 1, 2, dtype=ec.int64))


def test_grid_sample_non_finite_grid_reads_zero():
    x = ec.ones(1, 1, 3, 3, dtype=ec.float64)
    g = ec.tensor([[[[float("nan"), 0.0], [float("inf"), 0.0]]]], dtype=ec.float64)
    y = ec.grid_sample(x, g, "bilinear", "zeros", False)
    assert y.shape == (1, 1, 1, 2)


def test_affine_grid_matches_numpy():
    rng = np.random.default_rng(3)
    theta = rng.standard_normal((2, 2, 3))
    for ac in (False, True):
        grid = ec.affine_grid_generator(ec.tensor(theta), (2, 1, 3, 4), ac).numpy()
        xs, ys = np.linspace(-1, 1, 4), np.linspace(-1, 1, 3)
        if not ac:
            xs, ys = xs * 3 / 4, ys * 2 / 3
        base = np.stack(np.broadcast_arrays(xs[None, :], ys[:, None], 1.0), -1)
        want = np.einsum("hwk,nck->nhwc", base, theta)
        np.testing.assert_allclose(grid, want, rtol=1e-12, atol=1e-12)


def test_max_unpool_places_values_at_indices():
    rng = np.random.default_rng(4)
    x = ec.tensor(rng.standard_normal((2, 3, 4, 6)))
    values, idx = ec.max_pool2d(x, 2, return_indices=True)
    out = ec.max_unpool(values, idx, (4, 6)).numpy()
    want = np.zeros((2, 3, 24))
    np.put_along_axis(want, idx.numpy().reshape(2, 3, -1), values.numpy().reshape(2, 3, -1), 2)
    np.testing.assert_array_equal(out, want.reshape(2, 3, 4, 6))
    # overlapping windows give repeated indices: each value is placed once, not added
    values, idx = ec.max_pool2d(x, 3, 1, return_indices=True)
    out = ec.max_unpool(values, idx, (4, 6)).numpy()
    assert set(np.unique(out[out != 0])) <= set(x.numpy().ravel())
    with pytest.raises(RuntimeError, match="invalid max index"):
        ec.max_unpool(values, idx + 100, (4, 6))
    with pytest.raises(RuntimeError, match="int64"):
        ec.max_unpool(values, idx.int(), (4, 6))


def _np_ctc(lp, target, T):
    """-log P(target) by the forward algorithm in probability space."""
    p = np.exp(lp[:T])
    ext = [0]
    for s in target:
        ext += [s, 0]
    a = np.zeros(len(ext))
    a[0] = p[0, 0]
    if len(ext) > 1:
        a[1] = p[0, ext[1]]
    for t in range(1, T):
        prev = a.copy()
        for s in range(len(ext)):
            v = prev[s] + (prev[s - 1] if s > 0 else 0)
            if s > 1 and ext[s] != 0 and ext[s] != ext[s - 2]:
                v += prev[s - 2]
            a[s] = v * p[t, ext[s]]
    total = a[-1] + (a[-2] if len(ext) > 1 else 0)
    return -np.log(total)


@pytest.mark.parametrize("concatenated", [False, True])
def test_ctc_loss_matches_numpy(concatenated):
    rng = np.random.default_rng(5)
    T, N, C = 9, 3, 4
    z = rng.standard_normal((T, N, C))
    lp = z - np.log(np.exp(z).sum(-1, keepdims=True))
    targets = np.array([[1, 2, 2], [3, 1, 0], [2, 0, 0]])
    il, tl = [9, 7, 5], [3, 2, 1]
    tg = np.concatenate([targets[b, : tl[b]] for b in range(N)]) if concatenated else targets
    got = ec.ctc_loss(ec.tensor(lp), ec.tensor(tg), il, tl, reduction="none").numpy()
    want = [_np_ctc(lp[:, b], targets[b, : tl[b]], il[b]) for b in range(N)]
    np.testing.assert_allclose(got, want, rtol=1e-10)
    mean = ec.ctc_loss(ec.tensor(lp), ec.tensor(tg), il, tl).item()
    np.testing.assert_allclose(mean, np.mean(np.array(want) / tl), rtol=1e-10)


def test_ctc_loss_impossible_alignment_and_zero_infinity():
    lp = ec.full((2, 1, 3), -np.log(3.0), dtype=ec.float64)
    # three symbols with a repeat need at least 4 frames
    tg = ec.tensor([[1, 1, 2]])
    assert ec.ctc_loss(lp, tg, [2], [3], reduction="sum").item() == float("inf")
    assert ec.ctc_loss(lp, tg, [2], [3], reduction="sum", zero_infinity=True).item() == 0.0


def test_ctc_loss_errors():
    lp = ec.zeros(5, 2, 3)
    tg = ec.ones(2, 2, dtype=ec.int64)
    with pytest.raises(RuntimeError, match="at most 5"):
        ec.ctc_loss(lp, tg, [6, 5], [2, 2])
    with pytest.raises(RuntimeError, match="size at least 3"):
        ec.ctc_loss(lp, tg, [5, 5], [3, 2])
    with pytest.raises(RuntimeError, match="blank must be in label range"):
        ec.ctc_loss(lp, tg, [5, 5], [2, 2], blank=3)
    with pytest.raises(RuntimeError, match="batch_size"):
        ec.ctc_loss(lp, tg, [5], [2, 2])
    with pytest.raises(IndexError, match="out of range for 3 classes"):
        ec.ctc_loss(lp, tg * 7, [5, 5], [2, 2])


# ------------------------------------------------------------------ parity


@pytest.mark.parity
@pytest.mark.parametrize("dim", [2, 3])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("padding", PADDINGS)
@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_grid_sample_parity(dim, mode, padding, align_corners, dtype):
    torch = pytest.importorskip("torch")
    if dim == 3 and mode == "bicubic":
        pytest.skip("bicubic is 4-D only")
    rng = np.random.default_rng(6)
    shape = (2, 3, 5, 6) if dim == 2 else (2, 2, 3, 4, 5)
    gshape = (2, 4, 7, 2) if dim == 2 else (2, 2, 3, 4, 3)
    x = rng.standard_normal(shape).astype(dtype)
    g = rng.uniform(-1.4, 1.4, gshape).astype(dtype)
    g.reshape(-1)[:4] = [-1.0, 1.0, 0.0, 1.0]  # exact edges
    want = torch.nn.functional.grid_sample(
        torch.tensor(x), torch.tensor(g), mode, padding, align_corners
    ).numpy()
    got = ec.grid_sample(ec.tensor(x), ec.tensor(g), mode, padding, align_corners).numpy()
    tol = 1e-5 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


@pytest.mark.parity
@pytest.mark.parametrize("size", [(2, 3, 4, 5), (2, 1, 3, 4, 5), (1, 1, 1, 3)])
@pytest.mark.parametrize("align_corners", [False, True])
def test_affine_grid_parity(size, align_corners):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(7)
    k = len(size) - 2
    theta = rng.standard_normal((size[0], k, k + 1))
    want = torch.affine_grid_generator(torch.tensor(theta), size, align_corners).numpy()
    got = ec.affine_grid_generator(ec.tensor(theta), size, align_corners).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parity
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_ctc_loss_parity(reduction, dtype):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(8)
    T, N, C, S = 15, 4, 6, 5
    lp = torch.tensor(rng.standard_normal((T, N, C)).astype(dtype)).log_softmax(2)
    tg = torch.tensor(rng.integers(1, C, (N, S)))
    il, tl = [15, 12, 9, 3], [5, 3, 0, 2]
    want = torch.nn.functional.ctc_loss(lp, tg, il, tl, reduction=reduction).numpy()
    got = ec.ctc_loss(ec.tensor(lp.numpy()), ec.tensor(tg.numpy()), il, tl, 0, reduction).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5 if dtype == "float32" else 1e-12)
