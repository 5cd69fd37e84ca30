"""What the bundled datasets share: (image, target) samples with optional
transforms, images kept as NumPy arrays, and finding files on disk."""

import os

import numpy as np

from ember_data import _rng
from ember_data.dataset import Dataset


class VisionDataset(Dataset):
    """Samples are ``(transform(image), target_transform(target))``."""

    def __init__(self, root=None, transform=None, target_transform=None):
        self.root = os.path.expanduser(str(root)) if root is not None else None
        self.transform = transform
        self.target_transform = target_transform

    def _sample(self, image, target):
        if self.transform is not None:
            image = self.transform(image)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return image, target

    def __repr__(self):
        lines = [f"Dataset {type(self).__name__}", f"    Number of datapoints: {len(self)}"]
        if self.root is not None:
            lines.append(f"    Root location: {self.root}")
        lines += [f"    {line}" for line in self.extra_repr().splitlines()]
        if self.transform is not None:
            lines.append(f"    Transform: {self.transform!r}")
        if self.target_transform is not None:
            lines.append(f"    Target transform: {self.target_transform!r}")
        return "\n".join(lines)

    def extra_repr(self):
        return ""


def as_tensor_or_array(array):
    """An ember tensor over ``array`` when ember_core is installed, else the array."""
    ec = _rng.ember_core()
    return ec.from_numpy(array) if ec is not None else array


def find_files(dataset, root, subdirs, groups, download=False, gzip_ok=False):
    """The first directory among ``root/subdir`` (and ``root``) holding every file
    of one of ``groups`` (lists of names; with ``gzip_ok`` a name also matches
    with ``.gz``).
    Returns (directory, group index, {name: path}); raises FileNotFoundError
    naming what is missing and where it was looked for."""
    if root is None:
        raise ValueError(f"{dataset}: root (the directory holding the files) is required")
    root = os.path.expanduser(str(root))
    candidates = [os.path.join(root, s) for s in subdirs] + [root]
    best_missing = None
    for gi, names in enumerate(groups):
        for d in candidates:
            found, missing = {}, []
            for name in names:
                for option in (name, name + ".gz") if gzip_ok else (name,):
                    p = os.path.join(d, option)
                    if os.path.isfile(p):
                        found[name] = p
                        break
                else:
                    missing.append(name)
            if not missing:
                return d, gi, found
            if best_missing is None or len(missing) < len(best_missing[1]):
                best_missing = (d, missing)
    gz = " (each may be gzipped, .gz)" if gzip_ok else ""
    wanted = " or ".join("{" + ", ".join(g) + "}" for g in groups)
    note = (
        " (download=True was given, but ember_data does not download datasets)" if download else ""
    )
    raise FileNotFoundError(
        f"{dataset}: dataset files not found{note}. Missing {', '.join(best_missing[1])} "
        f"(closest: {best_missing[0]}); looked for {wanted}{gz} in: "
        f"{', '.join(candidates)}. Put the files you have in one of those directories."
    )


def copy_sample(array):
    """A fresh copy of one sample (transforms may write into it)."""
    return np.array(array)
