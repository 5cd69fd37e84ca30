"""Sparse COO and CSR tensors (Note [Sparse layouts] in _tensor/sparse.py), checked against
dense references computed with NumPy; every op without a sparse implementation
raises NotImplementedError naming itself and the layout."""

import inspect
import pickle

import numpy as np
import pytest

import ember_core as ec
from ember_core._base import dispatch as _dispatch
from ember_core._tensor import sparse as _sparse

IDX = [[0, 1, 1, 0, 2], [2, 0, 2, 2, 1]]
VAL = [3.0, 4.0, 5.0, 1.0, -2.0]


def coo(idx=IDX, val=VAL, size=(3, 3), **kw):
    return ec.sparse_coo_tensor(idx, val, size, **kw)


def dense_of(idx, val, size):
    """The NumPy reference of a COO tensor: duplicates add up."""
    out = np.zeros(size, dtype=np.asarray(val).dtype)
    np.add.at(out, tuple(np.asarray(idx)), np.asarray(val))
    return out


def random_coo(rng, shape, nnz, dense_shape=(), dtype=ec.float64):
    idx = np.stack([rng.integers(0, s, nnz) for s in shape])
    val = rng.standard_normal((nnz, *dense_shape))
    return ec.sparse_coo_tensor(idx, ec.tensor(val, dtype=dtype), (*shape, *dense_shape)), idx, val


# --------------------------------------------------------------- construction


def test_construction_and_metadata():
    s = coo()
    assert s.is_sparse and not s.is_sparse_csr and s.layout is ec.sparse_coo
    assert isinstance(s, ec.Tensor) and s.shape == (3, 3) and s.dtype is ec.float32
    assert (s.sparse_dim(), s.dense_dim(), s._nnz(), s.numel(), s.dim()) == (2, 0, 5, 9, 2)
    assert not s.is_coalesced() and s.device == ec.device("cpu") and not s.is_meta
    assert ec.ones(2).layout is ec.strided and not ec.ones(2).is_sparse
    assert ec.ones(2).sparse_dim() == 0 and ec.ones(2, 3).dense_dim() == 2


def test_size_is_inferred_and_dtypes_follow_the_values():
    s = ec.sparse_coo_tensor([[0, 4], [2, 1]], [1, 2])
    assert s.shape == (5, 3) and s.dtype is ec.int64
    s = ec.sparse_coo_tensor(ec.tensor([[0, 1]], dtype=ec.int32), [1.0, 2.0], dtype=ec.float64)
    assert s.dtype is ec.float64 and s._indices().dtype is ec.int64
    # fewer than two elements: nothing to merge, coalesced (as PyTorch)
    assert ec.sparse_coo_tensor([[1]], [1.0], (3,)).is_coalesced()
    assert ec.sparse_coo_tensor(ec.zeros(2, 0, dtype=ec.int64), ec.zeros(0), (2, 3)).is_coalesced()


def test_to_dense_sums_duplicates():
    np.testing.assert_allclose(coo().to_dense().numpy(), dense_of(IDX, VAL, (3, 3)))
    rng = np.random.default_rng(0)
    s, idx, val = random_coo(rng, (4, 5), 30, (2,))
    assert (s.sparse_dim(), s.dense_dim()) == (2, 1)
    np.testing.assert_allclose(s.to_dense().numpy(), dense_of(idx, val, (4, 5, 2)))
    b = ec.sparse_coo_tensor([[0, 0, 1]], [True, True, False], (3,))
    assert b.to_dense().tolist() == [True, False, False]
    x = ec.ones(2)
    assert x.to_dense() is x


