"""Parametrizations (torch.nn.utils.parametrize): make a module's tensor the
output of small modules applied to an "original" tensor that is what is trained.

>>> class Symmetric(nn.Module):
...     def forward(self, X):
...         return X.triu() + X.triu(1).transpose(-1, -2)
>>> layer = nn.Linear(3, 3)
>>> register_parametrization(layer, "weight", Symmetric())
>>> layer.weight          # recomputed from layer.parametrizations.weight.original

Note [Parametrized modules]: registering swaps the module's class for a
one-off subclass (``ParametrizedLinear``) holding a property per parametrized
name, so ``module.weight`` evaluates the chain and assigning to it runs the
chain's ``right_inverse``. The originals live in
``module.parametrizations[name]`` (a ParametrizationList): ``original``, or
``original0``, ``original1``... when ``right_inverse`` returns several tensors,
which is where state_dict finds them (``parametrizations.weight.original``).
"""

import contextlib
import copy

import ember_autograd as ag
import ember_core as ec
from ember_nn.modules.container import ModuleDict, ModuleList
from ember_nn.parameter import Parameter

__all__ = [
    "ParametrizationList",
    "cached",
    "is_parametrized",
    "register_parametrization",
    "remove_parametrizations",
    "transfer_parametrizations_and_params",
    "type_before_parametrizations",
]

_cache_enabled = 0
_cache = {}


@contextlib.contextmanager
def cached():
    """Evaluate each parametrized tensor at most once inside the block (for a
    tensor used several times per forward, e.g. an RNN's weights)."""
    global _cache_enabled
    _cache_enabled += 1
    try:
        yield
    finally:
        _cache_enabled -= 1
        if not _cache_enabled:
            _cache.clear()


def _register_original(module, name, value, like):
    """As a Parameter (keeping requires_grad) when `like` is one, else as a buffer."""
    if isinstance(like, Parameter):
        module.register_parameter(name, Parameter(value, like.requires_grad))
    else:
        module.register_buffer(name, value)


