"""The Optimizer base class: parameter groups, per-parameter state, state_dict,
zero_grad, hooks, and the helpers the fused multi-tensor steps share.

Note [Fused and reference steps]
Each optimizer updates a whole parameter group with one fused C kernel
(ember_nn/csrc/optim.c) when the group's parameters and gradients are dense
float32/float64 tensors of one dtype: a 100-tensor model steps in one C call.
``foreach=False`` selects the per-tensor reference path instead, written with
ember ops operation for operation as torch.optim's single-tensor code, which
the tests compare the kernels against.  ``fused=True`` demands the kernel.
``differentiable=True`` also takes the reference path, run with grad mode on so
that autograd records the update (the parameters are then usually non-leaf
tensors, e.g. in meta-learning).

On CUDA the fused step is ember_core's multi-tensor launcher of the same
parameters (``ec_optim_<name>`` of the device's kernel namespace, Note
[Multi-tensor launches] in csrc/cuda/nn_launch.c): a few launches per group,
no host synchronisation.  Optimizers without one (CUDA_STEPS) take the
reference path there, whose ember ops run on the device."""

from __future__ import annotations

import copy
import functools
from collections import OrderedDict, defaultdict
from collections.abc import Callable, Iterable, Sequence
from itertools import chain
from typing import TYPE_CHECKING, Any

import ember_autograd as ag
import ember_core as ec
from ember_core._base import lib as core_lib
from ember_core._tensor import tensor as core_tensor
from ember_nn._lib import check, ffi, lib  # noqa: F401 - check is re-exported for the algorithms
from ember_nn.optim._typing import ParamsT

if TYPE_CHECKING:
    from ember_nn.optim._typing import RemovableHandle

Tensor = ec.Tensor


class _RequiredParameter:
    """Singleton for a required optimizer argument (PyTorch's `required`)."""

    def __repr__(self) -> str:
        return "<required parameter>"


required = _RequiredParameter()

_KERNEL_DTYPES = {ec.float32: lib.EN_FLOAT32, ec.float64: lib.EN_FLOAT64}

_Hooks = OrderedDict[int, Callable[..., Any]]
_global_step_pre_hooks: _Hooks = OrderedDict()
_global_step_post_hooks: _Hooks = OrderedDict()


def register_optimizer_step_pre_hook(hook: Callable[..., Any]) -> RemovableHandle:
    """hook(optimizer, args, kwargs) before every optimizer's step."""
    from ember_nn.modules.module import _Handle

    h = _Handle(_global_step_pre_hooks)
    _global_step_pre_hooks[h.id] = hook
    return h


def register_optimizer_step_post_hook(hook: Callable[..., Any]) -> RemovableHandle:
    from ember_nn.modules.module import _Handle

    h = _Handle(_global_step_post_hooks)
    _global_step_post_hooks[h.id] = hook
    return h


def _scalar_dtype():
    """The dtype of step counters: float64 when that is the default dtype, else float32."""
    return ec.float64 if ec.get_default_dtype() is ec.float64 else ec.float32


def _step_with_hooks(step):
    """Wrap a subclass's step: hooks before and after, no_grad inside."""

    @functools.wraps(step)
    def wrapper(self, *args, **kwargs):
        for hook in chain(_global_step_pre_hooks.values(), self._optimizer_step_pre_hooks.values()):
            result = hook(self, args, kwargs)
            if result is not None:
                if not (isinstance(result, tuple) and len(result) == 2):
                    raise RuntimeError(
                        f"{hook} must return None or a tuple of (new_args, new_kwargs), but got "
                        f"{result}."
                    )
                args, kwargs = result
        out = step(self, *args, **kwargs)
        self._opt_called = True
        for hook in chain(
            self._optimizer_step_post_hooks.values(), _global_step_post_hooks.values()
        ):
            hook(self, args, kwargs)
        return out

    wrapper._ember_hooked = True
    return wrapper


