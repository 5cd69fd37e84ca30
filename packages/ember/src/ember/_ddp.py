"""ember.nn.parallel.DistributedDataParallel: ember has no process groups (see
ember.distributed), so constructing one raises PyTorch's error for a missing
default process group, with a line saying why ember never has one."""

from ember_nn.modules.module import Module

__all__ = ["DistributedDataParallel"]


class DistributedDataParallel(Module):
    """Raises ValueError at construction: ember has no distributed backend."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0, *args, **kwargs):
        from ember import distributed

        raise ValueError(
            distributed._NOT_INITIALIZED
            + " (ember has no collective backend, so no process group can exist: "
            "train without DistributedDataParallel, or wrap with ember.nn.DataParallel)"
        )
