"""The engine and its entry points (_engine.py, _api.py, _tensor_api.py):
dependency order, deep and wide graphs, shared subexpressions, retain_graph,
backward()/grad() arguments, leaves, .grad accumulation, non-differentiable
outputs."""

import sys
import threading

import numpy as np
import pytest

import ember_autograd as ag
import ember_core as ec


def leaf(values, dtype=ec.float64):
    return ec.tensor(values, dtype=dtype, requires_grad=True)


def test_chain_rule_matches_numpy():
    a = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]])
    x = leaf(a)
    y = (x.sin() * x.exp()).sum()
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), np.cos(a) * np.exp(a) + np.sin(a) * np.exp(a))


def test_deep_chain_of_100k_nodes():
    # far deeper than the recursion limit: the engine and graph teardown are iterative
    x = leaf([1.0])
    y = x
    for _ in range(100_000):
        y = y * 1.0
    assert sys.getrecursionlimit() < 100_000
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [1.0])
    del y  # freeing a 100k-deep graph must not overflow the C stack either


def test_deep_graph_freed_without_backward():
    x = leaf([2.0])
    y = x
    for _ in range(100_000):
        y = y + 1.0
    del y
    assert x.grad is None


def test_wide_graph_sums_every_branch():
    x = leaf([1.0, 2.0])
    terms = [x * float(i) for i in range(2_000)]
    total = terms[0]
    for t in terms[1:]:
        total = total + t
    total.sum().backward()
    expected = sum(range(2_000))
    np.testing.assert_allclose(x.grad.numpy(), [expected, expected])


def test_stack_of_many_inputs():
    xs = [leaf([float(i)]) for i in range(500)]
    ec.stack(xs).pow(2).sum().backward()
    for i, x in enumerate(xs):
        np.testing.assert_allclose(x.grad.numpy(), [2.0 * i])


def test_shared_subexpressions_accumulate():
    x = leaf([1.5, -2.0])
    y = x * x  # used three times below
    z = y + y * y + y.exp()
    z.sum().backward()
    a = np.array([1.5, -2.0])
    dy = 1 + 2 * a**2 + np.exp(a**2)
    np.testing.assert_allclose(x.grad.numpy(), dy * 2 * a)


def test_diamond_runs_each_node_once_after_all_its_inputs():
    x = leaf([1.0])
    a = x * 2
    b = a * 3
    c = a * 4
    runs = []
    a.grad_fn.register_prehook(lambda g: runs.append(("a", g[0].item())))
    (b + c).sum().backward()
    assert runs == [("a", 7.0)]  # ran once, with both contributions summed
    np.testing.assert_allclose(x.grad.numpy(), [14.0])


def test_most_recent_node_runs_first():
    x = leaf([1.0])
    order = []
    a = x * 2
    b = x * 3
    a.grad_fn.register_prehook(lambda g: order.append("a"))
    b.grad_fn.register_prehook(lambda g: order.append("b"))
    (a + b).sum().backward()
    assert order == ["b", "a"]


def test_second_backward_through_freed_graph_raises():
    x = leaf([1.0, 2.0])
    y = (x * x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.backward()


def test_retain_graph_allows_second_backward_and_accumulates():
    x = leaf([1.0, 2.0])
    y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), [4.0, 8.0])


def test_saved_tensors_are_freed_after_backward():
    x = leaf([1.0, 2.0])
    y = x.exp()
    node = y.grad_fn
    y.sum().backward()
    with pytest.raises(RuntimeError, match="after they have already been freed"):
        _ = node.saved_tensors


def test_graph_without_saved_tensors_can_run_twice():
    # PyTorch too: only nodes that saved tensors complain
    x = leaf([1.0, 2.0])
    y = (x + 1).sum()
    y.backward()
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 2.0])


def test_implicit_gradient_only_for_scalars():
    x = leaf([1.0, 2.0])
    with pytest.raises(RuntimeError, match="implicitly created only for scalar outputs"):
        (x * 2).backward()


def test_explicit_gradient_and_shape_mismatch():
    x = leaf([1.0, 2.0, 3.0])
    y = x * 2
    y.backward(ec.tensor([1.0, 0.5, -1.0], dtype=ec.float64))
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 1.0, -2.0])
    with pytest.raises(
        RuntimeError, match=r"Mismatch in shape: grad_output\[0\] has a shape of \(2,\)"
    ):
        (x * 2).backward(ec.ones(2, dtype=ec.float64))


