"""The backward engine.

It runs nodes in dependency order, iteratively (graphs of any depth): first it
counts, for every node reachable from the roots, how many edges lead into it;
then it repeatedly takes a node whose incoming gradients are all in (the most
recently created first, which frees memory early), applies its hooks and its
backward function, and hands each resulting gradient to the node it belongs
to.  Leaves' AccumulateGrad nodes add into ``.grad``.  Unless ``retain_graph``,
each node's saved tensors are freed as soon as it has run.

With ``inputs`` (``grad()``, ``backward(inputs=...)``) only the nodes on a
path from the roots to an input run, and the gradients reaching the inputs are
captured instead of (for grad) being accumulated.

Per node, in PyTorch's order: tensor hooks (``Tensor.register_hook``) and then
``retain_grad``, Node pre-hooks, the backward function (for a leaf: the
accumulation and its post-accumulate-grad hooks), Node post-hooks.
"""

import heapq

import ember_core as ec

from ember_autograd import _grad_mode
from ember_autograd._handler import _edge
from ember_autograd._node import AccumulateGrad, accumulator

Tensor = ec.Tensor
state = _grad_mode.state


def _root_edge(t, i):
    if not isinstance(t, Tensor):
        raise TypeError(f"backward: element {i} of tensors is a {type(t).__name__}, not a Tensor")
    node, nr = _edge(t) if t._rg else (None, 0)
    if node is None:
        raise RuntimeError(f"element {i} of tensors does not require grad and does not have a grad_fn")
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
                        f"grad can be implicitly created only for real scalar outputs but got {t.dtype}"
                    )
                g = ec.ones(t._shape, dtype=t._dtype)
            out.append((g, True))
        elif isinstance(g, Tensor):
            if g._shape != t._shape:
                if g._numel != t._numel:
                    raise RuntimeError(
                        f"Mismatch in shape: grad_output[{i}] has a shape of {tuple(g._shape)} and "
                        f"output[{i}] has a shape of {tuple(t._shape)}."
                    )
                g = g.reshape(t._shape)
            if g._dtype is not t._dtype and g._dtype.is_floating_point != t._dtype.is_floating_point:
                raise RuntimeError(
                    f"Function backward: grad_output[{i}] has dtype {g.dtype}, but output[{i}] is "
                    f"{t.dtype}"
                )
            out.append((g, False))
        else:
            out.append((ec.full(t._shape, g, dtype=t._dtype), True))
    return out


def _dependencies(roots):
    """For each node reachable from roots, the number of edges leading into it."""
    deps = dict.fromkeys(roots, 0)
    stack = list(deps)
    while stack:
        for child, _ in stack.pop().next_functions:
            if child is not None:
                n = deps.get(child)
                if n is None:
                    deps[child] = 1
                    stack.append(child)
                else:
                    deps[child] = n + 1
    return deps


def _needed_dependencies(roots, input_nodes):
    """Like _dependencies, over only the nodes on a path to an input node."""
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
    deps = dict.fromkeys(needed, 0)
    for node in needed:
        for child, _ in node.next_functions:
            if child in needed:
                deps[child] += 1
    return deps


