"""ember.func, ember.jit and the autograd additions against PyTorch 2.13:
values, shapes and error types of the same programs run in both."""

import numpy as np
import pytest

import ember

pytestmark = pytest.mark.parity
torch = pytest.importorskip("torch")

X = np.array([[0.5, -1.0, 2.0], [1.5, 0.2, -0.3], [0.1, 0.7, 1.1], [-2.0, 0.4, 0.9]])


def _both(fn):
    """fn(lib, x) in both libraries, as NumPy (nested structures flattened)."""
    out = []
    for lib in (ember, torch):
        r = fn(lib, lib.tensor(X, dtype=lib.float64))
        flat = lib.utils._pytree.tree_leaves(r) if not isinstance(r, lib.Tensor) else [r]
        out.append([(tuple(t.shape), t.detach().numpy()) for t in flat])
    return out


def _m(lib):
    return lib.func


CASES = {
    "grad": lambda L, x: _m(L).grad(lambda t: (t.sin() * t).sum())(x),
    "grad_argnums": lambda L, x: _m(L).grad(lambda a, b: (a * b.exp()).sum(), argnums=(0, 1))(x, x),
    "grad_aux": lambda L, x: _m(L).grad(lambda t: ((t**2).sum(), t.mean()), has_aux=True)(x),
    "grad_and_value": lambda L, x: _m(L).grad_and_value(lambda t: t.tanh().sum())(x),
    "grad_grad": lambda L, x: _m(L).grad(lambda t: _m(L).grad(lambda u: u.sin().sum())(t).sum())(x),
    "vjp": lambda L, x: _m(L).vjp(lambda t: t.exp() * t, x)[1](x),
    "jvp": lambda L, x: _m(L).jvp(lambda t: t.sin(), (x,), (x * 0 + 1,)),
    "linearize": lambda L, x: _m(L).linearize(lambda t: t.exp(), x)[1](x),
    "jacrev": lambda L, x: _m(L).jacrev(lambda t: t.sin() @ t.T)(x[0:2]),
    "jacfwd": lambda L, x: _m(L).jacfwd(lambda a, b: a * b, argnums=(0, 1))(x[0], x[1]),
    "hessian": lambda L, x: _m(L).hessian(lambda t: (t**3).sum() + t.prod())(x[0]),
    "jacrev_dict": lambda L, x: _m(L).jacrev(lambda p: p["w"] @ p["v"])({"w": x[:2], "v": x[0]}),
    "vmap": lambda L, x: L.vmap(L.dot)(x, x),
    "vmap_in1": lambda L, x: L.vmap(lambda c: c.sum(), in_dims=1)(x),
    "vmap_out1": lambda L, x: L.vmap(lambda r: (r * 2, r.sum()), out_dims=(1, 0))(x),
    "vmap_none": lambda L, x: L.vmap(lambda r, w: r @ w, in_dims=(0, None))(x, x[0]),
    "vmap_nested": lambda L, x: L.vmap(L.vmap(lambda a, b: a * b))(x, x),
    "vmap_dict": lambda L, x: L.vmap(lambda d: d["a"] + d["b"], in_dims=({"a": 0, "b": None},))(
        {"a": x, "b": x[0]}
    ),
    "vmap_grad": lambda L, x: L.vmap(_m(L).grad(lambda r: (r**3).sum()))(x),
    "vmap_jacrev": lambda L, x: L.vmap(_m(L).jacrev(L.sin))(x),
    "vmap_empty": lambda L, x: L.vmap(lambda r: r.sum())(x[:0]),
    "af_jacobian": lambda L, x: L.autograd.functional.jacobian(lambda t: t.sin() * t, x[0]),
    "af_hessian": lambda L, x: L.autograd.functional.hessian(lambda t: (t**3).sum(), x[0]),
    "af_vjp": lambda L, x: L.autograd.functional.vjp(lambda t: t**2, x[0], x[1]),
    "af_jvp": lambda L, x: L.autograd.functional.jvp(lambda t: t**2, x[0], x[1]),
    "af_hvp": lambda L, x: L.autograd.functional.hvp(lambda t: (t**3).sum(), x[0], x[1]),
    "af_vhp": lambda L, x: L.autograd.functional.vhp(lambda t: (t**3).sum(), x[0], x[1]),
    "grads_batched": lambda L, x: L.autograd.grad(
        x.requires_grad_() * 2 + x.sin(), x, L.stack([x * 0 + 1, x]), is_grads_batched=True
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_match_torch(name):
    ours, theirs = _both(CASES[name])
    assert len(ours) == len(theirs)
    for (s1, a), (s2, b) in zip(ours, theirs):
        assert s1 == s2
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


ERRORS = {
    "vmap_nontensor": lambda L, x: L.vmap(lambda r: 1.0)(x),
    "vmap_sizes": lambda L, x: L.vmap(L.add)(x, x[:2]),
    "vmap_structure": lambda L, x: L.vmap(L.sin, in_dims=(0, 0))(x),
    "vmap_dim_range": lambda L, x: L.vmap(L.sin, in_dims=2)(x),
    "vmap_in_dims_type": lambda L, x: L.vmap(L.sin, in_dims=[0])(x),
    "vmap_non_tensor_input": lambda L, x: L.vmap(lambda a, b: a)(x, 1.0),
    "vmap_random": lambda L, x: L.vmap(lambda r: r + L.rand(3, dtype=L.float64))(x),
    "vmap_randomness_arg": lambda L, x: L.vmap(L.sin, randomness="x")(x),
    "vmap_chunk": lambda L, x: L.vmap(L.sin, chunk_size=0)(x),
    "vmap_out_none": lambda L, x: L.vmap(lambda r: r * 2, out_dims=None)(x),
    "vmap_out_dims": lambda L, x: L.vmap(lambda r: (r, r), out_dims=(0, 0, 0))(x),
    "grad_nonscalar": lambda L, x: _m(L).grad(lambda t: t)(x),
    "grad_nontensor_out": lambda L, x: _m(L).grad(lambda t: 1.0)(x),
    "grad_nontensor_in": lambda L, x: _m(L).grad(L.sum)(1.0),
    "grad_argnum": lambda L, x: _m(L).grad(L.sum, argnums=2)(x),
    "grad_argnums_dup": lambda L, x: _m(L).grad(lambda a: a.sum(), argnums=(0, 0))(x),
    "grad_aux_shape": lambda L, x: _m(L).grad(lambda t: t.sum(), has_aux=True)(x),
    "jvp_primals": lambda L, x: _m(L).jvp(L.sin, x, x),
    "jvp_structure": lambda L, x: _m(L).jvp(L.mul, (x, x), (x,)),
    "vjp_int_out": lambda L, x: _m(L).vjp(lambda t: t.long(), x),
    "jacrev_chunk": lambda L, x: _m(L).jacrev(L.sin, chunk_size=0)(x),
    "stack_empty": lambda L, x: _m(L).stack_module_state([]),
    "fc_strict": lambda L, x: _m(L).functional_call(
        L.nn.Linear(3, 1), {"weight": x[:1]}, (x,), strict=True
    ),
    "fc_dup": lambda L, x: _m(L).functional_call(
        L.nn.Linear(3, 1), ({"weight": x[:1]}, {"weight": x[:1]}), (x,)
    ),
    "variable_data": lambda L, x: L.autograd.Variable([1.0]),
    "jit_freeze": lambda L, x: L.jit.freeze(L.nn.Linear(1, 1)),
    "jit_trace_module_noargs": lambda L, x: L.jit.trace(L.nn.Linear(1, 1)),
    "jit_ignore_arg": lambda L, x: L.jit.ignore(3),
    "hooks_disabled": lambda L, x: _disabled_hooks(L),
    "af_vjp_strict": lambda L, x: L.autograd.functional.vjp(
        lambda a, b: a * 2, (x[0], x[1]), x[0], strict=True
    ),
    "af_jvp_strict": lambda L, x: L.autograd.functional.jvp(
        lambda a, b: a * 2, (x[0], x[1]), (x[0], x[1]), strict=True
    ),
    "af_jacobian_strict": lambda L, x: L.autograd.functional.jacobian(
        lambda a, b: a * 2, (x[0], x[1]), strict=True
    ),
    "af_jacobian_forward": lambda L, x: L.autograd.functional.jacobian(
        L.sin, x, strategy="forward-mode"
    ),
    "af_vjp_type": lambda L, x: L.autograd.functional.vjp(lambda a: a, [x]),
    "af_vjp_v_size": lambda L, x: L.autograd.functional.vjp(lambda a: a, x, x[0]),
    "af_vjp_no_v": lambda L, x: L.autograd.functional.vjp(lambda a: a, x),
}


def _disabled_hooks(L):
    with (
        L.autograd.graph.disable_saved_tensors_hooks("off"),
        L.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t),
    ):
        pass


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors_match_torch(name):
    kinds = []
    for lib in (ember, torch):
        with pytest.raises(Exception) as info:
            ERRORS[name](lib, lib.tensor(X, dtype=lib.float64))
        kinds.append(type(info.value).__name__)
    assert kinds[0] == kinds[1]


def test_per_sample_gradients_match_torch():
    results = []
    for lib in (ember, torch):
        lib.manual_seed(0)
        model = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.Tanh(), lib.nn.Linear(4, 2))
        with lib.no_grad():
            for i, p in enumerate(model.parameters()):
                p.copy_(lib.tensor(np.linspace(-1, 1, p.numel()).reshape(p.shape) * (i + 1)))
        params = {k: v.detach() for k, v in model.named_parameters()}
        xs = lib.tensor(X, dtype=lib.float32)
        ys = lib.tensor([0, 1, 1, 0])

        def loss(p, x, y, model=model, lib=lib):
            out = lib.func.functional_call(model, p, (x.unsqueeze(0),))
            return lib.nn.functional.cross_entropy(out, y.unsqueeze(0))

        per = lib.vmap(lib.func.grad(loss), in_dims=(None, 0, 0))(params, xs, ys)
        results.append({k: v.numpy() for k, v in per.items()})
    assert results[0].keys() == results[1].keys()
    for k in results[0]:
        np.testing.assert_allclose(results[0][k], results[1][k], rtol=1e-5, atol=1e-6)


