"""ember.nn.utils.prune (torch.nn.utils.prune): zero out parameter entries by a mask.

Note [Pruning by reparametrization]
Pruning ``module.<name>`` moves the parameter to ``<name>_orig``, registers the mask
as the buffer ``<name>_mask`` and sets ``module.<name> = <name>_orig * <name>_mask``
as a plain attribute, recomputed before every forward by a forward pre-hook (the
pruning method object itself).  Gradients flow to ``<name>_orig``; masked entries get
zero gradient through the product.  Pruning the same tensor again combines the new
method with the old ones in a PruningContainer: the new method only sees the entries
(or channels) the earlier masks kept.  ``remove`` makes the pruning permanent: the
masked values are written into the parameter, which takes back its name.
"""

import numbers
from abc import ABC, abstractmethod
from collections.abc import Iterable

import ember_autograd as ag
import ember_core as ec
from ember_nn.utils.convert_parameters import parameters_to_vector

__all__ = [
    "BasePruningMethod",
    "CustomFromMask",
    "Identity",
    "L1Unstructured",
    "LnStructured",
    "PruningContainer",
    "RandomStructured",
    "RandomUnstructured",
    "custom_from_mask",
    "global_unstructured",
    "identity",
    "is_pruned",
    "l1_unstructured",
    "ln_structured",
    "random_structured",
    "random_unstructured",
    "remove",
]


class BasePruningMethod(ABC):
    """A pruning method: ``compute_mask(t, default_mask)`` gives the new mask; the object
    is also the module's forward pre-hook that reapplies the mask."""

    _tensor_name = None
    PRUNING_TYPE = None  # "unstructured", "structured" or "global"

    def __call__(self, module, inputs):
        setattr(module, self._tensor_name, self.apply_mask(module))

    @abstractmethod
    def compute_mask(self, t, default_mask):
        """The mask (same shape as t) after pruning t, given the mask so far."""

    def apply_mask(self, module):
        """``<name>_orig * <name>_mask`` of module."""
        if self._tensor_name is None:
            raise RuntimeError(f"{type(self).__name__}: the pruning method is not attached")
        orig = getattr(module, self._tensor_name + "_orig")
        mask = getattr(module, self._tensor_name + "_mask")
        return mask.to(dtype=orig.dtype) * orig

    @classmethod
    def apply(cls, module, name, *args, importance_scores=None, **kwargs):
        """Prune ``module.<name>`` with ``cls(*args, **kwargs)``, combined with any pruning
        already on it; returns the method now attached (maybe a container)."""
        previous, keys = None, []
        for key, hook in module._forward_pre_hooks.items():
            if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
                previous = hook
                keys.append(key)
        if len(keys) > 1:
            raise RuntimeError(
                f"prune: parameter '{name}' of {type(module).__name__} has {len(keys)} pruning "
                "hooks; expected at most one"
            )
        method = cls(*args, **kwargs)
        method._tensor_name = name
        if previous is not None:
            if not isinstance(previous, PruningContainer):
                previous = PruningContainer(previous)
            previous.add_pruning_method(method)
            method = previous

        orig = getattr(module, name)
        if importance_scores is None:
            importance_scores = orig
        elif tuple(importance_scores.shape) != tuple(orig.shape):
            raise ValueError(
                f"prune: importance_scores of shape {tuple(importance_scores.shape)} must have "
                f"the shape of parameter '{name}', {tuple(orig.shape)}"
            )
        if previous is None:
            default_mask = ec.ones_like(orig)
        else:
            default_mask = getattr(module, name + "_mask").detach().clone()
        mask = method.compute_mask(importance_scores, default_mask=default_mask)

        # only now that the mask exists is the module changed (a bad amount leaves it as it was)
        for key in keys:
            del module._forward_pre_hooks[key]
        if previous is None:
            module.register_parameter(name + "_orig", orig)
            del module._parameters[name]
        module.register_buffer(name + "_mask", mask)
        setattr(module, name, method.apply_mask(module))
        module.register_forward_pre_hook(method)
        return method

    def prune(self, t, default_mask=None, importance_scores=None):
        """t with this method's mask applied (no module involved)."""
        scores = t if importance_scores is None else importance_scores
        mask = ec.ones_like(t) if default_mask is None else default_mask
        return t * self.compute_mask(scores, default_mask=mask)

    def remove(self, module):
        """Make the pruning permanent: the parameter holds the masked values again."""
        if self._tensor_name is None:
            raise RuntimeError(f"{type(self).__name__}: the pruning method is not attached")
        name = self._tensor_name
        pruned = self.apply_mask(module)
        if hasattr(module, name):
            delattr(module, name)
        orig = module._parameters[name + "_orig"]
        with ag.no_grad():
            orig.copy_(pruned.detach())
        del module._parameters[name + "_orig"]
        del module._buffers[name + "_mask"]
        setattr(module, name, orig)


