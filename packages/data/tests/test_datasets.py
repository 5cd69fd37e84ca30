"""The bundled datasets: readers on small files written here in the real formats."""

import gzip
import os
import pickle
import struct

import numpy as np
import pytest

from ember_data import DataLoader
from ember_data.datasets import CIFAR10, CIFAR100, MNIST, Digits, FashionMNIST, read_idx
from ember_data.datasets import transforms as T


def write_idx(path, array, gz=False):
    codes = {
        np.uint8: 0x08,
        np.int8: 0x09,
        np.int16: 0x0B,
        np.int32: 0x0C,
        np.float32: 0x0D,
        np.float64: 0x0E,
    }
    code = codes[array.dtype.type]
    header = bytes([0, 0, code, array.ndim]) + struct.pack(f">{array.ndim}I", *array.shape)
    data = header + array.astype(array.dtype.newbyteorder(">")).tobytes()
    with (gzip.open if gz else open)(path, "wb") as f:
        f.write(data)


@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.int16, np.int32, np.float32, np.float64])
def test_read_idx_round_trip(tmp_path, dtype):
    a = (np.arange(24) * 3 - 5).astype(dtype).reshape(2, 3, 4)
    write_idx(tmp_path / "a", a)
    out = read_idx(tmp_path / "a")
    assert out.dtype == np.dtype(dtype) and out.dtype.isnative
    np.testing.assert_array_equal(out, a)


def test_read_idx_rejects_bad_files(tmp_path):
    (tmp_path / "bad").write_bytes(b"\x01\x02\x03\x04")
    with pytest.raises(ValueError, match="not an IDX file"):
        read_idx(tmp_path / "bad")
    write_idx(tmp_path / "short", np.zeros((2, 2), np.uint8))
    (tmp_path / "short").write_bytes((tmp_path / "short").read_bytes()[:-1])
    with pytest.raises(ValueError, match="needs"):
        read_idx(tmp_path / "short")


def make_mnist(root, folder, gz, n=5):
    d = root / folder / "raw"
    d.mkdir(parents=True)
    sfx = ".gz" if gz else ""
    imgs = np.arange(n * 28 * 28, dtype=np.uint64).reshape(n, 28, 28).astype(np.uint8)
    write_idx(d / f"train-images-idx3-ubyte{sfx}", imgs, gz)
    write_idx(d / f"train-labels-idx1-ubyte{sfx}", np.arange(n, dtype=np.uint8), gz)
    write_idx(d / f"t10k-images-idx3-ubyte{sfx}", imgs[:2], gz)
    write_idx(d / f"t10k-labels-idx1-ubyte{sfx}", np.array([7, 8], np.uint8), gz)
    return imgs


@pytest.mark.parametrize("gz", [False, True])
@pytest.mark.parametrize("cls", [MNIST, FashionMNIST])
def test_mnist_readers(tmp_path, gz, cls):
    imgs = make_mnist(tmp_path, cls.__name__, gz)
    ds = cls(tmp_path)
    assert len(ds) == 5
    img, label = ds[3]
    assert isinstance(img, np.ndarray) and img.dtype == np.uint8 and label == 3
    np.testing.assert_array_equal(img, imgs[3])
    np.testing.assert_array_equal(np.asarray(ds.data), imgs)
    test = cls(tmp_path, train=False, transform=T.ToTensor(), target_transform=lambda y: y + 1)
    x, y = test[1]
    assert tuple(x.shape) == (1, 28, 28) and y == 9
    np.testing.assert_allclose(np.asarray(x)[0], imgs[1] / 255, rtol=1e-6)
    assert len(cls.classes) == 10


def test_mnist_missing_files_say_what_and_where(tmp_path):
    with pytest.raises(FileNotFoundError) as info:
        MNIST(tmp_path, download=True)
    text = str(info.value)
    assert "train-images-idx3-ubyte" in text and str(tmp_path / "MNIST" / "raw") in text
    assert "does not download" in text


def cifar_images(n, seed):
    return np.random.default_rng(seed).integers(0, 256, (n, 3072), dtype=np.uint8)


