"""DataParallel, as torch.nn.DataParallel behaves on a machine without GPUs: it
wraps the module (so state-dict keys gain the "module." prefix) and calls it
directly.  This build of ember has no GPU backend, so there is nothing to
replicate; asking for device_ids is a clear error."""

from ember_nn.modules.module import Module


class DataParallel(Module):
    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        if device_ids:
            from ember_core._cuda import runtime as _cuda

            _cuda.unavailable(f"DataParallel(device_ids={list(device_ids)})")
        self.module = module
        self.device_ids = []
        self.dim = dim
        self.output_device = output_device

    def forward(self, *inputs, **kwargs):
        return self.module(*inputs, **kwargs)