class PruningContainer(BasePruningMethod):
    """The sequence of pruning methods applied to one tensor, in order."""

    def __init__(self, *methods):
        self._pruning_methods = ()
        for method in methods:
            if self._tensor_name is None and isinstance(method, BasePruningMethod):
                self._tensor_name = method._tensor_name
            self.add_pruning_method(method)

    def add_pruning_method(self, method):
        if method is None:
            return
        if not isinstance(method, BasePruningMethod):
            raise TypeError(f"{type(method)} is not a BasePruningMethod subclass")
        if self._tensor_name != method._tensor_name:
            raise ValueError(
                "Can only add pruning methods acting on the parameter named "
                f"'{self._tensor_name}' to PruningContainer. Found '{method._tensor_name}'"
            )
        self._pruning_methods += (method,)

    def __len__(self):
        return len(self._pruning_methods)

    def __iter__(self):
        return iter(self._pruning_methods)

    def __getitem__(self, idx):
        return self._pruning_methods[idx]

    def compute_mask(self, t, default_mask):
        """The newest method pruned within what the mask so far keeps: the kept entries
        (unstructured), the kept channels along its dim (structured), or all (global)."""
        method = self._pruning_methods[-1]
        mask = default_mask.to(dtype=t.dtype)
        kind = method.PRUNING_TYPE
        if kind == "unstructured":
            where = mask == 1
        elif kind == "structured":
            if not hasattr(method, "dim"):
                raise AttributeError(
                    "Pruning methods of PRUNING_TYPE 'structured' need to have the attribute `dim`"
                )
            dim = method.dim if method.dim >= 0 else method.dim + t.dim()
            others = [d for d in range(t.dim()) if d != dim]
            kept = mask.sum(dim=others) != 0
            where = tuple(kept if d == dim else slice(None) for d in range(t.dim()))
        elif kind == "global":
            where = tuple(slice(None) for _ in range(t.dim()))
        else:
            raise ValueError(f"Unrecognized PRUNING_TYPE {kind}")
        partial = method.compute_mask(t[where], default_mask=mask[where])
        mask[where] = partial.to(dtype=mask.dtype)
        return mask


class Identity(BasePruningMethod):
    """Prunes nothing (the mask is all ones)."""

    PRUNING_TYPE = "unstructured"

    def compute_mask(self, t, default_mask):
        return default_mask

    @classmethod
    def apply(cls, module, name):
        return super().apply(module, name)


class RandomUnstructured(BasePruningMethod):
    """Prunes ``amount`` entries (an int, or a fraction) chosen uniformly at random."""

    PRUNING_TYPE = "unstructured"

    def __init__(self, amount):
        _check_amount(amount)
        self.amount = amount

    def compute_mask(self, t, default_mask):
        count = _count_to_prune(self.amount, t.numel())
        mask = default_mask.contiguous().clone()
        if count:
            chosen = ec.topk(ec.rand_like(t).reshape(-1), count).indices
            mask.view(-1)[chosen] = 0
        return mask

    @classmethod
    def apply(cls, module, name, amount):
        return super().apply(module, name, amount=amount)


