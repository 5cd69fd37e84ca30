"""Shape and resampling layers: Flatten, Unflatten, padding layers, Upsample,
PixelShuffle/PixelUnshuffle, Fold/Unfold, ChannelShuffle, distances."""

from ember_nn import functional as F
from ember_nn.modules.module import Module


class Flatten(Module):
    """Flattens dims start_dim..end_dim (the batch dim is kept by default)."""

    def __init__(self, start_dim=1, end_dim=-1):
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, input):
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self):
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Expands dim into unflattened_size."""

    def __init__(self, dim, unflattened_size):
        super().__init__()
        if not isinstance(unflattened_size, (tuple, list)):
            raise TypeError(
                "unflattened_size must be a tuple of ints, but found type "
                f"{type(unflattened_size).__name__}"
            )
        for i, elem in enumerate(unflattened_size):
            if not isinstance(elem, int):
                raise TypeError(
                    "unflattened_size must be tuple of ints, but found element of type "
                    f"{type(elem).__name__} "
                    f"at pos {i}"
                )
        self.dim, self.unflattened_size = dim, unflattened_size

    def forward(self, input):
        return input.unflatten(self.dim, self.unflattened_size)

    def extra_repr(self):
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"


# ------------------------------------------------------------------ padding


def _ntuple(padding, n):
    if isinstance(padding, (tuple, list)):
        return tuple(padding)
    return (padding,) * n


class _ConstantPadNd(Module):
    _n = 1

    def __init__(self, padding, value):
        super().__init__()
        self.padding = _ntuple(padding, 2 * self._n)
        self.value = value

    def forward(self, input):
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self):
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    _n = 1


class ConstantPad2d(_ConstantPadNd):
    _n = 2


class ConstantPad3d(_ConstantPadNd):
    _n = 3


class ZeroPad1d(ConstantPad1d):
    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


class ZeroPad2d(ConstantPad2d):
    """Pads (left, right, top, bottom) with zeros."""

    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


class ZeroPad3d(ConstantPad3d):
    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


class _ModePadNd(Module):
    """Reflection, replication and circular padding: no value, repr is the padding."""

    _n = 1
    _mode = "reflect"

    def __init__(self, padding):
        super().__init__()
        self.padding = _ntuple(padding, 2 * self._n)

    def forward(self, input):
        if self._mode == "circular" and input.dim() not in (self._n + 1, self._n + 2):
            raise ValueError(
                f"expected {self._n + 1}D or {self._n + 2}D input (got {input.dim()}D input)"
            )
        return F.pad(input, self.padding, self._mode)

    def extra_repr(self):
        return f"{self.padding}"


class ReflectionPad1d(_ModePadNd):
    _n, _mode = 1, "reflect"


class ReflectionPad2d(_ModePadNd):
    _n, _mode = 2, "reflect"


class ReflectionPad3d(_ModePadNd):
    _n, _mode = 3, "reflect"


class ReplicationPad1d(_ModePadNd):
    _n, _mode = 1, "replicate"


class ReplicationPad2d(_ModePadNd):
    _n, _mode = 2, "replicate"


class ReplicationPad3d(_ModePadNd):
    _n, _mode = 3, "replicate"


class CircularPad1d(_ModePadNd):
    _n, _mode = 1, "circular"


class CircularPad2d(_ModePadNd):
    _n, _mode = 2, "circular"


class CircularPad3d(_ModePadNd):
    _n, _mode = 3, "circular"


# --------------------------------------------------------------- resampling


class Upsample(Module):
    """Resize by size or scale_factor (modes as F.interpolate)."""

    def __init__(
        self,
        size=None,
        scale_factor=None,
        mode="nearest",
        align_corners=None,
        recompute_scale_factor=None,
    ):
        super().__init__()
        self.name = type(self).__name__
        self.size = size
        if isinstance(scale_factor, tuple):
            self.scale_factor = tuple(float(f) for f in scale_factor)
        else:
            self.scale_factor = float(scale_factor) if scale_factor else None
        self.mode = mode
        self.align_corners = align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input):
        return F.interpolate(
            input,
            self.size,
            self.scale_factor,
            self.mode,
            self.align_corners,
            recompute_scale_factor=self.recompute_scale_factor,
        )

    def extra_repr(self):
        info = (
            f"scale_factor={self.scale_factor!r}"
            if self.scale_factor is not None
            else f"size={self.size!r}"
        )
        return info + f", mode={self.mode!r}"


class UpsamplingNearest2d(Upsample):
    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)


class PixelShuffle(Module):
    """(N, C*r*r, H, W) -> (N, C, H*r, W*r)."""

    def __init__(self, upscale_factor):
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, input):
        return F.pixel_shuffle(input, self.upscale_factor)

    def extra_repr(self):
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    def __init__(self, downscale_factor):
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, input):
        return F.pixel_unshuffle(input, self.downscale_factor)

    def extra_repr(self):
        return f"downscale_factor={self.downscale_factor}"


class ChannelShuffle(Module):
    """Shuffles the channels of (N, C, *) in `groups` groups."""

    def __init__(self, groups):
        super().__init__()
        self.groups = groups

    def forward(self, input):
        n, c = input.shape[0], input.shape[1]
        if c % self.groups:
            raise RuntimeError(
                f"Number of channels must be divisible by groups. Got {c} channels and "
                f"{self.groups} groups."
            )
        rest = tuple(input.shape[2:])
        return (
            input.reshape((n, self.groups, c // self.groups) + rest)
            .transpose(1, 2)
            .reshape(input.shape)
        )

    def extra_repr(self):
        return f"groups={self.groups}"


class Fold(Module):
    """Sums sliding blocks (N, C*prod(k), L) back into (N, C, *output_size)."""

    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.output_size, self.kernel_size = output_size, kernel_size
        self.dilation, self.padding, self.stride = dilation, padding, stride

    def forward(self, input):
        return F.fold(
            input, self.output_size, self.kernel_size, self.dilation, self.padding, self.stride
        )

    def extra_repr(self):
        return (
            f"output_size={self.output_size}, kernel_size={self.kernel_size}, "
            f"dilation={self.dilation}, "
            f"padding={self.padding}, stride={self.stride}"
        )


class Unfold(Module):
    """Extracts sliding blocks: (N, C, H, W) -> (N, C*prod(k), L)."""

    def __init__(self, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.kernel_size, self.dilation, self.padding, self.stride = (
            kernel_size,
            dilation,
            padding,
            stride,
        )

    def forward(self, input):
        return F.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self):
        return (
            f"kernel_size={self.kernel_size}, dilation={self.dilation}, padding={self.padding}, "
            f"stride={self.stride}"
        )


# ---------------------------------------------------------------- distances


class PairwiseDistance(Module):
    def __init__(self, p=2.0, eps=1e-6, keepdim=False):
        super().__init__()
        self.norm, self.eps, self.keepdim = p, eps, keepdim

    def forward(self, x1, x2):
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)


class CosineSimilarity(Module):
    def __init__(self, dim=1, eps=1e-8):
        super().__init__()
        self.dim, self.eps = dim, eps

    def forward(self, x1, x2):
        return F.cosine_similarity(x1, x2, self.dim, self.eps)
