"""The legacy ``Variable``: since PyTorch 0.4 every Tensor is a Variable.

``Variable(t, requires_grad=True)`` returns a new leaf Tensor sharing ``t``'s
data, and ``isinstance(t, Variable)`` holds for every Tensor.
``Variable._execution_engine.queue_callback(cb)`` runs ``cb`` when the
running backward finishes.
"""

import warnings

import ember_core as ec
from ember_autograd import _engine

__all__ = ["Variable", "VariableMeta"]


class VariableMeta(type):
    def __instancecheck__(cls, other):
        return isinstance(other, ec.Tensor)


class _ImperativeEngine:
    """The part of PyTorch's engine object that Python code calls."""

    def queue_callback(self, callback):
        task = _engine.current_task()
        if task is None:
            raise RuntimeError("Final callbacks can only be installed during backward pass.")
        task.callbacks.append(callback)

    def run_backward(self, *args, **kwargs):
        raise RuntimeError("use ember.autograd.backward or ember.autograd.grad")


class Variable(metaclass=VariableMeta):
    _execution_engine = _ImperativeEngine()

    def __new__(cls, data=None, requires_grad=False, volatile=False):
        if volatile:
            warnings.warn(
                "volatile was removed and now has no effect. Use `with torch.no_grad():` instead.",
                UserWarning,
                stacklevel=2,
            )
            if requires_grad:
                raise ValueError("Variable can't be volatile and require_grad at the same time!")
        if data is None:
            data = ec.empty(0)
        elif not isinstance(data, ec.Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        out = data.detach()
        if requires_grad:
            out.requires_grad_(True)
        return out
