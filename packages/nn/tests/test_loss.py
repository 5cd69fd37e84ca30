"""Every loss module: NumPy values for the common ones, reductions, and PyTorch
parity (values and gradients) for each loss with its options."""

import numpy as np
import pytest
from _parity import check_layer, to_numpy

import ember_core as ec
import ember_nn as nn


def log_softmax(x):
    x = x - x.max(1, keepdims=True)
    return x - np.log(np.exp(x).sum(1, keepdims=True))


def test_cross_entropy_matches_numpy(rng):
    x = rng.standard_normal((6, 5))
    y = rng.integers(0, 5, 6)
    w = rng.random(5) + 0.5
    lp = log_softmax(x)
    picked = -lp[np.arange(6), y]
    assert nn.CrossEntropyLoss()(ec.tensor(x), ec.tensor(y)).item() == pytest.approx(
        picked.mean(), rel=1e-12
    )
    weighted = nn.CrossEntropyLoss(weight=ec.tensor(w))(ec.tensor(x), ec.tensor(y)).item()
    assert weighted == pytest.approx((picked * w[y]).sum() / w[y].sum(), rel=1e-12)
    per = to_numpy(nn.CrossEntropyLoss(reduction="none")(ec.tensor(x), ec.tensor(y)))
    np.testing.assert_allclose(per, picked, rtol=1e-12)
    smooth = nn.CrossEntropyLoss(label_smoothing=0.2)(ec.tensor(x), ec.tensor(y)).item()
    assert smooth == pytest.approx((0.8 * picked - 0.2 * lp.mean(1)).mean(), rel=1e-12)


def test_regression_losses_match_numpy(rng):
    a, b = rng.standard_normal((4, 3)), rng.standard_normal((4, 3))
    d = a - b
    assert nn.MSELoss()(ec.tensor(a), ec.tensor(b)).item() == pytest.approx((d**2).mean())
    assert nn.L1Loss(reduction="sum")(ec.tensor(a), ec.tensor(b)).item() == pytest.approx(
        np.abs(d).sum()
    )
    huber = np.where(np.abs(d) < 0.5, 0.5 * d**2, 0.5 * (np.abs(d) - 0.25))
    assert nn.HuberLoss(delta=0.5)(ec.tensor(a), ec.tensor(b)).item() == pytest.approx(huber.mean())
    p = 1 / (1 + np.exp(-a))
    t = (b > 0).astype(np.float64)
    bce = -(t * np.log(p) + (1 - t) * np.log(1 - p)).mean()
    assert nn.BCELoss()(ec.tensor(p), ec.tensor(t)).item() == pytest.approx(bce)
    assert nn.BCEWithLogitsLoss()(ec.tensor(a), ec.tensor(t)).item() == pytest.approx(bce)


def test_legacy_size_average_and_reduce():
    m = nn.MSELoss(size_average=False)
    assert m.reduction == "sum"
    assert nn.L1Loss(reduce=False).reduction == "none"
    assert repr(nn.CrossEntropyLoss()) == "CrossEntropyLoss()"
    assert list(nn.CrossEntropyLoss(weight=ec.ones(3)).state_dict()) == ["weight"]


def _cls_input(rng, n=5, c=4):
    return [rng.standard_normal((n, c)), rng.integers(0, c, n)]


def _bin(rng, shape=(4, 3)):
    return (rng.random(shape) > 0.5).astype(np.float64)


