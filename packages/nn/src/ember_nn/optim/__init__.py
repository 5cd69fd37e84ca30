"""ember.optim: optimizers (one fused C kernel per parameter group per step) and
learning-rate schedulers."""

from ember_nn.optim import lr_scheduler, swa_utils
from ember_nn.optim.adafactor import Adafactor
from ember_nn.optim.algorithms import (
    SGD,
    Adadelta,
    Adagrad,
    Adam,
    Adamax,
    AdamW,
    NAdam,
    RAdam,
    RMSprop,
)
from ember_nn.optim.asgd import ASGD
from ember_nn.optim.lbfgs import LBFGS
from ember_nn.optim.optimizer import (
    Optimizer,
    register_optimizer_step_post_hook,
    register_optimizer_step_pre_hook,
)
from ember_nn.optim.rprop import Rprop

__all__ = [
    "ASGD",
    "Adafactor",
    "LBFGS",
    "SGD",
    "Adadelta",
    "Adagrad",
    "Adam",
    "AdamW",
    "Adamax",
    "NAdam",
    "Optimizer",
    "RAdam",
    "RMSprop",
    "Rprop",
    "lr_scheduler",
    "register_optimizer_step_post_hook",
    "register_optimizer_step_pre_hook",
    "swa_utils",
]