def run_backward(outputs, grads, retain_graph, create_graph, inputs=None, accumulate=True):
    """Backpropagate; returns the gradients captured for ``inputs`` (in order)."""
    root_edges = [_root_edge(t, i) for i, t in enumerate(outputs)]
    roots = [n for n, _ in root_edges]
    targets = None  # (node, nr) -> indices into inputs
    if inputs is not None:
        targets = {}
        for i, t in enumerate(inputs):
            if not isinstance(t, Tensor):
                raise TypeError(f"inputs[{i}] is a {type(t).__name__}, not a Tensor")
            if not t._rg:
                raise RuntimeError("One of the differentiated Tensors does not require grad")
            edge = (t.grad_fn, t._output_nr) if t.grad_fn is not None else (accumulator(t), 0)
            targets.setdefault(edge, []).append(i)
        input_nodes = {node for node, _ in targets}
        deps = _needed_dependencies(roots, input_nodes)
    else:
        input_nodes = None
        deps = _dependencies(roots)

    # Gradients waiting for their node, and how many buffer slots hold each
    # gradient object: one held nowhere else (and not the caller's) may become
    # a leaf's .grad without a copy.
    buffers = {}
    live = {}
    foreign = set()

    def put(node, nr, g):
        buf = buffers.get(node)
        if buf is None:
            buf = buffers[node] = [None] * node._n_outputs
            if nr >= len(buf):
                buf.extend([None] * (nr + 1 - len(buf)))
        old = buf[nr]
        if old is None:
            buf[nr] = g
        else:
            live[id(old)] -= 1
            g = buf[nr] = old + g
        live[id(g)] = live.get(id(g), 0) + 1

    for (node, nr), (g, owned) in zip(root_edges, grads):
        if node in deps and g is not None:
            put(node, nr, g)
            if not owned:
                foreign.add(id(g))

    captured = [None] * (len(inputs) if inputs is not None else 0)
    heap = [(-node._seq, id(node), node) for node in set(roots) if node in deps and deps[node] == 0]
    heapq.heapify(heap)

    prev = (state.enabled, state.below)
    state.enabled, state.below = create_graph, 0
    try:
        while heap:
            node = heapq.heappop(heap)[2]
            grads_in = buffers.pop(node, None) or [None] * node._n_outputs
            for g in grads_in:
                if g is not None:
                    live[id(g)] -= 1
            if node._tensor_pre_hooks or node._retain_hooks or node._pre_hooks or (
                node.__class__ is AccumulateGrad and node.variable.__dict__.get("_hooks")
            ):
                grads_in = _pre_hooks(node, grads_in)
            if targets is not None:
                for nr, g in enumerate(grads_in):
                    idxs = targets.get((node, nr))
                    if idxs:
                        for i in idxs:
                            captured[i] = g
                            t = inputs[i]
                            # backward(inputs=[non-leaf]) accumulates into its .grad
                            if accumulate and t.grad_fn is not None and g is not None:
                                _accumulate(t, g, create_graph, False)
            if node.__class__ is AccumulateGrad:
                g = grads_in[0]
                if accumulate and g is not None and (input_nodes is None or node in input_nodes):
                    owned = live.get(id(g), 0) == 0 and id(g) not in foreign
                    _accumulate(node.variable, g, create_graph, owned)
                if node._post_hooks:
                    _post_hooks(node, (), grads_in)
                continue
            if input_nodes is not None and not any(c in deps for c, _ in node.next_functions):
                continue  # an input's own node: nothing beyond it is needed
            result = _call(node, grads_in)
            if node._post_hooks:
                result = _post_hooks(node, result, grads_in)
            if not retain_graph:
                node.release()
            for (child, nr), g in zip(node.next_functions, result):
                if child is None:
                    continue
                n = deps.get(child)
                if n is None:
                    continue  # not on a path to the inputs
                if g is not None:
                    put(child, nr, g)
                deps[child] = n - 1
                if n == 1:
                    heapq.heappush(heap, (-child._seq, id(child), child))
    finally:
        state.enabled, state.below = prev
    return captured


def _call(node, grads_in):
    if node._ctx is None:  # derivative-table nodes always get tensors
        meta = node._out_meta
        if meta is not None and None in grads_in:
            grads_in = [
                ec.zeros(meta[i][0], dtype=meta[i][1]) if g is None and i < len(meta) and meta[i] else g
                for i, g in enumerate(grads_in)
            ]
    if state.anomaly:
        from ember_autograd import _anomaly

        return _anomaly.run_node(node, grads_in)
    return node.apply(tuple(grads_in))


def _pre_hooks(node, grads):
    grads = list(grads)
    if node._tensor_pre_hooks:
        for nr, hooks in node._tensor_pre_hooks.items():
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
    if node._retain_hooks:
        for nr, ref in node._retain_hooks.items():
            t = ref()
            if t is not None and grads[nr] is not None:
                g = grads[nr]
                t._grad = g.clone() if t._grad is None else t._grad + g
    if node._pre_hooks:
        for hook in list(node._pre_hooks.values()):
            r = hook(tuple(grads))
            if r is not None:
                grads = list(r)
    return grads


def _post_hooks(node, result, grads_in):
    for hook in list(node._post_hooks.values()):
        r = hook(tuple(result), tuple(grads_in))
        if r is not None:
            result = tuple(r)
    return result


def _accumulate(var, g, create_graph, owned):
    """var.grad += g (AccumulateGrad): steal g when nothing else holds it,
    accumulate in place when possible, out of place under create_graph."""
    if g._shape != var._shape:
        g = g.reshape(var._shape) if g._numel == var._numel else g.expand(var._shape)
    if g._dtype is not var._dtype:
        g = g.to(var._dtype)
    old = var._grad
    if old is None:
        # a new .grad is laid out like its tensor (PyTorch's layout contract)
        # and never aliases a tensor someone else holds
        fits = g._base is None and (g.is_contiguous() if var.is_contiguous() else g._stride == var._stride)
        if create_graph:
            var._grad = g if fits and owned else _copy_like(var, g)
        elif fits and owned and g.grad_fn is None:
            var._grad = g
        else:
            var._grad = _copy_like(var, g.detach())
    elif create_graph or old._rg:
        var._grad = old + g
    else:
        prev = state.enabled
        state.enabled = False
        try:
            old.add_(g)
        finally:
            state.enabled = prev
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
