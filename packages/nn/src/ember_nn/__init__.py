"""ember_nn: neural-network modules, functional ops, initialisers, optimizers and
learning-rate schedulers for ember tensors (ember.nn / ember.optim).

>>> import ember_nn as nn
>>> model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
>>> opt = nn.optim.SGD(model.parameters(), lr=0.1)
"""

# ruff: noqa: F401 - this module re-exports names

from importlib import metadata as _metadata

from ember_nn import (  # torch.nn.attention, torch.nn.grad
    attention,
    functional,
    grad,
    init,
    optim,
    utils,
)
from ember_nn.modules import *  # noqa: F403 - the layer namespace, as torch.nn
from ember_nn.modules import __dict__ as _modules_dict
from ember_nn.parameter import Buffer, Parameter, UninitializedBuffer, UninitializedParameter

# the installed distribution's version (Note [One version], VERSION)
__version__ = _metadata.version("ember-nn")

__all__ = sorted(
    [k for k in _modules_dict if not k.startswith("_") and k[0].isupper()]
    + [
        "Buffer",
        "Parameter",
        "attention",
        "grad",
        "UninitializedBuffer",
        "UninitializedParameter",
        "functional",
        "init",
        "optim",
        "utils",
        "register_module_forward_hook",
        "register_module_forward_pre_hook",
    ]
)
