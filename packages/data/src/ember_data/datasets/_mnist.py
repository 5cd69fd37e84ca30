"""MNIST and Fashion-MNIST from IDX files already on disk (gzipped or not)."""

import gzip
import os

import numpy as np

from ember_data.datasets._base import VisionDataset, as_tensor_or_array, copy_sample, find_files

# IDX type codes (third byte of the magic number) -> big-endian dtype
_IDX_TYPES = {
    0x08: np.dtype(np.uint8),
    0x09: np.dtype(np.int8),
    0x0B: np.dtype(">i2"),
    0x0C: np.dtype(">i4"),
    0x0D: np.dtype(">f4"),
    0x0E: np.dtype(">f8"),
}


def read_idx(path):
    """An IDX file (the format of MNIST's files; gzipped when it ends in .gz or
    starts with gzip's magic) as a NumPy array in native byte order.

    The format: two zero bytes, a type code, the number of dimensions, one
    big-endian uint32 per dimension, then the values, big-endian."""
    with open(path, "rb") as f:
        raw = f.read()
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError) as e:
            raise ValueError(f"read_idx: {path} is a damaged gzip file ({e})") from None
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0 or raw[2] not in _IDX_TYPES:
        raise ValueError(
            f"read_idx: {path} is not an IDX file (magic number {raw[:4].hex() or 'missing'})"
        )
    dtype = _IDX_TYPES[raw[2]]
    ndim = raw[3]
    header = 4 + 4 * ndim
    if len(raw) < header:
        raise ValueError(f"read_idx: {path} is truncated inside its header")
    shape = tuple(int(d) for d in np.frombuffer(raw, ">u4", ndim, 4))
    count = int(np.prod(shape, dtype=np.int64))
    expected = header + count * dtype.itemsize
    if len(raw) != expected:
        raise ValueError(
            f"read_idx: {path} has {len(raw)} bytes, but its header (shape {shape}, {dtype.name}) "
            f"needs {expected}"
        )
    return np.frombuffer(raw, dtype, count, header).reshape(shape).astype(dtype.newbyteorder("="))


class MNIST(VisionDataset):
    """MNIST read from its IDX files in ``root`` (looked for in ``root/MNIST/raw``,
    ``root/MNIST`` and ``root``; each file plain or gzipped): no downloads.

    A sample is ``(image, target)``: ``image`` a (28, 28) uint8 array (as a
    PIL image in torchvision: use ``transforms.ToTensor()`` for a float
    (1, 28, 28) tensor in [0, 1]) and ``target`` an int.  ``data`` and
    ``targets`` hold everything (ember tensors when ember_core is installed).
    """

    resources_train = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte")
    resources_test = ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")
    classes = [
        "0 - zero", "1 - one", "2 - two", "3 - three", "4 - four",
        "5 - five", "6 - six", "7 - seven", "8 - eight", "9 - nine",
    ]  # fmt: skip

    def __init__(self, root, train=True, transform=None, target_transform=None, download=False):
        super().__init__(root, transform, target_transform)
        self.train = train
        names = self.resources_train if train else self.resources_test
        name = type(self).__name__
        folder, _, paths = find_files(
            name, root, [os.path.join(name, "raw"), name], [list(names)], download, gzip_ok=True
        )
        self.folder = folder
        images = read_idx(paths[names[0]])
        labels = read_idx(paths[names[1]])
        if images.ndim != 3 or labels.ndim != 1 or len(images) != len(labels):
            raise ValueError(
                f"{name}: images of shape {images.shape} and labels of shape {labels.shape} in "
                f"{folder} do not match (expected (N, H, W) and (N,))"
            )
        self._images = images.astype(np.uint8, copy=False)
        self._targets = labels.astype(np.int64)

    @property
    def data(self):
        return as_tensor_or_array(self._images)

    @property
    def targets(self):
        return as_tensor_or_array(self._targets)

    @property
    def class_to_idx(self):
        return {c: i for i, c in enumerate(self.classes)}

    def __len__(self):
        return len(self._targets)

    def __getitem__(self, index):
        return self._sample(copy_sample(self._images[index]), int(self._targets[index]))

    def extra_repr(self):
        return f"Split: {'Train' if self.train else 'Test'}"


class FashionMNIST(MNIST):
    """Fashion-MNIST: MNIST's format and file names, in ``root/FashionMNIST/raw``,
    ``root/FashionMNIST`` or ``root``."""

    classes = [
        "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
        "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot",
    ]  # fmt: skip