def test_to_sparse_round_trip_and_hybrid():
    x = ec.tensor([[0.0, 2.0, 0.0], [3.0, 0.0, 4.0]])
    s = x.to_sparse()
    assert s.is_coalesced() and s.indices().tolist() == [[0, 1, 1], [1, 0, 2]]
    assert s.values().tolist() == [2.0, 3.0, 4.0]
    assert s.to_dense().tolist() == x.tolist()
    h = x.to_sparse(1)
    assert (h.sparse_dim(), h.dense_dim(), h._nnz()) == (1, 1, 2)
    assert h.to_dense().tolist() == x.tolist()
    assert x.to_sparse(dense_dim=1).values().shape == (2, 3)
    assert x.to_sparse_coo().indices().tolist() == [[0, 1, 1], [1, 0, 2]]
    assert s.to_sparse() is s
    with pytest.raises(RuntimeError, match="sparse_dim"):
        x.to_sparse(3)


def test_coalesce_sorts_and_sums():
    rng = np.random.default_rng(1)
    s, idx, val = random_coo(rng, (3, 4), 40)
    c = s.coalesce()
    assert c.is_coalesced() and c.coalesce() is c
    lin = c.indices()[0] * 4 + c.indices()[1]
    assert lin.tolist() == sorted(set(lin.tolist()))
    np.testing.assert_allclose(c.to_dense().numpy(), dense_of(idx, val, (3, 4)))
    assert c._nnz() == len({(a, b) for a, b in idx.T.tolist()})


def test_indices_and_values_need_a_coalesced_tensor():
    with pytest.raises(RuntimeError, match="uncoalesced"):
        coo().indices()
    with pytest.raises(RuntimeError, match="uncoalesced"):
        coo().values()
    assert coo()._values().tolist() == VAL and coo()._indices().tolist() == IDX
    for method in ("coalesce", "indices", "is_coalesced"):
        with pytest.raises(RuntimeError, match="expected sparse coordinate tensor layout"):
            getattr(ec.ones(2), method)()


# ---------------------------------------------------------------- arithmetic


def test_add_and_sub():
    a, b = coo(), coo([[2, 0], [2, 1]], [7.0, 1.0])
    ref_a, ref_b = dense_of(IDX, VAL, (3, 3)), dense_of([[2, 0], [2, 1]], [7.0, 1.0], (3, 3))
    np.testing.assert_allclose((a + b).to_dense().numpy(), ref_a + ref_b)
    np.testing.assert_allclose((a - b).to_dense().numpy(), ref_a - ref_b)
    np.testing.assert_allclose(ec.add(a, b, alpha=2).to_dense().numpy(), ref_a + 2 * ref_b)
    ac, bc = a.coalesce(), b.coalesce()
    assert (ac + bc).is_coalesced() and not (a + b).is_coalesced()
    d = ec.ones(3, 3)
    np.testing.assert_allclose((d + a).numpy(), 1 + ref_a)
    np.testing.assert_allclose((d - a).numpy(), 1 - ref_a)
    np.testing.assert_allclose(ec.add(d, a, alpha=-3).numpy(), 1 - 3 * ref_a)
    d2 = ec.zeros(3, 3)
    d2 += a
    np.testing.assert_allclose(d2.numpy(), ref_a)
    with pytest.raises(RuntimeError, match=r"add\(sparse, dense\) is not supported"):
        a + d
    with pytest.raises(RuntimeError, match="same size"):
        a + coo(size=(3, 4))


def test_mul_and_div():
    a = coo()
    ref = dense_of(IDX, VAL, (3, 3))
    np.testing.assert_allclose((a * 2).to_dense().numpy(), 2 * ref)
    np.testing.assert_allclose((2 * a).to_dense().numpy(), 2 * ref)
    np.testing.assert_allclose((a * ec.tensor(3.0)).to_dense().numpy(), 3 * ref)
    np.testing.assert_allclose((a / 4).to_dense().numpy(), ref / 4)
    d = ec.arange(9.0).reshape(3, 3)
    for r in (a * d, d * a):
        assert r.is_sparse and r._nnz() == a._nnz()
        np.testing.assert_allclose(r.to_dense().numpy(), ref * d.numpy())
    b = coo([[2, 0, 1], [2, 1, 1]], [7.0, 1.0, 2.0])
    r = a * b
    assert r.is_coalesced()
    np.testing.assert_allclose(
        r.to_dense().numpy(), ref * dense_of([[2, 0, 1], [2, 1, 1]], [7.0, 1.0, 2.0], (3, 3))
    )
    np.testing.assert_allclose((-a).to_dense().numpy(), -ref)
    with pytest.raises(RuntimeError, match="scalar or zero-dim dense tensor divisor"):
        a / d
    c = a.clone()
    c.mul_(2)
    np.testing.assert_allclose(c.to_dense().numpy(), 2 * ref)
    np.testing.assert_allclose(a.to_dense().numpy(), ref)  # the clone owns its values


