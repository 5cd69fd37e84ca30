"""_ops/shape/rearrange.py: ravel, splits, rot90, diff, repeat_interleave, diagonals, kron,
block_diag, cartesian_prod, combinations, index builders, vander — against NumPy."""

import itertools

import numpy as np
import pytest

import ember_core as ec

rng = np.random.default_rng(11)
A = rng.standard_normal((3, 4)).astype(np.float32)
B = rng.standard_normal((4, 3)).astype(np.float32)


def same(t, want, dtype=None):
    got = t.numpy()
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    assert got.shape == np.shape(want)
    if dtype is not None:
        assert t.dtype == dtype


def test_ravel_of_a_non_contiguous_tensor():
    same(ec.from_numpy(A).t().ravel(), A.T.ravel())


def test_hsplit_vsplit_dsplit():
    for got, want in zip(ec.hsplit(ec.from_numpy(A), 2), np.hsplit(A, 2)):
        same(got, want)
    for got, want in zip(ec.vsplit(ec.from_numpy(B), [1, 3]), np.vsplit(B, [1, 3])):
        same(got, want)
    c = A.reshape(1, 3, 4)
    for got, want in zip(ec.dsplit(ec.from_numpy(c), 2), np.dsplit(c, 2)):
        same(got, want)
    with pytest.raises(RuntimeError, match="divisible"):
        ec.hsplit(ec.from_numpy(A), 3)
    with pytest.raises(RuntimeError, match="at least 3"):
        ec.dsplit(ec.from_numpy(A), 2)


@pytest.mark.parametrize("k", [-1, 0, 1, 2, 3, 5])
def test_rot90(k):
    same(ec.rot90(ec.from_numpy(A), k), np.rot90(A, k))
    c = A.reshape(3, 2, 2)
    same(ec.rot90(ec.from_numpy(c), k, [2, 0]), np.rot90(c, k, (2, 0)))


def test_rot90_errors():
    with pytest.raises(RuntimeError, match="different"):
        ec.rot90(ec.from_numpy(A), 1, [1, 1])
    with pytest.raises(RuntimeError, match="dims = 3"):
        ec.rot90(ec.from_numpy(A), 1, [0, 1, 0])


def test_diff():
    x = ec.from_numpy(A)
    same(ec.diff(x), np.diff(A))
    same(ec.diff(x, n=2, dim=0), np.diff(A, n=2, axis=0))
    pre, app = A[:, :1].copy(), A[:, :2].copy()
    same(
        ec.diff(x, prepend=ec.from_numpy(pre), append=ec.from_numpy(app)),
        np.diff(A, prepend=pre, append=app),
    )
    same(x.diff(n=5), np.diff(A, n=5))
    m = A > 0
    same(ec.diff(ec.from_numpy(m)), np.diff(m), ec.bool_)
    same(ec.diff(ec.tensor([1, 4, 9])), np.array([3, 5]), ec.int64)


def test_repeat_interleave():
    x = ec.from_numpy(A)
    same(ec.repeat_interleave(x, 2), np.repeat(A, 2))
    same(x.repeat_interleave(ec.tensor([1, 0, 3]), dim=0), np.repeat(A, [1, 0, 3], axis=0))
    same(x.repeat_interleave(ec.tensor(2), dim=1, output_size=8), np.repeat(A, 2, axis=1))
    same(ec.repeat_interleave(ec.tensor([2, 0, 1])), np.array([0, 0, 2]), ec.int64)
    with pytest.raises(RuntimeError, match="same size"):
        x.repeat_interleave(ec.tensor([1, 2]), dim=0)
    with pytest.raises(RuntimeError, match="negative"):
        x.repeat_interleave(ec.tensor([1, -1, 1]), dim=0)


