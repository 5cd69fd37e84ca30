"""AdaptiveLogSoftmaxWithLoss: values against a NumPy reference (full softmax
factorised over head and clusters), gradients by finite differences, errors, and
PyTorch parity (output, loss, gradients, log_prob, predict, state_dict keys, repr)."""

import numpy as np
import pytest
from _parity import check_layer, to_numpy

import ember_autograd as ag
import ember_core as ec
import ember_nn as nn


def _log_softmax(z):
    z = z - z.max(axis=1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=1, keepdims=True))


def _reference_log_prob(asm, x):
    """log p(c | x) for every class, from the module's weights, in NumPy."""
    head = _log_softmax(x @ to_numpy(asm.head.weight).T)
    cols = [head[:, : asm.shortlist_size]]
    for i, (i2h, h2o) in enumerate(asm.tail):
        z = (x @ to_numpy(i2h.weight).T) @ to_numpy(h2o.weight).T
        cols.append(_log_softmax(z) + head[:, asm.shortlist_size + i : asm.shortlist_size + i + 1])
    return np.concatenate(cols, axis=1)


def test_forward_log_prob_predict_against_numpy(rng):
    asm = nn.AdaptiveLogSoftmaxWithLoss(8, 30, cutoffs=[4, 12], div_value=2.0).double()
    x = rng.standard_normal((10, 8))
    target = np.array([0, 3, 4, 11, 12, 29, 5, 2, 20, 13])
    out = asm(ec.tensor(x), ec.tensor(target))
    ref = _reference_log_prob(asm, x)
    np.testing.assert_allclose(to_numpy(out.output), ref[np.arange(10), target], atol=1e-12)
    np.testing.assert_allclose(out.loss.item(), -ref[np.arange(10), target].mean(), atol=1e-12)
    np.testing.assert_allclose(to_numpy(asm.log_prob(ec.tensor(x))), ref, atol=1e-12)
    assert to_numpy(asm.predict(ec.tensor(x))).tolist() == ref.argmax(1).tolist()
    assert type(out).__name__ == "_ASMoutput" and out._fields == ("output", "loss")
    # unbatched: 1-D input and 0-D target
    one = asm(ec.tensor(x[3]), ec.tensor(target[3]))
    assert tuple(one.output.shape) == ()
    np.testing.assert_allclose(one.output.item(), ref[3, target[3]], atol=1e-12)


def test_gradcheck(rng):
    asm = nn.AdaptiveLogSoftmaxWithLoss(
        6, 12, cutoffs=[3, 7], div_value=2.0, head_bias=True
    ).double()
    target = ec.tensor([0, 4, 8, 11, 2])
    x = ec.tensor(rng.standard_normal((5, 6)), requires_grad=True)
    assert ag.gradcheck(lambda x: asm(x, target).loss, (x,))


@pytest.mark.parametrize("cutoffs", [[], [5, 3], [0, 4], [4, 4], [4, 20], [4.5]])
def test_bad_cutoffs(cutoffs):
    with pytest.raises(ValueError, match="cutoffs"):
        nn.AdaptiveLogSoftmaxWithLoss(8, 20, cutoffs=cutoffs)


def test_bad_inputs():
    asm = nn.AdaptiveLogSoftmaxWithLoss(4, 10, cutoffs=[5])
    with pytest.raises(RuntimeError, match="same size in the batch"):
        asm(ec.randn(3, 4), ec.tensor([1, 2]))
    with pytest.raises(RuntimeError, match="Target values should be in"):
        asm(ec.randn(2, 4), ec.tensor([1, 10]))
    with pytest.raises(RuntimeError, match="multi-target not supported"):
        asm(ec.randn(2, 4), ec.tensor([[1], [2]]))


@pytest.mark.parity
@pytest.mark.parametrize("head_bias", [False, True])
def test_parity(torch, rng, head_bias):
    build = lambda n: n.AdaptiveLogSoftmaxWithLoss(  # noqa: E731
        12, 40, cutoffs=[5, 15, 30], div_value=2.0, head_bias=head_bias
    )
    x = rng.standard_normal((16, 12))
    target = rng.integers(0, 40, 16)
    em, tm = check_layer(torch, build, [x, target], grad=(0,))
    assert repr(em) == repr(tm)
    assert list(em.state_dict()) == list(tm.state_dict())
    np.testing.assert_allclose(
        to_numpy(em.log_prob(ec.tensor(x))), to_numpy(tm.log_prob(torch.tensor(x))), atol=1e-10
    )
    assert to_numpy(em.predict(ec.tensor(x))).tolist() == tm.predict(torch.tensor(x)).tolist()
