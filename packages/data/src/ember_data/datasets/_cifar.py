"""CIFAR-10 and CIFAR-100 from the batches already on disk: the "python"
version (pickled dicts, loaded safely) or the "binary" version."""

import pickle

import numpy as np

from ember_data.datasets._base import VisionDataset, copy_sample, find_files

_IMAGE_BYTES = 3 * 32 * 32


class _PlainDataUnpickler(pickle.Unpickler):
    """Loads only plain data: dicts, lists, strings, bytes, numbers and NumPy
    arrays of non-object dtypes.  Any other global in the file is refused, so
    a hostile file cannot run code."""

    def __init__(self, file, path):
        super().__init__(file, encoding="latin1")
        self.path = path

    def find_class(self, module, name):
        if module in ("numpy.core.multiarray", "numpy._core.multiarray") and name == "_reconstruct":
            return _reconstruct
        if module in ("numpy.core.numeric", "numpy._core.numeric") and name == "_frombuffer":
            return _frombuffer
        if module == "numpy" and name == "ndarray":
            return np.ndarray
        if module == "numpy" and name == "dtype":
            return _dtype
        if module == "_codecs" and name == "encode":
            return _latin1_bytes  # how protocol-2 pickles from Python 3 spell bytes
        raise pickle.UnpicklingError(
            f"{self.path}: refusing to load {module}.{name}: a CIFAR batch holds only plain data "
            "(dicts, lists, strings, numbers and NumPy arrays)"
        )


def _dtype(obj, align=False, copy=False):
    dt = np.dtype(obj, align, copy)
    if dt.hasobject:
        raise pickle.UnpicklingError(f"refusing a NumPy array of Python objects (dtype {dt})")
    return dt


def _latin1_bytes(text, encoding):
    if not isinstance(text, str) or encoding not in ("latin1", "latin-1"):
        raise pickle.UnpicklingError(
            f"refusing _codecs.encode({type(text).__name__}, {encoding!r})"
        )
    return text.encode("latin1")


def _reconstruct(subtype, shape, dtype):
    if subtype is not np.ndarray:
        raise pickle.UnpicklingError(f"refusing to build a {subtype!r}")
    return np.ndarray.__new__(np.ndarray, shape, _dtype(dtype))


def _frombuffer(buf, dtype, shape, order):
    return np.frombuffer(buf, dtype=_dtype(dtype)).reshape(shape, order=order)


def load_pickle(path):
    """A CIFAR python batch (a pickled dict), refusing anything but plain data;
    keys come back as str."""
    with open(path, "rb") as f:
        obj = _PlainDataUnpickler(f, path).load()
    if not isinstance(obj, dict):
        raise ValueError(f"{path}: expected a pickled dict, got {type(obj).__name__}")
    return {k.decode("latin1") if isinstance(k, bytes) else k: v for k, v in obj.items()}


def _images(flat, path):
    flat = np.asarray(flat)
    if flat.dtype != np.uint8 or flat.ndim != 2 or flat.shape[1] != _IMAGE_BYTES:
        raise ValueError(
            f"{path}: expected images as a uint8 array of shape (N, {_IMAGE_BYTES}), "
            f"got {flat.dtype} {flat.shape}"
        )
    # stored channel-planar (N, 3, 32, 32); kept (N, 32, 32, 3) as torchvision does
    return flat.reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)


def _read_binary(path, label_bytes):
    raw = np.fromfile(path, dtype=np.uint8)
    record = label_bytes + _IMAGE_BYTES
    if raw.size == 0 or raw.size % record:
        raise ValueError(
            f"{path}: {raw.size} bytes is not a whole number of {record}-byte records "
            f"({label_bytes} label byte(s) + {_IMAGE_BYTES} pixels)"
        )
    rows = raw.reshape(-1, record)
    return rows[:, label_bytes:], [rows[:, i].astype(np.int64) for i in range(label_bytes)]


def _read_lines(path):
    with open(path, encoding="utf-8") as f:
        return [line.strip() for line in f if line.strip()]


