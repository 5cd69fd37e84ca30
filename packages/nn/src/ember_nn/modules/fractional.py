"""FractionalMaxPool2d / FractionalMaxPool3d (torch.nn's arguments, errors and the
`_random_samples` buffer)."""

import ember_core as ec
from ember_nn.modules.module import Module


class _FractionalMaxPoolNd(Module):
    _nd = 2
    __constants__ = ["kernel_size", "return_indices", "output_size", "output_ratio"]

    def __init__(
        self,
        kernel_size,
        output_size=None,
        output_ratio=None,
        return_indices=False,
        _random_samples=None,
    ):
        super().__init__()
        nd = self._nd
        self.kernel_size = _ntuple(kernel_size, nd)
        self.return_indices = return_indices
        self.register_buffer("_random_samples", _random_samples)
        self.output_size = _ntuple(output_size, nd) if output_size is not None else None
        self.output_ratio = _ntuple(output_ratio, nd) if output_ratio is not None else None
        name = type(self).__name__
        if output_size is None and output_ratio is None:
            raise ValueError(
                f"{name} requires specifying either an output size, or a pooling ratio"
            )
        if output_size is not None and output_ratio is not None:
            raise ValueError("only one of output_size and output_ratio may be specified")
        if self.output_ratio is not None and not all(0 < r < 1 for r in self.output_ratio):
            raise ValueError(f"output_ratio must be between 0 and 1 (got {output_ratio})")

    def forward(self, input):
        fn = ec.fractional_max_pool2d if self._nd == 2 else ec.fractional_max_pool3d
        return fn(
            input,
            self.kernel_size,
            self.output_size,
            self.output_ratio,
            self.return_indices,
            _random_samples=self._random_samples,
        )


def _ntuple(v, n):
    return tuple(v) if isinstance(v, (list, tuple)) else (v,) * n


class FractionalMaxPool2d(_FractionalMaxPoolNd):
    """Fractional max pooling over (N, C, H, W) inputs.

    >>> pool = FractionalMaxPool2d(3, output_ratio=(0.5, 0.5))
    >>> pool(ember.randn(20, 16, 50, 32)).shape
    ember.Size([20, 16, 25, 16])
    """

    _nd = 2


class FractionalMaxPool3d(_FractionalMaxPoolNd):
    """Fractional max pooling over (N, C, T, H, W) inputs."""

    _nd = 3
