"""The handler's two ways of recording an op give the same graph (Note
[Recording plan] in _handler.py): C's, which takes the common cases, and
_handler._record, the reference, which takes every call while saved-tensor
hooks are active.  Every op case of op_cases.py is recorded both ways, from the
same inputs: the graphs have the same nodes (names, edges, saved values, input
and output metadata) and give the same gradients."""

import numpy as np
import pytest
from op_cases import CASES, build, make_values, rng_for

import ember_autograd as ag
import ember_core as ec
from ember_autograd._formula import OpNode

FLOAT32_WARNING = "ignore:Input #.* requires gradient and is not a double precision"


def _tensors(out):
    if isinstance(out, ec.Tensor):
        return [out]
    if isinstance(out, (list, tuple)):
        return [t for o in out for t in _tensors(o)]
    return []


def _meta(meta):
    if meta is None:
        return None
    return [None if m is None else (tuple(m[0]), m[1].name) for m in meta]


def _graph(outputs):
    """The graph behind outputs, node by node in the order a walk from the
    outputs meets them: what each node is and where its gradients go."""
    seen, order, stack = {}, [], [t.grad_fn for t in outputs if t.grad_fn is not None]
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen[node] = len(order)
        order.append(node)
        stack.extend(c for c, _ in reversed(node.next_functions) if c is not None)
    described = []
    for node in order:
        edges = tuple(
            (None if c is None else seen.get(c, type(c).__name__), nr)
            for c, nr in node.next_functions
        )
        entry = [type(node).__name__, edges, node._n_outputs, _meta(node._out_meta)]
        if isinstance(node, OpNode):
            entry += [_meta(node._in_meta), sorted(node._values)]
        described.append(entry)
    return described


def _run(case, hooked):
    rng = rng_for(case)
    inputs = tuple(build(ec, spec, make_values(spec, rng)) for spec in case.inputs)
    ec.manual_seed(0)
    if hooked:
        with ag.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
            out = case.call(ec, inputs)
    else:
        out = case.call(ec, inputs)
    outs = [t for t in _tensors(out) if t.requires_grad and t.dtype.is_floating_point]
    wants = [t for t in inputs if isinstance(t, ec.Tensor) and t.requires_grad]
    grads = []
    if outs and wants:
        weights = [ec.tensor(np.linspace(0.5, 1.5, t.numel()), dtype=t.dtype) for t in outs]
        loss = sum((t.reshape(-1) * w).sum() for t, w in zip(outs, weights))
        grads = ag.grad(loss, wants, allow_unused=True)
    return _graph(outs), [None if g is None else g.detach().numpy() for g in grads]


@pytest.mark.filterwarnings(FLOAT32_WARNING)
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_c_and_python_recording_agree(case):
    if case.skip_reason():
        pytest.skip(case.skip_reason())
    graph, grads = _run(case, hooked=False)
    ref_graph, ref_grads = _run(case, hooked=True)
    assert graph == ref_graph
    assert len(grads) == len(ref_grads)
    for g, r in zip(grads, ref_grads):
        assert (g is None) == (r is None)
        if g is not None:
            np.testing.assert_allclose(g, r, rtol=1e-12, atol=1e-12)
