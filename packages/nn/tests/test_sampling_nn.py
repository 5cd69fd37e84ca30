"""F.grid_sample, F.affine_grid, F.max_unpool*d, F.ctc_loss and nn.MaxUnpool*d,
nn.CTCLoss: argument handling, against PyTorch (parity) and NumPy."""

import numpy as np
import pytest

import ember_core as ec
import ember_nn as nn
from ember_nn import functional as F


@pytest.mark.parametrize("k", [1, 2, 3])
def test_max_unpool_module_roundtrip(k):
    rng = np.random.default_rng(0)
    shape = (2, 3) + (4,) * k
    x = ec.tensor(rng.standard_normal(shape))
    pool = [nn.MaxPool1d, nn.MaxPool2d, nn.MaxPool3d][k - 1](2, return_indices=True)
    unpool = [nn.MaxUnpool1d, nn.MaxUnpool2d, nn.MaxUnpool3d][k - 1](2)
    values, idx = pool(x)
    out = unpool(values, idx, output_size=x.shape)
    assert out.shape == x.shape
    # every kept value sits where it came from, the rest is zero
    kept = out.numpy() != 0
    np.testing.assert_array_equal(out.numpy()[kept], x.numpy()[kept])
    assert kept.sum() == values.numel()
    assert (
        repr(unpool)
        == f"MaxUnpool{k}d(kernel_size={(2,) * k}, stride={(2,) * k}, padding={(0,) * k})"
    )


def test_max_unpool_output_size_checks():
    v, i = F.max_pool2d(ec.randn(1, 1, 5, 5), 2, return_indices=True)
    assert F.max_unpool2d(v, i, 2, output_size=(5, 5)).shape == (1, 1, 5, 5)
    with pytest.raises(ValueError, match="invalid output_size"):
        F.max_unpool2d(v, i, 2, output_size=(9, 9))
    with pytest.raises(ValueError, match="2 or 4 elements"):
        F.max_unpool2d(v, i, 2, output_size=(5,))


def test_affine_grid_checks_and_warning():
    with pytest.warns(UserWarning, match="align_corners=False"):
        F.affine_grid(ec.zeros(1, 2, 3), (1, 1, 2, 2))
    with pytest.raises(ValueError, match="Nx2x3"):
        F.affine_grid(ec.zeros(1, 3, 4), (1, 1, 2, 2), align_corners=False)
    with pytest.raises(ValueError, match="floating point"):
        F.affine_grid(ec.zeros(1, 2, 3, dtype=ec.int64), (1, 1, 2, 2), align_corners=False)
    with pytest.raises(NotImplementedError, match="4D and 5D"):
        F.affine_grid(ec.zeros(1, 2, 3), (1, 2, 2), align_corners=False)


def test_ctc_module_unbatched_matches_batched():
    rng = np.random.default_rng(1)
    lp = ec.tensor(rng.standard_normal((7, 4))).log_softmax(1)
    tg = ec.tensor([1, 3, 2])
    crit = nn.CTCLoss(reduction="sum")
    one = crit(lp, tg, ec.tensor(7), ec.tensor(3))
    batched = crit(lp.unsqueeze(1), tg.unsqueeze(0), [7], [3])
    assert one.shape == ()
    np.testing.assert_allclose(one.item(), batched.item(), rtol=1e-12)
    with pytest.raises(ValueError, match="reduction"):
        F.ctc_loss(lp, tg, [7], [3], reduction="avg")


@pytest.mark.parity
def test_spatial_transformer_parity():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 3, 6, 5)).astype("float32")
    theta = (np.eye(2, 3)[None] + 0.1 * rng.standard_normal((2, 2, 3))).astype("float32")
    tx, tt = torch.tensor(x, requires_grad=True), torch.tensor(theta, requires_grad=True)
    tgrid = torch.nn.functional.affine_grid(tt, (2, 3, 4, 4), align_corners=False)
    ty = torch.nn.functional.grid_sample(tx, tgrid, "bilinear", "border", align_corners=False)
    ty.square().sum().backward()
    ex, et = ec.tensor(x), ec.tensor(theta)
    ex.requires_grad_(True)
    et.requires_grad_(True)
    egrid = F.affine_grid(et, (2, 3, 4, 4), align_corners=False)
    ey = F.grid_sample(ex, egrid, "bilinear", "border", align_corners=False)
    ey.square().sum().backward()
    np.testing.assert_allclose(ey.detach().numpy(), ty.detach().numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(et.grad.numpy(), tt.grad.numpy(), rtol=1e-4, atol=1e-4)


@pytest.mark.parity
def test_ctc_module_parity():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    lp = torch.tensor(rng.standard_normal((12, 3, 6))).log_softmax(2)
    tg = torch.tensor(rng.integers(1, 6, (3, 4)))
    il, tl = torch.tensor([12, 10, 6]), torch.tensor([4, 3, 2])
    want = torch.nn.CTCLoss(blank=0)(lp, tg, il, tl)
    got = nn.CTCLoss(blank=0)(
        ec.tensor(lp.numpy()), ec.tensor(tg.numpy()), ec.tensor(il.numpy()), ec.tensor(tl.numpy())
    )
    np.testing.assert_allclose(got.item(), want.item(), rtol=1e-12)
