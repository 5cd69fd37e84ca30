"""Index bounds across the indexing family, as PyTorch 2.13: every op refuses an
index past the end or before -size; gather, scatter (all forms), index_select,
index_add, index_copy and index_reduce also refuse negative ones, while
x[idx], index_fill, index_put_, put_, take and take_along_dim count them from
the end.  scatter/scatter_add took -1 for the last column (issue 20)."""

# The lambdas in OPS run at once, inside the loops that bind them.
# ruff: noqa: B023

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ember_core as ec

PROPS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _idx(T, values):
    return T.tensor(values, dtype=T.int64)


# name -> (takes negative indices, fn(T, x, dim, i)): x is a (3, 4) or (4, 3) float
# tensor, i the one index value, addressing `dim` of x.
OPS = {
    "gather": (False, lambda T, x, d, i: T.gather(x, d, _one(T, i))),
    "scatter": (False, lambda T, x, d, i: T.scatter(x, d, _one(T, i), 9.0)),
    "scatter src": (False, lambda T, x, d, i: T.scatter(x, d, _one(T, i), T.ones(1, 1))),
    "scatter_": (False, lambda T, x, d, i: x.scatter_(d, _one(T, i), 9.0)),
    "scatter_ reduce=add": (
        False,
        lambda T, x, d, i: x.scatter_(d, _one(T, i), 9.0, reduce="add"),
    ),
    "scatter_add": (False, lambda T, x, d, i: T.scatter_add(x, d, _one(T, i), T.ones(1, 1))),
    "scatter_add_": (False, lambda T, x, d, i: x.scatter_add_(d, _one(T, i), T.ones(1, 1))),
    "scatter_reduce": (
        False,
        lambda T, x, d, i: T.scatter_reduce(x, d, _one(T, i), T.ones(1, 1), "amax"),
    ),
    "scatter_reduce_": (
        False,
        lambda T, x, d, i: x.scatter_reduce_(d, _one(T, i), T.ones(1, 1), "sum"),
    ),
    "index_select": (False, lambda T, x, d, i: T.index_select(x, d, _idx(T, [i]))),
    "index_add_": (False, lambda T, x, d, i: x.index_add_(d, _idx(T, [i]), _slab(T, x, d))),
    "index_copy_": (False, lambda T, x, d, i: x.index_copy_(d, _idx(T, [i]), _slab(T, x, d))),
    "index_reduce_": (
        False,
        lambda T, x, d, i: x.index_reduce_(d, _idx(T, [i]), _slab(T, x, d), "prod"),
    ),
    "index_fill_": (True, lambda T, x, d, i: x.index_fill_(d, _idx(T, [i]), 9.0)),
    "take_along_dim": (True, lambda T, x, d, i: T.take_along_dim(x, _one(T, i), d)),
    "getitem": (True, lambda T, x, d, i: x[_key(T, d, i)]),
    "setitem": (True, lambda T, x, d, i: x.__setitem__(_key(T, d, i), 9.0)),
    "index_put_": (True, lambda T, x, d, i: x.index_put_(_key(T, d, i), T.tensor(9.0))),
}


def _one(T, i):
    """A (1, 1) index tensor holding i (gather/scatter/take_along_dim)."""
    return _idx(T, [[i]])


def _slab(T, x, d):
    """Ones shaped like x with dim d of size 1 (index_add/copy/reduce's source)."""
    shape = list(x.shape)
    shape[d] = 1
    return T.ones(shape)


def _key(T, d, i):
    """An advanced key addressing element i of dim d (and 0 of the other dim)."""
    return (_idx(T, [0]), _idx(T, [i])) if d == 1 else (_idx(T, [i]), _idx(T, [0]))


def _outcome(T, name, shape, d, i):
    x = T.arange(float(np.prod(shape))).reshape(shape)
    before = x.clone()
    try:
        r = OPS[name][1](T, x, d, i)
    except (IndexError, RuntimeError) as e:
        assert "out of" in str(e), f"{name}: {e}"
        assert x.tolist() == before.tolist(), f"{name} wrote before refusing"
        return "raise"
    r = x if r is None else r
    return r.tolist()


def test_issue_example_scatter_refuses_minus_one():
    x = ec.zeros(2, 4)
    for fn in (
        lambda: ec.scatter(x, 1, ec.tensor([[-1]]), 5.0),
        lambda: x.scatter_(1, ec.tensor([[-1]]), 5.0),
        lambda: ec.scatter_add(x, 1, ec.tensor([[-1]]), ec.ones(1, 1)),
        lambda: x.scatter_add_(1, ec.tensor([[-1]]), ec.ones(1, 1)),
        lambda: x.scatter_reduce_(1, ec.tensor([[-1]]), ec.ones(1, 1), "sum"),
    ):
        with pytest.raises(RuntimeError, match="out of range|out of bounds") as info:
            fn()
        assert isinstance(info.value, IndexError) and "-1" in str(info.value)
    assert x.tolist() == [[0.0] * 4] * 2, "nothing was written to the last column"


def test_take_along_dim_counts_negative_indices_from_the_end():
    x = ec.arange(12.0).reshape(3, 4)
    assert ec.take_along_dim(x, ec.tensor([[-1], [0], [-4]]), 1).tolist() == [[3.0], [4.0], [8.0]]
    for bad in (4, -5, 100):
        with pytest.raises(IndexError, match=f"index {bad} is out of bounds"):
            ec.take_along_dim(x, ec.tensor([[bad]]), 1)


@PROPS
@given(
    st.sampled_from(sorted(OPS)),
    st.sampled_from([(3, 4), (4, 3)]),
    st.integers(0, 1),
    st.integers(-9, 9),
)
def test_index_bounds_follow_one_rule(name, shape, d, i):
    negatives_ok = OPS[name][0]
    size = shape[d]
    refused = i >= size or i < -size or (i < 0 and not negatives_ok)
    got = _outcome(ec, name, shape, d, i)
    assert (got == "raise") == refused, (name, shape, d, i, got)
    if not refused and i < 0:  # a negative index means the same as i + size
        assert got == _outcome(ec, name, shape, d, i + size)


@pytest.mark.parity
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(sorted(OPS)),
    st.sampled_from([(3, 4), (4, 3)]),
    st.integers(0, 1),
    st.integers(-9, 9),
)
def test_index_bounds_and_values_match_pytorch(name, shape, d, i):
    torch = pytest.importorskip("torch")
    size = shape[d]
    if name == "take_along_dim" and not -size <= i < size:
        return  # PyTorch 2.13 wraps these modulo the size (pytorch#196106); ember raises
    assert _outcome(ec, name, shape, d, i) == _outcome(torch, name, shape, d, i)


@pytest.mark.cuda
def test_cuda_scatter_refuses_minus_one_too():
    x = ec.zeros(2, 4, device="cuda")
    idx = ec.tensor([[-1]], device="cuda")
    with pytest.raises(RuntimeError, match="out of range|out of bounds"):
        x.scatter_(1, idx, 5.0)
    with pytest.raises(RuntimeError, match="out of range|out of bounds"):
        ec.scatter_add(x, 1, idx, ec.ones(1, 1, device="cuda"))
    assert x.cpu().tolist() == [[0.0] * 4] * 2
