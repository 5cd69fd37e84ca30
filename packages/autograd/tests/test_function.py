"""Custom Function (_function.py): save_for_backward, needs_input_grad,
views, mark_dirty, mark_non_differentiable, set_materialize_grads,
once_differentiable, setup_context, output validation; the same Functions
under PyTorch for parity."""

import numpy as np
import pytest

import ember_autograd as ag
import ember_core as ec


def functions(ns, A):
    """The same custom Functions for ember (ns=ember_core) or torch."""

    class Cube(A.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 3 * x * x  # differentiable: double backward works

    class ScaledRow(A.Function):
        """Returns a view of its input (row 0) with a non-standard backward."""

        @staticmethod
        def forward(ctx, x):
            return x[0]

        @staticmethod
        def backward(ctx, g):
            out = ns.zeros(2, 3, dtype=g.dtype)
            out[0] = g * 2
            return out

    class DoubleInPlace(A.Function):
        @staticmethod
        def forward(ctx, x):
            x.mul_(2)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 2

    class SortWithIndices(A.Function):
        @staticmethod
        def forward(ctx, x):
            order = np.argsort(x.detach().numpy(), kind="stable")
            idx = ns.tensor(order)
            ctx.mark_non_differentiable(idx)
            ctx.save_for_backward(idx)
            return ns.stack([x[i] for i in order.tolist()]), idx

        @staticmethod
        def backward(ctx, g_values, g_idx):
            (idx,) = ctx.saved_tensors
            out = ns.zeros(g_values.shape, dtype=g_values.dtype)
            for k, i in enumerate(idx.tolist()):
                out[i] = g_values[k]
            return out

    class TwoOutputs(A.Function):
        @staticmethod
        def forward(ctx, x, y):
            ctx.set_materialize_grads(False)
            return x * 2, y * 3

        @staticmethod
        def backward(ctx, ga, gb):
            return (None if ga is None else ga * 2), (None if gb is None else gb * 3)

    class MulConst(A.Function):
        @staticmethod
        def forward(ctx, x, k, flag):
            ctx.k = k
            ctx.flags = ctx.needs_input_grad
            return x * k

        @staticmethod
        def backward(ctx, g):
            return g * ctx.k, None, None

    class Exp(A.Function):  # saves its output
        @staticmethod
        def forward(ctx, x):
            out = x.exp()
            ctx.save_for_backward(out)
            return out

        @staticmethod
        def backward(ctx, g):
            (out,) = ctx.saved_tensors
            return g * out

    class SetupStyle(A.Function):
        @staticmethod
        def forward(x, y):
            return x * y

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(*inputs)

        @staticmethod
        def backward(ctx, g):
            x, y = ctx.saved_tensors
            return g * y, g * x

    class Once(A.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.sin()

        @staticmethod
        @A.function.once_differentiable
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * x.cos()

    class BroadcastGrad(A.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return ns.ones(3, 2, dtype=ns.float32)  # summed to (2,), cast to float64

    class WrongShape(A.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return ns.ones(5, dtype=g.dtype)

    class WrongCount(A.Function):
        @staticmethod
        def forward(ctx, x, y):
            return x * y

        @staticmethod
        def backward(ctx, g):
            return g

    class Identity(A.Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 3

    return {k: v for k, v in locals().items() if isinstance(v, type)}


F = functions(ec, ag)


def leaf(values, dtype=ec.float64):
    return ec.tensor(values, dtype=dtype, requires_grad=True)


def test_save_for_backward_and_double_backward():
    x = leaf([1.0, 2.0])
    y = F["Cube"].apply(x)
    assert y.grad_fn.name() == "CubeBackward"
    (g,) = ag.grad(y.sum(), x, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), [3.0, 12.0])
    (gg,) = ag.grad(g.sum(), x)
    np.testing.assert_allclose(gg.numpy(), [6.0, 12.0])


def test_gradcheck_and_gradgradcheck_of_a_function():
    x = leaf([0.5, -1.5, 2.0])
    assert ag.gradcheck(F["Cube"].apply, (x,))
    assert ag.gradgradcheck(F["Cube"].apply, (x,))


def test_forward_runs_without_recording():
    seen = []

    class Probe(ag.Function):
        @staticmethod
        def forward(ctx, x):
            seen.append(ag.is_grad_enabled())
            y = x * 2
            seen.append(y.requires_grad)
            return y

        @staticmethod
        def backward(ctx, g):
            seen.append(ag.is_grad_enabled())
            return g

    Probe.apply(leaf([1.0])).sum().backward()
    assert seen == [False, False, False]


def test_needs_input_grad_and_non_tensor_arguments():
    x = leaf([1.0, 2.0])
    y = F["MulConst"].apply(x, 3.0, "flag")
    assert y.grad_fn._ctx.flags == (True, False, False)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 3.0])


def test_no_graph_when_no_input_requires_grad_or_under_no_grad():
    x = ec.ones(2, dtype=ec.float64)
    assert F["Cube"].apply(x).grad_fn is None
    with ag.no_grad():
        assert F["Cube"].apply(leaf([1.0])).grad_fn is None


def test_function_returning_a_view_keeps_its_backward():
    x = ec.rand(2, 3, dtype=ec.float64, requires_grad=True)
    row = F["ScaledRow"].apply(x * 1)
    assert row._base is not None  # a view of the (non-leaf) input
    row.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [[2, 2, 2], [0, 0, 0]])


def test_in_place_on_a_function_view_output_is_forbidden():
    y = ec.rand(2, 3, dtype=ec.float64, requires_grad=True) * 1
    row = F["ScaledRow"].apply(y)
    with pytest.raises(RuntimeError, match="created inside a custom Function"):
        row.mul_(2)
    same = F["Identity"].apply(y)
    assert same is not y and same._base is y
    with pytest.raises(RuntimeError, match="created inside a custom Function"):
        same.add_(1)
    y.add_(1)  # the base changes under the view: using the view now is an error
    with pytest.raises(
        RuntimeError, match="its base or another view of its base has been modified"
    ):
        row.sum().backward()


def test_input_returned_as_is_gets_the_functions_backward():
    x = leaf([1.0, 2.0])
    y = x * 1
    out = F["Identity"].apply(y)
    assert y.grad_fn.name() == "MulBackward0"  # the input's own history is untouched
    out.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 3.0])


