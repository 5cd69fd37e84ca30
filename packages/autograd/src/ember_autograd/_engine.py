"""The backward engine.

It runs nodes in dependency order, iteratively (graphs of any depth): first it
counts, for every node reachable from the roots, how many edges lead into it;
then it repeatedly takes a node whose incoming gradients are all in (the most
recently created first, which frees memory early), applies its hooks and its
backward function, and hands each resulting gradient to the node it belongs
to.  Leaves' AccumulateGrad nodes add into ``.grad``.  Unless ``retain_graph``,
each node's saved tensors are freed as soon as it has run.
"""

import heapq

import ember_core as ec

from ember_autograd import _grad_mode
from ember_autograd._node import AccumulateGrad, accumulator

Tensor = ec.Tensor
state = _grad_mode.state


def _root_edge(t, i):
    from ember_autograd._handler import _edge

    if not isinstance(t, Tensor):
        raise TypeError(f"backward: element {i} of tensors is a {type(t).__name__}, not a Tensor")
    node, nr = _edge(t) if t._rg else (None, 0)
    if node is None:
        raise RuntimeError(f"element {i} of tensors does not require grad and does not have a grad_fn")
    return node, nr


def make_grads(outputs, grads):
    """The initial gradients: ones for scalar outputs when none are given."""
    out = []
    for i, (t, g) in enumerate(zip(outputs, grads)):
        if g is None:
            if t._rg:
                if t.numel() != 1:
                    raise RuntimeError("grad can be implicitly created only for scalar outputs")
                if not t.dtype.is_floating_point:
                    raise RuntimeError(
                        f"grad can be implicitly created only for real scalar outputs but got {t.dtype}"
                    )
                g = ec.ones(t._shape, dtype=t._dtype)
            out.append((g, True))
        elif isinstance(g, Tensor):
            if g._shape != t._shape and g.numel() != t.numel():
                raise RuntimeError(
                    f"Mismatch in shape: grad_output[{i}] has a shape of {tuple(g._shape)} and "
                    f"output[{i}] has a shape of {tuple(t._shape)}."
                )
            out.append((g.reshape(t._shape) if g._shape != t._shape else g, False))
        else:
            out.append((ec.full(t._shape, g, dtype=t._dtype), True))
    return out


def _graph(roots, needed_fn=None):
    """Every node reachable from roots, in DFS post-order (children first)."""
    order, seen, stack = [], set(), []
    for r in roots:
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
    return order