def test_backward_on_tensor_without_grad_raises():
    with pytest.raises(RuntimeError, match="does not require grad and does not have a grad_fn"):
        ec.ones(2).sum().backward()


def test_backward_of_several_roots():
    x = leaf([1.0, 2.0])
    ag.backward([(x * 3).sum(), (x * x).sum()])
    np.testing.assert_allclose(x.grad.numpy(), [5.0, 7.0])
    x.grad = None
    ag.backward(
        [x * 3, x * x], [ec.ones(2, dtype=ec.float64), ec.full((2,), 2.0, dtype=ec.float64)]
    )
    np.testing.assert_allclose(x.grad.numpy(), [7.0, 11.0])


def test_backward_roots_depending_on_each_other():
    x = leaf([2.0])
    y = x * 3
    z = y * y
    ag.backward([z.sum(), y.sum()])  # y is also an input of z's graph
    np.testing.assert_allclose(x.grad.numpy(), [2 * 6 * 3 + 3])


def test_backward_inputs_restricts_accumulation():
    x, w = leaf([1.0, 2.0]), leaf([3.0, 4.0])
    (x * w).sum().backward(inputs=[x])
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 4.0])
    assert w.grad is None


def test_backward_inputs_non_leaf_gets_grad():
    x = leaf([1.0, 2.0])
    z = x * 2
    (z * 3).sum().backward(inputs=[z])
    np.testing.assert_allclose(z.grad.numpy(), [3.0, 3.0])
    assert x.grad is None


def test_backward_inputs_empty_raises():
    x = leaf([1.0])
    with pytest.raises(RuntimeError, match="cannot be empty"):
        (x * 2).sum().backward(inputs=[])


def test_grad_returns_without_accumulating():
    x, w = leaf([1.0, 2.0]), leaf([3.0, 4.0])
    gx, gw = ag.grad((x * w).sum(), [x, w])
    np.testing.assert_allclose(gx.numpy(), [3.0, 4.0])
    np.testing.assert_allclose(gw.numpy(), [1.0, 2.0])
    assert x.grad is None and w.grad is None


def test_grad_prunes_branches_that_do_not_reach_inputs():
    x, w = leaf([1.0]), leaf([2.0])
    ran = []
    other = w.exp()
    other.grad_fn.register_prehook(lambda g: ran.append("exp"))
    (gx,) = ag.grad((x * 2 + other).sum(), x)
    np.testing.assert_allclose(gx.numpy(), [2.0])
    assert ran == []


def test_grad_allow_unused_and_materialize():
    x, y = leaf([1.0]), leaf([2.0])
    with pytest.raises(RuntimeError, match="appears to not have been used in the graph"):
        ag.grad((x * 2).sum(), [x, y])
    gx, gy = ag.grad((x * 2).sum(), [x, y], allow_unused=True)
    assert gy is None
    gx, gy = ag.grad((x * 2).sum(), [x, y], materialize_grads=True)
    np.testing.assert_allclose(gy.numpy(), [0.0])


def test_grad_of_non_leaf_input():
    x = leaf([1.0, 2.0])
    h = x * x
    (gh,) = ag.grad((h * 3).sum(), h)
    np.testing.assert_allclose(gh.numpy(), [3.0, 3.0])


def test_grad_with_grad_outputs():
    x = leaf([1.0, 2.0])
    (g,) = ag.grad(x * x, x, grad_outputs=ec.tensor([1.0, -1.0], dtype=ec.float64))
    np.testing.assert_allclose(g.numpy(), [2.0, -4.0])


def test_grad_input_must_require_grad():
    x = leaf([1.0])
    with pytest.raises(RuntimeError, match="does not require grad"):
        ag.grad((x * 2).sum(), ec.ones(1))