def test_mark_dirty_on_non_leaf():
    x = leaf([1.0, 2.0])
    y = x * 1
    out = F["DoubleInPlace"].apply(y)
    assert out is y and y.grad_fn.name() == "DoubleInPlaceBackward"
    np.testing.assert_allclose(y.detach().numpy(), [2.0, 4.0])
    (out * out).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [8.0, 16.0])


def test_mark_dirty_on_a_view_rebases_its_base():
    x = leaf([1.0, 2.0, 3.0])
    y = x * 1
    out = F["DoubleInPlace"].apply(y[1:])
    assert y.grad_fn.name() == "CopySlices"
    assert out.grad_fn.name() == "AsStridedBackward0"
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [1.0, 2.0, 2.0])


def test_mark_dirty_on_leaf_raises():
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        F["DoubleInPlace"].apply(leaf([1.0]))


def test_non_differentiable_outputs():
    x = leaf([3.0, 1.0, 2.0])
    values, idx = F["SortWithIndices"].apply(x)
    assert values.requires_grad and not idx.requires_grad
    (values * ec.tensor([1.0, 10.0, 100.0], dtype=ec.float64)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [100.0, 1.0, 10.0])


def test_set_materialize_grads_false_passes_none():
    x, y = leaf([1.0]), leaf([1.0])
    a, b = F["TwoOutputs"].apply(x, y)
    a.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0])
    assert y.grad is None


def test_unused_outputs_get_zero_gradients_by_default():
    seen = []

    class Pair(ag.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, ga, gb):
            seen.append(gb.tolist())
            return ga * 2 + gb * 3

    x = leaf([1.0, 1.0])
    a, _ = Pair.apply(x)
    a.sum().backward()
    assert seen == [[0.0, 0.0]]