def run_backward(outputs, grads, retain_graph, create_graph, inputs=None, accumulate=True):
    """Backpropagate; returns the gradients captured for ``inputs`` (in order)."""
    root_edges = [_root_edge(t, i) for i, t in enumerate(outputs)]
    targets = {}  # (node, nr) -> indices into inputs
    input_nodes = set()
    if inputs is not None:
        for i, t in enumerate(inputs):
            if not isinstance(t, Tensor):
                raise TypeError(f"inputs[{i}] is a {type(t).__name__}, not a Tensor")
            if not t._rg:
                raise RuntimeError("One of the differentiated Tensors does not require grad")
            edge = (t.grad_fn, t.__dict__.get("_output_nr", 0)) if t.grad_fn is not None else (accumulator(t), 0)
            targets.setdefault(edge, []).append(i)
            input_nodes.add(edge[0])
    roots = [n for n, _ in root_edges]
    order = _graph(roots)
    if inputs is not None:
        needed = set()
        for node in order:  # children before parents
            if node in input_nodes or any(c in needed for c, _ in node.next_functions if c is not None):
                needed.add(node)
    else:
        needed = set(order)
    deps = dict.fromkeys(needed, 0)
    for node in needed:
        for child, _ in node.next_functions:
            if child is not None and child in needed:
                deps[child] += 1

    buffers = {}
    live = {}  # id(grad) -> how many buffer slots hold that object
    foreign = set()

    def put(node, nr, g):
        buf = buffers.get(node)
        if buf is None:
            buf = buffers[node] = [None] * max(node._n_outputs, nr + 1)
        old = buf[nr]
        if old is None:
            buf[nr] = g
            live[id(g)] = live.get(id(g), 0) + 1
        else:
            live[id(old)] -= 1
            new = buf[nr] = old + g
            live[id(new)] = live.get(id(new), 0) + 1

    for (node, nr), (g, owned) in zip(root_edges, grads):
        if node in needed:
            put(node, nr, g)
            if not owned:
                foreign.add(id(g))

    captured = [None] * (len(inputs) if inputs is not None else 0)
    heap = []
    for node in set(roots):
        if node in needed and deps[node] == 0:
            heapq.heappush(heap, (-node._seq, id(node), node))

    prev = (state.enabled, state.below)
    state.enabled, state.below = create_graph, 0
    anomaly = state.anomaly
    try:
        while heap:
            _, _, node = heapq.heappop(heap)
            buf = buffers.pop(node, None) or [None] * node._n_outputs
            for g in buf:
                if g is not None:
                    live[id(g)] = live.get(id(g), 1) - 1
            grads_out = _materialize(node, buf)
            grads_out = _tensor_hooks(node, grads_out)
            for nr in range(len(grads_out)):
                idxs = targets.get((node, nr))
                if idxs:
                    for i in idxs:
                        captured[i] = grads_out[nr]
                        t = inputs[i]
                        # backward(inputs=[non-leaf]) accumulates into its .grad
                        if accumulate and t.grad_fn is not None and grads_out[nr] is not None:
                            _accumulate(t, grads_out[nr], create_graph, False)
            if isinstance(node, AccumulateGrad):
                if accumulate and (inputs is None or node in input_nodes):
                    g = grads_out[0]
                    if g is not None:
                        owned = live.get(id(g), 0) == 0 and id(g) not in foreign
                        _accumulate(node.variable, g, create_graph, owned)
                continue
            if inputs is not None and not any(c in needed for c, _ in node.next_functions if c is not None):
                continue  # a target whose inputs nothing needs
            if node._pre_hooks:
                for hook in list(node._pre_hooks.values()):
                    r = hook(tuple(grads_out))
                    if r is not None:
                        grads_out = list(r)
            if anomaly:
                from ember_autograd import _anomaly

                result = _anomaly.run_node(node, grads_out)
            else:
                result = node.apply(tuple(grads_out))
            if node._post_hooks:
                for hook in list(node._post_hooks.values()):
                    r = hook(tuple(result), tuple(grads_out))
                    if r is not None:
                        result = tuple(r)
            if not retain_graph:
                node.release()
            for (child, nr), g in zip(node.next_functions, result):
                if child is None or child not in needed:
                    continue
                if g is not None:
                    put(child, nr, g)
                deps[child] -= 1
                if deps[child] == 0:
                    heapq.heappush(heap, (-child._seq, id(child), child))
    finally:
        state.enabled, state.below = prev
    return captured


def _materialize(node, buf):
    """Missing output gradients become zeros (formulas always get tensors)."""
    meta = node._out_meta
    out = list(buf)
    if isinstance(node, AccumulateGrad) or getattr(node, "_ctx", None) is not None:
        return out  # custom Functions materialise (or not) themselves
    if meta is not None and any(g is None for g in out):
        for i, g in enumerate(out):
            if g is None and i < len(meta) and meta[i] is not None:
                shape, dtype = meta[i]
                out[i] = ec.zeros(shape, dtype=dtype)
    return out


def _tensor_hooks(node, grads):
    if node._tensor_pre_hooks:
        for nr, hooks in node._tensor_pre_hooks.items():
            for hook in list(hooks.values()):
                if grads[nr] is None:
                    continue
                r = hook(grads[nr])
                if r is not None:
                    grads[nr] = r
    if isinstance(node, AccumulateGrad):
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
                if t._grad is None:
                    t._grad = g if state.enabled else g.detach().clone()
                else:
                    t._grad = t._grad + g
    return grads


def _accumulate(var, g, create_graph, owned):
    if g._shape != var._shape:
        g = g.reshape(var._shape) if g.numel() == var.numel() else g.expand(var._shape)
    if g._dtype is not var._dtype:
        g = g.to(var._dtype)
    old = var._grad
    if old is None:
        if create_graph:
            var._grad = g
        elif owned and g._base is None and g.is_contiguous() and g.grad_fn is None:
            var._grad = g
        else:
            var._grad = g.detach().clone()
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
