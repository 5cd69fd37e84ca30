"""Sparse tensors against PyTorch: the same indices, values, nnz, coalesced flag and
layout from every sparse operation, the same printed form, the same refusals."""

import numpy as np
import pytest

import ember_core as ec
from ember_core._ops.sparse import arithmetic as _sparse_ops

torch = pytest.importorskip("torch")
pytestmark = [
    pytest.mark.parity,
    pytest.mark.filterwarnings("ignore:Sparse invariant checks"),
    pytest.mark.filterwarnings("ignore:Sparse CSR tensor support is in beta"),
]

IDX = [[0, 1, 1, 0, 2, 2], [2, 0, 2, 2, 1, 3]]
VAL = [3.0, 4.0, 5.0, 1.0, -2.0, 0.5]
IDX2 = [[2, 0, 1, 2], [3, 2, 2, 0]]
VAL2 = [1.5, -1.0, 2.0, 4.0]


def pair(idx=IDX, val=VAL, size=(3, 4)):
    return (
        ec.sparse_coo_tensor(idx, val, size),
        torch.sparse_coo_tensor(idx, val, size),
    )


def same(e, t):
    """Same layout, shape, dtype and contents, component by component."""
    if isinstance(t, torch.Tensor) and t.layout == torch.sparse_coo and not t.is_coalesced():
        # how an uncoalesced result stores its elements is PyTorch's internal business
        # (its add and mul merge some duplicates); the tensor they stand for is compared
        assert e.layout is ec.sparse_coo
        np.testing.assert_allclose(e.to_dense().numpy(), t.to_dense().numpy(), rtol=1e-6)
    elif isinstance(t, torch.Tensor) and t.layout == torch.sparse_coo:
        assert e.layout is ec.sparse_coo and e.is_coalesced()
        assert e._indices().tolist() == t._indices().tolist()
        np.testing.assert_allclose(
            e._values().detach().numpy(), t._values().detach().numpy(), rtol=1e-6
        )
    elif isinstance(t, torch.Tensor) and t.layout == torch.sparse_csr:
        assert e.layout is ec.sparse_csr
        assert e.crow_indices().tolist() == t.crow_indices().tolist()
        assert e.col_indices().tolist() == t.col_indices().tolist()
        np.testing.assert_allclose(e.values().numpy(), t.values().numpy())
    else:
        assert e.layout is ec.strided
        np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=1e-6)
    assert tuple(e.shape) == tuple(t.shape)
    assert e.dtype.name == str(t.dtype).split(".")[1]


OPS = {
    "coalesce": lambda ns, a, b: a.coalesce(),
    "to_dense": lambda ns, a, b: a.to_dense(),
    "to_sparse": lambda ns, a, b: a.to_dense().to_sparse(),
    "to_sparse_hybrid": lambda ns, a, b: a.to_dense().to_sparse(1),
    "add": lambda ns, a, b: a + b,
    "add_coalesced": lambda ns, a, b: a.coalesce() + b.coalesce(),
    "sub_alpha": lambda ns, a, b: ns.sub(a, b, alpha=2),
    "dense_add": lambda ns, a, b: ns.ones(3, 4) + a,
    "dense_sub": lambda ns, a, b: ns.ones(3, 4) - a,
    "mul_scalar": lambda ns, a, b: a * 2.5,
    "mul_0d": lambda ns, a, b: ns.tensor(2.0) * a,
    "mul_dense": lambda ns, a, b: a * ns.arange(12.0).reshape(3, 4),
    "mul_sparse": lambda ns, a, b: a * b,
    "mul_sparse_coalesced": lambda ns, a, b: a.coalesce() * b.coalesce(),
    "div_scalar": lambda ns, a, b: a / 4,
    "neg": lambda ns, a, b: -a,
    "pow": lambda ns, a, b: a.pow(2),
    "sum": lambda ns, a, b: a.sum(),
    "sum_0": lambda ns, a, b: a.sum(0),
    "sum_1": lambda ns, a, b: ns.sparse.sum(a, 1),
    "sum_01": lambda ns, a, b: ns.sparse.sum(a, (0, 1)),
    "t": lambda ns, a, b: a.t(),
    "t_coalesced": lambda ns, a, b: a.coalesce().t(),
    "transpose": lambda ns, a, b: a.transpose(1, 0),
    "mm": lambda ns, a, b: a @ ns.arange(8.0).reshape(4, 2),
    "mv": lambda ns, a, b: a @ ns.arange(4.0),
    "dense_mm": lambda ns, a, b: ns.mm(ns.arange(6.0).reshape(2, 3), a),
    "sparse_mm": lambda ns, a, b: ns.sparse.mm(a, b.t()),
    "sparse_sparse": lambda ns, a, b: a @ b.t(),
    "addmm": lambda ns, a, b: ns.addmm(ns.ones(3, 2), a, ns.ones(4, 2), beta=0.5, alpha=3),
    "sparse_addmm": lambda ns, a, b: ns.sparse.addmm(ns.ones(3, 2), a, ns.ones(4, 2)),
    "softmax": lambda ns, a, b: ns.sparse.softmax(a.coalesce(), 1),
    "log_softmax": lambda ns, a, b: ns.sparse.log_softmax(a.coalesce(), 0),
    "clone": lambda ns, a, b: a.clone(),
    "double": lambda ns, a, b: a.double(),
    "to_csr": lambda ns, a, b: a.to_sparse_csr(),
    "csr_to_dense": lambda ns, a, b: a.to_sparse_csr().to_dense(),
    "csr_to_coo": lambda ns, a, b: a.to_sparse_csr().to_sparse(),
    "csr_mm": lambda ns, a, b: a.to_sparse_csr() @ ns.arange(8.0).reshape(4, 2),
    "csr_mul": lambda ns, a, b: a.to_sparse_csr() * 2,
    "zeros_like": lambda ns, a, b: ns.zeros_like(a, dtype=ns.float64),
    "empty_like": lambda ns, a, b: ns.empty_like(a).coalesce(),
    "copy_": lambda ns, a, b: b.clone().copy_(a),
    "sparse_mask": lambda ns, a, b: ns.arange(12.0).reshape(3, 4).sparse_mask(a),
}