def test_diag_diag_embed_diagflat():
    v = A[0].copy()
    for k in (-2, 0, 1):
        same(ec.diag(ec.from_numpy(v), k), np.diag(v, k))
        same(ec.diag(ec.from_numpy(A), k), np.diag(A, k))
        same(ec.diagflat(ec.from_numpy(A), k), np.diagflat(A, k))
    got = ec.diag_embed(ec.from_numpy(A), 1, 0, 2)  # (5, 3, 5): A[i] on dims 0 and 2
    want = np.zeros((5, 3, 5), np.float32)
    for i in range(3):
        want[:, i, :] = np.diag(A[i], 1)
    same(got, want)
    with pytest.raises(RuntimeError, match="1D or 2D"):
        ec.diag(ec.zeros(2, 2, 2))


def test_fill_diagonal_():
    for shape, wrap in [((7, 3), True), ((7, 3), False), ((3, 5), False), ((3, 3, 3), False)]:
        want = np.zeros(shape, np.float32)
        np.fill_diagonal(want, 5.0, wrap=wrap)
        t = ec.zeros(*shape)
        assert t.fill_diagonal_(5.0, wrap=wrap) is t
        same(t, want)
    with pytest.raises(RuntimeError, match="equal length"):
        ec.zeros(2, 3, 2).fill_diagonal_(1.0)


def test_kron():
    same(ec.kron(ec.from_numpy(A), ec.from_numpy(B)), np.kron(A, B))
    c = B.reshape(2, 2, 3)
    same(ec.kron(ec.from_numpy(A), ec.from_numpy(c)), np.kron(A, c))
    same(ec.kron(ec.tensor([1, 2]), ec.tensor([[1], [3]])), np.kron([1, 2], [[1], [3]]), ec.int64)


def test_block_diag():
    got = ec.block_diag(ec.from_numpy(A), ec.tensor(3.0), ec.tensor([1.0, 2.0]))
    want = np.zeros((5, 7), np.float32)
    want[:3, :4] = A
    want[3, 4] = 3.0
    want[4, 5:] = [1.0, 2.0]
    same(got, want)
    assert ec.block_diag(ec.tensor([1]), ec.tensor([2.0])).dtype == ec.float32


def test_cartesian_prod_and_combinations():
    a, b, c = [1, 2, 3], [4, 5], [7, 8]
    got = ec.cartesian_prod(ec.tensor(a), ec.tensor(b), ec.tensor(c))
    same(got, np.array(list(itertools.product(a, b, c))))
    same(ec.cartesian_prod(ec.tensor(a)), np.array(a))
    x = [1.0, 2.0, 3.0, 4.0]
    same(ec.combinations(ec.tensor(x), 3), np.array(list(itertools.combinations(x, 3))))
    same(
        ec.combinations(ec.tensor(x), 2, with_replacement=True),
        np.array(list(itertools.combinations_with_replacement(x, 2))),
    )
    assert tuple(ec.combinations(ec.tensor([1.0]), 2).shape) == (0, 2)


@pytest.mark.parametrize("row, col, offset", [(4, 3, 1), (3, 5, -1), (4, 4, 0), (0, 3, 0)])
def test_tril_triu_indices(row, col, offset):
    same(ec.tril_indices(row, col, offset), np.stack(np.tril_indices(row, offset, col)), ec.int64)
    same(ec.triu_indices(row, col, offset), np.stack(np.triu_indices(row, offset, col)), ec.int64)
    assert ec.tril_indices(3, 3, dtype=ec.int32).dtype == ec.int32


def test_unravel_index():
    flat = np.array([4, 1, 7, 0])
    got = ec.unravel_index(ec.tensor(flat), (2, 4))
    for g, w in zip(got, np.unravel_index(flat, (2, 4))):
        same(g, w, ec.int64)
    (g,) = ec.unravel_index(ec.tensor(3), 5)
    same(g, np.array(3))
    with pytest.raises(ValueError, match="range"):
        ec.unravel_index(ec.tensor([8]), (2, 4))


def test_vander():
    x = np.array([1, 2, 3])
    same(ec.vander(ec.tensor(x), 4), np.vander(x, 4), ec.int64)
    v = A[0].copy()
    same(ec.vander(ec.from_numpy(v), increasing=True), np.vander(v, increasing=True))


def test_resize_as_():
    t = ec.zeros(6)
    assert t.resize_as_(ec.zeros(2, 3)) is t and tuple(t.shape) == (2, 3)
