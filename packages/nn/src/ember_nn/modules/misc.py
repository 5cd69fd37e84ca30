"""Shape and resampling layers: Flatten, Unflatten, padding layers, Upsample,
PixelShuffle/PixelUnshuffle, distances."""

from ember_nn import functional as F
from ember_nn.modules.module import Module


class Flatten(Module):
    def __init__(self, start_dim=1, end_dim=-1):
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, input):
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self):
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    def __init__(self, dim, unflattened_size):
        super().__init__()
        self.dim, self.unflattened_size = dim, tuple(unflattened_size)

    def forward(self, input):
        return input.unflatten(self.dim, self.unflattened_size)

    def extra_repr(self):
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"


def _expand_pad(padding, n):
    if isinstance(padding, int):
        return (padding,) * (2 * n)
    padding = tuple(padding)
    if len(padding) != 2 * n:
        raise ValueError(f"expected {2 * n} padding values, got {len(padding)}")
    return padding


class _PadNd(Module):
    _n = 2
    _mode = "constant"

    def __init__(self, padding, value=0.0):
        super().__init__()
        self.padding = _expand_pad(padding, self._n)
        self.value = value

    def forward(self, input):
        if self._mode == "constant":
            return F.pad(input, self.padding, "constant", self.value)
        return F.pad(input, self.padding, self._mode)

    def extra_repr(self):
        return f"{self.padding}" + (f", value={self.value}" if self._mode == "constant" and self.value else "")


def _pad_class(name, n, mode, with_value):
    def __init__(self, padding, value=0.0):
        _PadNd.__init__(self, padding, value if with_value else 0.0)

    if not with_value:

        def __init__(self, padding):  # noqa: F811 - the value-less signature
            _PadNd.__init__(self, padding)

    return type(name, (_PadNd,), {"_n": n, "_mode": mode, "__init__": __init__})


ConstantPad1d = _pad_class("ConstantPad1d", 1, "constant", True)
ConstantPad2d = _pad_class("ConstantPad2d", 2, "constant", True)
ConstantPad3d = _pad_class("ConstantPad3d", 3, "constant", True)
ZeroPad1d = _pad_class("ZeroPad1d", 1, "constant", False)
ZeroPad2d = _pad_class("ZeroPad2d", 2, "constant", False)
ReflectionPad1d = _pad_class("ReflectionPad1d", 1, "reflect", False)
ReflectionPad2d = _pad_class("ReflectionPad2d", 2, "reflect", False)
ReplicationPad1d = _pad_class("ReplicationPad1d", 1, "replicate", False)
ReplicationPad2d = _pad_class("ReplicationPad2d", 2, "replicate", False)
CircularPad1d = _pad_class("CircularPad1d", 1, "circular", False)
CircularPad2d = _pad_class("CircularPad2d", 2, "circular", False)


class Upsample(Module):
    def __init__(self, size=None, scale_factor=None, mode="nearest", align_corners=None, recompute_scale_factor=None):
        super().__init__()
        self.size, self.scale_factor, self.mode, self.align_corners = size, scale_factor, mode, align_corners

    def forward(self, input):
        return F.interpolate(input, self.size, self.scale_factor, self.mode, self.align_corners)

    def extra_repr(self):
        info = f"scale_factor={self.scale_factor!r}" if self.scale_factor is not None else f"size={self.size!r}"
        return info + f", mode={self.mode!r}"


class UpsamplingNearest2d(Upsample):
    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)


class PixelShuffle(Module):
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
