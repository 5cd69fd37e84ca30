"""A few standard transforms for images held as arrays or ember tensors, with
torchvision's names and meaning.

``ToTensor`` takes an (H, W) or (H, W, C) array (as the readers return) to a
float (C, H, W) tensor; the other transforms work on the last two dimensions,
(..., H, W), of arrays and tensors alike, and return the kind they were given.
Random draws come from Python's ``random`` module, which DataLoader workers
seed (Note [Seeding] in ember_data/_utils/worker.py), so augmentations are
reproducible for any num_workers.

>>> t = Compose([ToTensor(), RandomCrop(32, padding=4), RandomHorizontalFlip(),
...              Normalize((0.49, 0.48, 0.45), (0.25, 0.24, 0.26))])
"""

import numbers
import random

import numpy as np

from ember_data import _rng

__all__ = ["Compose", "Normalize", "RandomCrop", "RandomHorizontalFlip", "ToTensor"]


def _to_array(img, op):
    """(array view of img, whether img was an ember tensor)."""
    if isinstance(img, np.ndarray):
        return img, False
    ec = _rng.ember_core()
    if ec is not None and isinstance(img, ec.Tensor):
        return img.detach().numpy(), True
    raise TypeError(
        f"{op}: expected a NumPy array or an ember tensor image, got {type(img).__name__}"
    )


def _back(array, was_tensor):
    if not was_tensor:
        return array
    return _rng.ember_core().from_numpy(array)


class Compose:
    """Apply transforms one after the other."""

    def __init__(self, transforms):
        self.transforms = list(transforms)

    def __call__(self, img):
        for t in self.transforms:
            img = t(img)
        return img

    def __repr__(self):
        body = "".join(f"\n    {t}" for t in self.transforms)
        return f"{self.__class__.__name__}({body}\n)"


class ToTensor:
    """An (H, W) or (H, W, C) array -> a (C, H, W) float32 tensor (a NumPy array
    without ember_core); uint8 values are scaled to [0, 1], other dtypes are
    only transposed (as torchvision's ToTensor)."""

    def __call__(self, pic):
        if not isinstance(pic, np.ndarray):
            raise TypeError(f"pic should be PIL Image or ndarray. Got {type(pic)}")
        if pic.ndim not in (2, 3):
            raise ValueError(f"pic should be 2/3 dimensional. Got {pic.ndim} dimensions.")
        if pic.ndim == 2:
            pic = pic[:, :, None]
        chw = pic.transpose(2, 0, 1)
        if pic.dtype == np.uint8:
            out = np.multiply(chw, np.float32(1 / 255), dtype=np.float32)
        else:
            out = np.ascontiguousarray(chw)
        ec = _rng.ember_core()
        return ec.from_numpy(out) if ec is not None else out

    def __repr__(self):
        return f"{self.__class__.__name__}()"


class Normalize:
    """``(x - mean[c]) / std[c]`` for each channel c of a float (..., C, H, W)
    image; ``inplace=True`` writes into the input."""

    def __init__(self, mean, std, inplace=False):
        self.mean = mean
        self.std = std
        self.inplace = inplace

    def __call__(self, tensor):
        a, was_tensor = _to_array(tensor, "Normalize")
        if not np.issubdtype(a.dtype, np.floating):
            raise TypeError(f"Input tensor should be a float tensor. Got {a.dtype}.")
        if a.ndim < 3:
            raise ValueError(
                "Expected tensor to be a tensor image of size (..., C, H, W). "
                f"Got tensor.size() = {a.shape}"
            )
        mean = np.asarray(self.mean, dtype=a.dtype).reshape(-1, 1, 1)
        std = np.asarray(self.std, dtype=a.dtype).reshape(-1, 1, 1)
        if (std == 0).any():
            raise ValueError(
                f"std evaluated to zero after conversion to {a.dtype}, leading to division by zero."
            )
        channels = a.shape[-3]
        if mean.shape[0] not in (1, channels) or std.shape[0] not in (1, channels):
            raise ValueError(
                f"Normalize: {mean.shape[0]} means and {std.shape[0]} stds for an image "
                f"with {channels} channels"
            )
        if self.inplace:
            np.subtract(a, mean, out=a)
            np.divide(a, std, out=a)
            return tensor
        return _back((a - mean) / std, was_tensor)

    def __repr__(self):
        return f"{self.__class__.__name__}(mean={self.mean}, std={self.std})"


def _pair(size, name):
    if isinstance(size, numbers.Number):
        return int(size), int(size)
    size = tuple(int(s) for s in size)
    if len(size) == 1:
        return size[0], size[0]
    if len(size) != 2:
        raise ValueError(f"{name} should be an int or a sequence of one or two ints, got {size}")
    return size


