"""ember.optim: optimizers (one fused C kernel per parameter group per step) and
learning-rate schedulers."""

from ember_nn.optim import lr_scheduler
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
from ember_nn.optim.optimizer import (
    Optimizer,
    register_optimizer_step_post_hook,
    register_optimizer_step_pre_hook,
)

__all__ = [
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
    "lr_scheduler",
    "register_optimizer_step_post_hook",
    "register_optimizer_step_pre_hook",
]
