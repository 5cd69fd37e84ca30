"""Autograd's methods on ember_core.Tensor (installed when ember_autograd is
imported): backward, hooks, retain_grad."""

import weakref

import ember_core as ec

from ember_autograd import _api
from ember_autograd._node import HookDict, RemovableHandle

Tensor = ec.Tensor


def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulate the gradient of this tensor into the leaves' ``.grad``."""
    _api.backward(self, gradient, retain_graph, create_graph, inputs=inputs)


def register_hook(self, hook):
    """hook(grad) -> new grad or None, called when the gradient for this tensor
    is computed.  Returns a handle whose remove() unregisters it."""
    if not self._rg:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    if self.grad_fn is not None:
        return self.grad_fn._register_tensor_hook(self.__dict__.get("_output_nr", 0), hook)
    hooks = self.__dict__.setdefault("_hooks", HookDict())
    handle = RemovableHandle(hooks)
    hooks[handle.id] = hook
    return handle


def register_post_accumulate_grad_hook(self, hook):
    """hook(tensor), called after the gradient was accumulated into this leaf's .grad."""
    if not self._rg:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    if self.grad_fn is not None:
        raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
    hooks = self.__dict__.setdefault("_post_acc_hooks", HookDict())
    handle = RemovableHandle(hooks)
    hooks[handle.id] = hook
    return handle


def retain_grad(self):
    """Keep ``.grad`` for this non-leaf tensor after backward."""
    if not self._rg:
        raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
    fn = self.grad_fn
    if fn is None:
        return  # leaves keep their grad anyway
    if fn._retain_hooks is None:
        fn._retain_hooks = {}
    fn._retain_hooks[self.__dict__.get("_output_nr", 0)] = weakref.ref(self)
    self._retains = True


def retains_grad(self):
    return bool(self.__dict__.get("_retains", False)) and self.grad_fn is not None


def output_nr(self):
    return self.__dict__.get("_output_nr", 0)


def install():
    Tensor.backward = backward
    Tensor.register_hook = register_hook
    Tensor.register_post_accumulate_grad_hook = register_post_accumulate_grad_hook
    Tensor.retain_grad = retain_grad
    Tensor.retains_grad = property(retains_grad)
    Tensor.output_nr = property(output_nr)
