"""SyncBatchNorm: batch norm whose statistics are reduced across processes.

ember has no process groups, so there is never anything to synchronise: the
layer behaves as torch.nn.SyncBatchNorm does on CPU without an initialised
process group (or with a world of one), i.e. as a batch norm that accepts any
input of two or more dims.  `convert_sync_batchnorm` swaps every BatchNorm*d of
a model for one, sharing its parameters and running-stat buffers.
"""

from ember_nn.modules.normalization import _BatchNorm


class SyncBatchNorm(_BatchNorm):
    """Batch normalization over (N, C, *) inputs, synchronised across processes
    (a single process here, as torch on CPU without a process group).

    >>> bn = SyncBatchNorm(4)
    >>> bn(ember.randn(8, 4, 3, 3)).shape
    ember.Size([8, 4, 3, 3])
    """

    def __init__(
        self,
        num_features,
        eps=1e-5,
        momentum=0.1,
        affine=True,
        track_running_stats=True,
        process_group=None,
        device=None,
        dtype=None,
        *,
        bias=True,
    ):
        super().__init__(
            num_features,
            eps,
            momentum,
            affine,
            track_running_stats,
            device=device,
            dtype=dtype,
            bias=bias,
        )
        self.process_group = process_group

    def _check_input_dim(self, input):
        if input.dim() < 2:
            raise ValueError(f"expected at least 2D input (got {input.dim()}D input)")

    def _check_non_zero_input_channels(self, input):
        if input.size(1) == 0:
            raise ValueError("SyncBatchNorm number of input channels should be non-zero")

    def forward(self, input):
        self._check_input_dim(input)
        self._check_non_zero_input_channels(input)
        # a world of one process: the local batch statistics are the global ones
        return super().forward(input)

    @classmethod
    def convert_sync_batchnorm(cls, module, process_group=None):
        """Replace every BatchNorm*d in `module` by a SyncBatchNorm sharing its
        parameters and buffers; returns the new layer if `module` itself is one."""
        module_output = module
        if isinstance(module, _BatchNorm):
            module_output = SyncBatchNorm(
                module.num_features,
                module.eps,
                module.momentum,
                module.affine,
                module.track_running_stats,
                process_group,
                bias=module.bias is not None,
            )
            if module.affine:
                module_output.weight = module.weight
                module_output.bias = module.bias
            module_output.running_mean = module.running_mean
            module_output.running_var = module.running_var
            module_output.num_batches_tracked = module.num_batches_tracked
            module_output.training = module.training
            if hasattr(module, "qconfig"):
                module_output.qconfig = module.qconfig
        for name, child in module.named_children():
            module_output.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        del module
        return module_output