@pytest.mark.parametrize("name", ["abs", "sqrt", "sin", "tanh", "floor", "sign", "expm1"])
def test_zero_preserving_elementwise_ops(name):
    a = coo(val=[3.0, 4.0, 5.0, 1.0, 2.0])
    r = getattr(ec, name)(a)
    assert r.is_sparse and r.is_coalesced()
    ref = getattr(ec, name)(a.to_dense())
    np.testing.assert_allclose(r.to_dense().numpy(), ref.numpy(), rtol=1e-6)
    np.testing.assert_allclose(a.pow(2).to_dense().numpy(), a.to_dense().pow(2).numpy())


def test_sum():
    rng = np.random.default_rng(2)
    s, idx, val = random_coo(rng, (3, 4), 12, (2,))
    ref = dense_of(idx, val, (3, 4, 2))
    np.testing.assert_allclose(s.sum().item(), ref.sum())
    np.testing.assert_allclose(ec.sparse.sum(s).item(), ref.sum())
    for dim in (0, 1, 2, (0, 2), (0, 1), -1):
        r = ec.sparse.sum(s, dim)
        r = r.to_dense() if r.is_sparse else r
        np.testing.assert_allclose(r.numpy(), ref.sum(dim), err_msg=str(dim))
        r2 = s.sum(dim)
        np.testing.assert_allclose((r2.to_dense() if r2.is_sparse else r2).numpy(), ref.sum(dim))
    assert ec.sparse.sum(s, 0).is_coalesced()
    assert not ec.sparse.sum(s, (0, 1)).is_sparse
    assert coo(val=[1, 2, 3, 4, 5]).sum().dtype is ec.int64


def test_transpose():
    a = coo()
    ref = dense_of(IDX, VAL, (3, 3))
    for r in (a.t(), a.T, a.transpose(0, 1), ec.transpose(a, 1, 0)):
        assert r.shape == (3, 3) and not r.is_coalesced()
        np.testing.assert_allclose(r.to_dense().numpy(), ref.T)
    rng = np.random.default_rng(3)
    h, idx, val = random_coo(rng, (3, 2), 5, (2, 4))
    np.testing.assert_allclose(
        h.transpose(2, 3).to_dense().numpy(), dense_of(idx, val, (3, 2, 2, 4)).swapaxes(2, 3)
    )
    with pytest.raises(RuntimeError, match="sparse dim with a dense dim"):
        h.transpose(0, 2)


# ------------------------------------------------------------------ products