def test_higher_order_derivatives():
    x = leaf([0.5, 1.5])
    y = x.pow(4).sum()
    (g1,) = ag.grad(y, x, create_graph=True)
    (g2,) = ag.grad(g1.sum(), x, create_graph=True)
    (g3,) = ag.grad(g2.sum(), x, create_graph=True)
    (g4,) = ag.grad(g3.sum(), x)
    a = np.array([0.5, 1.5])
    np.testing.assert_allclose(g1.detach().numpy(), 4 * a**3)
    np.testing.assert_allclose(g2.detach().numpy(), 12 * a**2)
    np.testing.assert_allclose(g3.detach().numpy(), 24 * a)
    np.testing.assert_allclose(g4.numpy(), [24.0, 24.0])


def test_backward_create_graph_gives_differentiable_grad():
    x = leaf([1.0, 2.0])
    (x**3).sum().backward(create_graph=True)
    assert x.grad.requires_grad
    (gg,) = ag.grad(x.grad.sum(), x)
    np.testing.assert_allclose(gg.numpy(), [6.0, 12.0])


def test_grad_accumulates_in_place_across_backwards():
    x = leaf([1.0, 2.0])
    (x * 2).sum().backward()
    first = x.grad
    (x * 3).sum().backward()
    assert x.grad is first  # accumulated in place, as PyTorch does
    np.testing.assert_allclose(x.grad.numpy(), [5.0, 5.0])


def test_accumulated_grad_is_not_the_callers_tensor():
    x = leaf([1.0, 2.0])
    g = ec.tensor([1.0, 1.0], dtype=ec.float64)
    x.backward(g)  # x is a leaf: its gradient is g itself
    assert x.grad is not g
    g.mul_(5)
    np.testing.assert_allclose(x.grad.numpy(), [1.0, 1.0])


def test_grad_is_not_a_view_of_another_gradient():
    x = leaf([[1.0, 2.0], [3.0, 4.0]])
    y = x.t() * 1  # the gradient reaching x is a transposed view
    y.sum().backward()
    assert x.grad.is_contiguous()
    (x.t() * 2).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.full((2, 2), 3.0))


def test_broadcast_gradients_are_summed_to_input_shapes():
    a, b = leaf([[1.0], [2.0]]), leaf([10.0, 20.0, 30.0])
    (a * b).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), [[60.0], [60.0]])
    np.testing.assert_allclose(b.grad.numpy(), [3.0, 3.0, 3.0])


def test_gradient_dtype_follows_input_dtype():
    a = ec.tensor([1.0, 2.0], dtype=ec.float32, requires_grad=True)
    b = ec.tensor([3.0, 4.0], dtype=ec.float64, requires_grad=True)
    (a * b).sum().backward()
    assert a.grad.dtype is ec.float32 and b.grad.dtype is ec.float64
    np.testing.assert_allclose(a.grad.numpy(), [3.0, 4.0])


def test_integer_and_bool_results_are_not_differentiable():
    x = leaf([1.0, -2.0, 3.0])
    assert not (x > 0).requires_grad
    assert not x.argmax().requires_grad
    assert (x > 0).grad_fn is None
    values, indices = x.max(0)
    assert values.requires_grad and not indices.requires_grad
    with pytest.raises(RuntimeError, match="only Tensors of floating point"):
        ec.tensor([1, 2]).requires_grad_()


def test_leaf_and_grad_fn_attributes():
    x = leaf([1.0, 2.0])
    y = x * 2
    assert x.is_leaf and not y.is_leaf
    assert x.grad_fn is None and y.grad_fn.name() == "MulBackward0"
    (acc, nr), (none, _) = y.grad_fn.next_functions
    assert acc.name() == "AccumulateGrad" and acc.variable is x and nr == 0 and none is None
    assert isinstance(y.grad_fn, ag.graph.Node)
    assert ec.ones(2).is_leaf


def test_accumulate_grad_node_is_shared_while_alive():
    x = leaf([1.0])
    a, b = x * 2, x * 3
    assert a.grad_fn.next_functions[0][0] is b.grad_fn.next_functions[0][0]


def test_output_nr_of_multi_output_ops():
    x = leaf([[3.0, 1.0], [2.0, 4.0]])
    values, _ = x.max(1)
    assert values.output_nr == 0
    values.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [[1.0, 0.0], [0.0, 1.0]])


def test_requires_grad_flag_rules():
    x = leaf([1.0])
    y = x * 2
    with pytest.raises(RuntimeError, match="only change requires_grad flags of leaf variables"):
        y.requires_grad_(False)
    z = ec.ones(2)
    assert z.requires_grad_() is z and z.requires_grad
    z.requires_grad = False
    assert not z.requires_grad


