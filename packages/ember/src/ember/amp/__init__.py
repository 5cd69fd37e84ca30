"""ember.amp: gradient scaling and autocast, with PyTorch's behaviour on a
machine without CUDA.

GradScaler implements the whole dynamic loss-scaling algorithm (scale the loss,
unscale and check gradients for inf/NaN, skip steps that overflowed, grow or
back off the scale).  As in PyTorch, a scaler for device 'cuda' disables itself
with a warning when CUDA is unavailable, so ``GradScaler()`` in a CUDA script
runs on the CPU as plain training.

autocast: a CPU autocast region runs PyTorch's listed ops in bfloat16 (or
float16) / float32 / the widest input type, with the state kept per thread in
``ember_core._base.autocast`` (Note [Autocast] there).  An autocast region for 'cuda'
without CUDA is disabled with a warning (PyTorch does the same); a disabled
region (``enabled=False``) is exactly the code outside it."""

import functools
import warnings
from collections import defaultdict

import ember_autograd as ag
import ember_core as ec
from ember_core._base import autocast as _ac
from ember_core._cuda import runtime as _cuda

__all__ = [
    "GradScaler",
    "autocast",
    "get_autocast_dtype",
    "is_autocast_available",
    "is_autocast_enabled",
]

_READY, _UNSCALED, _STEPPED = 0, 1, 2


def _fresh_state():
    return {"stage": _READY, "found_inf": None}