def test_mm_matmul_addmm():
    rng = np.random.default_rng(4)
    s, idx, val = random_coo(rng, (5, 4), 12)
    ref = dense_of(idx, val, (5, 4))
    d = ec.tensor(rng.standard_normal((4, 3)))
    np.testing.assert_allclose((s @ d).numpy(), ref @ d.numpy())
    np.testing.assert_allclose(ec.mm(s, d).numpy(), ref @ d.numpy())
    np.testing.assert_allclose(ec.sparse.mm(s, d).numpy(), ref @ d.numpy())
    np.testing.assert_allclose(ec.matmul(s, d).numpy(), ref @ d.numpy())
    v = ec.tensor(rng.standard_normal(4))
    np.testing.assert_allclose((s @ v).numpy(), ref @ v.numpy())
    e = ec.tensor(rng.standard_normal((2, 5)))
    np.testing.assert_allclose((e @ s).numpy(), e.numpy() @ ref)
    c = ec.tensor(rng.standard_normal((5, 3)))
    np.testing.assert_allclose(
        ec.addmm(c, s, d, beta=0.5, alpha=2).numpy(), 0.5 * c.numpy() + 2 * ref @ d.numpy()
    )
    np.testing.assert_allclose(
        ec.sparse.addmm(c, s, d).numpy(), c.numpy() + ref @ d.numpy(), rtol=1e-12
    )
    t, idx2, val2 = random_coo(rng, (4, 6), 9)
    p = s @ t
    assert p.is_sparse and p.is_coalesced()
    np.testing.assert_allclose(p.to_dense().numpy(), ref @ dense_of(idx2, val2, (4, 6)))
    with pytest.raises(RuntimeError, match="cannot be multiplied"):
        s @ ec.ones(3, 2, dtype=ec.float64)
    with pytest.raises(RuntimeError, match="same dtype"):
        s @ ec.ones(4, 2)


def test_empty_sparse_products():
    s = ec.sparse_coo_tensor(ec.zeros(2, 0, dtype=ec.int64), ec.zeros(0), (3, 4))
    assert (s @ ec.ones(4, 2)).tolist() == [[0.0, 0.0]] * 3
    assert s.to_dense().tolist() == [[0.0] * 4] * 3
    assert s.sum().item() == 0.0 and s.coalesce()._nnz() == 0


def test_softmax_over_stored_elements():
    rng = np.random.default_rng(5)
    s, idx, val = random_coo(rng, (4, 6), 10)
    s = s.coalesce()
    i, v = s.indices().numpy(), s.values().numpy()
    for dim in (0, 1):
        expect = np.zeros_like(v)
        for n in range(len(v)):
            group = [k for k in range(len(v)) if i[1 - dim, k] == i[1 - dim, n]]
            expect[n] = np.exp(v[n]) / np.exp(v[group]).sum()
        r = ec.sparse.softmax(s, dim)
        np.testing.assert_allclose(r.values().numpy(), expect)
        np.testing.assert_allclose(ec.sparse.log_softmax(s, dim).values().numpy(), np.log(expect))


# ---------------------------------------------------------- conversions, CSR


def test_clone_detach_to():
    a = coo()
    for r in (a.clone(), a.detach(), a.to(ec.float64), a.double(), a.float()):
        assert r.is_sparse and r.to_dense().tolist() == a.to_dense().tolist()
    assert a.double().dtype is ec.float64 and a.to(ec.float32) is a
    assert a.clone()._values() is not a._values()
    assert a.type() == "torch.sparse.FloatTensor" and a.type(ec.float64).dtype is ec.float64
    assert a.type("torch.sparse.DoubleTensor").dtype is ec.float64


def test_csr():
    x = ec.tensor([[0.0, 2.0, 0.0], [3.0, 0.0, 4.0], [0.0, 0.0, 0.0]])
    c = x.to_sparse_csr()
    assert c.layout is ec.sparse_csr and c.is_sparse_csr and not c.is_sparse
    assert c.crow_indices().tolist() == [0, 1, 3, 3]
    assert c.col_indices().tolist() == [1, 0, 2] and c.values().tolist() == [2.0, 3.0, 4.0]
    assert c.to_dense().tolist() == x.tolist() and c._nnz() == 3
    assert x.to_sparse(layout=ec.sparse_csr).crow_indices().tolist() == [0, 1, 3, 3]
    d = ec.arange(6.0).reshape(3, 2)
    np.testing.assert_allclose((c @ d).numpy(), x.numpy() @ d.numpy())
    m = ec.sparse_csr_tensor([0, 1, 3, 3], [1, 0, 2], [2.0, 3.0, 4.0], (3, 3))
    assert m.to_dense().tolist() == x.tolist()
    assert m.to_sparse().indices().tolist() == [[0, 1, 1], [1, 0, 2]]
    assert coo().to_sparse_csr().to_dense().tolist() == coo().to_dense().tolist()
    np.testing.assert_allclose((m * 2).to_dense().numpy(), 2 * x.numpy())
    with pytest.raises(RuntimeError, match="crow_indices"):
        ec.sparse_csr_tensor([0, 2, 1, 3], [1, 0, 2], [2.0, 3.0, 4.0], (3, 3))
    with pytest.raises(RuntimeError, match="col_indices must be in"):
        ec.sparse_csr_tensor([0, 1, 3, 3], [1, 0, 5], [2.0, 3.0, 4.0], (3, 3))
    with pytest.raises(NotImplementedError, match="exp: not implemented for layout"):
        ec.exp(m)