class L1Unstructured(BasePruningMethod):
    """Prunes the ``amount`` entries of smallest absolute value."""

    PRUNING_TYPE = "unstructured"

    def __init__(self, amount):
        _check_amount(amount)
        self.amount = amount

    def compute_mask(self, t, default_mask):
        count = _count_to_prune(self.amount, t.numel())
        mask = default_mask.contiguous().clone()
        if count:
            smallest = ec.topk(t.abs().reshape(-1), count, largest=False).indices
            mask.view(-1)[smallest] = 0
        return mask

    @classmethod
    def apply(cls, module, name, amount, importance_scores=None):
        return super().apply(module, name, amount=amount, importance_scores=importance_scores)


class RandomStructured(BasePruningMethod):
    """Prunes ``amount`` whole channels along ``dim``, chosen at random."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount, dim=-1):
        _check_amount(amount)
        self.amount = amount
        self.dim = dim

    def compute_mask(self, t, default_mask):
        _check_structured(t, self.dim)
        channels = t.shape[self.dim]
        count = _count_to_prune(self.amount, channels)
        if count == 0:
            return default_mask
        scores = ec.rand(channels)
        threshold = ec.kthvalue(scores, count).values
        return _channel_mask(t, self.dim, scores > threshold) * default_mask.to(dtype=t.dtype)

    @classmethod
    def apply(cls, module, name, amount, dim=-1):
        return super().apply(module, name, amount=amount, dim=dim)


class LnStructured(BasePruningMethod):
    """Prunes the ``amount`` channels along ``dim`` of smallest L``n`` norm."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount, n, dim=-1):
        _check_amount(amount)
        self.amount = amount
        self.n = n
        self.dim = dim

    def compute_mask(self, t, default_mask):
        _check_structured(t, self.dim)
        channels = t.shape[self.dim]
        count = _count_to_prune(self.amount, channels)
        if count == 0:
            return default_mask
        dim = self.dim if self.dim >= 0 else self.dim + t.dim()
        others = [d for d in range(t.dim()) if d != dim]
        norms = ec.norm(t, p=self.n, dim=others)
        keep = ec.topk(norms, channels - count, largest=True).indices
        return _channel_mask(t, dim, keep) * default_mask.to(dtype=t.dtype)

    @classmethod
    def apply(cls, module, name, amount, n, dim, importance_scores=None):
        return super().apply(
            module, name, amount=amount, n=n, dim=dim, importance_scores=importance_scores
        )


class CustomFromMask(BasePruningMethod):
    """Prunes where a given mask is 0."""

    PRUNING_TYPE = "global"

    def __init__(self, mask):
        self.mask = mask

    def compute_mask(self, t, default_mask):
        if tuple(default_mask.shape) != tuple(self.mask.shape):
            raise ValueError(
                f"CustomFromMask: the mask's shape {tuple(self.mask.shape)} differs from the "
                f"parameter's {tuple(default_mask.shape)}"
            )
        return default_mask * self.mask.to(dtype=default_mask.dtype)

    @classmethod
    def apply(cls, module, name, mask):
        return super().apply(module, name, mask=mask)


# ---------------------------------------------------------------- the functions


def identity(module, name):
    Identity.apply(module, name)
    return module


def random_unstructured(module, name, amount):
    RandomUnstructured.apply(module, name, amount)
    return module


def l1_unstructured(module, name, amount, importance_scores=None):
    L1Unstructured.apply(module, name, amount=amount, importance_scores=importance_scores)
    return module


def random_structured(module, name, amount, dim):
    RandomStructured.apply(module, name, amount, dim)
    return module


def ln_structured(module, name, amount, n, dim, importance_scores=None):
    LnStructured.apply(module, name, amount, n, dim, importance_scores=importance_scores)
    return module


