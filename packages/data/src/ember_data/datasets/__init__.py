"""Datasets that come with ember_data, and image transforms.

- ``Digits``: scikit-learn's bundled 8x8 digits (needs scikit-learn).
- ``MNIST``, ``FashionMNIST``: IDX files you already have (gzipped or not).
- ``CIFAR10``, ``CIFAR100``: the python or binary batches you already have.
- ``transforms``: ToTensor, Normalize, RandomCrop, RandomHorizontalFlip, Compose.

Nothing is downloaded: a missing file is an error that names it and the
directories it was looked for in.
"""

from ember_data.datasets import transforms
from ember_data.datasets._cifar import CIFAR10, CIFAR100
from ember_data.datasets._digits import Digits
from ember_data.datasets._mnist import MNIST, FashionMNIST, read_idx

__all__ = ["CIFAR10", "CIFAR100", "Digits", "FashionMNIST", "MNIST", "read_idx", "transforms"]
