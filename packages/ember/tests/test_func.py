"""ember.func: values against NumPy / closed forms, gradients against finite
differences (via ember_autograd.gradcheck on the same functions)."""

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.func import (
    functional_call,
    grad,
    grad_and_value,
    hessian,
    jacfwd,
    jacrev,
    jvp,
    linearize,
    stack_module_state,
    vjp,
    vmap,
)

X = np.array([0.5, -1.0, 2.0])


def _x():
    return ember.tensor(X, dtype=ember.float64)


def test_grad_and_nested_grad():
    np.testing.assert_allclose(grad(lambda x: (x**3).sum())(_x()).numpy(), 3 * X**2)
    gg = grad(grad(lambda x: x.sin()))(ember.tensor(0.5, dtype=ember.float64))
    np.testing.assert_allclose(gg.item(), -np.sin(0.5))
    ggg = grad(grad(grad(lambda x: x**4)))(ember.tensor(2.0))
    assert ggg.item() == pytest.approx(48.0)
    g = grad(lambda x: (x**2).sum())(_x())
    assert not g.requires_grad and g.grad_fn is None


def test_grad_argnums_has_aux_and_pytrees():
    def f(a, b):
        return (a * b).sum(), {"mean": a.mean()}

    a, b = _x(), _x() + 1
    (ga, gb), aux = grad(f, argnums=(0, 1), has_aux=True)(a, b)
    np.testing.assert_allclose(ga.numpy(), X + 1)
    np.testing.assert_allclose(gb.numpy(), X)
    assert aux["mean"].item() == pytest.approx(X.mean())
    g, value = grad_and_value(lambda p: (p["w"] ** 2).sum() + p["c"])({"w": a, "c": b.sum()})
    np.testing.assert_allclose(g["w"].numpy(), 2 * X)
    assert g["c"].item() == 1.0 and value.item() == pytest.approx((X**2).sum() + (X + 1).sum())


def test_grad_errors():
    with pytest.raises(RuntimeError, match="scalar Tensor"):
        grad(lambda x: x)(_x())
    with pytest.raises(RuntimeError, match="to return a Tensor"):
        grad(lambda x: 1.0)(_x())
    with pytest.raises(ValueError, match="must be Tensor"):
        grad(ember.sum)(1.0)
    with pytest.raises(RuntimeError, match="only 1 positional"):
        grad(ember.sum, argnums=3)(_x())
    with pytest.raises(RuntimeError, match="tuple: \\(output, aux\\)"):
        grad(lambda x: x.sum(), has_aux=True)(_x())


def test_grad_keeps_the_callers_graph():
    x = _x().requires_grad_()
    g = grad(lambda t: (t**3).sum())(x)
    assert g.requires_grad
    (h,) = ember.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(h.numpy(), 6 * X)


def test_vjp_jvp_linearize():
    out, fn = vjp(ember.sin, _x())
    np.testing.assert_allclose(out.numpy(), np.sin(X))
    (g,) = fn(ember.ones(3, dtype=ember.float64))
    np.testing.assert_allclose(g.numpy(), np.cos(X))
    (g2,) = fn(ember.full((3,), 2.0, dtype=ember.float64))  # vjp_fn may be called again
    np.testing.assert_allclose(g2.numpy(), 2 * np.cos(X))
    out, jv = jvp(lambda a, b: a * b.exp(), (_x(), _x()), (ember.ones(3, dtype=ember.float64),) * 2)
    np.testing.assert_allclose(jv.numpy(), np.exp(X) + X * np.exp(X))
    out, jfn = linearize(ember.exp, _x())
    np.testing.assert_allclose(jfn(ember.ones(3, dtype=ember.float64)).numpy(), np.exp(X))
    with pytest.raises(RuntimeError, match="Expected primals to be a tuple"):
        jvp(ember.sin, _x(), _x())
    with pytest.raises(RuntimeError, match="different size"):
        jvp(ember.sin, (_x(),), (ember.ones(2, dtype=ember.float64),))


