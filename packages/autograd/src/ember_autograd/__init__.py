"""ember_autograd: define-by-run automatic differentiation for ember tensors.

Importing it registers a dispatch handler with ember_core that records, as the
program runs, how every differentiable op's outputs came about; ``backward()``
then walks that graph in reverse.

>>> import ember_core as ec, ember_autograd
>>> x = ec.tensor([1.0, 2.0], requires_grad=True)
>>> (x * x).sum().backward()
>>> x.grad
tensor([2., 4.])
"""

from importlib import metadata as _metadata

import ember_core as _ec
from ember_autograd import _derivatives as _derivatives  # noqa: F401 - fills the table
from ember_autograd import _derivatives_attention as _derivatives_attention  # noqa: F401 - fused SDPA
from ember_autograd import _derivatives_complex as _derivatives_complex  # noqa: F401 - complex, fft
from ember_autograd import _derivatives_conv as _derivatives_conv  # noqa: F401 - conv/pool/pad/resample
from ember_autograd import _derivatives_indexing as _derivatives_indexing  # noqa: F401 - indexing, sorting
from ember_autograd import _derivatives_linalg as _derivatives_linalg  # noqa: F401 - linalg
from ember_autograd import _derivatives_lu as _derivatives_lu  # noqa: F401 - lu_factor
from ember_autograd import _derivatives_nn as _derivatives_nn  # noqa: F401 - nn ops' formulas
from ember_autograd import _derivatives_random_dist as _derivatives_random_dist  # noqa: F401, E501 - gamma rsample
from ember_autograd import _derivatives_sampling as _derivatives_sampling  # noqa: F401 - grid_sample, CTC
from ember_autograd import _derivatives_special as _derivatives_special  # noqa: F401 - special
from ember_autograd import _handler, _tensor_api
from ember_autograd import forward_ad as forward_ad
from ember_autograd import function as function
from ember_autograd import functional as functional
from ember_autograd import graph as graph
from ember_autograd import variable as variable
from ember_autograd._anomaly import (
    detect_anomaly,
    is_anomaly_check_nan_enabled,
    is_anomaly_enabled,
    set_anomaly_enabled,
    set_detect_anomaly,
)
from ember_autograd._api import backward, grad
from ember_autograd._formula import DERIVATIVES, derivative
from ember_autograd._function import Function, FunctionCtx, once_differentiable
from ember_autograd._grad_mode import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    is_multithreading_enabled,
    no_grad,
    set_grad_enabled,
    set_multithreading_enabled,
)
from ember_autograd._gradcheck import GradcheckError, gradcheck, gradgradcheck
from ember_autograd._node import Node, RemovableHandle
from ember_autograd._tensor_api import is_inference
from ember_autograd.variable import Variable

# the installed distribution's version (Note [One version], VERSION)
__version__ = _metadata.version("ember-autograd")


_tensor_api.install()
if _handler.handle not in _ec._dispatch.handlers():
    # while it is the only handler, ember_core's generated functions call C's
    # dispatch(op, args) (the same as handle(op, args, {}, op.call_impl)) directly
    _ec.register_handler(_handler.handle, sole_dispatch=_handler.sole_dispatch)

__all__ = [
    "DERIVATIVES",
    "Function",
    "FunctionCtx",
    "GradcheckError",
    "Node",
    "RemovableHandle",
    "backward",
    "derivative",
    "detect_anomaly",
    "enable_grad",
    "forward_ad",
    "function",
    "functional",
    "grad",
    "gradcheck",
    "gradgradcheck",
    "graph",
    "inference_mode",
    "is_anomaly_check_nan_enabled",
    "is_anomaly_enabled",
    "is_grad_enabled",
    "is_inference",
    "is_inference_mode_enabled",
    "is_multithreading_enabled",
    "no_grad",
    "once_differentiable",
    "set_anomaly_enabled",
    "set_detect_anomaly",
    "set_grad_enabled",
    "set_multithreading_enabled",
    "Variable",
    "variable",
]
