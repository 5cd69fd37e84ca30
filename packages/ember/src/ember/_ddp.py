"""ember.nn.parallel.DistributedDataParallel is ember_distributed's."""

from ember_distributed.parallel import DistributedDataParallel

__all__ = ["DistributedDataParallel"]