class Optimizer:
    """Base class of optimizers: ``Optimizer(params, defaults)``.

    params: an iterable of tensors, of (name, tensor) pairs (as
    ``model.named_parameters()`` gives), or of dicts defining parameter groups
    with their own options.
    """

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        step = cls.__dict__.get("step")
        if step is not None and not getattr(step, "_ember_hooked", False):
            cls.step = _step_with_hooks(step)

    def __init__(self, params: ParamsT, defaults: dict[str, Any]) -> None:
        self.defaults = defaults
        self._optimizer_step_pre_hooks: _Hooks = OrderedDict()
        self._optimizer_step_post_hooks: _Hooks = OrderedDict()
        self._optimizer_state_dict_pre_hooks: _Hooks = OrderedDict()
        self._optimizer_state_dict_post_hooks: _Hooks = OrderedDict()
        self._optimizer_load_state_dict_pre_hooks: _Hooks = OrderedDict()
        self._optimizer_load_state_dict_post_hooks: _Hooks = OrderedDict()
        if isinstance(params, Tensor):
            raise TypeError(
                "params argument given to the optimizer should be an iterable of Tensors or "
                "dicts, but got "
                f"{params.type()}"
            )
        self.state: defaultdict[Tensor, dict[str, Any]] = defaultdict(dict)
        self.param_groups: list[dict[str, Any]] = []
        param_groups: list[Any] = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for group in param_groups:
            self.add_param_group(dict(group))

    def __getstate__(self) -> dict[str, Any]:
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        for name in (
            "_optimizer_step_pre_hooks",
            "_optimizer_step_post_hooks",
            "_optimizer_state_dict_pre_hooks",
            "_optimizer_state_dict_post_hooks",
            "_optimizer_load_state_dict_pre_hooks",
            "_optimizer_load_state_dict_post_hooks",
        ):
            if name not in self.__dict__:
                setattr(self, name, OrderedDict())
        # groups saved before an option existed get its default
        for group in self.param_groups:
            for key, default in self.defaults.items():
                if default is not required:
                    group.setdefault(key, default)

    def __repr__(self) -> str:
        s = type(self).__name__ + " ("
        for i, group in enumerate(self.param_groups):
            s += f"\nParameter Group {i}"
            for key in sorted(group):
                if key != "params":
                    s += f"\n    {key}: {group[key]}"
        return s + "\n)"

    # ----------------------------------------------------------------- groups

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a group of parameters with its own options (defaults fill the rest)."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group).__name__}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            param_group["params"] = [params]
        elif isinstance(params, set):
            raise TypeError(
                "optimizer parameters need to be organized in ordered collections, but the "
                "ordering of tensors in "
                "sets will change between runs. Please use a list instead."
            )
        else:
            param_group["params"] = list(params)
        extracted, names = [], []
        for p in param_group["params"]:
            if isinstance(p, tuple) and len(p) == 2 and isinstance(p[0], str):
                names.append(p[0])
                extracted.append(p[1])
            else:
                extracted.append(p)
        if names and len(names) != len(extracted):
            raise ValueError(
                "all optimizer params should be with/without names. Some param names are missing"
            )
        if names:
            param_group["param_names"] = names
        param_group["params"] = extracted
        for p in extracted:
            if not isinstance(p, Tensor):
                raise TypeError(
                    "optimizer can only optimize Tensors, but one of the params is "
                    f"{type(p).__name__}"
                )
            if not self.defaults.get("differentiable", None) and p.grad_fn is not None:
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(
                    "parameter group didn't specify a value of required optimization parameter "
                    f"{name}"
                )
            param_group.setdefault(name, default)
        if len({id(p) for p in extracted}) != len(extracted):
            import warnings

            warnings.warn(
                "optimizer contains a parameter group with duplicate parameters; in future, this "
                "will cause an "
                "error; see github.com/pytorch/pytorch/issues/40967 for more information",
                stacklevel=3,
            )
        existing: set[int] = set()
        for group in self.param_groups:
            existing.update(id(p) for p in group["params"])
            if ("param_names" in group) != ("param_names" in param_group):
                kind = "with" if "param_names" in param_group else "without"
                raise ValueError(
                    "all optimizer param groups should be with/without names. cannot add param "
                    "group "
                    f"{kind} names to the optimizer"
                )
        if any(id(p) in existing for p in extracted):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset gradients (to None by default, like PyTorch)."""
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    g = p.grad.detach() if p.grad.grad_fn is not None else p.grad
                    with ag.no_grad():
                        g.zero_()
                    p.grad = g

    # ------------------------------------------------------------------ steps

    def step(self, closure: Callable[[], Any] | None = None) -> float | None:
        """Update every parameter that has a gradient; closure re-evaluates the loss."""
        loss = None
        if closure is not None:
            with ag.enable_grad():
                loss = closure()
        # differentiable=True: the step itself is recorded by autograd (as PyTorch's
        # _use_grad_for_differentiable), so meta-learning can differentiate through it
        with ag.set_grad_enabled(bool(self.defaults.get("differentiable", False))):
            for group in self.param_groups:
                if group.get("capturable") and not group.get("fused"):
                    _check_capturable(self, group)
                self._step_group(group)
        return loss

    def _step_group(self, group):
        raise NotImplementedError(f"{type(self).__name__} does not implement step")

    # ------------------------------------------------------------------ hooks

    def _add_hook(self, registry, hook, prepend=False):
        from ember_nn.modules.module import _Handle

        h = _Handle(registry)
        registry[h.id] = hook
        if prepend:
            registry.move_to_end(h.id, last=False)
        return h

    def register_step_pre_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """hook(optimizer, args, kwargs) -> None or (new_args, new_kwargs), before step."""
        return self._add_hook(self._optimizer_step_pre_hooks, hook)

    def register_step_post_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """hook(optimizer, args, kwargs) after step."""
        return self._add_hook(self._optimizer_step_post_hooks, hook)

    def register_state_dict_pre_hook(
        self, hook: Callable[..., Any], prepend: bool = False
    ) -> RemovableHandle:
        return self._add_hook(self._optimizer_state_dict_pre_hooks, hook, prepend)

    def register_state_dict_post_hook(
        self, hook: Callable[..., Any], prepend: bool = False
    ) -> RemovableHandle:
        return self._add_hook(self._optimizer_state_dict_post_hooks, hook, prepend)

    def register_load_state_dict_pre_hook(
        self, hook: Callable[..., Any], prepend: bool = False
    ) -> RemovableHandle:
        return self._add_hook(self._optimizer_load_state_dict_pre_hooks, hook, prepend)

    def register_load_state_dict_post_hook(
        self, hook: Callable[..., Any], prepend: bool = False
    ) -> RemovableHandle:
        return self._add_hook(self._optimizer_load_state_dict_post_hooks, hook, prepend)

    # ------------------------------------------------------------- state_dict

    def state_dict(self) -> dict[str, Any]:
        """{'state': {index: state}, 'param_groups': [...]} with parameters by index."""
        for hook in self._optimizer_state_dict_pre_hooks.values():
            hook(self)
        index: dict[int, int] = {}
        start = 0

        def pack(group):
            nonlocal start
            packed = {k: v for k, v in group.items() if k != "params"}
            for i, p in enumerate(group["params"], start):
                index.setdefault(id(p), i)
            packed["params"] = [index[id(p)] for p in group["params"]]
            start += len(group["params"])
            return packed

        groups = [pack(g) for g in self.param_groups]
        state = {(index[id(k)] if isinstance(k, Tensor) else k): v for k, v in self.state.items()}
        result = {"state": state, "param_groups": groups}
        for hook in self._optimizer_state_dict_post_hooks.values():
            out = hook(self, result)
            if out is not None:
                result = out
        return result

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore state saved by state_dict (the groups must have the same sizes).
        State tensors take their parameter's dtype, except step counters."""
        state_dict = dict(state_dict)
        for hook in self._optimizer_load_state_dict_pre_hooks.values():
            out = hook(self, state_dict)
            if out is not None:
                state_dict = out
        groups = self.param_groups
        saved = copy.deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved)):
            raise ValueError(
                "loaded state dict contains a parameter group that doesn't match the size of "
                "optimizer's group"
            )
        id_map = dict(
            zip(
                chain.from_iterable(s["params"] for s in saved),
                chain.from_iterable(g["params"] for g in groups),
            )
        )
        state: defaultdict[Any, dict[str, Any]] = defaultdict(dict)
        for k, v in state_dict["state"].items():
            k = int(k) if isinstance(k, str) and k.isdigit() else k
            if k in id_map:
                param = id_map[k]
                state[param] = _cast_state(param, v)
            else:
                state[k] = v
        new_groups = []
        for g, s in zip(groups, saved):
            s["params"] = g["params"]
            if "param_names" in g and "param_names" not in s:
                s["param_names"] = g["param_names"]
            new_groups.append(s)
        self.__setstate__({"state": state, "param_groups": new_groups})
        for hook in self._optimizer_load_state_dict_post_hooks.values():
            hook(self)


