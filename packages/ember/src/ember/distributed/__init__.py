"""ember.distributed is ember_distributed (torch.distributed): process groups and
collectives on MPI (CPU tensors) and NCCL (CUDA tensors), rendezvous stores, and
the launcher ``python -m ember.distributed.run``."""

import sys

import ember_distributed
from ember._alias import alias

alias("ember.distributed.distributed_c10d", "ember_distributed.distributed_c10d")
alias("ember.distributed.launcher", "ember_distributed.run")
sys.modules[__name__].__dict__.update(
    {k: v for k, v in vars(ember_distributed).items() if not k.startswith("__")}
)
__all__ = list(ember_distributed.__all__)
