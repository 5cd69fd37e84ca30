"""scikit-learn's bundled handwritten digits (1,797 images, 8x8)."""

import numpy as np

from ember_data.datasets._base import VisionDataset, as_tensor_or_array


class Digits(VisionDataset):
    """The 1,797 8x8 handwritten digits that ship with scikit-learn (an optional
    dependency: ``pip install scikit-learn``).

    A sample is ``(image, target)``: ``image`` a float32 (1, 8, 8) array in
    [0, 1] -- an ember tensor when ember_core is installed -- and ``target`` an
    int in 0..9, before ``transform``/``target_transform``.  There is no fixed
    train/test split: use ``random_split``.

    >>> ds = Digits()
    >>> image, label = ds[0]; image.shape, label
    ((1, 8, 8), 0)
    """

    classes = [str(i) for i in range(10)]

    def __init__(self, transform=None, target_transform=None):
        super().__init__(None, transform, target_transform)
        try:
            from sklearn.datasets import load_digits
        except ImportError:
            raise ImportError(
                "ember_data.datasets.Digits reads scikit-learn's bundled digits: "
                "install scikit-learn "
                "(pip install scikit-learn, or pip install 'ember-data[digits]')"
            ) from None
        bunch = load_digits()
        # pixel values are 0..16
        self._images = (np.asarray(bunch.images, dtype=np.float32) / 16.0)[:, None, :, :]
        self._targets = np.asarray(bunch.target, dtype=np.int64)

    @property
    def data(self):
        """All images, (1797, 1, 8, 8) float32 in [0, 1]."""
        return as_tensor_or_array(self._images)

    @property
    def targets(self):
        return as_tensor_or_array(self._targets)

    def __len__(self):
        return len(self._targets)

    def __getitem__(self, index):
        image = as_tensor_or_array(np.array(self._images[index]))
        return self._sample(image, int(self._targets[index]))