class ParametrizationList(ModuleList):
    """The chain of parametrizations of one tensor and its original(s).

    Calling it evaluates the chain; ``right_inverse(value)`` sets the originals so
    that the chain evaluates to value (up to the parametrizations' own inverses).
    """

    def __init__(self, modules, original, unsafe=False):
        if len(modules) == 0:
            raise ValueError("ParametrizationList requires one or more modules.")
        super().__init__(modules)
        self.unsafe = unsafe
        original_shape, original_dtype = tuple(original.shape), original.dtype
        with ag.no_grad():
            new = original
            for module in reversed(list(self)):
                if hasattr(module, "right_inverse"):
                    # a parametrization that cannot invert keeps the value (as PyTorch)
                    with contextlib.suppress(NotImplementedError):
                        new = module.right_inverse(new)
        if not isinstance(new, ec.Tensor) and not isinstance(new, (tuple, list)):
            raise ValueError(
                "'right_inverse' must return a Tensor or a Sequence of tensors (list, tuple...). "
                f"Got {type(new).__name__}"
            )
        self.is_tensor = isinstance(new, ec.Tensor)
        self.ntensors = 1 if self.is_tensor else len(new)
        if self.is_tensor:
            if original.dtype != new.dtype:
                raise ValueError(
                    "When `right_inverse` outputs one tensor, it may not change the dtype.\n"
                    f"original.dtype: {original.dtype}\nright_inverse(original).dtype: "
                    f"{new.dtype}"
                )
            # keep the very tensor the user had (optimizers may already hold it)
            with ag.no_grad():
                if tuple(new.shape) == original_shape:
                    if new is not original:
                        original.copy_(new)
                elif isinstance(original, Parameter):
                    original = Parameter(new.detach(), original.requires_grad)
                else:
                    original = new.detach()
            if isinstance(original, Parameter):
                self.register_parameter("original", original)
            else:
                self.register_buffer("original", original)
        else:
            for i, t in enumerate(new):
                if not isinstance(t, ec.Tensor):
                    raise ValueError(
                        "'right_inverse' must return a Tensor or a Sequence of tensors "
                        f"(list, tuple...). Got element {i} of the sequence with type "
                        f"{type(t).__name__}."
                    )
                _register_original(self, f"original{i}", t.detach(), original)
        if not self.unsafe:
            # the chain must give back a tensor of the original's shape and dtype
            z = self()
            if not isinstance(z, ec.Tensor):
                raise ValueError(f"A parametrization must return a tensor. Got {type(z).__name__}.")
            if z.dtype != original_dtype or tuple(z.shape) != original_shape:
                raise ValueError(
                    "Registering a parametrization may not change the shape or dtype of the "
                    f"tensor, unless `unsafe` flag is enabled.\nunparametrized dtype: "
                    f"{original_dtype}\nparametrized dtype: {z.dtype}\nunparametrized shape: "
                    f"{original_shape}\nparametrized shape: {tuple(z.shape)}"
                )

    def right_inverse(self, value):
        """Set the originals so that the chain gives ``value``."""
        with ag.no_grad():
            for module in reversed(list(self)):
                if hasattr(module, "right_inverse"):
                    value = module.right_inverse(value)
                elif not self.unsafe:
                    raise RuntimeError(
                        f"parametrization {type(module).__name__} does not implement right_inverse."
                    )
            if self.is_tensor:
                if not isinstance(value, ec.Tensor):
                    raise ValueError(f"`right_inverse` should return a tensor. Got {type(value)}")
                self.original.copy_(value)
            else:
                if not isinstance(value, (list, tuple)) or len(value) != self.ntensors:
                    raise ValueError(
                        f"'right_inverse' must return a sequence of {self.ntensors} tensors. "
                        f"Got {type(value).__name__}."
                    )
                for i, t in enumerate(value):
                    getattr(self, f"original{i}").copy_(t)

    def forward(self):
        modules = list(self)
        if self.is_tensor:
            x = modules[0](self.original)
        else:
            x = modules[0](*(getattr(self, f"original{i}") for i in range(self.ntensors)))
        for module in modules[1:]:
            x = module(x)
        return x


def _inject_new_class(module):
    """Give module a class of its own (Note [Parametrized modules])."""
    cls = module.__class__

    def getstate(self):
        raise RuntimeError(
            "Serialization of parametrized modules is only supported through state_dict()."
        )

    def deepcopy(self, memo):
        obj = memo.get(id(self))
        if obj is not None:
            return obj
        replica = self.__new__(self.__class__)
        memo[id(self)] = replica
        replica.__dict__ = copy.deepcopy(self.__dict__, memo)
        return replica

    module.__class__ = type(
        f"Parametrized{cls.__name__}",
        (cls,),
        {"__getstate__": getstate, "__deepcopy__": deepcopy, "_ember_original_class": cls},
    )


def _inject_property(module, tensor_name):
    def get_parametrized(self):
        chain = self.parametrizations[tensor_name]
        if _cache_enabled:
            key = (id(self), tensor_name)
            tensor = _cache.get(key)
            if tensor is None:
                tensor = _cache[key] = chain()
            return tensor
        return chain()

    def set_original(self, value):
        self.parametrizations[tensor_name].right_inverse(value)

    setattr(module.__class__, tensor_name, property(get_parametrized, set_original))


