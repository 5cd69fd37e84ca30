"""ember.nn is ember_nn (modules, functional, init, utils)."""

import sys

import ember_nn
from ember._alias import alias

alias("ember.nn.functional", "ember_nn.functional")
alias("ember.nn.init", "ember_nn.init")
alias("ember.nn.utils", "ember_nn.utils")
alias("ember.nn.utils.rnn", "ember_nn.utils.rnn")
alias("ember.nn.utils.clip_grad", "ember_nn.utils.clip_grad")
alias("ember.nn.utils.parametrize", "ember_nn.utils.parametrize")
alias("ember.nn.utils.parametrizations", "ember_nn.utils.parametrizations")
alias("ember.nn.utils.prune", "ember_nn.utils.prune")
alias("ember.nn.utils.fusion", "ember_nn.utils.fusion")
alias("ember.nn.utils.weight_norm", "ember_nn.utils.weight_norm")
alias("ember.nn.utils.init", "ember_nn.utils.init")
alias("ember.nn.utils.stateless", "ember_nn.utils.stateless")
alias("ember.nn.modules", "ember_nn.modules")
alias("ember.nn.parameter", "ember_nn.parameter")
# torch.nn.attention, torch.nn.grad
alias("ember.nn.attention", "ember_nn.attention")
alias("ember.nn.grad", "ember_nn.grad")
# torch.nn.parallel: DataParallel (ember_nn) and DistributedDataParallel (ember._ddp)
import ember_nn.modules.parallel as _parallel  # noqa: E402
from ember._ddp import DistributedDataParallel as _DDP  # noqa: E402

_parallel.DistributedDataParallel = _DDP
alias("ember.nn.parallel", _parallel)
_parallel.distributed = alias("ember.nn.parallel.distributed", "ember._ddp")
sys.modules[__name__] = ember_nn
