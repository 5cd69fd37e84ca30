"""grad(is_grads_batched=True) against one grad call per batch row."""

import numpy as np
import pytest

import ember_autograd as ag
import ember_core as ec


def test_batched_grads_give_the_jacobian():
    x = ec.tensor([1.0, 2.0, 3.0], dtype=ec.float64, requires_grad=True)
    y = x * x
    (jac,) = ag.grad(y, x, ec.eye(3, dtype=ec.float64), is_grads_batched=True)
    np.testing.assert_allclose(jac.numpy(), np.diag([2.0, 4.0, 6.0]))


def test_batched_grads_match_a_loop_and_keep_the_graph_when_asked():
    w = ec.tensor([[0.5, -1.0], [2.0, 0.3]], dtype=ec.float64, requires_grad=True)
    b = ec.tensor([0.1, 0.2], dtype=ec.float64, requires_grad=True)
    out = (w @ b).tanh()
    vs = ec.tensor([[1.0, 0.0], [0.3, -2.0], [0.0, 1.0]], dtype=ec.float64)
    gw, gb = ag.grad(out, (w, b), vs, is_grads_batched=True, create_graph=True)
    assert gw.shape == (3, 2, 2) and gb.shape == (3, 2)
    for i in range(3):
        rw, rb = ag.grad(out, (w, b), vs[i], retain_graph=True)
        np.testing.assert_allclose(gw[i].detach().numpy(), rw.numpy())
        np.testing.assert_allclose(gb[i].detach().numpy(), rb.numpy())
    assert gw.requires_grad


def test_batched_grads_need_grad_outputs():
    x = ec.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError):
        ag.grad((x * 2).sum(), x, is_grads_batched=True)