def _padding4(padding):
    """(left, top, right, bottom) from an int or a 2- or 4-sequence."""
    if isinstance(padding, numbers.Number):
        p = int(padding)
        return p, p, p, p
    padding = tuple(int(p) for p in padding)
    if len(padding) == 1:
        return padding * 4
    if len(padding) == 2:
        return padding[0], padding[1], padding[0], padding[1]
    if len(padding) == 4:
        return padding
    raise ValueError(
        f"Padding must be an int or a 1, 2, or 4 element tuple, not a {len(padding)} element tuple"
    )


_NUMPY_PAD_MODES = {
    "constant": "constant",
    "edge": "edge",
    "reflect": "reflect",
    "symmetric": "symmetric",
}


class RandomCrop:
    """A random ``size`` window (``int`` or ``(h, w)``) of the last two dims,
    after optional ``padding`` (int: all sides; (l/r, t/b); or (l, t, r, b))
    filled per ``padding_mode`` ("constant" with ``fill``, "edge", "reflect",
    "symmetric"); ``pad_if_needed`` pads images smaller than ``size``."""

    def __init__(self, size, padding=None, pad_if_needed=False, fill=0, padding_mode="constant"):
        self.size = _pair(size, "size")
        self.padding = padding
        self.pad_if_needed = pad_if_needed
        self.fill = fill
        if padding_mode not in _NUMPY_PAD_MODES:
            raise ValueError(
                f"padding_mode should be one of {sorted(_NUMPY_PAD_MODES)}, got {padding_mode!r}"
            )
        self.padding_mode = padding_mode
        self._pad = _padding4(padding) if padding is not None else (0, 0, 0, 0)

    @staticmethod
    def get_params(img, output_size):
        """(top, left, height, width) of a random crop of ``output_size``."""
        h, w = img.shape[-2:]
        th, tw = output_size
        if h < th or w < tw:
            raise ValueError(
                f"Required crop size {(th, tw)} is larger than input image size {(h, w)}"
            )
        if w == tw and h == th:
            return 0, 0, h, w
        return random.randint(0, h - th), random.randint(0, w - tw), th, tw

    def __call__(self, img):
        a, was_tensor = _to_array(img, "RandomCrop")
        if a.ndim < 2:
            raise ValueError(
                f"RandomCrop: expected an image of shape (..., H, W), got shape {a.shape}"
            )
        left, top, right, bottom = self._pad
        h, w = a.shape[-2:]
        th, tw = self.size
        if self.pad_if_needed and w + left + right < tw:
            extra = tw - (w + left + right)
            left, right = left + extra, right + extra
        if self.pad_if_needed and h + top + bottom < th:
            extra = th - (h + top + bottom)
            top, bottom = top + extra, bottom + extra
        ph, pw = h + top + bottom, w + left + right
        if ph < th or pw < tw:
            raise ValueError(
                f"Required crop size {(th, tw)} is larger than input image size {(ph, pw)}"
            )
        i = j = 0
        if not (ph == th and pw == tw):
            i, j = random.randint(0, ph - th), random.randint(0, pw - tw)
        if not (left or top or right or bottom):
            out = a[..., i : i + th, j : j + tw]
        elif self.padding_mode == "constant":
            out = self._crop_constant(a, i - top, j - left, th, tw)
        else:
            widths = [(0, 0)] * (a.ndim - 2) + [(top, bottom), (left, right)]
            out = np.pad(a, widths, mode=_NUMPY_PAD_MODES[self.padding_mode])[
                ..., i : i + th, j : j + tw
            ]
        return _back(out, was_tensor)

    def _crop_constant(self, a, i, j, th, tw):
        """The (th, tw) window at (i, j) of ``a`` padded with ``fill``, without
        building the padded image: fill, then copy the part inside ``a``."""
        h, w = a.shape[-2:]
        out = np.full((*a.shape[:-2], th, tw), self.fill, dtype=a.dtype)
        r0, r1 = max(i, 0), min(i + th, h)
        c0, c1 = max(j, 0), min(j + tw, w)
        if r0 < r1 and c0 < c1:
            out[..., r0 - i : r1 - i, c0 - j : c1 - j] = a[..., r0:r1, c0:c1]
        return out

    def __repr__(self):
        return f"{self.__class__.__name__}(size={self.size}, padding={self.padding})"


class RandomHorizontalFlip:
    """Mirror the last dimension with probability ``p``."""

    def __init__(self, p=0.5):
        self.p = p

    def __call__(self, img):
        if random.random() < self.p:
            a, was_tensor = _to_array(img, "RandomHorizontalFlip")
            # a copy, as torchvision's: negative strides trip up torch.as_tensor
            return _back(np.ascontiguousarray(a[..., ::-1]), was_tensor)
        return img

    def __repr__(self):
        return f"{self.__class__.__name__}(p={self.p})"