def register_parametrization(module, tensor_name, parametrization, *, unsafe=False):
    """Parametrize ``module.<tensor_name>`` (a parameter or buffer) by the module
    ``parametrization``; registering a second one on the same name chains it."""
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        chain = module.parametrizations[tensor_name]
        if not unsafe:
            y = getattr(module, tensor_name)
            x = parametrization(y)
            if not isinstance(x, ec.Tensor):
                raise ValueError(f"A parametrization must return a tensor. Got {type(x)}.")
            if x.dtype != y.dtype or tuple(x.shape) != tuple(y.shape):
                raise ValueError(
                    "Registering a parametrization may not change the shape or dtype of the "
                    f"tensor, unless `unsafe` flag is enabled.\nunparametrized dtype: {y.dtype}"
                    f"\nparametrized dtype: {x.dtype}\nunparametrized shape: {tuple(y.shape)}"
                    f"\nparametrized shape: {tuple(x.shape)}"
                )
        chain.append(parametrization)
        chain.unsafe |= unsafe
        return module
    if tensor_name in module._parameters or tensor_name in module._buffers:
        original = getattr(module, tensor_name)
        chain = ParametrizationList([parametrization], original, unsafe=unsafe)
        delattr(module, tensor_name)
        if not is_parametrized(module):
            _inject_new_class(module)
            module.parametrizations = ModuleDict()
        _inject_property(module, tensor_name)
        module.parametrizations[tensor_name] = chain
        return module
    raise ValueError(
        f"Module '{module}' does not have a parameter, a buffer, or a parametrized element "
        f"with name '{tensor_name}'"
    )


def is_parametrized(module, tensor_name=None):
    """Whether module has any parametrization (or one on tensor_name)."""
    parametrizations = module.__dict__.get("_modules", {}).get("parametrizations")
    if parametrizations is None or not isinstance(parametrizations, ModuleDict):
        return False
    if tensor_name is None:
        return len(parametrizations) > 0
    return tensor_name in parametrizations


def remove_parametrizations(module, tensor_name, leave_parametrized=True):
    """Undo register_parametrization on tensor_name: the tensor becomes a plain
    parameter again, holding its current parametrized value (or the original when
    ``leave_parametrized=False``)."""
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    chain = module.parametrizations[tensor_name]
    if chain.is_tensor:
        original = chain.original
        if leave_parametrized:
            with ag.no_grad():
                t = getattr(module, tensor_name)
            with ag.no_grad():
                if tuple(t.shape) == tuple(original.shape) and t.dtype == original.dtype:
                    original.copy_(t)
                else:
                    original = Parameter(t.detach(), original.requires_grad)
    else:
        if not leave_parametrized:
            raise ValueError(
                "Cannot leave unparametrized (`leave_parametrized=False`) a tensor that is "
                "parametrized in terms of a sequence of tensors."
            )
        with ag.no_grad():
            t = getattr(module, tensor_name)
        like = chain.original0
        original = Parameter(t.detach(), like.requires_grad) if isinstance(like, Parameter) else t
    delattr(module.__class__, tensor_name)
    del module.parametrizations[tensor_name]
    if isinstance(original, Parameter):
        module.register_parameter(tensor_name, original)
    else:
        module.register_buffer(tensor_name, original)
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        module.__class__ = module.__class__._ember_original_class
    return module


def type_before_parametrizations(module):
    """The module's class before any parametrization was registered."""
    if is_parametrized(module):
        return module.__class__._ember_original_class
    return type(module)


def transfer_parametrizations_and_params(from_module, to_module, tensor_name=None):
    """Copy from_module's parametrizations (all, or tensor_name's) and their
    originals to to_module."""
    if not is_parametrized(from_module):
        raise ValueError("from_module must be parametrized")
    names = [tensor_name] if tensor_name is not None else list(from_module.parametrizations)
    for name in names:
        if not hasattr(to_module, name):
            setattr(to_module, name, Parameter(getattr(from_module, name)))
        for p in from_module.parametrizations[name]:
            register_parametrization(to_module, name, p)
        with ag.no_grad():
            src, dst = from_module.parametrizations[name], to_module.parametrizations[name]
            if src.is_tensor:
                dst.original.copy_(src.original)
            else:
                for i in range(src.ntensors):
                    getattr(dst, f"original{i}").copy_(getattr(src, f"original{i}"))
    return to_module
