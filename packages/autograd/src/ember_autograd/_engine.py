"""The backward engine.

It runs nodes in dependency order, iteratively (graphs of any depth): it
repeatedly takes, among the nodes that have received gradients, the most
recently created one — whose incoming gradients are then all in (Note
[Execution order]) — applies its hooks and its backward function, and hands
each resulting gradient to the node it belongs to.  Leaves' AccumulateGrad
nodes add into ``.grad``.  Unless ``retain_graph``, each node's saved tensors
are freed as soon as it has run.

With ``inputs`` (``grad()``, ``backward(inputs=...)``) only the nodes on a
path from the roots to an input run, and the gradients reaching the inputs are
captured instead of (for grad) being accumulated.

Per node, in PyTorch's order: tensor hooks (``Tensor.register_hook``) and then
``retain_grad``, Node pre-hooks, the backward function (for a leaf: the
accumulation and its post-accumulate-grad hooks), Node post-hooks.
"""

import ember_core as ec
from ember_autograd import _anomaly, _grad_mode, _native
from ember_autograd._formula import OpNode, real_grad, sum_to
from ember_autograd._handler import _edge
from ember_autograd._node import AccumulateGrad, accumulator
from ember_core._tensor import creation as _core_creation
from ember_core._tensor import tensor as _core_tensor

Tensor = ec.Tensor
state = _grad_mode.state
_add_ = ec.OPS["add_"].impl  # add_(input, other, alpha)


def _root_edge(t, i):
    if not isinstance(t, Tensor):
        raise TypeError(f"backward: element {i} of tensors is a {type(t).__name__}, not a Tensor")
    node, nr = _edge(t) if t._rg else (None, 0)
    if node is None:
        raise RuntimeError(
            f"element {i} of tensors does not require grad and does not have a grad_fn"
        )
    return node, nr


def make_grads(outputs, grads):
    """The initial gradients (with whether the engine owns them): ones for
    scalar outputs when none are given."""
    out = []
    for i, (t, g) in enumerate(zip(outputs, grads)):
        if g is None:
            if t._rg:
                if t._numel != 1:
                    raise RuntimeError("grad can be implicitly created only for scalar outputs")
                if not t._dtype.is_floating_point:
                    raise RuntimeError(
                        "grad can be implicitly created only for real scalar outputs but got "
                        f"{t.dtype}"
                    )
                g = _core_tensor.empty(t._shape, t._dtype, t._storage._device)
                _core_creation.fill_values(g, 1)
            out.append((g, True))
        elif isinstance(g, Tensor):
            if g._shape != t._shape:
                if g._numel != t._numel:
                    raise RuntimeError(
                        f"Mismatch in shape: grad_output[{i}] has a shape of {tuple(g._shape)} and "
                        f"output[{i}] has a shape of {tuple(t._shape)}."
                    )
                g = g.reshape(t._shape)
            if g._dtype is not t._dtype and g._dtype.differentiable != t._dtype.differentiable:
                raise RuntimeError(
                    f"Function backward: grad_output[{i}] has dtype {g.dtype}, but output[{i}] is "
                    f"{t.dtype}"
                )
            out.append((g, False))
        else:
            out.append((ec.full(t._shape, g, dtype=t._dtype, device=t._storage._device), True))
    return out


def _needed(roots, input_nodes):
    """The nodes on a path from the roots to an input node."""
    order, seen, stack = [], set(), []
    for r in roots:  # DFS post-order: children before parents
        if r not in seen:
            seen.add(r)
            stack.append((r, iter(r.next_functions)))
            while stack:
                node, it = stack[-1]
                for child, _ in it:
                    if child is not None and child not in seen:
                        seen.add(child)
                        stack.append((child, iter(child.next_functions)))
                        break
                else:
                    stack.pop()
                    order.append(node)
    needed = set()
    for node in order:
        if node in input_nodes or any(c in needed for c, _ in node.next_functions):
            needed.add(node)
    return needed


class GraphTask:
    """One running backward: what graph.register_multi_grad_hook asks about
    (which nodes will run) and the callbacks queued to run at its end."""

    __slots__ = ("id", "roots", "needed", "_reachable", "callbacks")
    _ids = 0

    def __init__(self, roots, needed):
        GraphTask._ids += 1
        self.id = GraphTask._ids
        self.roots = roots
        self.needed = needed
        self._reachable = None
        self.callbacks = []

    def will_execute(self, node):
        if self.needed is not None:
            return node in self.needed
        if self._reachable is None:  # computed once, on the first question
            seen, stack = set(self.roots), list(self.roots)
            while stack:
                for child, _ in stack.pop().next_functions:
                    if child is not None and child not in seen:
                        seen.add(child)
                        stack.append(child)
            self._reachable = seen
        return node in self._reachable


# The backwards running now, innermost last (a hook may start another).
tasks = []


def current_task():
    return tasks[-1] if tasks else None


# Note [Execution order]
# A node only ever points at nodes that existed when it was made, and nodes are
# numbered (``_seq``) as they are made: a node's gradient producers all have
# larger numbers than it.  So running the nodes that received a gradient in
# decreasing ``_seq`` order (a heap) runs each one after every producer of its
# gradients, with no dependency counting: when a node comes off the heap, all
# its gradients are in.  Nodes that receive no gradient never run.


