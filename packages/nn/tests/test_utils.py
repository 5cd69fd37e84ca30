"""ember_nn.utils: gradient clipping and parameter vectors against NumPy and
PyTorch."""

import numpy as np
import pytest
from _parity import to_numpy

import ember_core as ec
import ember_nn as nn
from ember_nn import utils


def params_with_grads(rng, shapes=((3, 4), (5,), (2, 2, 2))):
    ps = []
    for s in shapes:
        p = nn.Parameter(ec.tensor(rng.standard_normal(s)))
        p.grad = ec.tensor(rng.standard_normal(s) * 3)
        ps.append(p)
    return ps


@pytest.mark.parametrize("norm_type", [2.0, 1.0, float("inf"), 3.0])
def test_clip_grad_norm_matches_numpy(rng, norm_type):
    ps = params_with_grads(rng)
    grads = [to_numpy(p.grad).copy() for p in ps]
    flat = np.concatenate([g.ravel() for g in grads])
    total = (
        np.abs(flat).max()
        if norm_type == float("inf")
        else (np.abs(flat) ** norm_type).sum() ** (1 / norm_type)
    )
    out = utils.clip_grad_norm_(iter(ps), max_norm=1.5, norm_type=norm_type)
    assert out.item() == pytest.approx(total, rel=1e-10)
    coef = min(1.0, 1.5 / (total + 1e-6))
    for p, g in zip(ps, grads):
        np.testing.assert_allclose(to_numpy(p.grad), g * coef, rtol=1e-10)


def test_clip_grad_norm_leaves_small_gradients_and_skips_missing(rng):
    ps = params_with_grads(rng)
    ps.append(nn.Parameter(ec.zeros(2)))  # no gradient
    before = [to_numpy(p.grad).copy() for p in ps[:3]]
    utils.clip_grad_norm_(ps, max_norm=1e6)
    for p, g in zip(ps, before):
        np.testing.assert_allclose(to_numpy(p.grad), g, rtol=1e-12)
    assert utils.clip_grad_norm_([], 1.0).item() == 0.0


def test_clip_grad_norm_nonfinite(rng):
    ps = params_with_grads(rng)
    ps[0].grad.fill_(float("inf"))
    with pytest.raises(RuntimeError, match="non-finite"):
        utils.clip_grad_norm_(ps, 1.0, error_if_nonfinite=True)
    with pytest.warns(UserWarning, match="empty generator"):
        utils.clip_grad_norm_((p for p in []), 1.0)
    with pytest.warns(FutureWarning):
        utils.clip_grad_norm(params_with_grads(rng), 1.0)


def test_clip_grad_value(rng):
    ps = params_with_grads(rng)
    grads = [to_numpy(p.grad).copy() for p in ps]
    utils.clip_grad_value_(ps, 0.5)
    for p, g in zip(ps, grads):
        np.testing.assert_array_equal(to_numpy(p.grad), np.clip(g, -0.5, 0.5))


def test_parameters_vector_round_trip(rng):
    m = nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 2))
    v = utils.parameters_to_vector(m.parameters())
    assert v.shape == (3 * 4 + 4 + 4 * 2 + 2,)
    np.testing.assert_array_equal(
        to_numpy(v), np.concatenate([to_numpy(p).ravel() for p in m.parameters()])
    )
    new = ec.tensor(rng.standard_normal(v.shape[0]).astype(np.float32))
    utils.vector_to_parameters(new, m.parameters())
    np.testing.assert_array_equal(
        to_numpy(utils.parameters_to_vector(m.parameters())), to_numpy(new)
    )
    with pytest.raises(TypeError, match="expected"):
        utils.vector_to_parameters([1.0], m.parameters())


@pytest.mark.parity
def test_clip_grad_norm_parity(torch, rng):
    shapes = [(3, 4), (5,), (2, 2, 2)]
    ours = params_with_grads(rng, shapes)
    theirs = [torch.nn.Parameter(torch.from_numpy(to_numpy(p).copy())) for p in ours]
    for t, p in zip(theirs, ours):
        t.grad = torch.from_numpy(to_numpy(p.grad).copy())
    a = utils.clip_grad_norm_(ours, 2.0, norm_type=2.0)
    b = torch.nn.utils.clip_grad_norm_(theirs, 2.0, norm_type=2.0)
    assert a.item() == pytest.approx(b.item(), rel=1e-12)
    for p, t in zip(ours, theirs):
        np.testing.assert_allclose(to_numpy(p.grad), t.grad.numpy(), rtol=1e-12)