def test_detach_shares_memory_and_cuts_history():
    x = leaf([1.0, 2.0])
    d = x.detach()
    assert not d.requires_grad and d.grad_fn is None and d.is_leaf
    d.add_(1)  # allowed: d is not a view of x for autograd
    np.testing.assert_allclose(x.detach().numpy(), [2.0, 3.0])


def test_detach_in_place():
    x = leaf([1.0, 2.0])
    y = x * 2
    y.detach_()
    assert not y.requires_grad and y.grad_fn is None and y.is_leaf
    v = (x * 2)[1:]
    with pytest.raises(RuntimeError, match="Can't detach views in-place"):
        v.detach_()


def test_retain_grad_on_non_leaf():
    x = leaf([1.0, 2.0])
    y = x * 2
    y.retain_grad()
    z = y * y
    z.retain_grad()
    z.sum().backward()
    np.testing.assert_allclose(y.grad.numpy(), [4.0, 8.0])
    np.testing.assert_allclose(z.grad.numpy(), [1.0, 1.0])
    assert y.retains_grad and not x.retains_grad


def test_non_leaf_grad_access_warns():
    x = leaf([1.0])
    y = x * 2
    with pytest.warns(UserWarning, match="not a leaf Tensor is being accessed"):
        assert y.grad is None


def test_grad_setter_checks_shape():
    x = leaf([1.0, 2.0])
    with pytest.raises(RuntimeError, match="different size"):
        x.grad = ec.ones(3, dtype=ec.float64)
    x.grad = ec.ones(2, dtype=ec.float64)
    del x.grad
    assert x.grad is None