def make_cifar10(root, binary):
    batches = {}
    if binary:
        d = root / "cifar-10-batches-bin"
        d.mkdir()
        for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
            imgs, labels = (
                cifar_images(3, len(batches)),
                np.arange(3, dtype=np.uint8) + len(batches),
            )
            (d / f"{name}.bin").write_bytes(np.hstack([labels[:, None], imgs]).tobytes())
            batches[name] = (imgs, labels)
        (d / "batches.meta.txt").write_text("\n".join(f"class{i}" for i in range(10)) + "\n\n")
    else:
        d = root / "cifar-10-batches-py"
        d.mkdir()
        for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
            imgs, labels = (
                cifar_images(3, len(batches)),
                list(range(len(batches), len(batches) + 3)),
            )
            with open(d / name, "wb") as f:
                pickle.dump({b"batch_label": b"x", b"data": imgs, b"labels": labels}, f, protocol=2)
            batches[name] = (imgs, np.array(labels))
        with open(d / "batches.meta", "wb") as f:
            pickle.dump({"label_names": [f"class{i}" for i in range(10)]}, f, protocol=2)
    return batches


@pytest.mark.parametrize("binary", [False, True])
def test_cifar10_readers(tmp_path, binary):
    batches = make_cifar10(tmp_path, binary)
    ds = CIFAR10(tmp_path)
    assert len(ds) == 15 and ds.data.shape == (15, 32, 32, 3) and ds.classes[3] == "class3"
    imgs, labels = batches["data_batch_2"]
    img, label = ds[4]
    np.testing.assert_array_equal(img, imgs[1].reshape(3, 32, 32).transpose(1, 2, 0))
    assert label == int(labels[1]) and isinstance(ds.targets, list)
    test = CIFAR10(tmp_path, train=False)
    assert len(test) == 3 and test.targets == batches["test_batch"][1].tolist()


@pytest.mark.parametrize("binary", [False, True])
def test_cifar100_readers(tmp_path, binary):
    imgs = cifar_images(4, 0)
    fine, coarse = np.array([5, 99, 0, 42], np.uint8), np.array([1, 19, 0, 7], np.uint8)
    if binary:
        d = tmp_path / "cifar-100-binary"
        d.mkdir()
        for name in ("train", "test"):
            (d / f"{name}.bin").write_bytes(
                np.hstack([coarse[:, None], fine[:, None], imgs]).tobytes()
            )
        (d / "fine_label_names.txt").write_text("\n".join(f"f{i}" for i in range(100)))
        (d / "coarse_label_names.txt").write_text("\n".join(f"c{i}" for i in range(20)))
    else:
        d = tmp_path / "cifar-100-python"
        d.mkdir()
        for name in ("train", "test"):
            with open(d / name, "wb") as f:
                pickle.dump(
                    {"data": imgs, "fine_labels": fine.tolist(), "coarse_labels": coarse.tolist()},
                    f,
                )
        with open(d / "meta", "wb") as f:
            pickle.dump({"fine_label_names": [f"f{i}" for i in range(100)]}, f)
    ds = CIFAR100(tmp_path)
    assert (
        ds.targets == fine.tolist()
        and ds.coarse_targets == coarse.tolist()
        and ds.classes[99] == "f99"
    )
    np.testing.assert_array_equal(ds[2][0], imgs[2].reshape(3, 32, 32).transpose(1, 2, 0))


class Evil:
    def __reduce__(self):
        return (os.system, ("echo pwned",))


def test_cifar_pickles_refuse_anything_but_plain_data(tmp_path):
    make_cifar10(tmp_path, binary=False)
    with open(tmp_path / "cifar-10-batches-py" / "data_batch_3", "wb") as f:
        pickle.dump({"data": cifar_images(1, 0), "labels": [Evil()]}, f)
    with pytest.raises(pickle.UnpicklingError, match="refusing to load posix.system"):
        CIFAR10(tmp_path)
    with open(tmp_path / "cifar-10-batches-py" / "data_batch_3", "wb") as f:
        pickle.dump({"data": np.array([object()]), "labels": []}, f)
    with pytest.raises(pickle.UnpicklingError):
        CIFAR10(tmp_path)


def test_cifar_missing_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="data_batch_1.*cifar-10-batches-py"):
        CIFAR10(tmp_path)


def test_digits():
    pytest.importorskip("sklearn")
    ds = Digits()
    assert len(ds) == 1797
    img, label = ds[0]
    a = np.asarray(img)
    assert a.shape == (1, 8, 8) and a.dtype == np.float32 and a.min() >= 0 and a.max() <= 1
    assert label == 0
    x, y = next(iter(DataLoader(ds, batch_size=16)))
    assert tuple(x.shape) == (16, 1, 8, 8)


def test_digits_without_sklearn_names_the_package(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_sklearn(name, *args, **kwargs):
        if name.startswith("sklearn"):
            raise ImportError("No module named 'sklearn'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_sklearn)
    with pytest.raises(ImportError, match="pip install scikit-learn"):
        Digits()
