"""Sparse tensors through ember.save / ember.load, and to and from torch.save /
torch.load (PyTorch writes them with torch._utils._rebuild_sparse_tensor)."""

import io

import pytest

import ember

pytestmark = pytest.mark.filterwarnings("ignore:Sparse (invariant checks|CSR tensor support)")

IDX = [[0, 1, 1, 0], [2, 0, 2, 2]]
VAL = [3.0, 4.0, 5.0, 1.0]


def tensors(ns):
    coo = ns.sparse_coo_tensor(IDX, VAL, (2, 3))
    return {
        "coo": coo,
        "coalesced": coo.coalesce(),
        "hybrid": ns.sparse_coo_tensor(IDX, ns.arange(8.0).reshape(4, 2), (2, 3, 2)),
        "csr": ns.tensor([[0.0, 2.0], [3.0, 0.0]]).to_sparse_csr(),
        "dense": ns.ones(2),
    }


def check(got, want):
    for key, w in want.items():
        g = got[key]
        assert str(g.layout).split(".")[1] == str(w.layout).split(".")[1], key
        assert g.to_dense().tolist() == w.to_dense().tolist(), key
        if str(w.layout).endswith("sparse_coo"):
            assert g.is_coalesced() == w.is_coalesced(), key
            assert g._indices().tolist() == w._indices().tolist(), key


def roundtrip(save, load, obj):
    buf = io.BytesIO()
    save(obj, buf)
    buf.seek(0)
    return load(buf)


def test_ember_save_and_load():
    want = tensors(ember)
    check(roundtrip(ember.save, ember.load, want), want)
    check(roundtrip(ember.save, lambda f: ember.load(f, weights_only=False), want), want)


@pytest.mark.parity
def test_torch_loads_what_ember_saves_and_back():
    torch = pytest.importorskip("torch")
    mine = tensors(ember)
    check(roundtrip(ember.save, torch.load, mine), tensors(torch))
    check(roundtrip(torch.save, ember.load, tensors(torch)), mine)


class _Graph(ember.nn.Module):
    def __init__(self, values):
        super().__init__()
        self.register_buffer("adj", ember.sparse_coo_tensor(IDX, values, (2, 3)))
        self.lin = ember.nn.Linear(3, 2)

    def forward(self, x):
        return self.adj @ self.lin(x)


def test_a_module_with_a_sparse_buffer_saves_loads_and_converts():
    a, b = _Graph(VAL), _Graph([0.0, 0.0, 0.0, 0.0])
    b.load_state_dict(roundtrip(ember.save, ember.load, a.state_dict()))
    assert b.adj.to_dense().tolist() == a.adj.to_dense().tolist()
    b.double()
    assert b.adj.dtype is ember.float64 and b.adj.is_sparse
    x = ember.ones(3, 3, dtype=ember.float64)
    assert b(x).shape == (2, 2)
    with pytest.raises(RuntimeError, match="between dense and sparse"):
        ember.zeros(2, 3).copy_(a.adj)