# (name, build, inputs, indices of the inputs that require grad)
LOSSES = [
    (
        "L1Loss",
        lambda N: N.L1Loss(),
        lambda r: [r.standard_normal((3, 4)), r.standard_normal((3, 4))],
    ),
    (
        "MSELoss-sum",
        lambda N: N.MSELoss(reduction="sum"),
        lambda r: [r.standard_normal((3, 4)), r.standard_normal((3, 4))],
    ),
    (
        "MSELoss-none",
        lambda N: N.MSELoss(reduction="none"),
        lambda r: [r.standard_normal((3, 4)), r.standard_normal((3, 4))],
    ),
    ("CrossEntropy", lambda N: N.CrossEntropyLoss(), _cls_input),
    ("CrossEntropy-smooth", lambda N: N.CrossEntropyLoss(label_smoothing=0.1), _cls_input),
    ("CrossEntropy-ignore", lambda N: N.CrossEntropyLoss(ignore_index=1), _cls_input),
    (
        "CrossEntropy-probs",
        lambda N: N.CrossEntropyLoss(),
        lambda r: [r.standard_normal((5, 4)), np.abs(r.standard_normal((5, 4)))],
    ),
    (
        "CrossEntropy-2d",
        lambda N: N.CrossEntropyLoss(reduction="sum"),
        lambda r: [r.standard_normal((2, 4, 3, 3)), r.integers(0, 4, (2, 3, 3))],
    ),
    ("NLLLoss", lambda N: N.NLLLoss(), lambda r: [np.log(r.random((5, 4))), r.integers(0, 4, 5)]),
    (
        "NLLLoss-none",
        lambda N: N.NLLLoss(reduction="none", ignore_index=2),
        lambda r: [np.log(r.random((5, 4))), r.integers(0, 4, 5)],
    ),
    ("BCELoss", lambda N: N.BCELoss(), lambda r: [r.random((4, 3)) * 0.9 + 0.05, _bin(r)]),
    (
        "BCEWithLogits",
        lambda N: N.BCEWithLogitsLoss(),
        lambda r: [r.standard_normal((4, 3)), _bin(r)],
    ),
    (
        "BCEWithLogits-none",
        lambda N: N.BCEWithLogitsLoss(reduction="none"),
        lambda r: [r.standard_normal((4, 3)), _bin(r)],
    ),
    (
        "SmoothL1",
        lambda N: N.SmoothL1Loss(beta=0.5),
        lambda r: [r.standard_normal((3, 4)), r.standard_normal((3, 4))],
    ),
    (
        "Huber",
        lambda N: N.HuberLoss(delta=0.7),
        lambda r: [r.standard_normal((3, 4)), r.standard_normal((3, 4))],
    ),
    (
        "KLDiv",
        lambda N: N.KLDivLoss(reduction="batchmean"),
        lambda r: [np.log(r.dirichlet(np.ones(4), 3)), r.dirichlet(np.ones(4), 3)],
    ),
    (
        "KLDiv-logtarget",
        lambda N: N.KLDivLoss(reduction="sum", log_target=True),
        lambda r: [np.log(r.dirichlet(np.ones(4), 3)), np.log(r.dirichlet(np.ones(4), 3))],
    ),
    (
        "PoissonNLL",
        lambda N: N.PoissonNLLLoss(),
        lambda r: [r.standard_normal((3, 4)), r.poisson(2, (3, 4)).astype(float)],
    ),
    (
        "PoissonNLL-full",
        lambda N: N.PoissonNLLLoss(log_input=False, full=True),
        lambda r: [r.random((3, 4)) + 0.5, r.poisson(3, (3, 4)).astype(float)],
    ),
    (
        "GaussianNLL",
        lambda N: N.GaussianNLLLoss(),
        lambda r: [r.standard_normal((4, 2)), r.standard_normal((4, 2)), r.random((4, 2)) + 0.1],
    ),
    (
        "GaussianNLL-full",
        lambda N: N.GaussianNLLLoss(full=True, reduction="sum"),
        lambda r: [r.standard_normal((4, 2)), r.standard_normal((4, 2)), r.random((4, 1)) + 0.1],
    ),
    (
        "SoftMargin",
        lambda N: N.SoftMarginLoss(),
        lambda r: [r.standard_normal((3, 4)), np.sign(r.standard_normal((3, 4)))],
    ),
    (
        "MarginRanking",
        lambda N: N.MarginRankingLoss(margin=0.3),
        lambda r: [r.standard_normal(6), r.standard_normal(6), np.sign(r.standard_normal(6))],
    ),
    (
        "HingeEmbedding",
        lambda N: N.HingeEmbeddingLoss(margin=0.8),
        lambda r: [r.standard_normal((3, 4)), np.sign(r.standard_normal((3, 4)))],
    ),
    (
        "CosineEmbedding",
        lambda N: N.CosineEmbeddingLoss(margin=0.2),
        lambda r: [
            r.standard_normal((5, 3)),
            r.standard_normal((5, 3)),
            np.sign(r.standard_normal(5)),
        ],
    ),
    (
        "TripletMargin",
        lambda N: N.TripletMarginLoss(),
        lambda r: [r.standard_normal((5, 3)), r.standard_normal((5, 3)), r.standard_normal((5, 3))],
    ),
    (
        "TripletMargin-swap",
        lambda N: N.TripletMarginLoss(margin=2.0, p=1, swap=True),
        lambda r: [r.standard_normal((5, 3)), r.standard_normal((5, 3)), r.standard_normal((5, 3))],
    ),
    (
        "MultiLabelSoftMargin",
        lambda N: N.MultiLabelSoftMarginLoss(),
        lambda r: [r.standard_normal((4, 3)), _bin(r)],
    ),
    ("MultiMargin", lambda N: N.MultiMarginLoss(), _cls_input),
    ("MultiMargin-p2", lambda N: N.MultiMarginLoss(p=2, margin=0.5), _cls_input),
]


