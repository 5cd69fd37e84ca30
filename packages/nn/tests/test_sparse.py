"""Embedding and EmbeddingBag: lookups against NumPy, padding_idx, max_norm,
from_pretrained, and PyTorch parity (outputs and weight gradients)."""

import numpy as np
import pytest
from _parity import check_layer, to_numpy

import ember_core as ec
import ember_nn as nn


def test_embedding_lookup_and_padding_idx(rng):
    m = nn.Embedding(10, 4, padding_idx=0)
    assert np.all(to_numpy(m.weight)[0] == 0)
    idx = np.array([[0, 3, 3], [9, 1, 0]])
    y = m(ec.tensor(idx))
    np.testing.assert_array_equal(to_numpy(y), to_numpy(m.weight)[idx])
    y.sum().backward()
    g = to_numpy(m.weight.grad)
    assert np.all(g[0] == 0), "the padding row gets no gradient"
    np.testing.assert_array_equal(g[3], np.full(4, 2.0))
    np.testing.assert_array_equal(g[9], np.ones(4))


def test_embedding_init_is_standard_normal():
    ec.manual_seed(0)
    w = to_numpy(nn.Embedding(1000, 100).weight)
    assert abs(w.mean()) < 0.01 and abs(w.std() - 1) < 0.01


def test_embedding_max_norm_renormalises_looked_up_rows():
    m = nn.Embedding(5, 3, max_norm=1.0)
    m(ec.tensor([1, 2]))
    norms = np.linalg.norm(to_numpy(m.weight), axis=1)
    assert np.all(norms[[1, 2]] <= 1.0 + 1e-6)


def test_from_pretrained():
    w = ec.tensor([[1.0, 2.0], [3.0, 4.0]])
    m = nn.Embedding.from_pretrained(w)
    assert not m.weight.requires_grad
    np.testing.assert_array_equal(to_numpy(m(ec.tensor([1]))), [[3.0, 4.0]])
    bag = nn.EmbeddingBag.from_pretrained(w, mode="sum")
    np.testing.assert_array_equal(to_numpy(bag(ec.tensor([[0, 1]]))), [[4.0, 6.0]])


def test_embedding_bag_modes_match_numpy(rng):
    m = nn.EmbeddingBag(8, 3, mode="sum")
    w = to_numpy(m.weight)
    idx = np.array([1, 2, 4, 5, 4, 3, 2, 7])
    offsets = np.array([0, 3, 3, 5])
    y = to_numpy(m(ec.tensor(idx), ec.tensor(offsets)))
    bags = [idx[0:3], idx[3:3], idx[3:5], idx[5:]]
    np.testing.assert_allclose(y, [w[b].sum(0) if len(b) else np.zeros(3) for b in bags], rtol=1e-6)
    m.mode = "max"
    y = to_numpy(m(ec.tensor(idx.reshape(2, 4))))
    np.testing.assert_allclose(y, w[idx.reshape(2, 4)].max(1), rtol=1e-6)


def test_reprs():
    assert (
        repr(nn.Embedding(10, 3, padding_idx=1, max_norm=2.0))
        == "Embedding(10, 3, padding_idx=1, max_norm=2.0)"
    )
    assert repr(nn.EmbeddingBag(10, 3)) == "EmbeddingBag(10, 3, mode='mean')"
    with pytest.raises(AssertionError, match="Padding_idx"):
        nn.Embedding(4, 2, padding_idx=4)


@pytest.mark.parity
@pytest.mark.parametrize(
    "build, args",
    [
        (lambda N: N.Embedding(10, 4), [np.array([[1, 2, 3], [9, 1, 1]])]),
        (lambda N: N.Embedding(10, 4, padding_idx=2), [np.array([2, 2, 5, 0])]),
        (lambda N: N.Embedding(10, 4, scale_grad_by_freq=True), [np.array([1, 1, 1, 4])]),
        (lambda N: N.Embedding(10, 4, max_norm=1.0), [np.array([[1, 2], [3, 1]])]),
        (lambda N: N.EmbeddingBag(10, 4), [np.array([[1, 2, 3], [4, 5, 6]])]),
        (
            lambda N: N.EmbeddingBag(10, 4, mode="sum"),
            [np.array([1, 2, 3, 4, 5]), np.array([0, 2, 2])],
        ),
        (
            lambda N: N.EmbeddingBag(10, 4, mode="max"),
            [np.array([1, 2, 3, 4, 5]), np.array([0, 2])],
        ),
        (
            lambda N: N.EmbeddingBag(10, 4, mode="sum"),
            [np.array([1, 2, 3, 4]), np.array([0, 1]), np.array([0.5, 2.0, -1.0, 1.5])],
        ),
        (
            lambda N: N.EmbeddingBag(10, 4, include_last_offset=True, padding_idx=3),
            [np.array([1, 3, 3, 4, 5]), np.array([0, 2, 5])],
        ),
    ],
)
def test_parity(torch, build, args):
    check_layer(torch, build, args)
