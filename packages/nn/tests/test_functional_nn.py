"""ember_nn.functional's normalization, loss, dropout and embedding wrappers
(argument checks and conventions of torch.nn.functional) and the layers
built on them; -m parity compares whole modules with PyTorch's."""

import warnings

import numpy as np
import pytest

import ember_core as ec
import ember_nn as nn
import ember_nn.functional as F

rng = np.random.default_rng(0)


def T(a):
    return ec.from_numpy(np.ascontiguousarray(a))


def test_batch_norm_functional_order_and_checks():
    x = T(rng.standard_normal((8, 3)).astype(np.float32))
    rm, rv = ec.zeros(3), ec.ones(3)
    y = F.batch_norm(x, rm, rv, ec.ones(3) * 2, ec.zeros(3) + 1, training=True)
    xn = x.numpy()
    np.testing.assert_allclose(
        y.numpy(), 2 * (xn - xn.mean(0)) / np.sqrt(xn.var(0) + 1e-5) + 1, rtol=1e-4, atol=1e-5
    )
    np.testing.assert_allclose(rm.numpy(), 0.1 * xn.mean(0), rtol=1e-5, atol=1e-7)
    with pytest.raises(ValueError, match="Expected more than 1 value per channel when training"):
        F.batch_norm(ec.ones(1, 3), None, None, training=True)
    with pytest.raises(ValueError, match="eps must be positive"):
        F.batch_norm(x, None, None, training=True, eps=0.0)
    with pytest.raises(ValueError, match="Expected more than 1 spatial element when training"):
        F.instance_norm(ec.ones(2, 3, 1))
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        F.group_norm(ec.ones(3), 1)


def test_norm_layers_train_and_eval():
    bn = nn.BatchNorm2d(3)
    x = T(rng.standard_normal((4, 3, 5, 5)).astype(np.float32))
    bn(x)
    assert bn.num_batches_tracked.item() == 1
    bn.eval()
    y = bn(x).detach().numpy()
    ref = (x.numpy() - bn.running_mean.numpy().reshape(1, 3, 1, 1)) / np.sqrt(
        bn.running_var.numpy().reshape(1, 3, 1, 1) + 1e-5
    )
    np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-5)
    ln = nn.LayerNorm(5)
    assert ln(x).shape == x.shape
    assert nn.GroupNorm(3, 3)(x).shape == x.shape
    assert nn.InstanceNorm2d(3)(x).shape == x.shape
    assert nn.RMSNorm([5, 5])(x).shape == x.shape


def test_losses_functional():
    x = T(rng.standard_normal((4, 5)).astype(np.float32))
    t = ec.tensor([1, 0, 4, 2])
    np.testing.assert_allclose(F.cross_entropy(x, t).item(), ec.cross_entropy(x, t).item())
    np.testing.assert_allclose(
        F.nll_loss(F.log_softmax(x, 1), t, reduction="sum").item(),
        ec.cross_entropy(x, t, reduction="sum").item(),
        rtol=1e-6,
    )
    assert F.cross_entropy(x, t, reduce=False).shape == (4,)  # legacy arguments
    y = T(rng.standard_normal((4, 5)).astype(np.float32))
    w = T(rng.random((4, 5)).astype(np.float32))
    ref = ((x.numpy() - y.numpy()) ** 2 * w.numpy()).sum() / w.numpy().sum()
    np.testing.assert_allclose(F.mse_loss(x, y, weight=w).item(), ref, rtol=1e-5)
    np.testing.assert_allclose(
        F.huber_loss(x, y, weight=w, reduction="sum").item(),
        (ec.huber_loss(x, y, "none") * w).sum().item(),
        rtol=1e-5,
    )
    with pytest.warns(UserWarning, match="target size"):
        F.l1_loss(x, y[:1])
    lp = F.log_softmax(x, 1)
    p = F.softmax(y, 1)
    np.testing.assert_allclose(
        F.kl_div(lp, p, reduction="batchmean").item(), ec.kl_div(lp, p, "sum").item() / 4, rtol=1e-6
    )
    with pytest.raises(ValueError, match="Target size"):
        F.binary_cross_entropy_with_logits(x, y[:2])
    assert nn.CrossEntropyLoss(label_smoothing=0.1)(x, t).shape == ()
    assert nn.BCEWithLogitsLoss(pos_weight=ec.ones(5))(x, p).shape == ()


def test_dropout_functional_and_modules():
    x = ec.randn(4, 3, 6, 6)
    with pytest.raises(ValueError, match="between 0 and 1"):
        F.dropout(x, 1.5)
    assert F.dropout(x, 0.5, training=False) is x
    y = x.clone()
    ec.manual_seed(0)
    assert F.dropout(y, 0.5, inplace=True) is y
    with pytest.raises(RuntimeError, match="dropout1d: Expected 2D or 3D input"):
        F.dropout1d(x, 0.5)
    assert F.dropout1d(ec.randn(3, 7), 0.5).shape == (3, 7)  # unbatched
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        F.dropout2d(x, 0.5)
    with pytest.warns(UserWarning, match="dropout2d"):
        F.dropout2d(ec.randn(2, 3, 4), 0.5)
    assert F.dropout3d(ec.randn(3, 2, 2, 2), 0.5).shape == (3, 2, 2, 2)
    u = ec.randn(8, 50) + 10
    before = u.numpy().copy()
    ec.manual_seed(1)
    assert F.dropout1d(u, 0.5, inplace=True) is u  # unbatched (C, L), in place
    for row, orig in zip(u.numpy(), before):
        assert (row == 0).all() or np.allclose(row, 2 * orig)
    m = nn.Dropout2d(0.5)
    m.eval()
    assert m(x) is x
    assert nn.AlphaDropout(0.2)(x).shape == x.shape