def test_backward_in_threads_is_independent():
    results = {}

    def work(k):
        x = leaf([float(k)])
        for _ in range(50):
            x.grad = None
            (x * x * k).sum().backward()
        results[k] = x.grad.item()

    threads = [threading.Thread(target=work, args=(k,)) for k in range(1, 5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == {k: 2.0 * k * k for k in range(1, 5)}


def test_backward_from_inside_a_hook_is_reentrant():
    x, w = leaf([2.0]), leaf([3.0])
    inner = []

    def hook(g):
        with ag.enable_grad():  # backward runs hooks with grad mode = create_graph
            (gw,) = ag.grad((w * w).sum(), w)
        inner.append(gw.item())
        return g

    y = x * 5
    y.register_hook(hook)
    y.sum().backward()
    assert inner == [6.0]
    np.testing.assert_allclose(x.grad.numpy(), [5.0])


@pytest.mark.parity
def test_parity_mlp_gradients():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    values = [rng.standard_normal(s) for s in [(4, 5), (5, 3), (3,), (3, 2)]]

    def run(ns, A):
        x, w1, b1, w2 = (ns.tensor(v, requires_grad=True) for v in values)
        h = (x @ w1).add(b1).tanh()
        out = (h @ w2).relu().pow(2).mean() + (w1 * w1).sum() * 0.01
        grads = A.grad(out, [x, w1, b1, w2], create_graph=True)
        second = A.grad(sum(g.sum() for g in grads), [x, w1])
        return [g.detach().numpy() for g in grads + second]

    for e, t in zip(run(ec, ag), run(torch, torch.autograd)):
        np.testing.assert_allclose(e, t, rtol=1e-10, atol=1e-12)


def test_ops_returning_their_input_leave_its_history_alone():
    x = leaf([1.0, 2.0])
    for same in (x.contiguous(), x.to(ec.float64), x.double(), x.cpu()):
        assert same is x
    assert x.is_leaf and x.grad_fn is None
    y = x * 2
    assert y.contiguous() is y and y.grad_fn.name() == "MulBackward0"
    (x.contiguous() * y.contiguous()).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [4.0, 8.0])


def test_missing_grads_get_the_meta_of_their_own_output():
    # convolution_backward's outputs are (grad_input, grad_weight, grad_bias) and
    # grad_input is None when the input needs none: the meta of a missing grad is
    # looked up by output number, not by position among the float outputs.
    rng = np.random.default_rng(7)
    x = ec.from_numpy(rng.standard_normal((2, 3, 5, 5)))
    w = leaf(rng.standard_normal((4, 3, 3, 3)))
    b = leaf(rng.standard_normal(4))
    y = ec.conv2d(x, w, b)
    g = leaf(rng.standard_normal(tuple(y.shape)))
    gw, gb = ag.grad(y, (w, b), g, create_graph=True)
    cpu = ec.device("cpu")
    assert gw.grad_fn._out_meta == [None, ((4, 3, 3, 3), ec.float64, cpu), ((4,), ec.float64, cpu)]
    # d(sum(gb**2))/dg: gb[c] = sum of g over (n, h, w) of channel c
    (gg,) = ag.grad((gb * gb).sum(), g)
    gb_np = g.detach().numpy().sum(axis=(0, 2, 3))
    np.testing.assert_allclose(
        gg.numpy(), np.broadcast_to(2 * gb_np[None, :, None, None], gg.shape)
    )


def test_leaf_frozen_after_forward_gets_no_grad():
    # PyTorch's AccumulateGrad skips a leaf whose requires_grad was turned off
    # between forward and backward (freezing layers after computing the loss)
    w = ec.ones(3, requires_grad=True)
    v = ec.ones(3, requires_grad=True)
    loss = (w * 2 + v * 3).sum()
    w.requires_grad_(False)
    loss.backward()
    assert w.grad is None
    np.testing.assert_array_equal(v.grad.numpy(), [3.0, 3.0, 3.0])


def test_grad_fn_classes_are_named_as_pytorch_nodes():
    # type(grad_fn).__name__ is PyTorch's node class (MulBackward0, AccumulateGrad...),
    # each a Node, with repr "<MulBackward0 object at 0x...>"
    from ember_autograd import _node

    x = ec.ones(3, 4).requires_grad_()
    w = ec.ones(4, 2).requires_grad_()
    b = ec.ones(2).requires_grad_()
    z = (ec.addmm(b, x, w) * 2).sum()
    sum_fn = z.grad_fn
    mul_fn = sum_fn.next_functions[0][0]
    addmm_fn = mul_fn.next_functions[0][0]
    leaf_fn = addmm_fn.next_functions[0][0]
    for fn, name in (
        (sum_fn, "SumBackward0"),
        (mul_fn, "MulBackward0"),
        (addmm_fn, "AddmmBackward0"),
        (leaf_fn, "AccumulateGrad"),
    ):
        assert type(fn).__name__ == name == fn.name()
        assert isinstance(fn, _node.Node)
        assert repr(fn) == f"<{name} object at 0x{id(fn):x}>"
    assert type(mul_fn) is type((x * 3).grad_fn)  # one class per name, made once
    z.backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full((3, 4), 4.0))


@pytest.mark.parametrize(
    "key, name",
    [
        (0, "SelectBackward0"),
        (slice(1, 3), "SliceBackward0"),
        (slice(None), "SliceBackward0"),
        ((slice(None), 0), "SelectBackward0"),
        ((0, slice(None)), "SelectBackward0"),
        ((0, slice(1, 3)), "SliceBackward0"),
        (None, "UnsqueezeBackward0"),
        ((0, None), "UnsqueezeBackward0"),
        (Ellipsis, "AliasBackward0"),
        ((Ellipsis, 0), "SelectBackward0"),
        ([0, 1], "IndexBackward0"),
        ((slice(None), [0, 1]), "IndexBackward0"),
        ((0, [1, 2]), "IndexBackward0"),
    ],
)
def test_indexing_nodes_are_named_after_pytorchs_last_indexing_step(key, name):
    x = ec.ones(4, 5).requires_grad_()
    y = x[key]
    assert type(y.grad_fn).__name__ == name == y.grad_fn.name()
    y.sum().backward()  # one node for the whole key, whatever its name
    expected = np.zeros((4, 5))
    expected[key] += 1
    np.testing.assert_array_equal(x.grad.numpy(), expected)
    masked = x[x > 0]
    assert type(masked.grad_fn).__name__ == "IndexBackward0"


def test_custom_function_node_class_name():
    class Double(ag.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    y = Double.apply(ec.ones(2).requires_grad_())
    assert type(y.grad_fn).__name__ == "DoubleBackward" == y.grad_fn.name()
