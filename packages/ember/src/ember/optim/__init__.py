"""ember.optim is ember_nn.optim (optimizers and lr_scheduler)."""

import sys

import ember_nn.optim
from ember._alias import alias

alias("ember.optim.lr_scheduler", "ember_nn.optim.lr_scheduler")
alias("ember.optim.optimizer", "ember_nn.optim.optimizer")
alias("ember.optim.swa_utils", "ember_nn.optim.swa_utils")
alias("ember.optim.lbfgs", "ember_nn.optim.lbfgs")
alias("ember.optim.rprop", "ember_nn.optim.rprop")
alias("ember.optim.asgd", "ember_nn.optim.asgd")
alias("ember.optim.adafactor", "ember_nn.optim.adafactor")
sys.modules[__name__] = ember_nn.optim
