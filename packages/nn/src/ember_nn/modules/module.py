"""Module: the base class of every layer and model.

A Module keeps three registries filled by attribute assignment: parameters
(Parameter values), buffers (register_buffer / Buffer values) and submodules
(Module values).  Everything else — traversal, state_dict, moving between dtypes
and devices, hooks — walks those registries.
"""

import itertools
import warnings
from collections import OrderedDict, namedtuple

import ember_autograd as ag
import ember_core as ec
from ember_nn.parameter import Buffer, Parameter, is_lazy

Tensor = ec.Tensor

_IncompatibleKeys = namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])


class _IncompatibleKeysResult(_IncompatibleKeys):
    def __repr__(self):
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


class _Handle:
    _ids = itertools.count()

    def __init__(self, *dicts):
        self._dicts = dicts
        self.id = next(_Handle._ids)

    def remove(self):
        for d in self._dicts:
            d.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def _addindent(s, n):
    lines = s.split("\n")
    if len(lines) == 1:
        return s
    first = lines.pop(0)
    return first + "\n" + "\n".join(" " * n + line for line in lines)


class Module:
    """Base class of neural-network modules; subclasses define ``forward``.

    >>> class Net(Module):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.fc = Linear(4, 2)
    ...     def forward(self, x):
    ...         return self.fc(x).relu()
    """

    dump_patches = False
    _version = 1
    training: bool
    call_super_init = False

    def __init__(self, *args, **kwargs):
        if args or kwargs:
            raise TypeError(
                f"{type(self).__name__}.__init__() got unexpected arguments {args} {kwargs}"
            )
        s = object.__setattr__
        s(self, "training", True)
        s(self, "_parameters", {})
        s(self, "_buffers", {})
        s(self, "_non_persistent_buffers_set", set())
        s(self, "_modules", {})
        s(self, "_forward_pre_hooks", OrderedDict())
        s(self, "_forward_pre_hooks_with_kwargs", {})
        s(self, "_forward_hooks", OrderedDict())
        s(self, "_forward_hooks_with_kwargs", {})
        s(self, "_forward_hooks_always_called", {})
        s(self, "_backward_hooks", OrderedDict())
        s(self, "_backward_pre_hooks", OrderedDict())
        s(self, "_state_dict_hooks", OrderedDict())
        s(self, "_state_dict_pre_hooks", OrderedDict())
        s(self, "_load_state_dict_pre_hooks", OrderedDict())
        s(self, "_load_state_dict_post_hooks", OrderedDict())

    def forward(self, *args, **kwargs):
        raise NotImplementedError(
            f'Module [{type(self).__name__}] is missing the required "forward" function'
        )

    # ---------------------------------------------------------- registration

    def register_parameter(self, name, param):
        """Add a parameter (or None) under ``name``."""
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        self._check_name(name, "parameter")
        if hasattr(self, name) and name not in self._parameters:
            raise KeyError(f"attribute '{name}' already exists")
        if param is None:
            self._parameters[name] = None
            return
        if not isinstance(param, Parameter):
            raise TypeError(
                f"cannot assign '{type(param).__name__}' object to parameter '{name}' "
                "(ember.nn.Parameter or None required)"
            )
        if param.grad_fn is not None:
            raise ValueError(
                f"Cannot assign non-leaf Tensor to parameter '{name}'. Model parameters must be "
                "created explicitly. To express '{name}' as a function of another Tensor, compute "
                "the value in the forward() method."
            )
        self._parameters[name] = param

    def register_buffer(self, name, tensor, persistent=True):
        """Add a buffer (state that is not a parameter, e.g. running statistics)."""
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        self._check_name(name, "buffer")
        if hasattr(self, name) and name not in self._buffers:
            raise KeyError(f"attribute '{name}' already exists")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(
                f"cannot assign '{type(tensor).__name__}' object to buffer '{name}' (ember "
                "Tensor or None required)"
            )
        if isinstance(tensor, Buffer):
            persistent = getattr(tensor, "_persistent", persistent)
            tensor = tensor.as_subclass(Tensor)
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def add_module(self, name, module):
        """Add a submodule (or None) under ``name``."""
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        self._check_name(name, "module")
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        self._modules[name] = module

    register_module = add_module

    @staticmethod
    def _check_name(name, what):
        if not isinstance(name, str):
            raise TypeError(f"{what} name should be a string. Got {type(name).__name__}")
        if "." in name:
            raise KeyError(f'{what} name can\'t contain ".", got: {name}')
        if name == "":
            raise KeyError(f'{what} name can\'t be empty string ""')

    def __setattr__(self, name, value):
        params = self.__dict__.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            self._remove_from(
                name, self.__dict__, self._buffers, self._modules, self._non_persistent_buffers_set
            )
            self.register_parameter(name, value)
            return
        if params is not None and name in params:
            if value is not None:
                raise TypeError(
                    f"cannot assign '{type(value).__name__}' as parameter '{name}' "
                    "(ember.nn.Parameter or None expected)"
                )
            self.register_parameter(name, value)
            return
        modules = self.__dict__.get("_modules")
        if isinstance(value, Module):
            if modules is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            self._remove_from(
                name,
                self.__dict__,
                self._parameters,
                self._buffers,
                self._non_persistent_buffers_set,
            )
            modules[name] = value
            return
        if modules is not None and name in modules:
            if value is not None:
                raise TypeError(
                    f"cannot assign '{type(value).__name__}' as child module '{name}' "
                    "(ember.nn.Module or None expected)"
                )
            modules[name] = value
            return
        buffers = self.__dict__.get("_buffers")
        if isinstance(value, Buffer) or (buffers is not None and name in buffers):
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(
                    f"cannot assign '{type(value).__name__}' as buffer '{name}' (ember Tensor or "
                    "None expected)"
                )
            if isinstance(value, Buffer):
                persistent = getattr(value, "_persistent", True)
            else:
                persistent = name not in self._non_persistent_buffers_set
            if name not in (buffers or {}):
                self._remove_from(name, self.__dict__, self._parameters, self._modules)
            self.register_buffer(name, value, persistent)
            return
        object.__setattr__(self, name, value)

    @staticmethod
    def _remove_from(name, *containers):
        for c in containers:
            if name in c:
                if isinstance(c, set):
                    c.discard(name)
                else:
                    del c[name]

    def __getattr__(self, name):
        d = self.__dict__
        for registry in ("_parameters", "_buffers", "_modules"):
            r = d.get(registry)
            if r is not None and name in r:
                return r[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name):
        for registry in ("_parameters", "_buffers", "_modules"):
            r = self.__dict__.get(registry)
            if r is not None and name in r:
                del r[name]
                self._non_persistent_buffers_set.discard(name)
                return
        object.__delattr__(self, name)

    def __dir__(self):
        keys = list(object.__dir__(self))
        keys += list(self._parameters) + list(self._modules) + list(self._buffers)
        return sorted(k for k in set(keys) if not k[0].isdigit())

    def get_submodule(self, target):
        if target == "":
            return self
        mod = self
        for item in target.split("."):
            if not hasattr(mod, item):
                raise AttributeError(f"{type(mod).__name__} has no attribute `{item}`")
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                raise AttributeError(f"`{item}` is not an nn.Module")
        return mod

    def set_submodule(self, target, module, strict=False):
        """Replace (or, unless strict, add) the submodule at dotted path `target`."""
        if target == "":
            raise ValueError("Cannot set the submodule without a target name!")
        atoms = target.split(".")
        if not isinstance(module, Module):
            raise ValueError(f"`module` is not an nn.Module, found {type(module)}")
        parent = self if len(atoms) == 1 else self.get_submodule(".".join(atoms[:-1]))
        if strict and not hasattr(parent, atoms[-1]):
            raise AttributeError(f"{parent._get_name()} has no attribute `{atoms[-1]}`")
        if hasattr(parent, atoms[-1]) and not isinstance(getattr(parent, atoms[-1]), Module):
            raise AttributeError(f"`{atoms[-1]}` is not an nn.Module")
        setattr(parent, atoms[-1], module)

    def to_empty(self, *, device, recurse=True):
        """Move parameters and buffers to `device` without copying their values
        (uninitialised memory), e.g. after building a model on the meta device."""
        return self._apply(lambda t: ec.empty_like(t, device=device), recurse=recurse)

    def get_parameter(self, target):
        module_path, _, name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if name not in mod._parameters:
            raise AttributeError(f"{type(mod).__name__} has no parameter `{name}`")
        return mod._parameters[name]

    def get_buffer(self, target):
        module_path, _, name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if name not in mod._buffers:
            raise AttributeError(f"{type(mod).__name__} has no buffer `{name}`")
        return mod._buffers[name]

    # -------------------------------------------------------------- traversal

    def _named_members(self, get_members, prefix="", recurse=True, remove_duplicate=True):
        memo = set()
        modules = (
            self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate)
            if recurse
            else [(prefix, self)]
        )
        for module_prefix, module in modules:
            for k, v in get_members(module):
                if v is None or (remove_duplicate and id(v) in memo):
                    continue
                if remove_duplicate:
                    memo.add(id(v))
                yield (module_prefix + ("." if module_prefix else "") + k, v)

    def parameters(self, recurse=True):
        """Every parameter (of submodules too, unless recurse=False), each once."""
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        yield from self._named_members(
            lambda m: m._parameters.items(), prefix, recurse, remove_duplicate
        )

    def buffers(self, recurse=True):
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        yield from self._named_members(
            lambda m: m._buffers.items(), prefix, recurse, remove_duplicate
        )

    def children(self):
        for _, m in self.named_children():
            yield m

    def named_children(self):
        memo = set()
        for name, m in self._modules.items():
            if m is not None and id(m) not in memo:
                memo.add(id(m))
                yield name, m

    def modules(self):
        for _, m in self.named_modules():
            yield m

    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        """(name, module) for this module and every submodule, depth first."""
        if memo is None:
            memo = set()
        if id(self) in memo and remove_duplicate:
            return
        if remove_duplicate:
            memo.add(id(self))
        yield prefix, self
        for name, module in self._modules.items():
            if module is None:
                continue
            sub = prefix + ("." if prefix else "") + name
            yield from module.named_modules(memo, sub, remove_duplicate)

    # ----------------------------------------------------------------- modes

    def train(self, mode=True):
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for m in self.children():
            m.train(mode)
        return self

    def eval(self):
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none=True):
        """Reset the gradients of every parameter (to None by default)."""
        for p in self.parameters():
            if p.grad is not None:
                if set_to_none:
                    p.grad = None
                else:
                    g = p.grad
                    if g.grad_fn is not None:
                        g = g.detach()
                    with ag.no_grad():
                        g.zero_()
                    p.grad = g

    # ------------------------------------------------------------ conversion

    def _apply(self, fn, recurse=True):
        if recurse:
            for m in self.children():
                m._apply(fn)
        for key, param in self._parameters.items():
            if param is None:
                continue
            with ag.no_grad():
                new = fn(param)
            if new is not param:
                param.data = new
            if param.grad is not None:
                with ag.no_grad():
                    g = fn(param.grad)
                if g is not param.grad:
                    param._grad = g
            self._parameters[key] = param
        for key, buf in self._buffers.items():
            if buf is not None:
                self._buffers[key] = fn(buf)
        return self

    def apply(self, fn):
        """Call fn on every submodule (children first) and on self."""
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    def to(self, *args, **kwargs):
        """Move/convert parameters and buffers: to(dtype), to(device), to(tensor)."""
        from ember_core._tensor.copy import _parse_to

        dtype, device, _, non_blocking = _parse_to(args, dict(kwargs))
        if dtype is not None and not dtype.is_floating_point:
            raise TypeError(
                f"nn.Module.to only accepts floating point dtypes, but got desired dtype={dtype}"
            )

        def convert(t):
            target = dtype if (dtype is not None and t.is_floating_point()) else t.dtype
            if device is not None:
                if t.is_meta and device.type != "meta":
                    raise NotImplementedError(
                        "Cannot copy out of meta tensor; no data! Please use "
                        "torch.nn.Module.to_empty() instead of torch.nn.Module.to() when moving "
                        "module from meta to a different device."
                    )
                return t.to(device, target, non_blocking=non_blocking)
            return t.to(target)

        return self._apply(convert)

    def _cast(self, dtype):
        return self._apply(lambda t: t.to(dtype) if t.is_floating_point() else t)

    def float(self):
        return self._cast(ec.float32)

    def double(self):
        return self._cast(ec.float64)

    def half(self):
        return self._cast(ec.float16)

    def bfloat16(self):
        return self._cast(ec.bfloat16)

    def cpu(self):
        return self._apply(lambda t: t.cpu())

    def cuda(self, device=None):
        return self._apply(lambda t: t.cuda(device))

    def type(self, dst_type):
        return self._apply(lambda t: t.type(dst_type))

    def share_memory(self):
        return self._apply(lambda t: t.share_memory_())

    # ------------------------------------------------------------ state_dict

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = param if keep_vars else param.detach()
        for name, buf in self._buffers.items():
            if buf is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = buf if keep_vars else buf.detach()
        extra = getattr(type(self), "get_extra_state", None)
        if extra is not None and extra is not Module.get_extra_state:
            destination[prefix + "_extra_state"] = self.get_extra_state()

    def get_extra_state(self):
        raise RuntimeError(
            "Reached a code path in Module.get_extra_state() that should never be called."
        )

    def set_extra_state(self, state):
        raise RuntimeError(
            "Reached a code path in Module.set_extra_state() that should never be called."
        )

    def state_dict(self, *args, destination=None, prefix="", keep_vars=False):
        """Parameters and persistent buffers by dotted name ('fc.weight')."""
        if args:
            destination = args[0] if len(args) > 0 else destination
            prefix = args[1] if len(args) > 1 else prefix
            keep_vars = args[2] if len(args) > 2 else keep_vars
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()
        metadata = getattr(destination, "_metadata", None)
        if metadata is not None:
            # the module's version by prefix, for _load_from_state_dict (as PyTorch)
            metadata[prefix[:-1]] = {"version": self._version}
        for hook in self._state_dict_pre_hooks.values():
            hook(self, prefix, keep_vars)
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(
                    destination=destination, prefix=prefix + name + ".", keep_vars=keep_vars
                )
        # post hooks see (and may add to) this module's own metadata, as in PyTorch
        local_metadata = metadata[prefix[:-1]] if metadata is not None else {}
        for hook in self._state_dict_hooks.values():
            result = hook(self, destination, prefix, local_metadata)
            if result is not None:
                destination = result
        return destination

    def _load_from_state_dict(
        self,
        state_dict,
        prefix,
        local_metadata,
        strict,
        missing_keys,
        unexpected_keys,
        error_msgs,
        assign=False,
    ):
        """Copy this module's own parameters and persistent buffers from state_dict
        (not its children's), recording missing/unexpected keys and errors."""
        for hook in self._load_state_dict_pre_hooks.values():
            hook(
                state_dict,
                prefix,
                local_metadata,
                strict,
                missing_keys,
                unexpected_keys,
                error_msgs,
            )
        persistent = {
            k: v for k, v in self._buffers.items() if k not in self._non_persistent_buffers_set
        }
        local_state = {
            k: v
            for k, v in itertools.chain(self._parameters.items(), persistent.items())
            if v is not None
        }
        for name, param in local_state.items():
            key = prefix + name
            if key not in state_dict:
                if strict:
                    missing_keys.append(key)
                continue
            value = state_dict[key]
            if not isinstance(value, Tensor):
                error_msgs.append(
                    f'While copying the parameter named "{key}", expected ember.Tensor or '
                    "Tensor-like object "
                    f"from checkpoint but received {type(value)}"
                )
                continue
            if not is_lazy(param) and value.shape != param.shape:
                error_msgs.append(
                    f"size mismatch for {key}: copying a param with shape {value.shape} from "
                    f"checkpoint, the shape in current model is {param.shape}."
                )
                continue
            try:
                with ag.no_grad():
                    if assign:
                        # the checkpoint's tensor itself (its dtype too); parameters stay
                        # Parameters with the model's requires_grad
                        if isinstance(param, Parameter):
                            if not isinstance(value, Parameter):
                                value = Parameter(value, requires_grad=param.requires_grad)
                            else:
                                value.requires_grad_(param.requires_grad)
                        setattr(self, name, value)
                    else:
                        param.copy_(value)
            except Exception as exc:  # noqa: BLE001 - reported to the caller with the key
                error_msgs.append(
                    f'While copying the parameter named "{key}", whose dimensions in the model are '
                    f"{param.shape} and whose dimensions in the checkpoint are {value.shape}, an "
                    "exception "
                    f"occurred : {exc.args}."
                )
        extra_key = prefix + "_extra_state"
        if (
            getattr(type(self), "set_extra_state", Module.set_extra_state)
            is not Module.set_extra_state
        ):
            if extra_key in state_dict:
                self.set_extra_state(state_dict[extra_key])
            elif strict:
                missing_keys.append(extra_key)
        elif strict and extra_key in state_dict:
            unexpected_keys.append(extra_key)
        if strict:
            for key in state_dict:
                if key.startswith(prefix) and key != extra_key:
                    head = key[len(prefix) :].split(".", 1)[0]
                    if head not in self._modules and head not in local_state:
                        unexpected_keys.append(key)

    def load_state_dict(self, state_dict, strict=True, assign=False):
        """Copy parameters and buffers from state_dict; with strict, every key must
        match.  Returns (missing_keys, unexpected_keys)."""
        if not hasattr(state_dict, "keys"):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing, unexpected, errors = [], [], []
        metadata = getattr(state_dict, "_metadata", None)
        state_dict = OrderedDict(state_dict)
        if metadata is not None:
            state_dict._metadata = metadata

        def load(module, local_state_dict, prefix=""):
            local_metadata = {} if metadata is None else dict(metadata.get(prefix[:-1], {}))
            module._load_from_state_dict(
                local_state_dict, prefix, local_metadata, True, missing, unexpected, errors, assign
            )
            for name, child in module._modules.items():
                if child is not None:
                    child_prefix = prefix + name + "."
                    child_state = {
                        k: v for k, v in local_state_dict.items() if k.startswith(child_prefix)
                    }
                    load(child, child_state, child_prefix)  # noqa: F821 - recursion
            incompatible = _IncompatibleKeysResult(missing, unexpected)
            for hook in module._load_state_dict_post_hooks.values():
                hook(module, incompatible)

        load(self, state_dict)
        del load  # breaks the closure's reference cycle, as PyTorch

        if strict:
            if unexpected:
                errors.insert(
                    0,
                    "Unexpected key(s) in state_dict: {}. ".format(
                        ", ".join(f'"{k}"' for k in unexpected)
                    ),
                )
            if missing:
                errors.insert(
                    0,
                    "Missing key(s) in state_dict: {}. ".format(
                        ", ".join(f'"{k}"' for k in missing)
                    ),
                )
        if errors:
            raise RuntimeError(
                "Error(s) in loading state_dict for {}:\n\t{}".format(
                    type(self).__name__, "\n\t".join(errors)
                )
            )
        return _IncompatibleKeysResult(missing, unexpected)

    def register_state_dict_pre_hook(self, hook):
        h = _Handle(self._state_dict_pre_hooks)
        self._state_dict_pre_hooks[h.id] = hook
        return h

    def register_state_dict_post_hook(self, hook):
        h = _Handle(self._state_dict_hooks)
        self._state_dict_hooks[h.id] = lambda module, sd, prefix, meta: hook(
            module, sd, prefix, meta
        )
        return h

    _register_state_dict_hook = register_state_dict_post_hook

    def register_load_state_dict_pre_hook(self, hook):
        h = _Handle(self._load_state_dict_pre_hooks)
        self._load_state_dict_pre_hooks[h.id] = lambda *a: hook(self, *a)
        return h

    def _register_load_state_dict_pre_hook(self, hook, with_module=False):
        h = _Handle(self._load_state_dict_pre_hooks)
        self._load_state_dict_pre_hooks[h.id] = (lambda *a: hook(self, *a)) if with_module else hook
        return h

    def register_load_state_dict_post_hook(self, hook):
        h = _Handle(self._load_state_dict_post_hooks)
        self._load_state_dict_post_hooks[h.id] = hook
        return h

    # ----------------------------------------------------------------- hooks

    def register_forward_pre_hook(self, hook, *, prepend=False, with_kwargs=False):
        """hook(module, args) -> new args or None (with_kwargs: hook(module, args, kwargs))."""
        h = _Handle(self._forward_pre_hooks, self._forward_pre_hooks_with_kwargs)
        self._forward_pre_hooks[h.id] = hook
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs[h.id] = True
        if prepend:
            self._forward_pre_hooks.move_to_end(h.id, last=False)
        return h

    def register_forward_hook(self, hook, *, prepend=False, with_kwargs=False, always_call=False):
        """hook(module, args, output) -> new output or None."""
        h = _Handle(
            self._forward_hooks, self._forward_hooks_with_kwargs, self._forward_hooks_always_called
        )
        self._forward_hooks[h.id] = hook
        if with_kwargs:
            self._forward_hooks_with_kwargs[h.id] = True
        if always_call:
            self._forward_hooks_always_called[h.id] = True
        if prepend:
            self._forward_hooks.move_to_end(h.id, last=False)
        return h

    def register_full_backward_hook(self, hook, prepend=False):
        """hook(module, grad_input, grad_output) -> new grad_input or None, called
        once the gradients with respect to the module's inputs are computed."""
        h = _Handle(self._backward_hooks)
        self._backward_hooks[h.id] = hook
        if prepend:
            self._backward_hooks.move_to_end(h.id, last=False)
        return h

    def register_full_backward_pre_hook(self, hook, prepend=False):
        """hook(module, grad_output) -> new grad_output or None."""
        h = _Handle(self._backward_pre_hooks)
        self._backward_pre_hooks[h.id] = hook
        if prepend:
            self._backward_pre_hooks.move_to_end(h.id, last=False)
        return h

    def register_backward_hook(self, hook):
        warnings.warn(
            "register_backward_hook is deprecated; using register_full_backward_hook",
            FutureWarning,
            stacklevel=2,
        )
        return self.register_full_backward_hook(hook)

    # ------------------------------------------------------------------ call

    def _call_impl(self, *args, **kwargs):
        if not (
            self._forward_pre_hooks
            or self._forward_hooks
            or self._backward_hooks
            or self._backward_pre_hooks
            or _global_hooks()
        ):
            return self.forward(*args, **kwargs)
        for hook_id, hook in list(_global_pre_hooks.items()) + list(
            self._forward_pre_hooks.items()
        ):
            if self._forward_pre_hooks_with_kwargs.get(hook_id):
                result = hook(self, args, kwargs)
                if result is not None:
                    args, kwargs = result
            else:
                result = hook(self, args)
                if result is not None:
                    args = result if isinstance(result, tuple) else (result,)
        bw = None
        if self._backward_hooks or self._backward_pre_hooks:
            from ember_nn.modules._backward_hooks import BackwardHook

            bw = BackwardHook(self)
            args = bw.setup_input_hook(args)
        output = self.forward(*args, **kwargs)
        for hook_id, hook in list(_global_forward_hooks.items()) + list(
            self._forward_hooks.items()
        ):
            if self._forward_hooks_with_kwargs.get(hook_id):
                result = hook(self, args, kwargs, output)
            else:
                result = hook(self, args, output)
            if result is not None:
                output = result
        if bw is not None:
            output = bw.setup_output_hook(output)
        return output

    __call__ = _call_impl

    # --------------------------------------------------------------- display

    def extra_repr(self):
        return ""

    def _get_name(self):
        return type(self).__name__

    def __repr__(self):
        lines = []
        extra = self.extra_repr()
        if extra:
            lines = extra.split("\n")
        children = []
        for key, module in self._modules.items():
            mod_str = _addindent(repr(module), 2)
            children.append(f"({key}): {mod_str}")
        body = lines + children
        main = self._get_name() + "("
        if body:
            if len(lines) == 1 and not children:
                main += lines[0]
            else:
                main += "\n  " + "\n  ".join(body) + "\n"
        return main + ")"

    def __getstate__(self):
        return self.__dict__.copy()

    def __setstate__(self, state):
        self.__dict__.update(state)

    def compile(self, *args, **kwargs):
        return self


_global_pre_hooks = OrderedDict()
_global_forward_hooks = OrderedDict()


def _global_hooks():
    return bool(_global_pre_hooks or _global_forward_hooks)


def register_module_forward_pre_hook(hook):
    h = _Handle(_global_pre_hooks)
    _global_pre_hooks[h.id] = hook
    return h


def register_module_forward_hook(hook, *, always_call=False):
    h = _Handle(_global_forward_hooks)
    _global_forward_hooks[h.id] = hook
    return h
