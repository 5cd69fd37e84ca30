"""The Optimizer base class: parameter groups, per-parameter state, state_dict,
zero_grad, hooks, and the machinery shared by the fused multi-tensor steps."""

import copy
from collections import OrderedDict, defaultdict
from itertools import chain

import ember_autograd as ag
import ember_core as ec
from ember_core import _tensor as core_tensor

from ember_nn._lib import check, ffi, lib

Tensor = ec.Tensor


class _RequiredParameter:
    def __repr__(self):
        return "<required parameter>"


required = _RequiredParameter()

_FUSED_DTYPES = {ec.float32: lib.EN_FLOAT32, ec.float64: lib.EN_FLOAT64}


class Optimizer:
    """Base class of optimizers: ``Optimizer(params, defaults)``.

    params: an iterable of tensors, or of dicts defining parameter groups with
    their own options.
    """

    def __init__(self, params, defaults):
        self.defaults = defaults
        self._step_pre_hooks = OrderedDict()
        self._step_post_hooks = OrderedDict()
        if isinstance(params, Tensor):
            raise TypeError(
                "params argument given to the optimizer should be an iterable of Tensors or dicts, "
                f"but got {type(params).__name__}"
            )
        self.state = defaultdict(dict)
        self.param_groups = []
        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for group in param_groups:
            self.add_param_group(group)

    def __repr__(self):
        s = type(self).__name__ + " ("
        for i, group in enumerate(self.param_groups):
            s += f"\nParameter Group {i}"
            for key in sorted(group):
                if key != "params":
                    s += f"\n    {key}: {group[key]}"
        return s + "\n)"

    def __getstate__(self):
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._step_pre_hooks = OrderedDict()
        self._step_post_hooks = OrderedDict()

    def add_param_group(self, param_group):
        """Add a group of parameters with its own options (defaults fill the rest)."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group).__name__}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            param_group["params"] = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, but the ordering of tensors in sets will change between runs. Please use a list instead.")
        else:
            param_group["params"] = list(params)
        for p in param_group["params"]:
            if not isinstance(p, Tensor):
                raise TypeError(f"optimizer can only optimize Tensors, but one of the params is {type(p).__name__}")
            if p.grad_fn is not None:
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(f"parameter group didn't specify a value of required optimization parameter {name}")
            param_group.setdefault(name, default)
        existing = set()
        for group in self.param_groups:
            existing.update(id(p) for p in group["params"])
        if any(id(p) in existing for p in param_group["params"]):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    def zero_grad(self, set_to_none=True):
        """Reset gradients (to None by default, like PyTorch)."""
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    if set_to_none:
                        p.grad = None
                    else:
                        g = p.grad.detach() if p.grad.grad_fn is not None else p.grad
                        with ag.no_grad():
                            g.zero_()
                        p.grad = g

    # ---------------------------------------------------------------- hooks

    def register_step_pre_hook(self, hook):
        from ember_nn.modules.module import _Handle

        h = _Handle(self._step_pre_hooks)
        self._step_pre_hooks[h.id] = hook
        return h

    def register_step_post_hook(self, hook):
        from ember_nn.modules.module import _Handle

        h = _Handle(self._step_post_hooks)
        self._step_post_hooks[h.id] = hook
        return h

    def _run_step(self, closure):
        for hook in list(self._step_pre_hooks.values()):
            result = hook(self, (), {})
            if result is not None:
                pass
        loss = None
        if closure is not None:
            with ag.enable_grad():
                loss = closure()
        with ag.no_grad():
            for group in self.param_groups:
                self._step_group(group)
        for hook in list(self._step_post_hooks.values()):
            hook(self, (), {})
        return loss

    def step(self, closure=None):
        """Update every parameter with a gradient; closure re-evaluates the loss."""
        return self._run_step(closure)

    def _step_group(self, group):
        raise NotImplementedError

    # ------------------------------------------------------------ state_dict

    def state_dict(self):
        """{'state': {index: state}, 'param_groups': [...]} with parameters by index."""
        index = {}
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
        state = {index[id(p)]: v for p, v in self.state.items() if id(p) in index}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict):
        """Restore state saved by state_dict (groups must have matching sizes)."""
        state_dict = copy.deepcopy(dict(state_dict))
        groups = self.param_groups
        saved = state_dict["param_groups"]
        if len(groups) != len(saved):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match the size of optimizer's group")
        id_map = dict(zip(chain.from_iterable(s["params"] for s in saved), chain.from_iterable(g["params"] for g in groups)))
        state = defaultdict(dict)
        for k, v in state_dict["state"].items():
            k = int(k) if isinstance(k, str) else k
            if k in id_map:
                param = id_map[k]
                state[param] = {
                    key: (_cast_state(val, param, key) if isinstance(val, Tensor) else val) for key, val in v.items()
                }
        new_groups = []
        for g, s in zip(groups, saved):
            s = dict(s)
            s["params"] = g["params"]
            new_groups.append(s)
        self.state = state
        self.param_groups = new_groups


def _cast_state(value, param, key):
    if key in ("step", "mu_product"):
        return value.to(ec.float32).clone()
    if value.is_floating_point():
        return value.to(param.dtype).clone()
    return value.clone()


# ----------------------------------------------------------- fused helpers


def addresses(tensors):
    return ffi.new("uint64_t[]", [t._ptr for t in tensors])


def numels(tensors):
    return ffi.new("int64_t[]", [t._numel for t in tensors])


def fused_dtype(params, grads, fused):
    """The kernel dtype when the fused path applies, else None."""
    if fused is False or not params:
        return None
    dt = params[0]._dtype
    code = _FUSED_DTYPES.get(dt)
    if code is None:
        if fused:
            raise RuntimeError(f"fused optimizer kernels support float32 and float64 parameters, not {dt}")
        return None
    for p, g in zip(params, grads):
        if p._dtype is not dt or g._dtype is not dt or not core_tensor.is_contig(p) or not core_tensor.is_contig(g):
            if fused:
                raise RuntimeError("fused optimizer kernels need contiguous parameters and gradients of one dtype")
            return None
    return code


def mark_written(tensors, op):
    for t in tensors:
        core_tensor.written(t, op)


def step_tensor():
    return ec.zeros((), dtype=ec.float32)


def grads_of(group):
    """(params, grads) of a group's parameters that have gradients (dense ones)."""
    params, grads = [], []
    for p in group["params"]:
        g = p.grad
        if g is None:
            continue
        params.append(p)
        grads.append(g if core_tensor.is_contig(g) else g.contiguous())
    return params, grads

