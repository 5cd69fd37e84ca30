"""backward() and grad(): the entry points into the engine."""

import ember_core as ec
from ember_autograd import _engine

Tensor = ec.Tensor


def _as_tuple(x):
    if x is None:
        return None
    if isinstance(x, Tensor):
        return (x,)
    return tuple(x)


def backward(
    tensors,
    grad_tensors=None,
    retain_graph=None,
    create_graph=False,
    grad_variables=None,
    inputs=None,
):
    """Accumulate into ``.grad`` of the leaves (or of ``inputs``) the gradient of
    ``tensors`` weighted by ``grad_tensors`` (ones for scalars).

    >>> y = (x * x).sum()
    >>> backward(y)          # x.grad == 2 * x
    """
    tensors = _as_tuple(tensors)
    if grad_tensors is None:
        grad_tensors = grad_variables
    grads = (
        _as_tuple(grad_tensors)
        if not (grad_tensors is None or isinstance(grad_tensors, (int, float)))
        else None
    )
    if grads is None:
        grads = (
            (grad_tensors,) * len(tensors) if grad_tensors is not None else (None,) * len(tensors)
        )
    if len(grads) != len(tensors):
        raise RuntimeError(f"got {len(grads)} gradients for {len(tensors)} tensors")
    if retain_graph is None:
        retain_graph = create_graph
    inputs = _as_tuple(inputs)
    if inputs is not None and len(inputs) == 0:
        raise RuntimeError("'inputs' argument to backward() cannot be empty.")
    _engine.run_backward(
        tensors,
        _engine.make_grads(tensors, grads),
        retain_graph,
        create_graph,
        inputs,
        accumulate=True,
    )


def grad(
    outputs,
    inputs,
    grad_outputs=None,
    retain_graph=None,
    create_graph=False,
    only_inputs=True,
    allow_unused=None,
    is_grads_batched=False,
    materialize_grads=False,
):
    """The gradients of ``outputs`` with respect to ``inputs``, returned (not
    accumulated into ``.grad``).

    >>> (gx,) = grad((x * x).sum(), x)
    """
    if is_grads_batched:
        return _grad_batched(
            outputs,
            inputs,
            grad_outputs,
            retain_graph,
            create_graph,
            allow_unused,
            materialize_grads,
        )
    outputs = _as_tuple(outputs)
    inputs = _as_tuple(inputs)
    if grad_outputs is None:
        grads = (None,) * len(outputs)
    else:
        grads = _as_tuple(grad_outputs)
        if len(grads) != len(outputs):
            raise RuntimeError(f"grad_outputs has {len(grads)} entries for {len(outputs)} outputs")
    if allow_unused is None:
        allow_unused = materialize_grads
    if retain_graph is None:
        retain_graph = create_graph
    captured = _engine.run_backward(
        outputs,
        _engine.make_grads(outputs, grads),
        retain_graph,
        create_graph,
        inputs,
        accumulate=False,
    )
    result = []
    for i, (g, t) in enumerate(zip(captured, inputs)):
        if g is None:
            if materialize_grads:
                g = ec.zeros_like(t)
            elif not allow_unused:
                raise RuntimeError(
                    f"The differentiated Tensor at index {i} appears to not have been used in the "
                    "graph. Set allow_unused=True if this is the desired behavior."
                )
        result.append(g)
    return tuple(result)


def _grad_batched(
    outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused, materialize_grads
):
    """grad(is_grads_batched=True): the first dimension of every grad_output
    indexes independent vector-Jacobian products; each runs as its own backward
    (retaining the graph) and the results are stacked (None where unused)."""
    outputs = _as_tuple(outputs)
    single_input = isinstance(inputs, Tensor)
    if grad_outputs is None:
        raise RuntimeError("grad: is_grads_batched=True requires grad_outputs")
    grads = _as_tuple(grad_outputs)
    if len(grads) != len(outputs):
        raise RuntimeError(f"grad_outputs has {len(grads)} entries for {len(outputs)} outputs")
    sizes = {g.shape[0] for g in grads if isinstance(g, Tensor)}
    if len(sizes) != 1:
        raise RuntimeError(
            "grad: is_grads_batched=True expects every grad_output to have the same size in "
            f"its first (batch) dimension, got {sorted(sizes)}"
        )
    (n,) = sizes
    per_sample = []
    for b in range(n):
        per_sample.append(
            grad(
                outputs,
                inputs,
                tuple(g[b] if isinstance(g, Tensor) else g for g in grads),
                retain_graph=True if b < n - 1 else retain_graph,
                create_graph=create_graph,
                allow_unused=allow_unused,
                materialize_grads=materialize_grads,
            )
        )
    result = []
    for i in range(len(per_sample[0]) if per_sample else len(_as_tuple(inputs))):
        col = [r[i] for r in per_sample]
        result.append(None if any(c is None for c in col) else ec.stack(col, 0))
    _ = single_input
    return tuple(result)
