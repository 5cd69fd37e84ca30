"""Gradients through sparse tensors (Note [Sparse layouts] in ember_core/_tensor/sparse.py):
to the values of a sparse tensor and to the dense operand of sparse @ dense,
checked against finite differences (gradcheck) and against PyTorch (parity)."""

import numpy as np
import pytest
from parity import check_parity

import ember_autograd as ag
import ember_core as ec

# PyTorch warns that its sparse invariant checks are off by default
pytestmark = pytest.mark.filterwarnings("ignore:Sparse invariant checks")

IDX = [[0, 1, 1, 0, 2, 2], [2, 0, 2, 2, 1, 3]]  # (0, 2) twice: duplicates add up


def spm(ns, values, size=(3, 4)):
    return ns.sparse_coo_tensor(ns.tensor(IDX), values, size)


def leaves(*shapes, seed=0):
    rng = np.random.default_rng(seed)
    return tuple(
        ec.tensor(rng.uniform(-1.5, 1.5, s), dtype=ec.float64, requires_grad=True) for s in shapes
    )


@pytest.mark.parametrize(
    "program",
    [
        lambda v: spm(ec, v).to_dense(),
        lambda v: spm(ec, v).coalesce().values(),
        lambda v: spm(ec, v).t().to_dense(),
        lambda v: (spm(ec, v) * 3 - spm(ec, v * v)).to_dense(),
        lambda v: ec.sparse.sum(spm(ec, v), 1).to_dense(),
        lambda v: spm(ec, v).sum(),
        lambda v: (spm(ec, v) * spm(ec, v.sin())).to_dense(),
        lambda v: ec.sparse.softmax(spm(ec, v), 1).to_dense(),
        lambda v: ec.sparse.log_softmax(spm(ec, v), 0).to_dense(),
        lambda v: spm(ec, v).to_sparse_csr().to_dense(),
        lambda v: ec.ones(3, 4, dtype=ec.float64) + spm(ec, v),
    ],
)
def test_gradients_reach_the_values(program):
    assert ag.gradcheck(program, leaves((6,)))


@pytest.mark.parametrize(
    "program",
    [
        lambda v, d: spm(ec, v) @ d,
        lambda v, d: ec.mm(spm(ec, v), d),
        lambda v, d: ec.sparse.mm(spm(ec, v), d),
        lambda v, d: ec.addmm(d[:3, :2].exp(), spm(ec, v), d[:, :2], beta=0.5, alpha=2.0),
        lambda v, d: spm(ec, v).to_sparse_csr() @ d,
        lambda v, d: d.t() @ spm(ec, v).t(),
        lambda v, d: spm(ec, v) @ d[:, 0],
    ],
)
def test_gradients_reach_both_operands_of_a_product(program):
    assert ag.gradcheck(program, leaves((6,), (4, 3)))


def test_dense_to_sparse_and_back_carries_gradients():
    (x,) = leaves((3, 4))
    assert ag.gradcheck(lambda x: (x.to_sparse() * 2).to_dense(), (x,))


def test_a_sparse_leaf_gets_a_sparse_gradient():
    s = ec.sparse_coo_tensor(IDX, ec.arange(6.0), (3, 4), requires_grad=True)
    assert s.requires_grad and s.is_leaf
    d = ec.arange(12.0).reshape(4, 3)
    (s @ d).sum().backward()
    g = s.grad
    assert g.is_sparse and g._indices().tolist() == IDX
    np.testing.assert_allclose(g._values().numpy(), d.sum(1).numpy()[IDX[1]])
    assert "requires_grad=True" in repr(s)
    assert s.detach().requires_grad is False


@pytest.mark.parity
@pytest.mark.parametrize(
    "program",
    [
        lambda ns, v, d: (spm(ns, v) @ d).pow(2).sum(),
        lambda ns, v, d: ns.sparse.mm(spm(ns, v), d).sin().sum(),
        lambda ns, v, d: (ns.addmm(d[:3, :2], spm(ns, v), d[:, :2]) ** 2).sum(),
        lambda ns, v, d: (spm(ns, v).coalesce().to_dense() * d.t()).sum(),
        lambda ns, v, d: ns.sparse.sum(spm(ns, v) * 2.0).exp(),
        lambda ns, v, d: (ns.sparse.softmax(spm(ns, v).coalesce(), 1).to_dense() * d.t()).sum(),
    ],
)
def test_gradients_match_pytorch(program):
    check_parity(program, (6,), (4, 3))