def _cast_state(param, value, key=None):
    """A state value for param: floating tensors take its dtype (except 'step',
    kept as saved, as PyTorch); containers are converted element by element."""
    if isinstance(value, Tensor):
        if key == "step":
            return value.clone()
        if value.is_floating_point():
            return value.to(param.dtype).clone()
        return value.clone()
    if isinstance(value, dict):
        return {k: _cast_state(param, v, k) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_cast_state(param, v) for v in value)
    return value


# ----------------------------------------------------------- fused helpers


def addresses(tensors: Sequence[Tensor]) -> Any:
    return ffi.new("uint64_t[]", [t._ptr for t in tensors])


def numels(tensors: Sequence[Tensor]) -> Any:
    return ffi.new("int64_t[]", [t._numel for t in tensors])


# the optimizers whose fused step has a CUDA launcher (ecu_optim_<name>)
CUDA_STEPS = ("sgd", "adam")


def fused_step(params: Sequence[Tensor], name: str, op: str, *args: Any) -> None:
    """Run the fused step ``name`` for the parameters' device: ember_nn's C loop
    en_<name> on the CPU, ember_core's multi-tensor launcher on CUDA (its status
    turned into an exception by ember_core, whose message it is)."""
    dev = params[0]._storage._device
    if dev.type == "cpu":
        check(getattr(lib, "en_" + name)(*args), op)
    else:
        core_lib.check(getattr(dev._k, "ec_optim_" + name)(*args), op)