def test_embedding_functional_and_modules():
    w = T(rng.standard_normal((10, 3)))
    idx = ec.tensor([[1, 9], [9, 0]])
    np.testing.assert_array_equal(
        F.embedding(idx, w, padding_idx=-1).numpy(), w.numpy()[idx.numpy()]
    )
    with pytest.raises(AssertionError, match="Padding_idx"):
        F.embedding(idx, w, padding_idx=10)
    big = T(np.full((4, 2), 3.0))
    F.embedding(ec.tensor([0, 0, 2]), big, max_norm=1.0)
    norms = np.linalg.norm(big.numpy(), axis=1)
    np.testing.assert_allclose(norms[[0, 2]], 1.0, rtol=1e-6)
    np.testing.assert_allclose(norms[[1, 3]], np.sqrt(18))
    bags = F.embedding_bag(ec.tensor([[1, 2], [3, 4]]), w, mode="sum")
    np.testing.assert_allclose(bags.numpy(), w.numpy()[[1, 3]] + w.numpy()[[2, 4]])
    with pytest.raises(ValueError, match="offsets has to be None"):
        F.embedding_bag(ec.tensor([[1, 2]]), w, ec.tensor([0]))
    with pytest.raises(ValueError, match="mode has to be one of"):
        F.embedding_bag(ec.tensor([1, 2]), w, ec.tensor([0]), mode="median")
    emb = nn.Embedding(10, 3, padding_idx=0)
    emb(idx).sum().backward()
    assert (emb.weight.grad.numpy()[0] == 0).all()
    bag = nn.EmbeddingBag(10, 3, mode="max")
    assert bag(ec.tensor([1, 2, 3]), ec.tensor([0, 1])).shape == (2, 3)
    assert F.one_hot(ec.tensor([0, 2]), 3).tolist() == [[1, 0, 0], [0, 0, 1]]


def test_recurrent_layers_train():
    ec.manual_seed(0)
    lstm = nn.LSTM(3, 8, batch_first=True)
    head = nn.Linear(8, 1)
    opt = nn.optim.Adam(list(lstm.parameters()) + list(head.parameters()), lr=0.05)
    x = ec.randn(16, 5, 3)
    y = x.sum((1, 2)).reshape(16, 1)
    losses = []
    for _ in range(60):
        opt.zero_grad()
        out, (h, c) = lstm(x)
        loss = F.mse_loss(head(out[:, -1]), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.2 * losses[0]
    gru = nn.GRU(3, 4, num_layers=2, bidirectional=True)
    out, h = gru(ec.randn(5, 2, 3))
    assert out.shape == (5, 2, 8) and h.shape == (4, 2, 4)
    cell = nn.LSTMCell(3, 4)
    hy, cy = cell(ec.randn(3))
    assert hy.shape == (4,) and cy.shape == (4,)


def test_activation_modules():
    x = T(rng.standard_normal((2, 3, 4)).astype(np.float32))
    for m in (
        nn.LeakyReLU(0.2),
        nn.ELU(),
        nn.CELU(0.5),
        nn.Hardtanh(),
        nn.ReLU6(),
        nn.Threshold(0.1, 2.0),
        nn.Hardshrink(),
        nn.Softshrink(),
        nn.Tanhshrink(),
        nn.PReLU(3),
        nn.RReLU(),
        nn.Softmin(1),
        nn.LogSoftmax(-1),
    ):
        assert m(x).shape == x.shape, type(m).__name__
    assert nn.GLU()(x).shape == (2, 3, 2)
    y = x.clone()
    assert nn.ELU(inplace=True)(y) is y


@pytest.mark.parity
def test_module_parity_with_torch():
    torch = pytest.importorskip("torch")

    def copy_params(ours, theirs):
        with torch.no_grad():
            for p, q in zip(ours.parameters(), theirs.parameters()):
                data = rng.standard_normal(tuple(q.shape)).astype(np.float32) * 0.5
                p.data = T(data)
                q.copy_(torch.from_numpy(data))

    for ours, theirs, shape in [
        (nn.BatchNorm1d(6), torch.nn.BatchNorm1d(6), (8, 6)),
        (nn.GroupNorm(2, 4), torch.nn.GroupNorm(2, 4), (3, 4, 6)),
        (nn.LayerNorm([4, 6]), torch.nn.LayerNorm([4, 6]), (3, 4, 6)),
        (
            nn.LSTM(4, 6, num_layers=2, batch_first=True),
            torch.nn.LSTM(4, 6, num_layers=2, batch_first=True),
            (3, 7, 4),
        ),
        (nn.GRU(4, 6, bidirectional=True), torch.nn.GRU(4, 6, bidirectional=True), (7, 3, 4)),
    ]:
        copy_params(ours, theirs)
        x = rng.standard_normal(shape).astype(np.float32)
        xe, xt = T(x).requires_grad_(), torch.from_numpy(x).requires_grad_()
        ye, yt = ours(xe), theirs(xt)
        if isinstance(ye, tuple):
            ye, yt = ye[0], yt[0]
        (ye * ye).sum().backward()
        (yt * yt).sum().backward()
        np.testing.assert_allclose(ye.detach().numpy(), yt.detach().numpy(), rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy(), rtol=1e-3, atol=1e-4)
        for p, q in zip(ours.parameters(), theirs.parameters()):
            np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-3, atol=1e-4)
