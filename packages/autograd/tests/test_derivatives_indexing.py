"""Gradients of the indexing, scatter/gather and sorting ops (_derivatives_indexing.py)
against finite differences (gradcheck, float64), first and second order."""

import numpy as np
import pytest

import ember_autograd as ag
import ember_core as ec

rng = np.random.default_rng(3)


def leaf(*shape, distinct=True):
    """A float64 leaf requiring grad; distinct values keep sorts and selections
    away from ties, where the function is not differentiable."""
    n = int(np.prod(shape))
    a = (
        rng.permutation(n).astype(np.float64) / n + rng.uniform(0, 1e-3, n)
        if distinct
        else rng.standard_normal(n)
    )
    return ec.from_numpy(a.reshape(shape)).requires_grad_()


def check(fn, *inputs, second_order=True):
    """gradcheck of fn, and of its first derivatives (double backward)."""
    assert ag.gradcheck(fn, inputs)
    if not second_order:
        return
    weights = None

    def first(*xs):
        nonlocal weights
        with ag.enable_grad():
            out = fn(*xs)
            outs = out if isinstance(out, tuple) else (out,)
            if weights is None:
                weights = [ec.from_numpy(rng.standard_normal(tuple(o.shape))) for o in outs]
            total = sum(
                ((o * w).sum() for o, w in zip(outs, weights)), ec.zeros((), dtype=ec.float64)
            )
            diff = [x for x in xs if isinstance(x, ec.Tensor) and x.requires_grad]
            grads = ag.grad(total, diff, create_graph=True, allow_unused=True)
        return tuple(g if g is not None else ec.zeros_like(x) for g, x in zip(grads, diff))

    assert ag.gradcheck(first, inputs)


# ------------------------------------------------------------- getitem/setitem


@pytest.mark.parametrize(
    "key",
    [
        (ec.tensor([0, 2, 2]),),
        (ec.tensor([0, 2]), slice(1, None)),
        (slice(None), ec.tensor([[1, 0], [1, 1]])),
        (ec.tensor([0, 3]), ec.tensor([1, 1])),  # repeated element
        (None, ec.tensor([1, 0]), Ellipsis, None),
        (ec.tensor([True, False, True, True]),),
        (1, slice(0, 3, 2)),
        (ec.tensor(2),),
    ],
)
def test_getitem(key):
    x = leaf(4, 3)
    check(lambda t: t[key], x)


def test_getitem_bool_mask_of_the_input():
    x = leaf(4, 3)
    mask = x.detach() > 0.5
    check(lambda t: t[mask], x)


def test_setitem_advanced():
    x, v = leaf(4, 3), leaf(2, 3)

    def f(t, val):
        y = t * 1
        y[ec.tensor([1, 3])] = val
        return y

    check(f, x, v)

    def g(t, val):
        y = t * 1
        y[[0, 2], 1:] += val[:, :2]  # read, add, write back
        return y

    check(g, x, v)

    def h(t, val):
        y = t * 1
        y[t.detach() > 0.5] = val.sum()
        return y

    check(h, x, v)


def test_index_put():
    x, v = leaf(4, 3), leaf(2)
    idx = (ec.tensor([0, 0]), ec.tensor([1, 1]))
    check(lambda t, val: t.index_put(idx, val, accumulate=True), x, v)
    # (a repeated index without accumulate is not differentiable: the last write wins)
    check(lambda t, val: t.index_put((ec.tensor([0, 2]), ec.tensor([1, 0])), val), x, v)
    check(lambda t, val: t.index_put((ec.tensor([3, 1]),), val.reshape(2, 1)), x, v)


# ---------------------------------------------------------- gather family


def test_index_select_gather_take():
    x = leaf(4, 3)
    check(lambda t: t.index_select(1, ec.tensor([2, 0, 2])), x)
    check(lambda t: t.index_select(0, ec.tensor(1)), x)
    check(lambda t: t.gather(1, ec.tensor([[0, 0], [1, 2], [2, 2], [0, 1]])), x)
    check(lambda t: t.gather(0, ec.tensor([[3, 0, 3]])), x)
    check(lambda t: t.take(ec.tensor([[0, 5], [5, 11]])), x)
    check(lambda t: t.take_along_dim(ec.tensor([[0], [2], [1], [1]]), 1), x)
    check(lambda t: t.take_along_dim(ec.tensor([7, 0])), x)