def test_saved_output_has_no_reference_cycle_and_detects_modification():
    x = leaf([0.5, 1.0])
    y = F["Exp"].apply(x)
    y.sum().backward(retain_graph=True)
    np.testing.assert_allclose(x.grad.numpy(), np.exp([0.5, 1.0]))
    with ag.no_grad():
        y.mul_(2)
    with pytest.raises(RuntimeError, match="saved by Exp"):
        y.sum().backward()


def test_saved_tensors_freed_after_backward():
    x = leaf([1.0])
    y = F["Cube"].apply(x)
    ctx = y.grad_fn._ctx
    y.sum().backward()
    with pytest.raises(RuntimeError, match="already been freed"):
        _ = ctx.saved_tensors


def test_setup_context_style():
    x, y = leaf([2.0]), leaf([5.0])
    F["SetupStyle"].apply(x, y).sum().backward()
    assert x.grad.tolist() == [5.0] and y.grad.tolist() == [2.0]


def test_once_differentiable():
    x = leaf([0.3, 0.7])
    y = F["Once"].apply(x)
    (g,) = ag.grad(y.sum(), x)
    np.testing.assert_allclose(g.numpy(), np.cos([0.3, 0.7]))
    w = leaf([1.0, 1.0])
    y = F["Once"].apply(x)
    (g,) = ag.grad(y, x, grad_outputs=w * 1, create_graph=True)
    assert g.requires_grad  # depends on w through the incoming gradient...
    with pytest.raises(RuntimeError, match="once_differentiable"):
        g.sum().backward()  # ...but cannot be differentiated


def test_gradient_validation():
    x = leaf([1.0, 2.0])
    F["BroadcastGrad"].apply(x).sum().backward()
    assert x.grad.dtype is ec.float64
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 3.0])
    with pytest.raises(
        RuntimeError,
        match=r"returned an invalid gradient at index 0 - got \[5\] but expected shape "
        r"compatible with \[2\]",
    ):
        F["WrongShape"].apply(leaf([1.0, 2.0])).sum().backward()
    with pytest.raises(
        RuntimeError, match=r"returned an incorrect number of gradients \(expected 2, got 1\)"
    ):
        F["WrongCount"].apply(leaf([1.0]), leaf([2.0])).sum().backward()


def test_save_for_backward_rejects_non_tensors():
    class Bad(ag.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(3)
            return x

    with pytest.raises(TypeError, match="save_for_backward can only save variables"):
        Bad.apply(leaf([1.0]))


@pytest.mark.parity
def test_parity_with_torch_functions():
    torch = pytest.importorskip("torch")
    T = functions(torch, torch.autograd)

    def program(ns, fns, x, w):
        a = fns["Cube"].apply(x * w)
        b = fns["ScaledRow"].apply(a.reshape(2, 3) * 1)
        y = a.reshape(2, 3) * 1
        fns["DoubleInPlace"].apply(y[1])
        c, _ = fns["TwoOutputs"].apply(y.sum(0), w)
        d = fns["SetupStyle"].apply(b, c)
        return d.sum() + fns["Exp"].apply(w).sum()

    rng = np.random.default_rng(3)
    xv, wv = rng.uniform(0.5, 1.5, 6), rng.uniform(0.5, 1.5, 6)
    results = []
    for ns, A, fns in ((ec, ag, F), (torch, torch.autograd, T)):
        x = ns.tensor(xv, dtype=ns.float64, requires_grad=True)
        w = ns.tensor(wv[:3], dtype=ns.float64, requires_grad=True)
        x6 = x
        out = program(ns, fns, x6, w.repeat(2))
        gx, gw = A.grad(out, [x, w], create_graph=True)
        (ggx,) = A.grad((gx * gx).sum() + gw.sum(), [x])
        results.append([t.detach().numpy() for t in (out, gx, gw, ggx)])
    for e, t in zip(*results):
        np.testing.assert_allclose(e, t, rtol=1e-10)
