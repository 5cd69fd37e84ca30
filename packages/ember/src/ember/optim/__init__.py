"""ember.optim is ember_nn.optim (optimizers and lr_scheduler)."""

import sys

import ember_nn.optim
from ember._alias import alias

alias("ember.optim.lr_scheduler", "ember_nn.optim.lr_scheduler")
alias("ember.optim.optimizer", "ember_nn.optim.optimizer")
sys.modules[__name__] = ember_nn.optim
