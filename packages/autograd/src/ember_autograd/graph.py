"""ember.autograd.graph: the graph's node type, saved-tensor hooks and
multi-tensor gradient hooks, as ``torch.autograd.graph``.

>>> with saved_tensors_hooks(lambda t: t * 1, lambda t: t):
...     y = (x * x).sum()          # both x's are packed on save
>>> y.backward()                   # ...and unpacked here
"""

import contextlib
import functools
import threading
from typing import NamedTuple

from ember_autograd import _engine, _node
from ember_autograd._node import Node, RemovableHandle, gradient_edge

__all__ = [
    "GradientEdge",
    "Node",
    "disable_saved_tensors_hooks",
    "get_gradient_edge",
    "increment_version",
    "register_multi_grad_hook",
    "save_on_cpu",
    "saved_tensors_hooks",
]


class saved_tensors_hooks:
    """Within this context, every tensor saved for backward (by ember's own
    derivative formulas and by ``ctx.save_for_backward``) is stored as
    ``pack_hook(tensor)`` and read back as ``unpack_hook(packed)``.  Only the
    innermost pair applies (Note [Saved tensors hooks] in _node.py)."""

    def __init__(self, pack_hook, unpack_hook):
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self):
        msg = _node.hooks_disabled[0]
        if msg is not None:
            raise RuntimeError(msg)
        _node.hooks_stack.append((self.pack_hook, self.unpack_hook))

    def __exit__(self, *args):
        _node.hooks_stack.pop()


class save_on_cpu(saved_tensors_hooks):
    """Saved tensors are moved to the CPU when saved and back to their device
    when backward needs them (a no-op copy-free pass for CPU tensors)."""

    def __init__(self, pin_memory=False, device_type="cuda"):
        def pack_to_cpu(tensor):
            if not pin_memory:
                return (tensor.device, tensor.cpu())
            packed = tensor.cpu().pin_memory() if tensor.device.type != "cpu" else tensor.cpu()
            return (tensor.device, packed)

        def unpack_from_cpu(packed):
            device, tensor = packed
            return tensor.to(device, non_blocking=pin_memory)

        super().__init__(pack_to_cpu, unpack_from_cpu)


@contextlib.contextmanager
def disable_saved_tensors_hooks(error_message):
    """Within this context, entering saved_tensors_hooks raises
    RuntimeError(error_message)."""
    prev = _node.hooks_disabled[0]
    _node.hooks_disabled[0] = error_message
    try:
        yield
    finally:
        _node.hooks_disabled[0] = prev


class GradientEdge(NamedTuple):
    """The (node, output_nr) through which gradients reach a tensor."""

    node: Node
    output_nr: int


def get_gradient_edge(tensor):
    """The GradientEdge of ``tensor`` (its grad_fn, or its AccumulateGrad for a leaf)."""
    if not tensor.requires_grad:
        raise RuntimeError(
            "It is not possible to get the gradient edge for a Tensor that does not require "
            "gradients"
        )
    node, nr = gradient_edge(tensor)
    return GradientEdge(node, nr)


def increment_version(tensor):
    """Bump the version counter of the tensor(s)' storage, as an in-place write does."""
    from ember_core import Tensor

    for t in (tensor,) if isinstance(tensor, Tensor) else tensor:
        t._storage._version += 1


class _MultiHandle(RemovableHandle):
    def __init__(self, handles):
        self.handles = handles

    def remove(self):
        for h in self.handles:
            h.remove()

    def __getstate__(self):
        return self.handles

    def __setstate__(self, state):
        self.handles = state


def _task_id():
    task = _engine.current_task()
    if task is None:
        raise AssertionError("expected this hook to be called inside a backward call")
    return task


def register_multi_grad_hook(tensors, fn, *, mode="all"):
    """Call ``fn`` once per backward, when the gradients of ``tensors`` are in.

    mode "all": ``fn(grads)`` once every tensor of ``tensors`` that this
    backward will reach has its gradient (None for the others).  mode "any":
    ``fn(grad)`` with the first gradient computed.
    """
    if mode not in ("all", "any"):
        raise ValueError(f"Expects mode to be one of {('all', 'any')} but got {mode}")
    lock = threading.Lock()
    if mode == "all":
        n = len(tensors)
        state = {}  # task id -> [count, expected, buffer]
        nodes = [gradient_edge(t)[0] for t in tensors]

        def inner(idx):
            def hook(grad):
                task = _task_id()
                with lock:
                    entry = state.get(task.id)
                    if entry is None:
                        expected = sum(
                            1 for nd in nodes if nd is not None and task.will_execute(nd)
                        )
                        entry = state[task.id] = [0, expected, [None] * n]
                    entry[0] += 1
                    entry[2][idx] = grad
                    done = entry[0] == entry[1]
                    if done:
                        del state[task.id]
                if done:
                    fn(entry[2])

            return hook

        handles = tuple(t.register_hook(inner(i)) for i, t in enumerate(tensors))
    else:
        ran = set()

        @functools.wraps(fn)
        def wrapped(grad):
            task = _task_id()
            with lock:
                if task.id in ran:
                    return
                ran.add(task.id)
            fn(grad)

        handles = tuple(t.register_hook(wrapped) for t in tensors if t.requires_grad)
    return _MultiHandle(handles)