def test_put():
    x, s = leaf(4, 3), leaf(2)
    check(lambda t, src: t.put(ec.tensor([1, 4]), src), x, s)
    check(lambda t, src: t.put(ec.tensor([1, 1]), src, accumulate=True), x, s)


# ---------------------------------------------------------------- scatter

IDX = ec.tensor([[1, 1, 0], [3, 1, 1]])


def test_scatter_and_scatter_add():
    x, v = leaf(4, 3), leaf(2, 3)
    check(lambda t, s: t.scatter(0, ec.tensor([[1, 2, 0], [3, 0, 1]]), s), x, v)
    check(lambda t: t.scatter(0, IDX, 2.5), x)
    check(lambda t, s: t.scatter_add(0, IDX, s), x, v)
    check(lambda t, s: t.scatter_add(1, ec.tensor([[0], [2], [2], [1]]), s.reshape(6, 1)[:4]), x, v)


@pytest.mark.parametrize("reduce", ["sum", "mean", "prod", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce(reduce, include_self):
    x, v = leaf(4, 3), leaf(2, 3)
    check(
        lambda t, s: t.scatter_reduce(0, IDX, s, reduce, include_self=include_self),
        x,
        v,
        second_order=reduce not in ("amax", "amin"),
    )


def test_scatter_reduce_prod_with_zeros():
    x = leaf(4, 3)
    v = ec.tensor([[0.5, 0.0, 2.0], [0.0, 1.5, -1.0]], dtype=ec.float64).requires_grad_()
    assert ag.gradcheck(lambda t, s: t.scatter_reduce(0, IDX, s, "prod"), (x, v))


# ------------------------------------------------------ index_add/copy/fill


def test_index_add_copy_fill():
    x, v = leaf(4, 3), leaf(2, 3)
    idx = ec.tensor([3, 1])
    check(lambda t, s: t.index_add(0, idx, s, alpha=-2.0), x, v)
    check(lambda t, s: t.index_add(0, ec.tensor([1, 1]), s), x, v)
    check(lambda t, s: t.index_copy(0, idx, s), x, v)
    check(lambda t: t.index_fill(1, ec.tensor([1]), -1.0), x)
    val = ec.tensor(0.25, dtype=ec.float64).requires_grad_()
    check(lambda t, s: t.index_fill(0, idx, s), x, val)


def test_in_place_variants():
    x, v = leaf(4, 3), leaf(2, 3)

    def f(t, s):
        y = t * 1
        y.index_add_(0, ec.tensor([0, 0]), s)
        y.scatter_(0, ec.tensor([[3, 2, 1]]), s[:1])
        y.masked_fill_(y.detach() > 1.5, 0.0)
        return y

    check(f, x, v)


# ------------------------------------------------------------------- masks


def test_masked_ops():
    x, v = leaf(4, 3), leaf(2, 3)
    m = ec.tensor(
        [[True, False, False], [False, False, True], [False, False, False], [True, True, False]]
    )
    check(lambda t: t.masked_fill(m, 2.0), x)
    val = ec.tensor(0.5, dtype=ec.float64).requires_grad_()
    check(lambda t, s: t.masked_fill(m, s), x, val)
    check(lambda t: t.masked_select(m), x)
    check(lambda t: t.masked_select(m[0]), x)  # broadcast mask
    check(lambda t, s: t.masked_scatter(m, s), x, v)


# ---------------------------------------------------------------- sorting


def test_sort_topk_kthvalue():
    x = leaf(4, 5)
    check(lambda t: t.sort(1).values, x)
    check(lambda t: t.sort(0, descending=True).values, x)
    check(lambda t: t.topk(2, 0).values, x)
    check(lambda t: t.topk(3, 1, largest=False, sorted=False).values, x)
    check(lambda t: t.kthvalue(2, 0).values, x)
    check(lambda t: t.kthvalue(3, 1, keepdim=True).values, x)
    check(lambda t: t.msort(), x)


def test_median_mode():
    x = leaf(4, 5)
    check(lambda t: t.median(), x)
    check(lambda t: t.median(1).values, x)
    check(lambda t: t.median(0, keepdim=True).values, x)
    check(lambda t: t.nanmedian(), x)
    check(lambda t: t.nanmedian(1).values, x)
    check(lambda t: t.mode(1).values, x)  # distinct values: the mode is the smallest
    # with ties the gradient goes to the element mode() returns (its last occurrence)
    y = ec.tensor([[1.0, 2.0, 1.0], [3.0, 3.0, 0.5]], dtype=ec.float64, requires_grad=True)
    y.mode(1).values.sum().backward()
    assert y.grad.tolist() == [[0.0, 0.0, 1.0], [0.0, 1.0, 0.0]]


def test_median_shares_gradient_among_ties():
    x = ec.tensor([1.0, 2.0, 2.0, 3.0, 0.0], dtype=ec.float64, requires_grad=True)
    x.median().backward()
    np.testing.assert_allclose(x.grad.numpy(), [0, 0.5, 0.5, 0, 0])


def test_gradient_values_match_torch_rules():
    # sort: the gradient goes back to where each value came from
    x = ec.tensor([3.0, 1.0, 2.0], dtype=ec.float64, requires_grad=True)
    v, _ = x.sort()
    (v * ec.tensor([1.0, 10.0, 100.0], dtype=ec.float64)).sum().backward()
    assert x.grad.tolist() == [100.0, 1.0, 10.0]
    # x[idx] with a repeated index accumulates
    y = ec.zeros(3, dtype=ec.float64, requires_grad=True)
    y[ec.tensor([0, 0, 2])].sum().backward()
    assert y.grad.tolist() == [2.0, 0.0, 1.0]


def test_non_differentiable_ops_return_no_grad_fn():
    x = leaf(5)
    for out in (
        x.argsort(),
        x.nonzero(),
        ec.argwhere(x),
        ec.unique(x),
        ec.searchsorted(x.detach().sort().values, x),
        ec.histc(x, 4),
    ):
        assert out.grad_fn is None and not out.requires_grad


@pytest.mark.parity
def test_parity_gradients_with_torch():
    torch = pytest.importorskip("torch")
    a = rng.standard_normal((4, 5))
    idx = np.array([[1, 3, 0, 2, 2], [0, 0, 1, 3, 1]])
    cases = [
        (lambda t, i: t[i[0], 1:], lambda t, i: t[i[0], 1:]),
        (lambda t, i: t.gather(0, i), lambda t, i: t.gather(0, i)),
        (
            lambda t, i: t.scatter_reduce(0, i, t[:2] * 2, "amax"),
            lambda t, i: t.scatter_reduce(0, i, t[:2] * 2, "amax"),
        ),
        (
            lambda t, i: t.scatter_reduce(0, i, t[:2] + 1, "prod", include_self=False),
            lambda t, i: t.scatter_reduce(0, i, t[:2] + 1, "prod", include_self=False),
        ),
        (lambda t, i: t.sort(1).values * t.median(), lambda t, i: t.sort(1).values * t.median()),
    ]
    for fe, ft in cases:
        x = ec.from_numpy(a.copy()).requires_grad_()
        t = torch.from_numpy(a.copy()).requires_grad_()
        (fe(x, ec.from_numpy(idx)) ** 2).sum().backward()
        (ft(t, torch.from_numpy(idx)) ** 2).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_index_put_with_none_in_the_indices():
    # a None index (a full slice) among the saved indices: only tensors are saved
    # as tensors (it used to crash when recording)
    x, v = leaf(4, 3), leaf(4, 2)
    idx = ec.tensor([2, 0])
    check(lambda t, val: t.index_put((None, idx), val, accumulate=True), x, v)
    check(lambda t, val: t.index_put((None, idx), val), x, v)
    check(lambda t, val: t.index_put((idx, None), val.reshape(2, 4)[:, :3]), x, v)

    def f(t, val):
        y = t * 1
        y[None, idx] = val.reshape(1, 2, 3)
        return y

    check(f, x, leaf(2, 3))