class GradScaler:
    """Dynamic loss scaling for mixed-precision training.

    >>> scaler = GradScaler("cpu")
    >>> scaler.scale(loss).backward()
    >>> scaler.step(optimizer)
    >>> scaler.update()
    """

    def __init__(
        self,
        device="cuda",
        init_scale=2.0**16,
        growth_factor=2.0,
        backoff_factor=0.5,
        growth_interval=2000,
        enabled=True,
    ):
        self._device = device
        self._enabled = enabled
        if device == "cuda" and enabled and not _cuda.is_available():
            warnings.warn(
                "torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.",
                stacklevel=2,
            )
            self._enabled = False
        if self._enabled:
            if growth_factor <= 1.0:
                raise AssertionError("The growth factor must be > 1.0.")
            if backoff_factor >= 1.0:
                raise AssertionError("The backoff factor must be < 1.0.")
            self._init_scale = init_scale
            self._scale = None
            self._growth_factor = growth_factor
            self._backoff_factor = backoff_factor
            self._growth_interval = growth_interval
            self._init_growth_tracker = 0
            self._growth_tracker = None
            self._per_optimizer_states = defaultdict(_fresh_state)

    def is_enabled(self):
        return self._enabled

    def _lazy_init(self, device=None):
        # the scale and the growth tracker live on the device of the first
        # scaled outputs (as PyTorch's), so neither check nor update reads them
        # back to the host
        if self._scale is None:
            self._scale = ec.full((), float(self._init_scale), dtype=ec.float32, device=device)
            self._growth_tracker = ec.full(
                (), self._init_growth_tracker, dtype=ec.int32, device=device
            )

    def scale(self, outputs):
        """outputs * scale (tensors, or any nesting of lists/tuples of them)."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, ec.Tensor):
            self._lazy_init(outputs.device)
            return (
                outputs * self._scale.to(outputs.dtype)
                if outputs.dtype is not ec.float32
                else outputs * self._scale
            )
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(self.scale(o) for o in outputs)
        if hasattr(outputs, "__iter__"):
            return map(self.scale, outputs)
        self._lazy_init()
        raise ValueError("outputs must be a Tensor or an iterable of Tensors")

    def _check_initialised(self, where):
        if self._scale is None:
            raise AssertionError(
                f"Attempted {where} but _scale is None.  This may indicate your script did not use "
                "scaler.scale(loss or outputs) earlier in the iteration."
            )

    def unscale_(self, optimizer):
        """Divide optimizer's gradients by the scale, noting inf/NaN."""
        if not self._enabled:
            return
        self._check_initialised("unscale_")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] == _UNSCALED:
            raise RuntimeError(
                "unscale_() has already been called on this optimizer since the last update()."
            )
        if state["stage"] == _STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        # one pass per device and dtype, on the device
        # (_amp_foreach_non_finite_check_and_unscale_): nothing is read back here
        inv_scale = self._scale.double().reciprocal().float()
        found = {}
        per_device = {}
        for group in optimizer.param_groups:
            for p in group["params"]:
                g = p.grad
                if g is None:
                    continue
                if g.dtype is ec.float16:
                    raise ValueError("Attempting to unscale FP16 gradients.")
                per_device.setdefault(g.device, []).append(g)
        with ag.no_grad():
            for device, grads in per_device.items():
                f = found[device] = ec.zeros((), dtype=ec.float32, device=device)
                inv = inv_scale.to(device)
                dense = [g for g in grads if g.is_contiguous()]
                ec._amp_foreach_non_finite_check_and_unscale_(dense, f, inv)
                for g in grads:
                    if not g.is_contiguous():  # rare: the same with ops
                        g.mul_(inv)
                        f.copy_(ec.maximum(f, g.isfinite().all().logical_not().float()))
        state["found_inf"] = found
        state["stage"] = _UNSCALED

    def step(self, optimizer, *args, **kwargs):
        """optimizer.step() unless the unscaled gradients hold inf/NaN."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        self._check_initialised("step")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] == _STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if state["stage"] == _READY:
            self.unscale_(optimizer)
        retval = None
        # the step's one synchronisation: whether any device saw inf/NaN
        if not sum(float(v.item()) for v in state["found_inf"].values()):
            retval = optimizer.step(*args, **kwargs)
        state["stage"] = _STEPPED
        return retval

    def update(self, new_scale=None):
        """Back off the scale after an overflow, grow it after growth_interval clean steps."""
        if not self._enabled:
            return
        self._check_initialised("update")
        if new_scale is not None:
            if isinstance(new_scale, ec.Tensor):
                if new_scale.numel() != 1 or new_scale.requires_grad:
                    raise AssertionError(
                        "new_scale should be a float or a 1-element tensor with "
                        "requires_grad=False."
                    )
                self._scale.copy_(new_scale.reshape(()))
            else:
                self._scale.fill_(float(new_scale))
        else:
            found = [
                v.to(self._scale.device)
                for s in self._per_optimizer_states.values()
                if s["found_inf"] is not None
                for v in s["found_inf"].values()
            ]
            if not found:
                raise AssertionError("No inf checks were recorded prior to update.")
            total = found[0]
            for v in found[1:]:
                total = total + v
            ec._amp_update_scale_(
                self._scale,
                self._growth_tracker,
                total,
                self._growth_factor,
                self._backoff_factor,
                self._growth_interval,
            )
        self._per_optimizer_states = defaultdict(_fresh_state)

    def get_scale(self):
        if not self._enabled:
            return 1.0
        return self._init_scale if self._scale is None else self._scale.item()

    def get_growth_factor(self):
        return self._growth_factor

    def set_growth_factor(self, new_factor):
        self._growth_factor = new_factor

    def get_backoff_factor(self):
        return self._backoff_factor

    def set_backoff_factor(self, new_factor):
        self._backoff_factor = new_factor

    def get_growth_interval(self):
        return self._growth_interval

    def set_growth_interval(self, new_interval):
        self._growth_interval = new_interval

    def _get_growth_tracker(self):
        if not self._enabled:
            return 0
        return (
            self._init_growth_tracker
            if self._growth_tracker is None
            else int(self._growth_tracker.item())
        )

    def state_dict(self):
        if not self._enabled:
            return {}
        return {
            "scale": self.get_scale(),
            "growth_factor": self._growth_factor,
            "backoff_factor": self._backoff_factor,
            "growth_interval": self._growth_interval,
            "_growth_tracker": self._get_growth_tracker(),
        }

    def load_state_dict(self, state_dict):
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError(
                "The source state dict is empty, possibly because it was saved from a disabled "
                "instance of GradScaler."
            )
        self._init_scale = state_dict["scale"]
        if self._scale is not None:
            self._scale.fill_(state_dict["scale"])
        self._growth_factor = state_dict["growth_factor"]
        self._backoff_factor = state_dict["backoff_factor"]
        self._growth_interval = state_dict["growth_interval"]
        self._init_growth_tracker = state_dict["_growth_tracker"]
        if self._growth_tracker is not None:
            self._growth_tracker.fill_(state_dict["_growth_tracker"])


_AUTOCAST_DEVICES = ("cpu", "cuda")


def is_autocast_available(device_type):
    """Whether autocast works for ``device_type`` ('cpu' and 'cuda')."""
    return device_type in _AUTOCAST_DEVICES


def is_autocast_enabled(device_type="cuda"):
    """Whether this thread is inside an enabled autocast region for ``device_type``."""
    return _ac.is_autocast_enabled(device_type)


def get_autocast_dtype(device_type):
    """The lower-precision dtype of ``device_type``'s autocast (bfloat16 on 'cpu')."""
    return _ac.get_autocast_dtype(device_type)


def _warn_deprecated(old, new):
    warnings.warn(
        f"torch.{old}() is deprecated. Please use torch.{new} instead.",
        DeprecationWarning,
        stacklevel=3,
    )