# the inputs a loss is differentiated with respect to (targets are data)
GRAD_INPUTS = {
    "MarginRanking": (0, 1),
    "CosineEmbedding": (0, 1),
    "TripletMargin": (0, 1, 2),
    "TripletMargin-swap": (0, 1, 2),
    "GaussianNLL": (0, 2),
    "GaussianNLL-full": (0, 2),
    "MSELoss-sum": (0, 1),
    "L1Loss": (0, 1),
    "KLDiv": (0, 1),
    "KLDiv-logtarget": (0, 1),
}


@pytest.mark.parity
@pytest.mark.parametrize("name, build, inputs", LOSSES, ids=[c[0] for c in LOSSES])
def test_parity(torch, rng, name, build, inputs):
    check_layer(torch, build, inputs(rng), grad=GRAD_INPUTS.get(name, (0,)), rtol=1e-7, atol=1e-10)


@pytest.mark.parity
def test_weighted_losses_parity(torch, rng):
    w = rng.random(4) + 0.5
    x, y = _cls_input(rng)
    check_layer(
        torch,
        lambda N: N.CrossEntropyLoss(weight=(torch if N is torch.nn else ec).tensor(w)),
        [x, y],
    )
    check_layer(
        torch,
        lambda N: N.NLLLoss(weight=(torch if N is torch.nn else ec).tensor(w)),
        [log_softmax(x), y],
    )
    pw = rng.random(3) + 0.5
    check_layer(
        torch,
        lambda N: N.BCEWithLogitsLoss(pos_weight=(torch if N is torch.nn else ec).tensor(pw)),
        [rng.standard_normal((4, 3)), _bin(rng)],
        grad=(0,),
    )
    check_layer(
        torch,
        lambda N: N.BCELoss(weight=(torch if N is torch.nn else ec).tensor(pw)),
        [rng.random((4, 3)) * 0.9 + 0.05, _bin(rng)],
        grad=(0,),
    )


def test_hinge_embedding_loss_with_targets_other_than_plus_minus_one():
    # PyTorch keeps the input where the target is not -1 and adds the margin term
    # where it is not 1, so a target of 0.3 contributes both
    x = ec.tensor([0.5, -0.3, 2.0, 0.2])
    t = ec.tensor([1.0, -1.0, 0.3, 0.0])
    got = nn.HingeEmbeddingLoss(margin=1.0, reduction="none")(x, t)
    np.testing.assert_allclose(to_numpy(got), [0.5, 1.3, 2.0, 1.0], rtol=1e-6)