def test_repr_as_pytorch_prints_it():
    assert repr(coo()) == (
        "tensor(indices=tensor([[0, 1, 1, 0, 2],\n"
        "                       [2, 0, 2, 2, 1]]),\n"
        "       values=tensor([ 3.,  4.,  5.,  1., -2.]),\n"
        "       size=(3, 3), nnz=5, layout=ember.sparse_coo)"
    )
    e = ec.sparse_coo_tensor(ec.zeros(2, 0, dtype=ec.int64), ec.zeros(0, dtype=ec.float64), (2, 3))
    assert repr(e) == (
        "tensor(indices=tensor([], size=(2, 0)),\n"
        "       values=tensor([], size=(0,)),\n"
        "       size=(2, 3), nnz=0, dtype=ember.float64, layout=ember.sparse_coo)"
    )
    assert repr(ec.tensor([[0.0, 1.0]]).to_sparse_csr()) == (
        "tensor(crow_indices=tensor([0, 1]),\n"
        "       col_indices=tensor([1]),\n"
        "       values=tensor([1.]), size=(1, 2), nnz=1, layout=ember.sparse_csr)"
    )


def test_pickle_round_trip():
    for s in (coo(), coo().coalesce(), ec.tensor([[0.0, 1.0]]).to_sparse_csr()):
        r = pickle.loads(pickle.dumps(s))
        assert type(r) is type(s) and r.shape == s.shape
        assert r.to_dense().tolist() == s.to_dense().tolist()
        if s.is_sparse:
            assert r.is_coalesced() == s.is_coalesced()


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (([[0, 3]], [1.0, 2.0], (3,)), "for dim 0, size is 3 but found index 3"),
        (([[0, -1]], [1.0, 2.0], (3,)), "found negative index -1 for dim 0"),
        (([0, 1], [1.0, 2.0], (3,)), "indices must be sparse_dim x nnz"),
        (([[0, 1]], [1.0, 2.0, 3.0], (3,)), "same number of elements"),
        (([[0, 1]], [1.0, 2.0], (3, 3)), r"sparse_dim \(1\) \+ dense_dim \(0\)"),
        (([[0, 1]], [[1.0, 2.0], [3.0, 4.0]], (3, 3)), "values has incorrect size"),
        (([[0.5, 1]], [1.0, 2.0], (3,)), "must be an int64 tensor"),
        (([[0, 1]], [1.0, 2.0], (-3,)), "negative dimension"),
    ],
)
def test_bad_construction_is_refused_clearly(args, match):
    with pytest.raises(RuntimeError, match=match):
        ec.sparse_coo_tensor(*args)


def test_memory_accessors_refuse_sparse_tensors():
    s = coo()
    with pytest.raises(TypeError, match="can't convert Sparse layout tensor to numpy"):
        s.numpy()
    with pytest.raises(RuntimeError, match="data pointer"):
        s.data_ptr()
    with pytest.raises(NotImplementedError, match="not implemented for layout ember.sparse_coo"):
        s[0]
    with pytest.raises(NotImplementedError, match="not implemented for layout ember.sparse_coo"):
        np.asarray(s)
    assert s.stride() == (0, 0) and not s.is_contiguous() and s.storage_offset() == 0


