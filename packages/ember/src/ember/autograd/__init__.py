"""ember.autograd is ember_autograd."""

import sys

import ember_autograd
from ember._alias import alias

alias("ember.autograd.functional", "ember_autograd.functional")
alias("ember.autograd.forward_ad", "ember_autograd.forward_ad")
alias("ember.autograd.graph", "ember_autograd.graph")
alias("ember.autograd.variable", "ember_autograd.variable")
# torch.autograd.profiler.record_function, which scripts use to label steps
ember_autograd.profiler = alias("ember.autograd.profiler", "ember._profiler")
sys.modules[__name__] = ember_autograd
