"""Process-wide switches and introspection PyTorch has at the top level: anomaly
mode, warn-always, deterministic debug mode, flush-denormal, the default
tensor type, typename/get_device/is_inference."""

import builtins
import warnings

import ember_autograd as _ag
import ember_core as ec

_bool = builtins.bool

__all__ = [
    "compiled_with_cxx11_abi",
    "get_deterministic_debug_mode",
    "get_device",
    "init_num_threads",
    "is_anomaly_check_nan_enabled",
    "is_anomaly_enabled",
    "is_inference",
    "is_vulkan_available",
    "is_warn_always_enabled",
    "set_anomaly_enabled",
    "set_default_tensor_type",
    "set_deterministic_debug_mode",
    "set_flush_denormal",
    "set_warn_always",
    "typename",
]


# ---------------------------------------------------- process-wide switches


def is_inference(input):
    return input.is_inference()


def get_device(input):
    return input.get_device()


def typename(obj):
    """'torch.FloatTensor' for a tensor, else the object's module.qualname."""
    if isinstance(obj, ec.Tensor):
        return obj.type().replace("ember.", "torch.")
    module, name = "", ""
    if hasattr(obj, "__module__"):
        module = obj.__module__ + "."
    if hasattr(obj, "__qualname__"):
        name = obj.__qualname__
    elif hasattr(obj, "__name__"):
        name = obj.__name__
    else:
        module = obj.__class__.__module__
        module = "" if module in (None, "builtins") else module + "."
        name = obj.__class__.__qualname__
    return module + name


def set_anomaly_enabled(enabled, check_nan=True):
    _ag.set_detect_anomaly(enabled, check_nan)


is_anomaly_enabled = _ag.is_anomaly_enabled
is_anomaly_check_nan_enabled = _ag.is_anomaly_check_nan_enabled

_TENSOR_TYPES = {
    "FloatTensor": ec.float32,
    "DoubleTensor": ec.float64,
    "HalfTensor": ec.float16,
    "BFloat16Tensor": ec.bfloat16,
}


def set_default_tensor_type(t):
    """Deprecated: sets the default floating dtype from a tensor type."""
    warnings.warn(
        "torch.set_default_tensor_type() is deprecated as of PyTorch 2.1, please use "
        "torch.set_default_dtype() and torch.set_default_device() as alternatives.",
        UserWarning,
        stacklevel=2,
    )
    name = t if isinstance(t, str) else getattr(t, "__name__", str(t))
    short = name.rsplit(".", 1)[-1]
    if short not in _TENSOR_TYPES:
        raise TypeError(f"invalid type: '{name}'")
    ec.set_default_dtype(_TENSOR_TYPES[short])


_warn_always = [False]


def set_warn_always(b):
    """Warn every time (not once) for warnings PyTorch issues once per process."""
    _warn_always[0] = _bool(b)


def is_warn_always_enabled():
    return _warn_always[0]


def set_flush_denormal(mode):
    """Flushing denormals is not available in ember: returns False (as PyTorch
    does on a CPU without the SSE3 support it needs) and changes nothing."""
    return False


_DEBUG_MODES = {"default": 0, "warn": 1, "error": 2}


def set_deterministic_debug_mode(debug_mode):
    import ember

    if isinstance(debug_mode, str):
        if debug_mode not in _DEBUG_MODES:
            raise RuntimeError(
                "invalid value of debug_mode, expected one of `default`, `warn`, `error`, "
                f"but got {debug_mode}"
            )
        debug_mode = _DEBUG_MODES[debug_mode]
    if debug_mode not in (0, 1, 2):
        raise RuntimeError(
            f"invalid value of debug_mode, expected 0, 1, or 2, but got {debug_mode}"
        )
    ember.use_deterministic_algorithms(debug_mode > 0, warn_only=debug_mode == 1)


def get_deterministic_debug_mode():
    import ember

    if not ember.are_deterministic_algorithms_enabled():
        return 0
    return 1 if ember.is_deterministic_algorithms_warn_only_enabled() else 2


def compiled_with_cxx11_abi():
    return True


def init_num_threads():
    """Nothing to do: ember's thread pool (OpenMP) starts on first use."""


def is_vulkan_available():
    return False