def test_saved_tensor_hook_counts_match_torch():
    counts = []
    for lib in (ember, torch):
        packs, unpacks = [], []
        x = lib.tensor(X[0], requires_grad=True)
        w = lib.tensor(X[1], requires_grad=True)
        with lib.autograd.graph.saved_tensors_hooks(
            lambda t, packs=packs: packs.append(1) or t.detach(),
            lambda t, unpacks=unpacks: unpacks.append(1) or t,
        ):
            y = ((x * w).sin() + x.exp() * w).tanh().sum()
        y.backward()
        counts.append((len(packs), len(unpacks), x.grad.numpy(), w.grad.numpy()))
    assert counts[0][:2] == counts[1][:2]
    np.testing.assert_allclose(counts[0][2], counts[1][2], rtol=1e-12)
    np.testing.assert_allclose(counts[0][3], counts[1][3], rtol=1e-12)


def test_variable_and_jit_flags_match_torch():
    for lib in (ember, torch):
        v = lib.autograd.Variable(lib.ones(2), requires_grad=True)
        assert (isinstance(v, lib.autograd.Variable), v.is_leaf, v.requires_grad) == (
            True,
            True,
            True,
        )
        assert lib.jit.is_scripting() is False and lib.jit.is_tracing() is False
        assert lib.jit.wait(lib.jit.fork(lambda a: a * 2, lib.ones(1))).item() == 2.0
