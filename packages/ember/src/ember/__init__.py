"""ember: an imperative, Pythonic deep-learning library in PyTorch's layout.

``import ember as torch`` is meant to run common PyTorch scripts:

>>> import ember
>>> import ember.nn as nn
>>> import ember.nn.functional as F
>>> model = nn.Linear(4, 2)
>>> loss = F.mse_loss(model(ember.randn(8, 4)), ember.zeros(8, 2))
>>> loss.backward()
"""

# ruff: noqa: F401 - this module re-exports names

import contextlib

import ember_autograd as _autograd
import ember_core as _core
from ember import cuda
from ember.serialization import CheckpointError, load, save
from ember_core import *  # noqa: F403 - the tensor namespace, as torch
from ember_core import Size, Tensor  # noqa: F401
from ember_core import __all__ as _core_all

# Grad modes and anomaly detection live in ember_autograd; PyTorch exposes them
# at the top level.
no_grad = _autograd.no_grad
enable_grad = _autograd.enable_grad
set_grad_enabled = _autograd.set_grad_enabled
inference_mode = _autograd.inference_mode
is_grad_enabled = _autograd.is_grad_enabled
is_inference_mode_enabled = _autograd.is_inference_mode_enabled
is_inference = _autograd.is_inference
set_anomaly_enabled = _autograd.set_anomaly_enabled
is_anomaly_enabled = _autograd.is_anomaly_enabled
is_anomaly_check_nan_enabled = _autograd.is_anomaly_check_nan_enabled

import ember.utils.data  # noqa: E402,F401 - ember.utils.data as an attribute path
from ember import (  # noqa: E402
    amp,  # noqa: E402
    autograd,
    backends,
    nn,
    optim,
    random,
    special,  # torch.special
    testing,
    utils,
)
from ember._legacy import *  # noqa: E402,F403 - FloatTensor, LongTensor, ...
from ember._legacy import __all__ as _legacy_all  # noqa: E402

autocast = amp.autocast
is_autocast_enabled = amp.is_autocast_enabled
get_autocast_dtype = amp.get_autocast_dtype
# the rest of PyTorch's autocast state functions, and torch.cpu(.amp)
from ember import cpu  # noqa: E402

# torch.linalg is ember_core.linalg (``import ember.linalg`` works too)
from ember._alias import alias as _alias_module  # noqa: E402
from ember.amp import (  # noqa: E402
    autocast_decrement_nesting,
    autocast_increment_nesting,
    clear_autocast_cache,
    get_autocast_cpu_dtype,
    get_autocast_gpu_dtype,
    is_autocast_cache_enabled,
    is_autocast_cpu_enabled,
    set_autocast_cache_enabled,
    set_autocast_cpu_dtype,
    set_autocast_cpu_enabled,
    set_autocast_dtype,
    set_autocast_enabled,
)

linalg = _alias_module("ember.linalg", "ember_core.linalg")
# torch.fft is ember_core.fft (``import ember.fft`` works too)
fft = _alias_module("ember.fft", "ember_core.fft")
# torch.sparse is ember_core.sparse (Note [Sparse layouts])
sparse = _alias_module("ember.sparse", "ember_core.sparse")

with contextlib.suppress(ImportError):  # a dependency; tolerate a partial install
    from ember import multiprocessing  # noqa: E402

# torch.func / torch.vmap, and torch.jit for scripts written for TorchScript
from ember import func, jit  # noqa: E402

vmap = func.vmap


def compiled_with_cxx11_abi():
    """How this build's C++ is compiled (PyTorch's question about its libtorch):
    ember has no C++ ABI to mix with, so True, as PyTorch's own wheels answer."""
    return True


def is_vulkan_available():
    return False


# torch.compile: capture and replay of kernel calls (Note [ember.compile])
from ember._compile import compile  # noqa: E402

__all__ = sorted(
    set(_core_all)
    | set(_legacy_all)
    | {"special"}
    | {
        "CheckpointError",
        "amp",
        "autocast",
        "autograd",
        "backends",
        "compile",
        "compiled_with_cxx11_abi",
        "cuda",
        "enable_grad",
        "func",
        "jit",
        "vmap",
        "get_autocast_dtype",
        "is_autocast_enabled",
        "inference_mode",
        "is_grad_enabled",
        "is_anomaly_check_nan_enabled",
        "is_anomaly_enabled",
        "is_inference",
        "is_inference_mode_enabled",
        "is_vulkan_available",
        "load",
        "nn",
        "no_grad",
        "optim",
        "random",
        "save",
        "set_anomaly_enabled",
        "set_grad_enabled",
        "testing",
        "utils",
    }
)

# torch.distributions, and the private samplers PyTorch exposes at the top level
_standard_gamma = _core._standard_gamma
_standard_gamma_grad = _core._standard_gamma_grad
_sample_dirichlet = _core._sample_dirichlet
from ember import distributions  # noqa: E402 - needs the namespace above complete

__all__.append("distributions")

# --- profiler, distributed, tensorboard and small namespaces ---
from ember import (  # noqa: E402,F401 - _dynamo: torch._dynamo, imported for its attribute
    _dynamo,
    accelerator,
    compiler,
    distributed,
    hub,
    mps,
    onnx,
    profiler,
    version,
    xpu,
)
from ember.utils import hooks as _utils_hooks  # noqa: E402,F401 - ember.utils.hooks


def get_device_module(device=None):
    """The module of a device type (``ember.cuda`` for "cuda", ``ember.cpu``), as
    torch.get_device_module; with no device, the current accelerator's, else ember.cpu."""
    if device is None:
        current = accelerator.current_accelerator()
        kind = "cpu" if current is None else current.type
    elif isinstance(device, (str, _core.device)):
        kind = _core.device(device).type
    else:
        raise RuntimeError(f"Invalid value of device '{device}', expect torch.device, str, or None")
    module = {"cpu": cpu, "cuda": cuda, "mps": mps, "xpu": xpu}.get(kind)
    if module is None:
        raise RuntimeError(
            f"Device '{kind}' does not have a corresponding module registered as 'torch.{kind}'."
        )
    return module


__version__ = version.__version__  # compares with tuples, as torch's TorchVersion
__all__ = sorted(
    {*__all__, "accelerator", "distributed", "get_device_module", "hub", "mps", "onnx"}
    | {"compiler", "profiler", "version", "xpu"}
)