class autocast:
    """A region where ops run in mixed precision, as ``torch.autocast``.

    On 'cpu' the listed matmul/conv ops run in ``dtype`` (bfloat16 by default,
    float16 also accepted), losses and linalg in float32, and cat/stack in the
    widest input type; see Note [Autocast] in ``ember_core._base.autocast``.  Usable
    as a context manager or a decorator; regions nest, and ``enabled=False``
    turns autocast off inside an enabled region.

    >>> with ember.autocast("cpu", dtype=ember.bfloat16):
    ...     y = model(x)          # y.dtype == ember.bfloat16
    ...     loss = F.cross_entropy(y, t)   # float32
    """

    def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None):
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        if not is_autocast_available(device_type):
            raise RuntimeError(
                f"User specified an unsupported autocast device_type '{device_type}'"
            )
        self.device = device_type
        self.fast_dtype = get_autocast_dtype(device_type) if dtype is None else dtype
        self._cache_enabled = (
            _ac.is_autocast_cache_enabled() if cache_enabled is None else bool(cache_enabled)
        )
        if enabled and device_type == "cuda" and not _cuda.is_available():
            warnings.warn(
                "CUDA is not available or torch_xla is imported. Disabling autocast.", stacklevel=2
            )
            enabled = False
        if device_type == "cpu" and enabled and self.fast_dtype not in _ac.supported_dtypes("cpu"):
            warnings.warn(
                "In CPU autocast, but the target dtype is not supported. Disabling autocast.\n"
                "CPU Autocast only supports dtypes of torch.bfloat16, torch.float16 currently.",
                stacklevel=2,
            )
            enabled = False
        self._enabled = bool(enabled)

    def __enter__(self):
        self.prev_cache_enabled = _ac.is_autocast_cache_enabled()
        self.prev = _ac.is_autocast_enabled(self.device)
        self.prev_fastdtype = _ac.get_autocast_dtype(self.device)
        if isinstance(self.fast_dtype, ec.dtype):
            _ac.set_autocast_dtype(self.device, self.fast_dtype)
        _ac.set_autocast_enabled(self.device, self._enabled)
        _ac.autocast_increment_nesting()
        _ac.set_autocast_cache_enabled(self._cache_enabled)
        return self

    def __exit__(self, *exc):
        if _ac.autocast_decrement_nesting() == 0:
            _ac.clear_autocast_cache()
        _ac.set_autocast_enabled(self.device, self.prev)
        _ac.set_autocast_dtype(self.device, self.prev_fastdtype)
        _ac.set_autocast_cache_enabled(self.prev_cache_enabled)
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self:
                return fn(*args, **kwargs)

        return wrapper


# --------------------------------------------- torch-level state functions
# ember.<name> spellings of PyTorch's autocast state functions.


def set_autocast_enabled(device_type, enabled=None):
    """set_autocast_enabled(device_type, enabled), or the deprecated CUDA-only
    set_autocast_enabled(enabled)."""
    if enabled is None:
        device_type, enabled = "cuda", device_type
    _ac.set_autocast_enabled(device_type, enabled)


def set_autocast_dtype(device_type, dtype):
    _ac.set_autocast_dtype(device_type, dtype)


def is_autocast_cpu_enabled():
    _warn_deprecated("is_autocast_cpu_enabled", "is_autocast_enabled('cpu')")
    return _ac.is_autocast_enabled("cpu")


def set_autocast_cpu_enabled(enabled):
    _warn_deprecated("set_autocast_cpu_enabled", "set_autocast_enabled('cpu', enabled)")
    _ac.set_autocast_enabled("cpu", enabled)


def get_autocast_cpu_dtype():
    _warn_deprecated("get_autocast_cpu_dtype", "get_autocast_dtype('cpu')")
    return _ac.get_autocast_dtype("cpu")


def set_autocast_cpu_dtype(dtype):
    _warn_deprecated("set_autocast_cpu_dtype", "set_autocast_dtype('cpu', dtype)")
    _ac.set_autocast_dtype("cpu", dtype)


def get_autocast_gpu_dtype():
    _warn_deprecated("get_autocast_gpu_dtype", "get_autocast_dtype('cuda')")
    return _ac.get_autocast_dtype("cuda")


is_autocast_cache_enabled = _ac.is_autocast_cache_enabled
set_autocast_cache_enabled = _ac.set_autocast_cache_enabled
clear_autocast_cache = _ac.clear_autocast_cache
autocast_increment_nesting = _ac.autocast_increment_nesting
autocast_decrement_nesting = _ac.autocast_decrement_nesting


# autocast for custom autograd Functions
from ember.amp._custom import custom_bwd, custom_fwd  # noqa: E402

__all__ += ["custom_bwd", "custom_fwd"]