def run_backward(outputs, grads, retain_graph, create_graph, inputs=None, accumulate=True):
    """Backpropagate; returns the gradients captured for ``inputs`` (in order).
    The loop itself is C's (Note [C engine] in csrc/autograd.c)."""
    root_edges = [_root_edge(t, i) for i, t in enumerate(outputs)]
    targets = needed = input_nodes = captured = None
    if inputs is not None:
        targets = {}  # (node, nr) -> indices into inputs
        for i, t in enumerate(inputs):
            if not isinstance(t, Tensor):
                raise TypeError(f"inputs[{i}] is a {type(t).__name__}, not a Tensor")
            if not t._rg:
                raise RuntimeError("One of the differentiated Tensors does not require grad")
            edge = (t.grad_fn, t._output_nr) if t.grad_fn is not None else (accumulator(t), 0)
            targets.setdefault(edge, []).append(i)
        input_nodes = {node for node, _ in targets}
        needed = _needed([n for n, _ in root_edges], input_nodes)
        captured = [None] * len(inputs)
    prev = (state.enabled, state.below)
    state.enabled, state.below = create_graph, 0
    task = GraphTask([n for n, _ in root_edges], needed)
    tasks.append(task)
    try:
        _native.execute(
            root_edges,
            grads,
            retain_graph,
            create_graph,
            state.anomaly,
            accumulate,
            targets,
            needed,
            input_nodes,
            inputs,
            captured,
        )
        for cb in task.callbacks:  # Variable._execution_engine.queue_callback's
            cb()
    finally:
        tasks.pop()
        state.enabled, state.below = prev
    return captured if captured is not None else []


def _zeros_for_missing(node, grads_in):
    meta = node._out_meta
    return [
        ec.zeros(meta[i][0], dtype=meta[i][1], device=meta[i][2])
        if g is None and i < len(meta) and meta[i]
        else g
        for i, g in enumerate(grads_in)
    ]


def _pre_hooks(node, extra, grads):
    grads = list(grads)
    if extra is not None and extra.tensor_pre_hooks:
        for nr, hooks in extra.tensor_pre_hooks.items():
            for hook in list(hooks.values()):
                if grads[nr] is None:
                    continue
                r = hook(grads[nr])
                if r is not None:
                    grads[nr] = r
    if node.__class__ is AccumulateGrad:
        hooks = node.variable.__dict__.get("_hooks")
        if hooks and grads[0] is not None:
            for hook in list(hooks.values()):
                r = hook(grads[0])
                if r is not None:
                    grads[0] = r
    if extra is not None and extra.retain_hooks:
        for nr, ref in extra.retain_hooks.items():
            t = ref()
            if t is not None and grads[nr] is not None:
                g = grads[nr]
                t._grad = g.clone() if t._grad is None else t._grad + g
    if extra is not None and extra.pre_hooks:
        for hook in list(extra.pre_hooks.values()):
            r = hook(tuple(grads))
            if r is not None:
                grads = list(r)
    return grads


def _post_hooks(extra, result, grads_in):
    for hook in list(extra.post_hooks.values()):
        r = hook(tuple(result), tuple(grads_in))
        if r is not None:
            result = tuple(r)
    return result


def _accumulate(var, g, create_graph, owned):
    """var.grad += g (AccumulateGrad): steal g when nothing else holds it,
    accumulate in place when possible, out of place under create_graph.
    A leaf whose requires_grad was switched off after the graph was built gets
    nothing (PyTorch's AccumulateGrad: freezing a layer mid-step)."""
    if not var._rg:
        return
    old = var._grad
    if (
        old is not None
        and not create_graph
        and not old._rg
        and g._shape == var._shape
        and g._dtype is var._dtype
    ):
        _add_(old, g, 1)  # the steady state of training: in place, unrecorded
        _post_accumulate_hooks(var)
        return
    if g._shape != var._shape:
        g = g.reshape(var._shape) if g._numel == var._numel else g.expand(var._shape)
    if g._dtype is not var._dtype:
        g = real_grad(g, var._dtype)
    if old is None:
        # a new .grad is laid out like its tensor (PyTorch's layout contract)
        # and never aliases a tensor someone else holds
        fits = g._base is None and (
            g.is_contiguous() if var.is_contiguous() else g._stride == var._stride
        )
        if create_graph:
            var._grad = g if fits and owned else _copy_like(var, g)
        elif fits and owned and g.grad_fn is None:
            var._grad = g
        else:
            var._grad = _copy_like(var, g.detach())
    elif create_graph or old._rg:
        var._grad = old + g
    else:
        _add_(old, g, 1)  # in place, unrecorded: straight to the implementation
    _post_accumulate_hooks(var)


def _post_accumulate_hooks(var):
    hooks = var.__dict__.get("_post_acc_hooks")
    if hooks:
        for hook in list(hooks.values()):
            hook(var)


def _copy_like(var, g):
    """A copy of g with var's strides when they are dense, contiguous otherwise."""
    if not var.is_contiguous() and _dense(var):
        out = ec.empty_strided(var._shape, var._stride, dtype=g._dtype)
        out.copy_(g)
        return out
    out = g.contiguous()
    return out.clone() if out is g else out


def _dense(t):
    """Non-overlapping and dense: the strides are a permutation of contiguous ones."""
    dims = sorted((st, sz) for st, sz in zip(t._stride, t._shape) if sz != 1)
    expected = 1
    for st, sz in dims:
        if st != expected:
            return False
        expected *= sz
    return True


_native.setup_engine(
    OpNode=OpNode,
    sum_to=sum_to,
    real_grad=real_grad,
    zeros_for_missing=_zeros_for_missing,
    pre_hooks=_pre_hooks,
    post_hooks=_post_hooks,
    accumulate=_accumulate,
    post_accumulate=_post_accumulate_hooks,
    add_impl=_add_,
    run_node=_anomaly.run_node,
)
