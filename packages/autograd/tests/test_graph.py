"""ember_autograd.graph: saved-tensor hooks on formula and custom-Function
saves (values against NumPy and finite differences), multi-grad hooks."""

import numpy as np
import pytest

import ember_autograd as ag
import ember_core as ec
from ember_autograd import graph


def _x():
    return ec.tensor([0.5, -1.0, 2.0], dtype=ec.float64, requires_grad=True)


def test_hooks_pack_and_unpack_every_saved_tensor():
    packed, unpacked = [], []

    def pack(t):
        packed.append(t.shape)
        return t.detach() * 1

    def unpack(t):
        unpacked.append(t.shape)
        return t

    x = _x()
    with graph.saved_tensors_hooks(pack, unpack):
        y = (x * x).sin().sum()  # mul saves both operands, sin its input
    assert len(packed) == 3 and unpacked == []
    y.backward()
    assert len(unpacked) == 3
    xv = x.detach().numpy()
    np.testing.assert_allclose(x.grad.numpy(), np.cos(xv * xv) * 2 * xv)


def test_hooks_outside_the_context_do_not_apply():
    calls = []
    with graph.saved_tensors_hooks(lambda t: calls.append(1) or t, lambda t: t):
        pass
    x = _x()
    (x * x).sum().backward()
    assert calls == []


def test_unpacked_values_are_what_backward_uses():
    x = _x()
    with graph.saved_tensors_hooks(lambda t: t.detach() * 0 + 1, lambda t: t):
        y = (x * x).sum()
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 2.0, 2.0])  # d(x*x) with x read as ones


def test_double_backward_through_hooked_saves():
    x = _x()
    with graph.saved_tensors_hooks(lambda t: t.detach().clone(), lambda t: t):
        y = (x.exp() * x).sum()
    (g,) = ag.grad(y, x, create_graph=True)
    (gg,) = ag.grad(g.sum(), x)
    xv = x.detach().numpy()
    np.testing.assert_allclose(g.detach().numpy(), np.exp(xv) * (1 + xv))
    np.testing.assert_allclose(gg.numpy(), np.exp(xv) * (2 + xv))


def test_gradcheck_under_save_on_cpu():
    def fn(a, b):
        with graph.save_on_cpu():
            return (a * b).tanh() * a

    a = ec.tensor([0.3, -0.7], dtype=ec.float64, requires_grad=True)
    b = ec.tensor([1.1, 0.4], dtype=ec.float64, requires_grad=True)
    assert ag.gradcheck(fn, (a, b))


def test_custom_function_saves_are_hooked():
    class Cube(ag.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x**3

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 3 * x * x * g

    packed = []
    x = _x()
    with graph.saved_tensors_hooks(lambda t: packed.append(t) or t.detach(), lambda t: t):
        y = Cube.apply(x).sum()
    assert len(packed) == 1
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), 3 * x.detach().numpy() ** 2)


def test_stale_saved_tensor_is_detected_through_hooks():
    x = _x()
    h = x * 1
    with graph.saved_tensors_hooks(lambda t: t.detach(), lambda t: t):
        y = (h * h).sum()
    with ag.no_grad():
        h.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()


def test_unpack_must_return_a_tensor():
    x = _x()
    with graph.saved_tensors_hooks(lambda t: t, lambda t: 3):
        y = (x * x).sum()
    with pytest.raises(TypeError, match="unpack_hook"):
        y.backward()


def test_disable_saved_tensors_hooks():
    with (
        graph.disable_saved_tensors_hooks("no hooks here"),
        pytest.raises(RuntimeError, match="no hooks here"),
        graph.saved_tensors_hooks(lambda t: t, lambda t: t),
    ):
        pass
    with graph.saved_tensors_hooks(lambda t: t, lambda t: t):  # allowed again
        pass


def test_multi_grad_hook_all_and_any():
    a = ec.ones(2, requires_grad=True)
    b = ec.ones(2, requires_grad=True)
    c = a * b
    d = a * b
    seen = []
    handle = graph.register_multi_grad_hook((a, b, c, d), lambda gs: seen.append(gs))
    c.sum().backward(retain_graph=True)
    assert [g is not None for g in seen[-1]] == [True, True, True, False]
    c.sum().backward(inputs=(a,), retain_graph=True)
    assert [g is not None for g in seen[-1]] == [True, False, True, False]
    handle.remove()
    c.sum().backward(retain_graph=True)
    assert len(seen) == 2
    firsts = []
    graph.register_multi_grad_hook((a, b), lambda g: firsts.append(g), mode="any")
    (c + d).sum().backward()
    assert len(firsts) == 1
    with pytest.raises(ValueError, match="mode"):
        graph.register_multi_grad_hook((a,), print, mode="some")


def test_gradient_edge_and_node_type():
    x = _x()
    y = x * 2
    edge = graph.get_gradient_edge(y)
    assert edge.node is y.grad_fn and edge.output_nr == 0
    assert isinstance(y.grad_fn, graph.Node)
    with pytest.raises(RuntimeError):
        graph.get_gradient_edge(ec.ones(1))
