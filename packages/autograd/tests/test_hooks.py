"""Hooks (_node.py, _tensor_api.py, their calls in _engine.py): tensor hooks,
post-accumulate-grad hooks, Node hooks and pre-hooks, their order (PyTorch's),
return values and removal."""

import numpy as np
import pytest

import ember_autograd as ag
import ember_core as ec


def leaf(values=(1.0, 2.0)):
    return ec.tensor(list(values), dtype=ec.float64, requires_grad=True)


def _program(ns, calls):
    """The same graph and hooks in either library; returns (y.grad, x.grad)."""
    x = ns.tensor([1.0, 1.0], dtype=ns.float64, requires_grad=True)
    y = x * 2
    z = y * 3
    z.grad_fn.register_prehook(lambda go: calls.append("z pre"))
    z.grad_fn.register_hook(lambda gi, go: calls.append("z post"))
    z.register_hook(lambda g: calls.append("z tensor"))
    y.register_hook(lambda g: calls.append("y tensor 1"))
    y.retain_grad()
    y.register_hook(lambda g: calls.append("y tensor 2") or g * 10)  # after retain_grad
    x.register_hook(lambda g: calls.append("x tensor"))
    x.register_post_accumulate_grad_hook(lambda t: calls.append("x post-accumulate"))
    acc = y.grad_fn.next_functions[0][0]
    acc.register_prehook(lambda go: calls.append("acc pre"))
    acc.register_hook(lambda gi, go: calls.append(f"acc post {len(gi)} {len(go)}"))
    z.sum().backward()
    return y.grad.tolist(), x.grad.tolist()


EXPECTED_ORDER = [
    "z tensor",
    "z pre",
    "z post",
    "y tensor 1",
    "y tensor 2",
    "x tensor",
    "acc pre",
    "x post-accumulate",
    "acc post 0 1",
]


def test_hook_order():
    calls = []
    y_grad, x_grad = _program(ec, calls)
    assert calls == EXPECTED_ORDER
    assert y_grad == [30.0, 30.0]  # retain_grad sees the result of every tensor hook
    assert x_grad == [60.0, 60.0]


@pytest.mark.parity
def test_hook_order_matches_pytorch():
    torch = pytest.importorskip("torch")
    calls_e, calls_t = [], []
    assert _program(ec, calls_e) == _program(torch, calls_t)
    assert calls_e == calls_t


def test_tensor_hook_replaces_gradient():
    x = leaf()
    y = x * 3
    y.register_hook(lambda g: g * 0.5)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [1.5, 1.5])


def test_tensor_hooks_run_in_registration_order_and_chain():
    x = leaf()
    seen = []
    x.register_hook(lambda g: seen.append(g.tolist()) or g + 1)
    x.register_hook(lambda g: seen.append(g.tolist()) or g * 2)
    (x * 1).sum().backward()
    assert seen == [[1.0, 1.0], [2.0, 2.0]]
    np.testing.assert_allclose(x.grad.numpy(), [4.0, 4.0])


def test_hook_handle_remove_and_context():
    x = leaf()
    calls = []
    handle = x.register_hook(lambda g: calls.append(1))
    handle.remove()
    handle.remove()  # twice is harmless
    (x * 1).sum().backward()
    assert calls == []
    y = x * 1
    with y.register_hook(lambda g: calls.append(2)):
        pass
    y.sum().backward()
    assert calls == []


def test_hook_on_tensor_without_grad_raises():
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        ec.ones(2).register_hook(lambda g: g)


def test_post_accumulate_grad_hook_sees_accumulated_grad():
    x = leaf()
    seen = []
    x.register_post_accumulate_grad_hook(lambda t: seen.append(t.grad.tolist()))
    (x * 2).sum().backward()
    (x * 3).sum().backward()
    assert seen == [[2.0, 2.0], [5.0, 5.0]]
    with pytest.raises(RuntimeError, match="non-leaf"):
        (x * 2).register_post_accumulate_grad_hook(lambda t: None)


def test_post_accumulate_hook_can_update_in_place_like_an_optimizer():
    x = leaf([1.0, 2.0])

    def sgd(t):
        with ag.no_grad():
            t.sub_(t.grad * 0.1)
        t.grad = None

    x.register_post_accumulate_grad_hook(sgd)
    (x * x).sum().backward()
    np.testing.assert_allclose(x.detach().numpy(), [0.8, 1.6])
    assert x.grad is None


def test_node_prehook_can_replace_incoming_gradients():
    x = leaf()
    y = x * 2
    z = y.exp()
    z.grad_fn.register_prehook(lambda go: (go[0] * 0,))
    z.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [0.0, 0.0])


def test_node_hook_can_replace_outgoing_gradients():
    x, w = leaf(), leaf([3.0, 4.0])
    y = x * w
    seen = []

    def hook(grad_inputs, grad_outputs):
        seen.append((len(grad_inputs), len(grad_outputs)))
        return (grad_inputs[0] * 10, grad_inputs[1])

    y.grad_fn.register_hook(hook)
    y.sum().backward()
    assert seen == [(2, 1)]
    np.testing.assert_allclose(x.grad.numpy(), [30.0, 40.0])
    np.testing.assert_allclose(w.grad.numpy(), [1.0, 2.0])


def test_hooks_in_grad_are_called_too():
    x = leaf()
    y = x * 2
    calls = []
    y.register_hook(lambda g: calls.append("y"))
    ag.grad(y.sum(), x)
    assert calls == ["y"]


def test_hook_registered_on_multi_output_node_sees_its_output_only():
    x = ec.tensor([[1.0, 5.0], [7.0, 2.0]], dtype=ec.float64, requires_grad=True)
    values, _ = x.max(dim=1)
    seen = []
    values.register_hook(lambda g: seen.append(g.tolist()))
    (values * ec.tensor([1.0, 2.0], dtype=ec.float64)).sum().backward()
    assert seen == [[1.0, 2.0]]
    np.testing.assert_allclose(x.grad.numpy(), [[0, 1], [2, 0]])


def test_node_metadata_and_name():
    x = leaf()
    y = x.sin()
    y.grad_fn.metadata["tag"] = "mine"
    assert y.grad_fn.metadata == {"tag": "mine"}
    assert y.grad_fn.name() == "SinBackward0"
    assert "SinBackward0" in repr(y.grad_fn)
    saved = y.grad_fn.saved_tensors
    assert len(saved) == 1 and saved[0].tolist() == x.tolist()
