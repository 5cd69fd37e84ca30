"""embedding, its scatter-add backward, embedding_renorm_, embedding_bag and
one_hot against NumPy references."""

import numpy as np
import pytest

import ember_core as ec

rng = np.random.default_rng(0)


def T(a):
    return ec.from_numpy(np.ascontiguousarray(a))


W = rng.standard_normal((10, 4))


@pytest.mark.parametrize("idx_dtype", [np.int64, np.int32])
def test_embedding_gathers_rows(idx_dtype):
    idx = np.array([[1, 3, 3], [0, 9, 2]], dtype=idx_dtype)
    got = ec.embedding(T(W), T(idx))
    assert got.shape == (2, 3, 4) and got.dtype is ec.float64
    np.testing.assert_array_equal(got.numpy(), W[idx])
    assert ec.embedding(T(W), ec.tensor(7)).shape == (4,)
    assert ec.embedding(T(W), ec.zeros(0, dtype=ec.int64)).shape == (0, 4)


def test_embedding_strided_tables_and_other_dtypes():
    wide = rng.standard_normal((10, 8)).astype(np.float32)
    table = T(wide)[:, 2:6]  # row stride 8, unit column stride: no copy
    idx = np.array([4, 0, 4])
    np.testing.assert_array_equal(ec.embedding(table, T(idx)).numpy(), wide[:, 2:6][idx])
    t = T(wide.T.copy()).T  # column stride 10: copied first
    np.testing.assert_array_equal(ec.embedding(t, T(idx)).numpy(), wide[idx])
    ints = np.arange(20).reshape(5, 4)
    np.testing.assert_array_equal(ec.embedding(T(ints), ec.tensor([4, 1])).numpy(), ints[[4, 1]])


def test_embedding_errors():
    with pytest.raises(IndexError, match="index out of range in self"):
        ec.embedding(T(W), ec.tensor([1, 10]))
    with pytest.raises(IndexError, match="index out of range in self"):
        ec.embedding(T(W), ec.tensor([-1]))
    with pytest.raises(RuntimeError, match="Long, Int; but got float32"):
        ec.embedding(T(W), ec.tensor([1.0]))
    with pytest.raises(RuntimeError, match="'weight' must be 2-D"):
        ec.embedding(ec.ones(3), ec.tensor([1]))


@pytest.mark.parametrize("padding_idx", [-1, 3])
@pytest.mark.parametrize("scale", [False, True])
def test_dense_backward_is_a_scatter_add(padding_idx, scale):
    idx = np.array([[1, 3, 3], [0, 9, 3]])
    g = rng.standard_normal((2, 3, 4))
    got = ec._embedding_dense_backward(T(g), T(idx), 10, padding_idx, scale).numpy()
    ref = np.zeros((10, 4))
    counts = np.bincount(idx.reshape(-1), minlength=10)
    for i, row in enumerate(idx.reshape(-1)):
        if row != padding_idx:
            ref[row] += g.reshape(-1, 4)[i] / (counts[row] if scale else 1)
    np.testing.assert_allclose(got, ref, rtol=1e-12)


def test_dense_backward_large_table_float32():
    num, dim = 10000, 64
    idx = rng.integers(0, num, 5000)
    g = rng.standard_normal((5000, dim)).astype(np.float32)
    got = ec._embedding_dense_backward(T(g), T(idx), num, -1, False).numpy()
    ref = np.zeros((num, dim), np.float64)
    np.add.at(ref, idx, g)
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3.0, float("inf")])
def test_embedding_renorm(norm_type):
    w = rng.standard_normal((6, 5)) * 2
    idx = np.array([0, 2, 2, 5])
    t = T(w.copy())
    v = t._version
    assert ec.embedding_renorm_(t, T(idx), 1.5, norm_type) is t
    assert t._version > v
    ref = w.copy()
    for r in np.unique(idx):
        n = np.linalg.norm(w[r], ord=norm_type)
        if n > 1.5:
            ref[r] = w[r] * 1.5 / (n + 1e-7)
    np.testing.assert_allclose(t.numpy(), ref, rtol=1e-12)


def np_bag(w, idx, offsets, mode, psw=None, padding_idx=None, last=False):
    bags = len(offsets) - 1 if last else len(offsets)
    ends = list(offsets[1:]) + ([] if last else [len(idx)])
    out = np.zeros((bags, w.shape[1]))
    for b in range(bags):
        rows = [k for k in range(offsets[b], ends[b]) if idx[k] != padding_idx]
        if not rows:
            continue
        vals = w[idx[rows]] * (psw[rows, None] if psw is not None else 1)
        out[b] = {"sum": vals.sum(0), "mean": vals.mean(0), "max": vals.max(0)}[mode]
    return out


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("padding_idx", [None, 3])
@pytest.mark.parametrize("last", [False, True])
def test_embedding_bag_forward(mode, padding_idx, last):
    idx = np.array([1, 3, 3, 0, 9, 2, 5])
    offsets = np.array([0, 2, 2, 5] + ([7] if last else []))
    out, o2b, size, mx = ec.embedding_bag(
        T(W), T(idx), T(offsets), False, mode, False, None, last, padding_idx
    )
    np.testing.assert_allclose(
        out.numpy(), np_bag(W, idx, offsets, mode, None, padding_idx, last), rtol=1e-12
    )
    np.testing.assert_array_equal(o2b.numpy(), [0, 0, 2, 2, 2, 3, 3])
    if mode == "max":
        assert mx.shape == (4, 4)


