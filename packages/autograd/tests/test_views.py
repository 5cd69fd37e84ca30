"""Views and autograd (_handler.py's view handling, ViewOfNode, CopySlices):
gradients through chains of views, composite view ops, views of views, and
views whose base is written in place (finite differences and PyTorch)."""

import numpy as np
import pytest
from parity import check_gradients, check_parity

import ember_autograd as ag
import ember_core as ec


def _chain(ns, x):
    return (x.t()[1:].unsqueeze(0).expand(2, 2, 2).permute(2, 0, 1) ** 2).sum()


def _view_reshape_flatten(ns, x):
    return (x.view(3, 2).reshape(6).flatten() * ns.arange(6, dtype=ns.float64)).sum()


def _split_chunk_unbind(ns, x):
    a, b = x.split([1, 2], dim=1)
    c, d = x.chunk(2, dim=0)
    rows = x.unbind(0)
    return (a * 2).sum() + (b**2).sum() + (c * d).sum() + (rows[0] * rows[1]).sum()


def _narrow_select_diagonal(ns, x):
    return x.narrow(1, 1, 2).sum() * x.select(0, 1).prod() + x[:, :2].diagonal().exp().sum()


def _movedim_swap(ns, x):
    y = x.reshape(2, 1, 3).movedim(2, 0).transpose(1, 2)
    return (y * y.sin()).sum()


def _getitem_steps(ns, x):
    return (x[::2, 1:] * 3).sum() + x[..., 1:][:, ::2].pow(2).sum()


def _as_strided_unfold(ns, x):
    flat = x.reshape(-1)
    win = flat.unfold(0, 3, 2)
    return (win**2).sum() + x.as_strided((2, 2), (1, 3), 1).exp().sum()


def _view_of_view_write(ns, x, w):
    y = x * 1
    inner = y.view(6)[2:5]
    inner.mul_(w)
    return (y**2).sum()


def _base_written_then_view_read(ns, x, w):
    y = x.exp() * 1
    rows = y[0], y[1]
    y.add_(w)  # the rows are now stale views of the new history
    return (rows[0] * rows[1]).sum()


def _write_into_expanded_source(ns, x, w):
    y = ns.zeros(2, 3, dtype=ns.float64)
    y.copy_(w.unsqueeze(0).expand(2, 3))
    y[1].mul_(x[0])
    return (y * x).sum()


PROGRAMS = [
    (_chain, [(2, 3)]),
    (_view_reshape_flatten, [(2, 3)]),
    (_split_chunk_unbind, [(2, 3)]),
    (_narrow_select_diagonal, [(2, 3)]),
    (_movedim_swap, [(2, 3)]),
    (_getitem_steps, [(3, 4)]),
    (_as_strided_unfold, [(2, 3)]),
    (_view_of_view_write, [(2, 3), (3,)]),
    (_base_written_then_view_read, [(2, 3), (3,)]),
    (_write_into_expanded_source, [(2, 3), (3,)]),
]


@pytest.mark.parametrize("program,shapes", PROGRAMS, ids=[p.__name__ for p, _ in PROGRAMS])
def test_gradients_through_views(program, shapes):
    check_gradients(program, *shapes)


@pytest.mark.parity
@pytest.mark.parametrize("program,shapes", PROGRAMS, ids=[p.__name__ for p, _ in PROGRAMS])
def test_parity_through_views(program, shapes):
    check_parity(program, *shapes)


def test_written_unbind_outputs_get_correct_gradients():
    # PyTorch refuses this (outputs of multi-view ops may not be used after a
    # write to their base); ember rebuilds each view's history and is correct
    def program(ns, x, w):
        y = x.exp() * 1
        rows = y.unbind(0)
        y.add_(w)
        return (rows[0] * rows[1]).sum()

    check_gradients(program, (2, 3), (3,))


def test_views_record_their_root_base():
    x = ec.ones(2, 3, dtype=ec.float64, requires_grad=True)
    v = x[1:]
    vv = v.t()
    assert v._base is x and vv._base is x
    assert x._base is None and (x * 1)._base is None


def test_view_of_non_requiring_base_gets_grad_from_written_value():
    w = ec.tensor([1.0, 2.0], dtype=ec.float64, requires_grad=True)
    base = ec.zeros(2, 2, dtype=ec.float64)
    row = base[0]
    row.copy_(w * 3)
    assert base.requires_grad and row.requires_grad
    (base * base).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), 18 * w.detach().numpy())


def test_stale_view_grad_fn_is_rebuilt_when_used():
    x = ec.ones(3, dtype=ec.float64, requires_grad=True)
    y = x * 2
    v = y[:2]
    old = v.grad_fn
    y.mul_(x)
    (v.sum()).backward()  # v's values are now y's new values
    assert v.grad_fn is not old
    np.testing.assert_allclose(x.grad.numpy(), [4.0, 4.0, 0.0])


def test_gradient_of_view_output_reaches_only_its_region():
    x = ec.ones(2, 3, dtype=ec.float64, requires_grad=True)
    (gx,) = ag.grad(x[:, 1].sum(), x)
    np.testing.assert_allclose(gx.numpy(), [[0, 1, 0], [0, 1, 0]])


def test_noncontiguous_leaf_gets_gradient_with_its_shape():
    base = ec.arange(12, dtype=ec.float64).reshape(3, 4)
    x = base[:, ::2].detach().requires_grad_()
    (x * x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * x.detach().numpy())
