"""Functional higher-order helpers: vjp, jvp, jacobian, hessian, hvp, vhp."""

import ember_core as ec
from ember_autograd import _api
from ember_autograd._grad_mode import enable_grad

Tensor = ec.Tensor


def _tuple(x):
    return (x,) if isinstance(x, Tensor) else tuple(x)


def _prepare(inputs, create_graph):
    out = []
    for t in _tuple(inputs):
        if not isinstance(t, Tensor):
            raise TypeError(f"inputs must be Tensors, got {type(t).__name__}")
        out.append(
            t.detach().requires_grad_(True) if not create_graph or not t.requires_grad else t
        )
    return tuple(out)


def _finish(x, single, create_graph):
    if not create_graph:
        x = tuple(t.detach() if isinstance(t, Tensor) else t for t in x)
    return x[0] if single else x


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T J): the vector-Jacobian product."""
    single_in = isinstance(inputs, Tensor)
    with enable_grad():
        ins = _prepare(inputs, create_graph)
        outs = func(*ins)
        single_out = isinstance(outs, Tensor)
        outs_t = _tuple(outs)
        if v is None:
            if any(o.numel() != 1 for o in outs_t):
                raise RuntimeError("vjp: v can only be omitted for functions with scalar outputs")
            v = tuple(ec.ones_like(o) for o in outs_t)
        grads = _api.grad(outs_t, ins, _tuple(v), create_graph=create_graph, allow_unused=True)
    grads = tuple(g if g is not None else ec.zeros_like(i) for g, i in zip(grads, ins))
    if strict and any(g is None for g in grads):
        raise RuntimeError("vjp: an output does not depend on an input (strict=True)")
    return _finish(outs_t, single_out, create_graph), _finish(grads, single_in, create_graph)


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), J v): the Jacobian-vector product (by the double-vjp trick)."""
    single_in = isinstance(inputs, Tensor)
    with enable_grad():
        ins = _prepare(inputs, create_graph)
        if v is None:
            if any(i.numel() != 1 for i in ins):
                raise RuntimeError("jvp: v can only be omitted for functions with scalar inputs")
            v = tuple(ec.ones_like(i) for i in ins)
        v = _tuple(v)
        outs = func(*ins)
        single_out = isinstance(outs, Tensor)
        outs_t = _tuple(outs)
        dummies = tuple(ec.zeros_like(o).requires_grad_(True) for o in outs_t)
        gi = _api.grad(outs_t, ins, dummies, create_graph=True, allow_unused=True)
        pairs = [(g, vv) for g, vv in zip(gi, v) if g is not None]
        jv = _api.grad(
            [g for g, _ in pairs],
            dummies,
            [vv for _, vv in pairs],
            create_graph=create_graph,
            allow_unused=True,
        )
    jv = tuple(j if j is not None else ec.zeros_like(o) for j, o in zip(jv, outs_t))
    _ = single_in
    return _finish(outs_t, single_out, create_graph), _finish(jv, single_out, create_graph)


def jacobian(
    func, inputs, create_graph=False, strict=False, vectorize=False, strategy="reverse-mode"
):
    """The Jacobian of func at inputs: for one input and one output a tensor of
    shape output.shape + input.shape; nested tuples otherwise."""
    single_in = isinstance(inputs, Tensor)
    with enable_grad():
        ins = _prepare(inputs, create_graph)
        outs = func(*ins)
        single_out = isinstance(outs, Tensor)
        outs_t = _tuple(outs)
        result = []
        for o in outs_t:
            rows = [[] for _ in ins]
            flat = o.reshape(-1)
            for k in range(flat.numel()):
                grads = _api.grad(
                    flat[k], ins, retain_graph=True, create_graph=create_graph, allow_unused=True
                )
                for r, g, i in zip(rows, grads, ins):
                    r.append(g if g is not None else ec.zeros_like(i))
            per_input = []
            for r, i in zip(rows, ins):
                j = ec.stack(r, 0) if r else ec.zeros((0,) + tuple(i.shape), dtype=i.dtype)
                per_input.append(j.reshape(tuple(o.shape) + tuple(i.shape)))
            result.append(per_input)
    if not create_graph:
        result = [[j.detach() for j in row] for row in result]
    if single_out and single_in:
        return result[0][0]
    if single_out:
        return tuple(result[0])
    if single_in:
        return tuple(row[0] for row in result)
    return tuple(tuple(row) for row in result)


def hessian(
    func,
    inputs,
    create_graph=False,
    strict=False,
    vectorize=False,
    outer_jacobian_strategy="reverse-mode",
):
    """The Hessian of a scalar function at inputs."""
    single_in = isinstance(inputs, Tensor)

    def gradient(*ins):
        out = func(*ins)
        if not (isinstance(out, Tensor) and out.numel() == 1):
            raise RuntimeError("hessian: the function must return a single-element tensor")
        g = _api.grad(out, ins, create_graph=True, allow_unused=True)
        g = tuple(x if x is not None else ec.zeros_like(i) for x, i in zip(g, ins))
        return g[0] if single_in else g

    return jacobian(gradient, inputs, create_graph=create_graph)


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T H)."""
    single_in = isinstance(inputs, Tensor)
    with enable_grad():
        ins = _prepare(inputs, create_graph)
        out = func(*ins)
        g = _api.grad(out, ins, create_graph=True, allow_unused=True)
        g = tuple(x if x is not None else ec.zeros_like(i) for x, i in zip(g, ins))
        vv = _tuple(v) if v is not None else tuple(ec.ones_like(i) for i in ins)
        h = _api.grad(g, ins, vv, create_graph=create_graph, allow_unused=True)
    h = tuple(x if x is not None else ec.zeros_like(i) for x, i in zip(h, ins))
    return (out.detach() if not create_graph else out), _finish(h, single_in, create_graph)


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), H v) (H is symmetric, so equal to vhp)."""
    return vhp(func, inputs, v, create_graph, strict)