# Ops that read nothing of their input but its shape, dtype or device may answer
# for a sparse tensor as for its dense equivalent.
def _outcome(fn, *args):
    try:
        return "ok", fn(*args)
    except Exception as e:  # noqa: BLE001 - the kind of failure is what is checked
        return "error", e


def _same(a, b):
    if isinstance(a, ec.Tensor) and isinstance(b, ec.Tensor):
        a = a.to_dense() if a.layout is not ec.strided else a
        return a.shape == b.shape and a.dtype == b.dtype and a.tolist() == b.tolist()
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b


def _required(op):
    fn = _dispatch.public_function(op.name)
    params = inspect.signature(fn).parameters.values()
    return [p for p in params if p.default is p.empty and p.kind is not p.VAR_POSITIONAL]


SPARSE_AWARE = set(_sparse.SPARSE_IMPLS) | {
    name for name, op in _dispatch.OPS.items() if op.module == _sparse.__name__
}


@pytest.mark.parametrize("arity", [1, 2])
def test_every_other_op_refuses_a_sparse_tensor_by_name(arity):
    """Every op of the table called with a sparse tensor (for each of its
    required tensor arguments in turn) either raises NotImplementedError naming
    itself and the layout, refuses the arguments (TypeError, ...), or gives what it
    gives for the dense equivalent -- never a result read from memory a sparse
    tensor does not have."""
    failures = []
    for name, op in sorted(_dispatch.OPS.items()):
        if name in SPARSE_AWARE or not op.public or len(_required(op)) != arity:
            continue
        if "random" in op.tags or "creation" in op.tags:
            continue
        fn = _dispatch.public_function(name)
        for position in range(arity):
            s = ec.sparse_coo_tensor([[0, 1], [1, 0]], [1.5, -2.0], (2, 2))
            args = [ec.ones(2, 2) for _ in range(arity)]
            dense = list(args)
            args[position], dense[position] = s, s.to_dense()
            kind, got = _outcome(fn, *args)
            if kind == "ok":
                dkind, want = _outcome(fn, *dense)
                if dkind != "ok" or not _same(got, want):
                    failures.append(f"{name}: returned {got!r} for a sparse argument")
            elif isinstance(got, NotImplementedError):
                # (or PyTorch's refusal of the dtype, which comes first)
                if "sparse_coo" not in str(got) and "not implemented for '" not in str(got):
                    failures.append(f"{name}: {got}")
            elif not isinstance(got, (TypeError, ValueError, RuntimeError, IndexError)):
                failures.append(f"{name}: {type(got).__name__}: {got}")
    assert not failures, "\n".join(failures)


@pytest.mark.cuda
def test_sparse_tensors_on_cuda_match_the_cpu():
    rng = np.random.default_rng(6)
    s, idx, val = random_coo(rng, (5, 4), 12, dtype=ec.float32)
    d = ec.tensor(rng.standard_normal((4, 3)), dtype=ec.float32)
    g = s.to("cuda")
    assert g.device.type == "cuda" and g.is_sparse
    np.testing.assert_allclose((g @ d.cuda()).cpu().numpy(), (s @ d).numpy(), rtol=1e-5)
    np.testing.assert_allclose(g.to_dense().cpu().numpy(), s.to_dense().numpy())
    c = g.coalesce()
    assert c.indices().cpu().tolist() == s.coalesce().indices().tolist()
    np.testing.assert_allclose((g * 2 + g).to_dense().cpu().numpy(), 3 * s.to_dense().numpy())
    np.testing.assert_allclose(
        ec.sparse.sum(g, 0).to_dense().cpu().numpy(), s.sum(0).to_dense().numpy(), rtol=1e-6
    )
