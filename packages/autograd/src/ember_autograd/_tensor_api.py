"""Autograd's methods on ember_core.Tensor (installed when ember_autograd is
imported): backward, hooks, retain_grad, is_inference, and the per-tensor
defaults autograd reads (class attributes, so tensors that never meet autograd
carry nothing)."""

import warnings

import ember_core as ec
from ember_autograd import _api, _engine, _grad_mode
from ember_autograd._node import HookDict, RemovableHandle

Tensor = ec.Tensor
_core_requires_grad_ = Tensor.requires_grad_
_core_grad = Tensor.grad


def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulate the gradient of this tensor into the leaves' ``.grad``.

    >>> (x * x).sum().backward()      # x.grad == 2 * x
    """
    if gradient is None and inputs is None and not create_graph and not retain_graph:
        # loss.backward(): the common call, straight to the engine
        _engine.run_backward((self,), _engine.make_grads((self,), (None,)), False, False)
        return
    _api.backward(self, gradient, retain_graph, create_graph, inputs=inputs)


def register_hook(self, hook):
    """hook(grad) -> new grad or None, called when the gradient for this tensor
    is computed.  Returns a handle whose remove() unregisters it."""
    if not self._rg:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    if self.grad_fn is not None:
        return self.grad_fn._register_tensor_hook(self._output_nr, hook)
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
    fn._register_retain_grad(self._output_nr, self)
    self._retains = True


def retains_grad(self):
    return bool(self.__dict__.get("_retains", False)) and self.grad_fn is not None


def output_nr(self):
    return self._output_nr


def is_inference(self):
    """True for tensors made under inference_mode (and views of them)."""
    return self._inference


def requires_grad_(self, requires_grad=True):
    if requires_grad and self._inference and not _grad_mode.state.inference:
        raise RuntimeError(
            "Setting requires_grad=True on inference tensor outside InferenceMode is not allowed."
        )
    return _core_requires_grad_(self, requires_grad)


def _get_grad(self):
    if self._grad is None and self.grad_fn is not None and not self.__dict__.get("_retains", False):
        warnings.warn(
            "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its "
            ".grad attribute won't be populated during autograd.backward(). If you indeed want "
            "the .grad field to be populated for a non-leaf Tensor, use .retain_grad() on the "
            "non-leaf Tensor. If you access the non-leaf Tensor by mistake, make sure you "
            "access the leaf Tensor instead.",
            UserWarning,
            stacklevel=2,
        )
    return self._grad


def install():
    Tensor._output_nr = 0  # which output of its grad_fn a tensor is
    Tensor._vv = -1  # the storage version a view's grad_fn was made at
    Tensor._inference = False  # made under inference_mode
    Tensor._custom_view = None  # the custom Function whose output view this is
    Tensor.backward = backward
    Tensor.register_hook = register_hook
    Tensor.register_post_accumulate_grad_hook = register_post_accumulate_grad_hook
    Tensor.retain_grad = retain_grad
    Tensor.retains_grad = property(retains_grad)
    Tensor.output_nr = property(output_nr)
    Tensor.is_inference = is_inference
    Tensor.requires_grad_ = requires_grad_
    Tensor.grad = property(_get_grad, _core_grad.fset, _core_grad.fdel)