def custom_from_mask(module, name, mask):
    CustomFromMask.apply(module, name, mask)
    return module


def global_unstructured(parameters, pruning_method, importance_scores=None, **kwargs):
    """Prune the (module, name) pairs together: ``pruning_method`` (an unstructured method
    class) sees all their entries as one vector, so the smallest weights anywhere go."""
    if not isinstance(parameters, Iterable):
        raise TypeError("global_unstructured(): parameters is not an Iterable")
    parameters = list(parameters)
    importance_scores = {} if importance_scores is None else importance_scores
    if not isinstance(importance_scores, dict):
        raise TypeError("global_unstructured(): importance_scores must be of type dict")
    scores = parameters_to_vector(
        [importance_scores.get((m, n), getattr(m, n)) for m, n in parameters]
    )
    masks = parameters_to_vector(
        [
            _mask_of(m, n) if hasattr(m, n + "_mask") else ec.ones_like(getattr(m, n))
            for m, n in parameters
        ]
    )
    method = pruning_method(**kwargs)
    if method.PRUNING_TYPE != "unstructured":
        raise TypeError(
            'Only "unstructured" PRUNING_TYPE supported for the `pruning_method`. Found method '
            f"{pruning_method} of type {method.PRUNING_TYPE}"
        )
    method._tensor_name = "temp"
    container = PruningContainer(method)
    with ag.no_grad():
        final = container.compute_mask(scores, masks)
    at = 0
    for module, name in parameters:
        param = getattr(module, name)
        n = param.numel()
        custom_from_mask(module, name, mask=final[at : at + n].view_as(param))
        at += n


def remove(module, name):
    """Make the pruning of ``module.<name>`` permanent (see BasePruningMethod.remove)."""
    for key, hook in list(module._forward_pre_hooks.items()):
        if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
            hook.remove(module)
            del module._forward_pre_hooks[key]
            return module
    raise ValueError(
        f"Parameter '{name}' of module {module} has to be pruned before pruning can be removed"
    )


def is_pruned(module):
    """Whether any submodule of module has a pruning hook."""
    return any(
        isinstance(hook, BasePruningMethod)
        for _, sub in module.named_modules()
        for hook in sub._forward_pre_hooks.values()
    )


# ---------------------------------------------------------------- helpers


def _mask_of(module, name):
    return getattr(module, name + "_mask")


def _check_amount(amount):
    if not isinstance(amount, numbers.Real):
        raise TypeError(f"Invalid type for amount: {amount}. Must be int or float.")
    if (isinstance(amount, numbers.Integral) and amount < 0) or (
        not isinstance(amount, numbers.Integral) and not 0.0 <= float(amount) <= 1.0
    ):
        raise ValueError(
            f"amount={amount} should either be a float in the range [0, 1] or a non-negative "
            "integer"
        )


def _count_to_prune(amount, size):
    """How many of ``size`` entries (or channels) ``amount`` prunes."""
    if isinstance(amount, numbers.Integral):
        if amount > size:
            raise ValueError(
                f"amount={amount} should be smaller than the number of parameters to prune={size}"
            )
        return int(amount)
    return round(amount * size)


def _check_structured(t, dim):
    if t.dim() <= 1:
        raise ValueError(
            "Structured pruning can only be applied to multidimensional tensors. Found tensor "
            f"of shape {tuple(t.shape)} with {t.dim()} dims"
        )
    if dim >= t.dim() or dim < -t.dim():
        raise IndexError(f"Invalid index {dim} for tensor of size {tuple(t.shape)}")


def _channel_mask(t, dim, keep):
    """Ones on the kept channels (indices or a boolean mask) of ``dim``, zeros elsewhere."""
    mask = ec.zeros_like(t)
    index = tuple(keep if d == dim else slice(None) for d in range(t.dim()))
    mask[index] = 1
    return mask
