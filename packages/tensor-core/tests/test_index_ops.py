"""Index ops (_ops/indexing/index_ops.py) against straightforward NumPy references: index_select,
gather, scatter and its reductions, index_add/copy/fill/put, masked_fill/select/
scatter, take, take_along_dim, put, nonzero, argwhere, where(cond)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ember_core as ec

DTYPES = [ec.float32, ec.float64, ec.float16, ec.int64, ec.int32, ec.int16, ec.int8, ec.uint8]
rng = np.random.default_rng(1234)


def rand(shape, dtype=ec.float32):
    a = (
        rng.integers(0, 50, size=shape)
        if dtype.is_floating_point is False
        else rng.standard_normal(shape)
    )
    return ec.tensor(a).to(dtype)


def np_of(t):
    return t.float().numpy() if t.dtype is ec.bfloat16 else t.numpy()


# ---------------------------------------------------------- references


def ref_gather(a, dim, idx):
    out = np.empty(idx.shape, a.dtype)
    for pos in np.ndindex(*idx.shape):
        src = list(pos)
        src[dim] = idx[pos]
        out[pos] = a[tuple(src)]
    return out


def ref_scatter(a, dim, idx, src, op=None):
    out = a.copy()
    for pos in np.ndindex(*idx.shape):
        dst = list(pos)
        dst[dim] = idx[pos]
        dst = tuple(dst)
        v = src[pos] if isinstance(src, np.ndarray) else src
        if op is None:
            out[dst] = v
        elif op in ("add", "sum"):
            out[dst] += v
        elif op in ("multiply", "prod"):
            out[dst] *= v
        elif op == "amax":
            out[dst] = max(out[dst], v)
        elif op == "amin":
            out[dst] = min(out[dst], v)
    return out


def ref_scatter_reduce(a, dim, idx, src, reduce, include_self):
    out = a.copy()
    groups = {}
    for pos in np.ndindex(*idx.shape):
        dst = list(pos)
        dst[dim] = idx[pos]
        groups.setdefault(tuple(dst), []).append(src[pos])
    for dst, vals in groups.items():
        vals = ([a[dst]] if include_self else []) + vals
        if reduce == "sum":
            r = sum(vals)
        elif reduce == "prod":
            r = np.prod(vals)
        elif reduce == "amax":
            r = max(vals)
        elif reduce == "amin":
            r = min(vals)
        else:
            s = sum(vals)
            r = s / len(vals) if a.dtype.kind == "f" else s // len(vals)
        out[dst] = r
    return out


# ----------------------------------------------------------- index_select


@pytest.mark.parametrize("dtype", DTYPES + [ec.bool, ec.bfloat16])
def test_index_select_dtypes(dtype):
    x = rand((4, 5, 3), ec.float32).to(dtype)
    idx = ec.tensor([4, 0, 0, 2])  # negative indices are refused (as PyTorch)
    for dim, size in ((1, 5), (0, 4)):
        i = idx.clamp(0, size - 1)
        np.testing.assert_array_equal(
            np_of(x.index_select(dim, i)), np.take(np_of(x), i.numpy(), axis=dim)
        )


def test_index_select_non_contiguous_and_0d():
    x = rand((6, 4)).t()[:, ::2]  # (4, 3) non-contiguous
    idx = ec.tensor([2, 0, 2, 1, 3])[::2]
    np.testing.assert_array_equal(x.index_select(0, idx).numpy(), x.numpy()[idx.numpy()])
    assert ec.tensor(5.0).index_select(0, ec.tensor(0)).item() == 5.0
    assert ec.arange(3.0).index_select(0, ec.tensor(1)).tolist() == [1.0]
    out = ec.empty(0)
    ec.index_select(ec.arange(4.0), 0, ec.tensor([3, 1]), out=out)
    assert out.tolist() == [3.0, 1.0]


def test_index_select_errors():
    x = ec.zeros(3, 4)
    with pytest.raises(IndexError, match="index 3 is out of bounds for dimension 0 with size 3"):
        x.index_select(0, ec.tensor([3]))
    with pytest.raises(IndexError, match="Index is supposed to be a vector"):
        x.index_select(0, ec.tensor([[0]]))
    with pytest.raises(RuntimeError, match="Expected dtype int64 for index"):
        x.index_select(0, ec.tensor([0.0]))
    with pytest.raises(IndexError, match="Dimension out of range"):
        x.index_select(2, ec.tensor([0]))


# ------------------------------------------------------------------ gather


@pytest.mark.parametrize("dtype", DTYPES)
def test_gather_dtypes(dtype):
    x = rand((3, 4, 5), dtype)
    for dim in range(3):
        ishape = [2, 3, 4]
        idx = rng.integers(0, x.shape[dim], size=ishape)
        got = x.gather(dim, ec.from_numpy(idx))
        np.testing.assert_array_equal(got.numpy(), ref_gather(x.numpy(), dim, idx))


def test_gather_negative_dim_non_contiguous_and_0d():
    x = rand((5, 4)).t()  # (4, 5)
    idx = ec.from_numpy(rng.integers(0, 5, size=(4, 7)))[:, ::2]
    np.testing.assert_array_equal(x.gather(-1, idx).numpy(), ref_gather(x.numpy(), 1, idx.numpy()))
    assert ec.gather(ec.tensor(5.0), 0, ec.tensor(0)).item() == 5.0
    assert tuple(ec.zeros(2, 3).gather(1, ec.zeros(2, 0, dtype=ec.int64)).shape) == (2, 0)


def test_gather_errors():
    x = ec.zeros(2, 2)
    with pytest.raises(RuntimeError, match="Size does not match at dimension 1"):
        x.gather(0, ec.zeros(2, 3, dtype=ec.int64))
    with pytest.raises(RuntimeError, match="same number of dimensions"):
        x.gather(0, ec.zeros(2, dtype=ec.int64))
    with pytest.raises(RuntimeError, match="index 5 is out of bounds for dimension 0 with size 2"):
        x.gather(0, ec.tensor([[5, 0]]))
    with pytest.raises(IndexError):  # also an IndexError
        x.gather(0, ec.tensor([[5, 0]]))


# ----------------------------------------------------------------- scatter


@pytest.mark.parametrize("dtype", [ec.float32, ec.float64, ec.int64, ec.int32, ec.uint8])
def test_scatter_and_scatter_add(dtype):
    x = rand((4, 5), dtype)
    idx = rng.integers(0, 4, size=(3, 5))
    src = rand((3, 6), dtype)
    np.testing.assert_array_equal(
        x.scatter(0, ec.from_numpy(idx), src).numpy(),
        ref_scatter(x.numpy(), 0, idx, src.numpy()[:, :5]),
    )
    np.testing.assert_array_equal(
        x.scatter_add(0, ec.from_numpy(idx), src).numpy(),
        ref_scatter(x.numpy(), 0, idx, src.numpy()[:, :5], "add"),
    )
    np.testing.assert_array_equal(
        x.scatter(1, ec.tensor([[0], [4]]), 7).numpy()[[0, 1], [0, 4]], [7, 7]
    )


def test_scatter_inplace_reduce_forms():
    x = ec.zeros(2, 3)
    with pytest.warns(
        UserWarning, match="reduce argument of torch.scatter with Tensor src is deprecated"
    ):
        r = x.scatter_(
            1, ec.tensor([[0, 0], [2, 2]]), ec.tensor([[1.0, 2.0], [3.0, 4.0]]), reduce="add"
        )
    assert r is x
    np.testing.assert_array_equal(x.numpy(), [[3, 0, 0], [0, 0, 7]])
    y = ec.full((2, 3), 2.0)
    y.scatter_(1, ec.tensor([[0, 0]]), 3.0, reduce="multiply")
    np.testing.assert_array_equal(y.numpy(), [[18, 2, 2], [2, 2, 2]])
    z = ec.zeros(3)
    v = z._version
    z.scatter_add_(0, ec.tensor([1, 1, 2]), ec.tensor([1.0, 1.0, 1.0]))
    assert z.tolist() == [0.0, 2.0, 1.0] and z._version > v


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("dtype", [ec.float64, ec.int64])
def test_scatter_reduce(reduce, include_self, dtype):
    x = rand((4, 3), dtype)
    idx = rng.integers(0, 4, size=(5, 3))
    src = rand((5, 3), dtype)
    got = x.scatter_reduce(0, ec.from_numpy(idx), src, reduce, include_self=include_self)
    ref = ref_scatter_reduce(x.numpy(), 0, idx, src.numpy(), reduce, include_self)
    np.testing.assert_allclose(got.numpy(), ref, rtol=1e-12)


def test_scatter_errors():
    x = ec.zeros(2, 2)
    with pytest.raises(RuntimeError, match="to be no larger size than src"):
        x.scatter_(0, ec.zeros(2, 2, dtype=ec.int64), ec.ones(1, 2))
    with pytest.raises(RuntimeError, match="Expected self.dtype to be equal to src.dtype"):
        x.scatter_(0, ec.zeros(2, 2, dtype=ec.int64), ec.ones(2, 2, dtype=ec.int64))
    with pytest.raises(
        RuntimeError, match="reduce argument must be either sum, prod, mean, amax or amin"
    ):
        x.scatter_reduce(0, ec.zeros(2, 2, dtype=ec.int64), ec.ones(2, 2), "max")
    with pytest.raises(RuntimeError, match="index 2 is out of bounds"):
        x.scatter_(0, ec.tensor([[2, 0]]), 1.0)
    assert x.sum().item() == 0  # a failed scatter writes nothing


# ---------------------------------------------------- index_add/copy/fill


@pytest.mark.parametrize("dtype", [ec.float32, ec.float64, ec.float16, ec.int64, ec.int8])
def test_index_add(dtype):
    x = rand((5, 3), dtype)
    idx = ec.tensor([0, 4, 0, 2])
    src = rand((4, 3), dtype)
    ref = x.numpy().astype(np.float64)
    np.add.at(ref, idx.numpy(), 2 * src.numpy().astype(np.float64))
    got = x.index_add(0, idx, src, alpha=2)
    np.testing.assert_allclose(
        got.numpy().astype(np.float64),
        ref.astype(x.numpy().dtype),
        rtol=1e-2 if dtype is ec.float16 else 1e-6,
    )
    before = x.numpy().copy()
    x.index_add_(1, ec.tensor([2, 2]), ec.ones(5, 2, dtype=dtype))
    expected = before.copy()
    expected[:, 2] += 2
    np.testing.assert_allclose(x.numpy(), expected, rtol=1e-3 if dtype is ec.float16 else 1e-6)


def test_index_add_matches_numpy_add_at_large():
    n = 1 << 16
    a = rng.standard_normal(n).astype(np.float32)
    idx = rng.integers(0, n // 4, size=n)
    y = ec.zeros(n // 4).index_add_(0, ec.from_numpy(idx), ec.from_numpy(a))
    ref = np.zeros(n // 4, np.float32)
    np.add.at(ref, idx, a)
    np.testing.assert_allclose(y.numpy(), ref, rtol=1e-5, atol=1e-5)
    m = ec.zeros(64, 1000).index_add_(0, ec.from_numpy(idx[:300] % 64), ec.ones(300, 1000))
    np.testing.assert_array_equal(m.numpy()[:, 0], np.bincount(idx[:300] % 64, minlength=64))


def test_index_copy_and_fill():
    x = ec.zeros(4, 3)
    x.index_copy_(0, ec.tensor([3, 0]), ec.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]))
    np.testing.assert_array_equal(x.numpy(), [[4, 5, 6], [0, 0, 0], [0, 0, 0], [1, 2, 3]])
    y = x.index_fill(1, ec.tensor([0, 2]), -1)
    np.testing.assert_array_equal(y.numpy()[:, [0, 2]], -np.ones((4, 2)))
    np.testing.assert_array_equal(y.numpy()[:, 1], x.numpy()[:, 1])
    x.index_fill_(0, ec.tensor(1), ec.tensor(9.0))
    assert x[1].tolist() == [9.0, 9.0, 9.0]


def test_index_add_errors():
    x = ec.zeros(2, 2)
    with pytest.raises(
        RuntimeError, match=r"Number of indices \(3\) should be equal to source.size\(dim\)"
    ):
        x.index_add_(0, ec.tensor([0, 1, 1]), ec.ones(2, 2))
    with pytest.raises(RuntimeError, match="must have the same scalar type"):
        x.index_add_(0, ec.tensor([0]), ec.ones(1, 2, dtype=ec.int64))
    with pytest.raises(IndexError, match="out of bounds"):
        x.index_add_(0, ec.tensor([2]), ec.ones(1, 2))
    with pytest.raises(RuntimeError, match="0-dimensional value tensor"):
        x.index_fill_(0, ec.tensor([0]), ec.ones(2))


# --------------------------------------------------------------- index_put


def test_index_put_forms():
    x = ec.zeros(3, 4)
    r = ec.index_put(x, (ec.tensor([0, 2]), ec.tensor([1, 3])), ec.tensor([5.0, 6.0]))
    assert x.sum().item() == 0
    ref = np.zeros((3, 4), np.float32)
    ref[[0, 2], [1, 3]] = [5, 6]
    np.testing.assert_array_equal(r.numpy(), ref)
    x.index_put_(
        (None, ec.tensor([1, 1])), ec.tensor([1.0, 2.0, 3.0]).reshape(3, 1), accumulate=True
    )
    np.testing.assert_array_equal(x.numpy()[:, 1], [2.0, 4.0, 6.0])
    x.index_put_((x > 3,), ec.tensor(0.0))
    assert x.max().item() == 2.0


def test_index_put_errors():
    x = ec.zeros(3)
    with pytest.raises(
        RuntimeError, match="Index put requires the source and destination dtypes match"
    ):
        x.index_put_((ec.tensor([0]),), ec.ones(1, dtype=ec.int64))
    with pytest.raises(IndexError, match="too many indices"):
        x.index_put_((ec.tensor([0]), ec.tensor([0])), ec.ones(1))


# ------------------------------------------------------------------ masks


@pytest.mark.parametrize("dtype", DTYPES + [ec.bool])
def test_masked_fill_and_select(dtype):
    x = rand((3, 4), ec.float32).to(dtype)
    m = rng.random((3, 4)) > 0.5
    a = x.numpy()
    got = x.masked_fill(ec.from_numpy(m), 1)
    ref = a.copy()
    ref[m] = 1
    np.testing.assert_array_equal(got.numpy(), ref)
    np.testing.assert_array_equal(x.masked_select(ec.from_numpy(m)).numpy(), a[m])
    # broadcasting mask rows
    row = ec.from_numpy(m[0])
    np.testing.assert_array_equal(x.masked_select(row).numpy(), a[np.broadcast_to(m[0], a.shape)])
    x.masked_fill_(row, 0)
    ref = a.copy()
    ref[:, m[0]] = 0
    np.testing.assert_array_equal(x.numpy(), ref)


def test_masked_fill_broadcasts_out_of_place_and_value_tensor():
    r = ec.masked_fill(ec.zeros(3), ec.tensor([[True], [False]]), 1.0)
    np.testing.assert_array_equal(r.numpy(), [[1, 1, 1], [0, 0, 0]])
    x = ec.zeros(2, dtype=ec.int64).masked_fill(ec.tensor([True, False]), ec.tensor(2.9))
    assert x.tolist() == [2, 0]


def test_masked_scatter():
    x = ec.zeros(3, 3)
    m = ec.tensor([[True, False, True], [False, False, False], [False, True, False]])
    src = ec.arange(1.0, 10.0)
    r = x.masked_scatter(m, src)
    np.testing.assert_array_equal(r.numpy(), [[1, 0, 2], [0, 0, 0], [0, 3, 0]])
    x.masked_scatter_(ec.tensor([False, True, True]), src)
    np.testing.assert_array_equal(x.numpy(), [[0, 1, 2], [0, 3, 4], [0, 5, 6]])


def test_mask_errors():
    x = ec.zeros(2, 2)
    with pytest.raises(RuntimeError, match="only supports boolean masks"):
        x.masked_fill_(ec.ones(2, 2, dtype=ec.uint8), 1)
    with pytest.raises(RuntimeError, match="0-dimensional value tensor"):
        x.masked_fill_(ec.ones(2, 2, dtype=ec.bool), ec.ones(2))
    with pytest.raises(RuntimeError, match="Number of elements of source < number of ones in mask"):
        x.masked_scatter_(ec.ones(2, 2, dtype=ec.bool), ec.ones(3))
    with pytest.raises(RuntimeError, match="broadcastable"):
        x.masked_fill_(ec.ones(3, dtype=ec.bool), 1)
    with pytest.raises(RuntimeError, match="expected BoolTensor"):
        x.masked_select(ec.ones(2, 2))


# -------------------------------------------------------------- take, put


def test_take_and_take_along_dim():
    x = rand((3, 4)).t()  # non-contiguous
    idx = ec.tensor([[0, 11], [5, -1]])
    np.testing.assert_array_equal(x.take(idx).numpy(), np.take(x.numpy(), idx.numpy()))
    i2 = rng.integers(0, 3, size=(4, 2))
    np.testing.assert_array_equal(
        ec.take_along_dim(x, ec.from_numpy(i2), 1).numpy(), np.take_along_axis(x.numpy(), i2, 1)
    )
    np.testing.assert_array_equal(
        ec.take_along_dim(x, ec.tensor([5, 0])).numpy(),
        np.take_along_axis(x.numpy().reshape(-1), np.array([5, 0]), 0),
    )
    # broadcasting of the non-indexed dims
    b = ec.take_along_dim(ec.arange(6.0).reshape(2, 3), ec.tensor([[0, 1]]), dim=1)
    np.testing.assert_array_equal(b.numpy(), [[0, 1], [3, 4]])
    with pytest.raises(IndexError, match="out of bounds"):
        x.take(ec.tensor([12]))


def test_put():
    x = ec.zeros(2, 3)
    x.put_(ec.tensor([0, 5, 5]), ec.tensor([1.0, 2.0, 3.0]), accumulate=True)
    np.testing.assert_array_equal(x.numpy(), [[1, 0, 0], [0, 0, 5]])
    y = ec.zeros(3, 2).t()  # non-contiguous: positions in row-major order of the view
    y.put_(ec.tensor([1, 3]), ec.tensor([7.0, 8.0]))
    np.testing.assert_array_equal(y.numpy(), [[0, 7, 0], [8, 0, 0]])
    r = ec.put(ec.zeros(3), ec.tensor([2]), ec.tensor([4.0]))
    assert r.tolist() == [0.0, 0.0, 4.0]
    with pytest.raises(
        IndexError, match="Expected source and index to have the same number of elements"
    ):
        ec.zeros(2).put_(ec.tensor([0, 1]), ec.ones(3))


# ---------------------------------------------------------------- nonzero


@pytest.mark.parametrize("dtype", DTYPES + [ec.bool, ec.bfloat16])
def test_nonzero_dtypes(dtype):
    a = (rng.random((3, 4, 2)) > 0.6).astype(np.float32) * rng.integers(1, 5, size=(3, 4, 2))
    x = ec.tensor(a).to(dtype)
    np.testing.assert_array_equal(x.nonzero().numpy(), np.argwhere(a))
    np.testing.assert_array_equal(ec.argwhere(x).numpy(), np.argwhere(a))
    for got, ref in zip(x.nonzero(as_tuple=True), np.nonzero(a)):
        np.testing.assert_array_equal(got.numpy(), ref)
    for got, ref in zip(ec.where(x), np.nonzero(a)):
        np.testing.assert_array_equal(got.numpy(), ref)


def test_nonzero_special_values_and_shapes():
    x = ec.tensor([0.0, -0.0, float("nan"), 1e-30])
    assert x.nonzero().reshape(-1).tolist() == [2, 3]
    assert tuple(ec.tensor(5).nonzero().shape) == (1, 0)
    assert ec.tensor(5).nonzero(as_tuple=True)[0].tolist() == [0]
    assert ec.tensor(0).nonzero(as_tuple=True)[0].tolist() == []
    assert tuple(ec.zeros(0, 3).nonzero().shape) == (0, 2)
    t = ec.arange(12).reshape(3, 4).t()  # non-contiguous
    np.testing.assert_array_equal(t.nonzero().numpy(), np.argwhere(t.numpy()))


# ------------------------------------------------------------- fuzzing


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(1, 4), min_size=1, max_size=3),
    st.integers(0, 10),
    st.data(),
)
def test_fuzz_gather_scatter_add(shape, seed, data):
    r = np.random.default_rng(seed)
    dim = data.draw(st.integers(0, len(shape) - 1))
    ishape = [data.draw(st.integers(0, s)) for s in shape]
    ishape[dim] = data.draw(st.integers(0, 5))
    a = r.standard_normal(shape)
    idx = r.integers(-shape[dim], shape[dim], size=ishape)
    x = ec.from_numpy(a)
    got = x.gather(dim, ec.from_numpy(idx % shape[dim]))  # gather refuses negatives
    np.testing.assert_array_equal(
        got.numpy(), ref_gather(a, dim, idx % shape[dim]) if idx.size else np.empty(ishape)
    )
    src = r.standard_normal(ishape)
    if (idx < 0).any():  # scatter refuses negatives too, as PyTorch
        with pytest.raises(RuntimeError, match="out of range"):
            x.scatter_add(dim, ec.from_numpy(idx), ec.from_numpy(src))
    np.testing.assert_allclose(
        x.scatter_add(dim, ec.from_numpy(idx % shape[dim]), ec.from_numpy(src)).numpy(),
        ref_scatter(a, dim, idx % shape[dim], src, "add"),
    )


# ----------------------------------------------------------------- parity


@pytest.mark.parity
def test_parity_index_ops_with_torch():
    torch = pytest.importorskip("torch")
    a = rng.standard_normal((4, 5))
    idx = rng.integers(0, 4, size=(3, 5))
    src = rng.standard_normal((3, 5))
    x, tx = ec.from_numpy(a), torch.from_numpy(a)
    i, ti = ec.from_numpy(idx), torch.from_numpy(idx)
    s, ts = ec.from_numpy(src), torch.from_numpy(src)
    for reduce in ("sum", "prod", "mean", "amax", "amin"):
        for include_self in (True, False):
            np.testing.assert_allclose(
                x.scatter_reduce(0, i, s, reduce, include_self=include_self).numpy(),
                tx.scatter_reduce(0, ti, ts, reduce, include_self=include_self).numpy(),
            )
    np.testing.assert_array_equal(x.gather(0, i).numpy(), tx.gather(0, ti).numpy())
    np.testing.assert_array_equal(x.scatter(0, i, s).numpy(), tx.scatter(0, ti, ts).numpy())
    np.testing.assert_allclose(
        x.index_add(0, ec.tensor([3, 3]), s[:2], alpha=0.5).numpy(),
        tx.index_add(0, torch.tensor([3, 3]), ts[:2], alpha=0.5).numpy(),
    )
    m = a > 0
    np.testing.assert_array_equal(
        x.masked_select(ec.from_numpy(m)).numpy(), tx.masked_select(torch.from_numpy(m)).numpy()
    )
    np.testing.assert_array_equal(x.take(i).numpy(), tx.take(ti).numpy())
    np.testing.assert_array_equal(x.nonzero().numpy(), tx.nonzero().numpy())
    ints = rng.integers(0, 9, size=(4, 5))
    xi, ti2 = ec.from_numpy(ints), torch.from_numpy(ints)
    np.testing.assert_array_equal(
        xi.scatter_reduce(0, i, xi[:3], "mean").numpy(),
        ti2.scatter_reduce(0, ti, ti2[:3], "mean").numpy(),
    )


def test_scatter_index_aliasing_the_target_and_ndim_mismatch():
    x = ec.tensor([[1, 0], [0, 1]])
    x.scatter_(1, x, ec.tensor([[5, 6], [7, 8]]))  # the index is read before any write
    assert x.tolist() == [[6, 5], [7, 8]]
    with pytest.raises(RuntimeError, match="same number of dimensions as src"):
        ec.zeros(2, 3).scatter_(1, ec.tensor([[0], [1]]), ec.ones(3))


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.integers(0, 3), min_size=0, max_size=3),
    st.lists(st.integers(-6, 6), min_size=0, max_size=5),
    st.integers(-4, 3),
    st.sampled_from(["index_select", "index_add", "index_fill", "take", "put", "gather"]),
)
def test_fuzz_bad_arguments_raise_cleanly(shape, idx, dim, op):
    """Any index values and dims: a result matching NumPy, or a Python exception."""
    a = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape)
    x = ec.from_numpy(a.copy())
    i = ec.tensor(idx, dtype=ec.int64)
    try:
        if op == "index_select":
            r = x.index_select(dim, i)
            np.testing.assert_array_equal(r.numpy(), np.take(a, idx, axis=dim % max(a.ndim, 1)))
        elif op == "index_add":
            src = ec.ones(
                *(len(idx) if k == dim % max(a.ndim, 1) else s for k, s in enumerate(shape))
            )
            x.index_add_(dim, i, src.double())
        elif op == "index_fill":
            x.index_fill_(dim, i, -1.0)
        elif op == "take":
            np.testing.assert_array_equal(x.take(i).numpy(), np.take(a.reshape(-1), idx))
        elif op == "put":
            x.put_(i, ec.ones(len(idx), dtype=ec.float64))
        else:
            x.gather(dim, i.reshape([len(idx)] + [1] * (a.ndim - 1)) if a.ndim else i)
    except (IndexError, RuntimeError, TypeError, ValueError):
        pass


def test_gather_zero_dim_input_empty_index():
    r = ec.tensor(3.0).gather(0, ec.zeros(5, 2, 0, dtype=ec.int64))
    assert r.shape == (5, 2, 0) and r.dtype == ec.float32


def test_negative_indices_refused_where_pytorch_refuses():
    # index_select/index_add/index_copy/gather take [0, size) (IndexError and
    # RuntimeError both catch it); index_fill and take wrap negatives
    x = ec.tensor(np.arange(6.0).reshape(2, 3))
    neg = ec.tensor([-1])
    for call in (
        lambda: x.index_select(1, neg),
        lambda: ec.zeros(3).index_add(0, neg, ec.ones(1)),
        lambda: ec.zeros(3).index_copy_(0, neg, ec.ones(1)),
        lambda: ec.zeros(3).gather(0, neg),
    ):
        with pytest.raises(IndexError, match="out of range"):
            call()
        with pytest.raises(RuntimeError):
            call()
    np.testing.assert_array_equal(ec.zeros(3).index_fill(0, neg, 1.0).numpy(), [0, 0, 1])
    np.testing.assert_array_equal(ec.arange(3.0).take(neg).numpy(), [2.0])