@pytest.mark.parametrize("name", sorted(OPS))
def test_op_matches_pytorch(name):
    (ea, ta), (eb, tb) = pair(), pair(IDX2, VAL2)
    same(OPS[name](ec, ea, eb), OPS[name](torch, ta, tb))


@pytest.mark.parametrize("name", _sparse_ops._ZERO_PRESERVING)
def test_zero_preserving_op_matches_pytorch(name):
    e, t = pair(val=[0.3, 0.4, -0.5, 0.1, -0.2, 0.5])
    same(getattr(ec, name)(e), getattr(torch, name)(t))


def test_repr_matches_pytorch():
    cases = [
        lambda ns: ns.sparse_coo_tensor(IDX, VAL, (3, 4)),
        lambda ns: ns.sparse_coo_tensor(IDX, VAL, (3, 4), dtype=ns.float64),
        lambda ns: ns.sparse_coo_tensor(IDX, [1, 2, 3, 4, 5, 6], (3, 4)),
        lambda ns: ns.sparse_coo_tensor(IDX, ns.arange(12.0).reshape(6, 2), (3, 4, 2)),
        lambda ns: ns.sparse_coo_tensor(ns.zeros(2, 0, dtype=ns.int64), ns.zeros(0), (2, 3)),
        lambda ns: ns.sparse_coo_tensor(IDX, VAL, (3, 4), requires_grad=True),
        lambda ns: ns.sparse_coo_tensor(IDX, VAL, (3, 4)).to_sparse_csr(),
    ]
    for make in cases:
        assert repr(make(ec)).replace("ember.", "torch.") == repr(make(torch))


@pytest.mark.parametrize(
    "args",
    [
        ([[0, 4]], [1.0, 2.0], (3,)),
        ([[0, -1]], [1.0, 2.0], (3,)),
        ([[0, 1]], [1.0, 2.0, 3.0], (3,)),
        ([[0, 1]], [1.0, 2.0], (3, 3)),
    ],
)
def test_bad_construction_is_refused_as_pytorch_refuses_it(args):
    # (PyTorch checks indices against the size only when asked; ember always does)
    with pytest.raises(RuntimeError):
        torch.sparse_coo_tensor(*args, check_invariants=True)
    with pytest.raises(RuntimeError):
        ec.sparse_coo_tensor(*args)


@pytest.mark.parametrize(
    "call",
    [
        lambda ns, s: ns.exp(s),
        lambda ns, s: s.view(12),
        lambda ns, s: ns.softmax(s, 0),
        lambda ns, s: s.mean(),
        lambda ns, s: s.max(),
    ],
)
def test_ops_pytorch_lacks_for_sparse_raise_not_implemented(call):
    e, t = pair()
    with pytest.raises(NotImplementedError):
        call(torch, t)
    with pytest.raises(NotImplementedError, match="sparse_coo"):
        call(ec, e)


@pytest.mark.parametrize(
    ("rows", "offsets", "shape"),
    [(3, [0, -1, 1], (3, 3)), (2, [0, 2], (3, 4)), (2, [0, -2], (4, 3)), (1, [-2], (3, 3))],
)
def test_spdiags_matches_pytorch(rows, offsets, shape):
    d = np.arange(1.0, 1 + 3 * rows).reshape(rows, 3)
    e = ec.sparse.spdiags(ec.tensor(d), ec.tensor(offsets), shape)
    t = torch.sparse.spdiags(torch.tensor(d), torch.tensor(offsets), shape)
    same(e, t)
    assert e._indices().tolist() == t._indices().tolist()
    same(
        ec.sparse.spdiags(ec.tensor(d), ec.tensor(offsets), shape, layout=ec.sparse_csr),
        torch.sparse.spdiags(torch.tensor(d), torch.tensor(offsets), shape, torch.sparse_csr),
    )


def test_sampled_addmm_matches_pytorch():
    m1, m2 = np.arange(6.0).reshape(3, 2), np.arange(8.0).reshape(2, 4) - 3
    x = np.array([[0.0, 1.0, 0.0, 2.0], [0.0, 0.0, 0.0, 0.0], [3.0, 0.0, 4.0, 0.0]])

    def run(ns):
        c = ns.tensor(x).to_sparse_csr()
        return ns.sparse.sampled_addmm(c, ns.tensor(m1), ns.tensor(m2), beta=0.5, alpha=2.0)

    same(run(ec), run(torch))
    with ec.sparse.check_sparse_tensor_invariants():
        assert ec.sparse.check_sparse_tensor_invariants.is_enabled()