def test_jacobians_and_hessian():
    def f(x):
        return ember.stack([x[0] * x[1], x[1].sin() + x[2] ** 2])

    expected = np.array([[X[1], X[0], 0.0], [0.0, np.cos(X[1]), 2 * X[2]]])
    np.testing.assert_allclose(jacrev(f)(_x()).numpy(), expected)
    np.testing.assert_allclose(jacfwd(f)(_x()).numpy(), expected)
    h = hessian(lambda x: (x.sin() * x).sum())(_x())
    np.testing.assert_allclose(h.numpy(), np.diag(2 * np.cos(X) - X * np.sin(X)), atol=1e-12)
    ja, jb = jacrev(lambda a, b: a * b, argnums=(0, 1))(_x(), _x() + 1)
    np.testing.assert_allclose(ja.numpy(), np.diag(X + 1))
    np.testing.assert_allclose(jb.numpy(), np.diag(X))
    jd = jacrev(lambda p: p["w"] * 2)({"w": _x()})
    np.testing.assert_allclose(jd["w"].numpy(), 2 * np.eye(3))


def test_vmap_dims_nesting_and_structures():
    m = np.arange(12.0).reshape(3, 4)
    t = ember.tensor(m)
    np.testing.assert_allclose(vmap(ember.dot)(t, t).numpy(), (m * m).sum(1))
    np.testing.assert_allclose(vmap(lambda c: c.sum(), in_dims=1)(t).numpy(), m.sum(0))
    np.testing.assert_allclose(vmap(lambda r: r * 2, out_dims=1)(t).numpy(), (m * 2).T)
    np.testing.assert_allclose(vmap(vmap(ember.mul))(t, t).numpy(), m * m)
    w = ember.ones(4, dtype=ember.float64)
    np.testing.assert_allclose(
        vmap(ember.mv, in_dims=(None, 0))(
            t.T.contiguous(), ember.ones(3, 3, dtype=ember.float64)
        ).numpy(),
        np.tile(m.sum(0), (3, 1)),
    )
    d = vmap(lambda p: p["a"] @ p["b"], in_dims=({"a": 0, "b": None},))({"a": t, "b": w})
    np.testing.assert_allclose(d.numpy(), m.sum(1))
    a, s = vmap(lambda r: (r, r.sum()), out_dims=(1, 0))(t)
    assert a.shape == (4, 3) and s.shape == (3,)
    empty = vmap(lambda r: r.sum())(ember.zeros(0, 4))
    assert empty.shape == (0,)


def test_vmap_errors_and_randomness():
    t = ember.ones(3, 4)
    with pytest.raises(ValueError, match="must only return Tensors"):
        vmap(lambda r: 1.0)(t)
    with pytest.raises(ValueError, match="same size in the mapped dimension"):
        vmap(ember.add)(t, ember.ones(2, 4))
    with pytest.raises(ValueError, match="not compatible with the structure"):
        vmap(ember.sin, in_dims=(0, 0))(t)
    with pytest.raises(ValueError, match="dimensionality 2"):
        vmap(ember.sin, in_dims=2)(t)
    with pytest.raises(ValueError, match="non-Tensor"):
        vmap(lambda a, b: a, in_dims=(0, 0))(t, 1.0)
    with pytest.raises(ValueError, match="got no inputs"):
        vmap(ember.sin)()
    with pytest.raises(RuntimeError, match="randomness error mode"):
        vmap(lambda r: r + ember.rand(4))(t)
    with pytest.raises(RuntimeError, match="randomness error mode"):
        vmap(lambda r: F.dropout(r, 0.5))(t)
    np.testing.assert_allclose(vmap(lambda r: F.dropout(r, 0.5, training=False))(t).numpy(), 1.0)
    with pytest.raises(RuntimeError, match="Only allowed values"):
        vmap(ember.sin, randomness="sometimes")
    with pytest.raises(ValueError, match="chunk_size"):
        vmap(ember.sin, chunk_size=0)
    same = vmap(lambda r: ember.rand(2), randomness="same")(t)
    assert (same[0] == same[1]).all() and (same[1] == same[2]).all()
    diff = vmap(lambda r: ember.rand(5), randomness="different")(t)
    assert not (diff[0] == diff[1]).all()
    with pytest.raises(ValueError, match="BatchedTensor"):
        vmap(lambda r: r * 2, out_dims=None)(ember.rand(3, 2))
    assert ember.vmap is vmap


