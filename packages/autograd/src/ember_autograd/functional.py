"""Functional higher-order helpers: vjp, jvp, jacobian, hessian, hvp, vhp."""

import ember_core as ec
from ember_autograd import _api
from ember_autograd._grad_mode import enable_grad

Tensor = ec.Tensor


def _tuple(x):
    return (x,) if isinstance(x, Tensor) else tuple(x)


def _check_tensors(x, arg_name, fn_name):
    """PyTorch's type check of inputs / outputs / v."""
    if isinstance(x, Tensor):
        return
    if not isinstance(x, tuple):
        raise TypeError(
            f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple of Tensors but "
            f"the given {arg_name} has type {type(x)}."
        )
    for i, el in enumerate(x):
        if not isinstance(el, Tensor):
            raise TypeError(
                f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple of Tensors "
                f"but the value at index {i} has type {type(el)}."
            )


def _check_v(v, other):
    v = _tuple(v)
    if len(v) != len(other):
        raise RuntimeError(
            f"v is a tuple of invalid length: should be {len(other)} but got {len(v)}."
        )
    for i, (a, b) in enumerate(zip(v, other)):
        if tuple(a.shape) != tuple(b.shape):
            prepend = f"Entry {i} in " if len(other) > 1 else ""
            raise RuntimeError(
                f"{prepend}v has invalid size: should be {b.size()} but got {a.size()}."
            )
    return v


def _check_strict(outs, grads, strict):
    """strict=True: every output must require grad and every input must be used."""
    if not strict:
        return
    for i, o in enumerate(outs):
        if not o.requires_grad:
            raise RuntimeError(
                f"Output {i} of the user-provided function does not require gradients. The "
                "outputs must be computed in a differentiable manner from the input when running "
                "in strict mode."
            )
    for i, g in enumerate(grads):
        if g is None:
            raise RuntimeError(
                f"The output of the user-provided function is independent of input {i}. This is "
                "not allowed in strict mode."
            )


def _prepare(inputs, create_graph, fn_name="vjp"):
    _check_tensors(inputs, "inputs", fn_name)
    out = []
    for t in _tuple(inputs):
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
        _check_tensors(outs, "outputs of the user-provided function", "vjp")
        single_out = isinstance(outs, Tensor)
        outs_t = _tuple(outs)
        if v is None:
            if any(o.numel() != 1 for o in outs_t):
                raise RuntimeError(
                    "The vector v can only be None if the user-provided function returns a "
                    "single Tensor with a single element."
                )
            v = tuple(ec.ones_like(o) for o in outs_t)
        else:
            _check_tensors(v, "v", "vjp")
            v = _check_v(v, outs_t)
        diff = [(o, vv) for o, vv in zip(outs_t, v) if o.requires_grad]
        if diff:
            grads = _api.grad(
                [o for o, _ in diff],
                ins,
                [vv for _, vv in diff],
                create_graph=create_graph,
                allow_unused=True,
            )
        else:
            grads = (None,) * len(ins)
    _check_strict(outs_t, grads, strict)
    grads = tuple(g if g is not None else ec.zeros_like(i) for g, i in zip(grads, ins))
    return _finish(outs_t, single_out, create_graph), _finish(grads, single_in, create_graph)


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), J v): the Jacobian-vector product (by the double-vjp trick)."""
    single_in = isinstance(inputs, Tensor)
    with enable_grad():
        ins = _prepare(inputs, create_graph, "jvp")
        if v is None:
            if any(i.numel() != 1 for i in ins):
                raise RuntimeError(
                    "The vector v can only be None if the input to the user-provided function "
                    "is a single Tensor with a single element."
                )
            v = tuple(ec.ones_like(i) for i in ins)
        else:
            _check_tensors(v, "v", "jvp")
            v = _check_v(v, ins)
        outs = func(*ins)
        _check_tensors(outs, "outputs of the user-provided function", "jvp")
        single_out = isinstance(outs, Tensor)
        outs_t = _tuple(outs)
        _check_strict(outs_t, (), strict)
        dummies = tuple(ec.zeros_like(o).requires_grad_(True) for o in outs_t)
        diff = [(o, u) for o, u in zip(outs_t, dummies) if o.requires_grad]
        if diff:
            gi = _api.grad(
                [o for o, _ in diff],
                ins,
                [u for _, u in diff],
                create_graph=True,
                allow_unused=True,
            )
        else:
            gi = (None,) * len(ins)
        _check_strict((), gi, strict)
        pairs = [(g, vv) for g, vv in zip(gi, v) if g is not None and g.requires_grad]
        if pairs:
            jv = _api.grad(
                [g for g, _ in pairs],
                dummies,
                [vv for _, vv in pairs],
                create_graph=create_graph,
                allow_unused=True,
            )
        else:
            jv = (None,) * len(dummies)
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
        if strategy not in ("forward-mode", "reverse-mode"):
            raise AssertionError(
                'Expected strategy to be either "forward-mode" or "reverse-mode". Hint: If your '
                'function has more outputs than inputs, "forward-mode" tends to be more '
                'performant. Otherwise, prefer to use "reverse-mode".'
            )
        if strategy == "forward-mode" and not vectorize:
            raise NotImplementedError(
                "Computing Jacobian using forward-AD or forward-over-reverse Hessian is"
                "only implemented for `vectorize=True`."
            )
        if strategy == "forward-mode" and create_graph:
            raise NotImplementedError(
                "torch.autograd.functional.jacobian: `create_graph=True` and "
                '`strategy="forward-mode"` are not supported together (yet). Please either set '
                '`create_graph=False` or `strategy="reverse-mode"`.'
            )
        ins = _prepare(inputs, create_graph, "jacobian")
        outs = func(*ins)
        _check_tensors(outs, "outputs of the user-provided function", "jacobian")
        single_out = isinstance(outs, Tensor)
        outs_t = _tuple(outs)
        _check_strict(outs_t, (), strict and not vectorize)
        result = []
        for oi, o in enumerate(outs_t):
            rows = [[] for _ in ins]
            flat = o.reshape(-1)
            for k in range(flat.numel()):
                if not flat.requires_grad:
                    grads = (None,) * len(ins)
                else:
                    grads = _api.grad(
                        flat[k],
                        ins,
                        retain_graph=True,
                        create_graph=create_graph,
                        allow_unused=True,
                    )
                if strict and not vectorize:
                    for j, g in enumerate(grads):
                        if g is None:
                            raise RuntimeError(
                                f"Output {oi} of the user-provided function is independent of "
                                f"input {j}. This is not allowed in strict mode."
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