def test_embedding_bag_per_sample_weights_and_backward():
    idx = np.array([1, 3, 3, 0, 9])
    offsets = np.array([0, 2, 2])
    psw = rng.random(5)
    out, o2b, size, mx = ec.embedding_bag(T(W), T(idx), T(offsets), False, 0, False, T(psw))
    np.testing.assert_allclose(out.numpy(), np_bag(W, idx, offsets, "sum", psw), rtol=1e-12)
    g = rng.standard_normal((3, 4))
    gw, gp = ec._embedding_bag_backward(
        T(g), T(W), T(idx), o2b, size, mx, 0, T(psw), None, False, (True, True)
    )
    bag = np.array([0, 0, 2, 2, 2])
    ref_w = np.zeros_like(W)
    np.add.at(ref_w, idx, g[bag] * psw[:, None])
    np.testing.assert_allclose(gw.numpy(), ref_w, rtol=1e-12)
    np.testing.assert_allclose(gp.numpy(), (g[bag] * W[idx]).sum(1), rtol=1e-12)


@pytest.mark.parametrize("mode", ["mean", "max"])
def test_embedding_bag_backward_mean_and_max(mode):
    idx = np.array([1, 3, 3, 0, 9])
    offsets = np.array([0, 2, 2])
    out, o2b, size, mx = ec.embedding_bag(T(W), T(idx), T(offsets), False, mode)
    g = rng.standard_normal((3, 4))
    gw, _ = ec._embedding_bag_backward(
        T(g), T(W), T(idx), o2b, size, mx, mode, None, None, False, (True, False)
    )
    ref = np.zeros_like(W)
    bags = [[0, 1], [], [2, 3, 4]]
    for b, pos in enumerate(bags):
        for j in range(4):
            if not pos:
                continue
            if mode == "mean":
                for k in pos:
                    ref[idx[k], j] += g[b, j] / len(pos)
            else:
                best = max(pos, key=lambda k: W[idx[k], j])
                ref[idx[best], j] += g[b, j]
    np.testing.assert_allclose(gw.numpy(), ref, rtol=1e-12)


def test_embedding_bag_errors():
    with pytest.raises(NotImplementedError, match="only supported for mode='sum'"):
        ec.embedding_bag(
            T(W), ec.tensor([1, 2]), ec.tensor([0]), False, 1, False, ec.ones(2, dtype=ec.float64)
        )
    with pytest.raises(
        RuntimeError, match=r"offsets\[-1\] can not be greater than input's length 2"
    ):
        ec.embedding_bag(T(W), ec.tensor([1, 2]), ec.tensor([0, 3]))
    with pytest.raises(RuntimeError, match=r"offsets\[0\] has to be 0"):
        ec.embedding_bag(T(W), ec.tensor([1, 2]), ec.tensor([1]))
    with pytest.raises(
        RuntimeError,
        match=r"Index 1 of input takes value 20 which is not in the valid range \[0, 10\)",
    ):
        ec.embedding_bag(T(W), ec.tensor([1, 20]), ec.tensor([0]))
    with pytest.raises(ValueError, match="mode"):
        ec.embedding_bag(T(W), ec.tensor([1, 2]), ec.tensor([0]), False, "median")


def test_one_hot():
    t = np.array([[0, 2], [1, 4]])
    got = ec.one_hot(T(t))
    assert got.dtype is ec.int64 and got.shape == (2, 2, 5)
    np.testing.assert_array_equal(got.numpy(), np.eye(5, dtype=np.int64)[t])
    assert ec.one_hot(T(t), 7).shape == (2, 2, 7)
    assert ec.one_hot(ec.zeros(0, dtype=ec.int64), 3).shape == (0, 3)
    with pytest.raises(RuntimeError, match="non-negative"):
        ec.one_hot(ec.tensor([-1, 2]))
    with pytest.raises(RuntimeError, match="smaller than num_classes"):
        ec.one_hot(ec.tensor([1, 3]), 3)
    with pytest.raises(RuntimeError, match="LongTensor"):
        ec.one_hot(ec.tensor([1.0]))
    with pytest.raises(RuntimeError, match="empty tensor"):
        ec.one_hot(ec.zeros(0, dtype=ec.int64))


@pytest.mark.parity
def test_parity_with_torch():
    torch = pytest.importorskip("torch")
    w = rng.standard_normal((12, 6)).astype(np.float32)
    idx = rng.integers(0, 12, 20)
    offsets = np.array([0, 3, 3, 10, 17])
    tw = torch.from_numpy(w)
    np.testing.assert_array_equal(
        ec.embedding(T(w), T(idx)).numpy(), torch.embedding(tw, torch.from_numpy(idx)).numpy()
    )
    psw = rng.random(20).astype(np.float32)
    for mode in (0, 1, 2):
        for pad in (None, int(idx[4])):
            p = psw if mode == 0 else None
            ours = ec.embedding_bag(
                T(w),
                T(idx),
                T(offsets),
                False,
                mode,
                False,
                None if p is None else T(p),
                False,
                pad,
            )
            theirs = torch.embedding_bag(
                tw,
                torch.from_numpy(idx),
                torch.from_numpy(offsets),
                False,
                mode,
                False,
                None if p is None else torch.from_numpy(p),
                False,
                pad,
            )
            np.testing.assert_allclose(ours[0].numpy(), theirs[0].numpy(), rtol=1e-6)
    t = rng.integers(0, 6, (3, 4))
    np.testing.assert_array_equal(
        ec.one_hot(T(t), 6).numpy(), torch.nn.functional.one_hot(torch.from_numpy(t), 6).numpy()
    )