def _model():
    ember.manual_seed(0)
    return nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))


def test_per_sample_gradients_sum_to_the_batch_gradient():
    model = _model()
    xs = ember.randn(6, 3)
    ys = ember.tensor([0, 1, 1, 0, 1, 0])
    params = {k: v.detach() for k, v in model.named_parameters()}

    def loss(p, x, y):
        return F.cross_entropy(functional_call(model, p, (x.unsqueeze(0),)), y.unsqueeze(0))

    per = vmap(grad(loss), in_dims=(None, 0, 0))(params, xs, ys)
    F.cross_entropy(model(xs), ys, reduction="sum").backward()
    for k, p in model.named_parameters():
        assert per[k].shape == (6,) + tuple(p.shape)
        np.testing.assert_allclose(per[k].sum(0).numpy(), p.grad.numpy(), rtol=1e-5, atol=1e-6)
    for i in range(6):  # and each row is that sample's own gradient
        model.zero_grad()
        F.cross_entropy(model(xs[i : i + 1]), ys[i : i + 1]).backward()
        np.testing.assert_allclose(
            per["0.weight"][i].numpy(), model[0].weight.grad.numpy(), rtol=1e-5, atol=1e-6
        )


def test_functional_call_swaps_and_restores():
    lin = nn.Linear(2, 1)
    orig_w = lin.weight
    w = ember.tensor([[1.0, 2.0]])
    out = functional_call(lin, {"weight": w, "bias": ember.zeros(1)}, ember.tensor([[3.0, 4.0]]))
    assert out.item() == 11.0 and lin.weight is orig_w

    class Boom(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(2, 1)

        def forward(self, x):
            raise ValueError("boom")

    b = Boom()
    w0 = b.lin.weight
    with pytest.raises(ValueError, match="boom"):
        functional_call(b, {"lin.weight": w}, ember.ones(1, 2))
    assert b.lin.weight is w0
    with pytest.raises(RuntimeError, match="Unexpected key\\(s\\): 'nope'"):
        functional_call(lin, {"nope": w}, ember.ones(1, 2), strict=True)
    with pytest.raises(RuntimeError, match="Missing key\\(s\\): 'bias'"):
        functional_call(lin, {"weight": w}, ember.ones(1, 2), strict=True)
    with pytest.raises(ValueError, match="multiple dictionaries"):
        functional_call(lin, ({"weight": w}, {"weight": w}), ember.ones(1, 2))


def test_functional_call_tie_weights():
    class Tied(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Parameter(ember.ones(1))
            self.b = self.a

        def forward(self, x):
            return x + self.a + self.b

    m = Tied()
    z = ember.zeros(1)
    assert functional_call(m, {"a": z}, ember.zeros(1)).item() == 0.0
    assert functional_call(m, {"a": z}, ember.zeros(1), tie_weights=False).item() == 1.0
    with pytest.raises(ValueError, match="which are tied"):
        functional_call(m, {"a": z, "b": ember.ones(1)}, ember.zeros(1))


def test_stack_module_state_and_ensembles():
    models = [_model() for _ in range(3)]
    for i, m in enumerate(models):
        with ember.no_grad():
            m[2].bias.add_(i)
    params, buffers = stack_module_state(models)
    assert params["0.weight"].shape == (3, 4, 3) and params["0.weight"].is_leaf
    assert params["0.weight"].requires_grad and buffers == {}
    x = ember.randn(5, 3)
    out = vmap(lambda p, b, x: functional_call(models[0], (p, b), (x,)), in_dims=(0, 0, None))(
        params, buffers, x
    )
    for i, m in enumerate(models):
        np.testing.assert_allclose(out[i].detach().numpy(), m(x).detach().numpy(), rtol=1e-6)
    with pytest.raises(RuntimeError, match="at least one model"):
        stack_module_state([])
    with pytest.raises(RuntimeError, match="same class"):
        stack_module_state([nn.Linear(1, 1), nn.Tanh()])