def kernel_dtype(
    group: dict[str, Any],
    params: Sequence[Tensor],
    grads: Sequence[Tensor],
    name: str | None = None,
) -> int | None:
    """The kernel's dtype code when the fused path applies to these tensors, else
    None (see Note [Fused and reference steps]); ``name``: the optimizer's
    fused step, for the device check."""
    fused = group.get("fused")
    if (group.get("foreach") is False and not fused) or group.get("differentiable"):
        return None
    dt = params[0]._dtype
    code = _KERNEL_DTYPES.get(dt)
    dev = params[0]._storage._device
    if dev.type != "cpu" and name not in CUDA_STEPS:
        # no multi-tensor kernel on this device: the reference step's ember ops
        # run there
        if fused:
            raise RuntimeError(
                f"`fused=True`: ember has no fused {name or 'step'} kernel for {dev} yet; "
                "leave fused unset"
            )
        return None
    ok = code is not None
    if ok:
        for p, g in zip(params, grads):
            if (
                p._dtype is not dt
                or g._dtype is not dt
                or not core_tensor.is_contig(p)  # type: ignore[attr-defined, unused-ignore]
                or p._storage._device is not dev
                or g._storage._device is not dev
            ):
                ok = False
                break
    if not ok:
        if fused:
            raise RuntimeError(
                "`fused=True` requires all the params to be contiguous float32 or float64 "
                "tensors of one dtype and device "
                "with gradients of that dtype"
            )
        return None
    return code


def scalar_code(tensors: Sequence[Tensor]) -> int | None:
    """The kernel code of the 0-d step (or mu_product) tensors, or None if mixed."""
    dt = tensors[0]._dtype
    for t in tensors:
        if t._dtype is not dt:
            return None
    return _KERNEL_DTYPES.get(dt)


def mark_written(tensors: Iterable[Tensor], op: str) -> None:
    for t in tensors:
        core_tensor.written(t, op)  # type: ignore[attr-defined, unused-ignore]


def step_tensor() -> Tensor:
    return ec.zeros((), dtype=_scalar_dtype())


# what PyTorch's capturable (CUDA-graph) steps name in their device check: the
# tensors, and the devices (its foreach paths of most optimizers leave out xla)
_CAPTURABLE_TENSORS = {
    "NAdam": "params, mu_products and state_steps",
    "ASGD": "params, mus, etas, and state_steps",
}
_XLA_IN_FOREACH = ("RMSprop", "Rprop")


def _check_capturable(opt, group):
    """capturable=True needs accelerator tensors; PyTorch asserts it at each step."""
    name = type(opt).__name__
    if not any(p.grad is not None and p.device.type == "cpu" for p in group["params"]):
        return
    foreach = bool(group.get("foreach"))
    tensors = _CAPTURABLE_TENSORS.get(name, "params and state_steps")
    if name == "NAdam" and foreach:
        tensors = "params, mu_products, and state_steps"
    devices = ["cuda", "xpu", "hpu", "privateuseone"]
    if name != "Adadelta" and (not foreach or name in _XLA_IN_FOREACH):
        devices.append("xla")
    raise AssertionError(f"If capturable=True, {tensors} must be on supported devices: {devices}.")


def grads_of(group: dict[str, Any]) -> tuple[list[Tensor], list[Tensor]]:
    """(params, grads) of a group's parameters that have gradients (dense ones)."""
    params, grads = [], []
    for p in group["params"]:
        g = p.grad
        if g is None:
            continue
        params.append(p)
        contiguous = core_tensor.is_contig(g)  # type: ignore[attr-defined, unused-ignore]
        grads.append(g if contiguous else g.contiguous())
    return params, grads


Optimizer.step = _step_with_hooks(Optimizer.step)  # type: ignore[method-assign]