class CIFAR10(VisionDataset):
    """CIFAR-10 read from ``root`` (looked for in ``root/cifar-10-batches-py``,
    ``root/cifar-10-batches-bin`` and ``root``): the python batches
    (``data_batch_1`` .. ``data_batch_5``, ``test_batch``, ``batches.meta``) or
    the binary ones (``data_batch_1.bin`` .., ``test_batch.bin``,
    ``batches.meta.txt``).  No downloads.

    A sample is ``(image, target)``: ``image`` a (32, 32, 3) uint8 array (HWC,
    as torchvision's PIL image; ``transforms.ToTensor()`` makes it a float
    (3, 32, 32) tensor in [0, 1]) and ``target`` an int.  ``data`` is the
    (N, 32, 32, 3) uint8 array and ``targets`` a list, as in torchvision.
    """

    python_dir = "cifar-10-batches-py"
    binary_dir = "cifar-10-batches-bin"
    train_list = [f"data_batch_{i}" for i in range(1, 6)]
    test_list = ["test_batch"]
    meta_python = "batches.meta"
    meta_key = "label_names"

    def __init__(self, root, train=True, transform=None, target_transform=None, download=False):
        super().__init__(root, transform, target_transform)
        self.train = train
        batches = self.train_list if train else self.test_list
        groups = [batches + [self.meta_python], self._binary_files(batches)]
        name = type(self).__name__
        folder, kind, paths = find_files(
            name, root, [self.python_dir, self.binary_dir], groups, download
        )
        self.folder = folder
        if kind == 0:
            images, labels = [], []
            for b in batches:
                entry = load_pickle(paths[b])
                images.append(_images(entry["data"], paths[b]))
                labels.extend(self._labels_of(entry, paths[b]))
            self.classes = [str(c) for c in load_pickle(paths[self.meta_python])[self.meta_key]]
        else:
            images, labels = self._read_binaries(paths, groups[1])
        self.data = np.ascontiguousarray(np.concatenate(images))
        self.targets = [int(t) for t in labels]
        if len(self.targets) != len(self.data):
            raise ValueError(
                f"{name}: {len(self.data)} images but {len(self.targets)} labels in {folder}"
            )
        self.class_to_idx = {c: i for i, c in enumerate(self.classes)}

    # --- what differs between CIFAR-10 and CIFAR-100

    def _binary_files(self, batches):
        return [b + ".bin" for b in batches] + ["batches.meta.txt"]

    def _labels_of(self, entry, path):
        if "labels" not in entry:
            raise ValueError(f"{path}: no 'labels' in the batch (keys: {sorted(entry)})")
        return entry["labels"]

    def _read_binaries(self, paths, names):
        images, labels = [], []
        for n in names[:-1]:
            pixels, (lab,) = _read_binary(paths[n], 1)
            images.append(_images(pixels, paths[n]))
            labels.extend(lab.tolist())
        self.classes = _read_lines(paths[names[-1]])
        return images, labels

    def __len__(self):
        return len(self.data)

    def __getitem__(self, index):
        return self._sample(copy_sample(self.data[index]), self.targets[index])

    def extra_repr(self):
        return f"Split: {'Train' if self.train else 'Test'}"


class CIFAR100(CIFAR10):
    """CIFAR-100 read from ``root`` (``root/cifar-100-python``: ``train``,
    ``test``, ``meta``; or ``root/cifar-100-binary``: ``train.bin``,
    ``test.bin``, ``fine_label_names.txt``, ``coarse_label_names.txt``).
    ``targets`` are the fine labels (100 classes); ``coarse_targets`` the 20
    superclasses."""

    python_dir = "cifar-100-python"
    binary_dir = "cifar-100-binary"
    train_list = ["train"]
    test_list = ["test"]
    meta_python = "meta"
    meta_key = "fine_label_names"

    def _binary_files(self, batches):
        return [b + ".bin" for b in batches] + ["fine_label_names.txt", "coarse_label_names.txt"]

    def _labels_of(self, entry, path):
        if "fine_labels" not in entry:
            raise ValueError(f"{path}: no 'fine_labels' in the batch (keys: {sorted(entry)})")
        self.coarse_targets = [int(t) for t in entry.get("coarse_labels", [])]
        return entry["fine_labels"]

    def _read_binaries(self, paths, names):
        images, fine, coarse = [], [], []
        for n in names[:-2]:
            pixels, (c, f) = _read_binary(paths[n], 2)
            images.append(_images(pixels, paths[n]))
            coarse.extend(c.tolist())
            fine.extend(f.tolist())
        self.coarse_targets = coarse
        self.classes = _read_lines(paths[names[-2]])
        self.coarse_classes = _read_lines(paths[names[-1]])
        return images, fine
