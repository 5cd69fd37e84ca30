import random

import numpy as np
import pytest

from ember_data import _rng
from ember_data.datasets import transforms as T

EC = _rng.ember_core()


def img(c=3, h=6, w=5, dtype=np.uint8):
    return (np.arange(c * h * w) % 251).astype(dtype).reshape(c, h, w)


def test_to_tensor_hwc_and_hw():
    hwc = np.random.default_rng(0).integers(0, 256, (4, 5, 3), dtype=np.uint8)
    out = np.asarray(T.ToTensor()(hwc))
    assert out.shape == (3, 4, 5) and out.dtype == np.float32
    np.testing.assert_allclose(out, hwc.transpose(2, 0, 1) / 255, rtol=1e-6)
    assert np.asarray(T.ToTensor()(np.zeros((4, 5), np.uint8))).shape == (1, 4, 5)
    f = np.asarray(T.ToTensor()(np.full((2, 2, 1), 3.0)))
    assert f.dtype == np.float64 and f.max() == 3.0  # non-uint8: not scaled
    with pytest.raises(TypeError, match="ndarray"):
        T.ToTensor()([1, 2])
    with pytest.raises(ValueError, match="2/3 dimensional"):
        T.ToTensor()(np.zeros(3))


def test_normalize():
    x = np.random.default_rng(0).random((3, 4, 4)).astype(np.float32)
    mean, std = (0.1, 0.2, 0.3), (0.5, 1.0, 2.0)
    out = np.asarray(T.Normalize(mean, std)(x))
    expected = (x - np.array(mean, np.float32)[:, None, None]) / np.array(std, np.float32)[
        :, None, None
    ]
    np.testing.assert_allclose(out, expected, rtol=1e-6)
    y = x.copy()
    T.Normalize(mean, std, inplace=True)(y)
    np.testing.assert_allclose(y, expected, rtol=1e-6)
    with pytest.raises(TypeError, match="float tensor"):
        T.Normalize(mean, std)(img())
    with pytest.raises(ValueError, match="std evaluated to zero"):
        T.Normalize(mean, (1, 0, 1))(x)


def test_random_crop_windows_come_from_the_padded_image():
    a = img()
    t = T.RandomCrop((4, 3), padding=2, fill=9)
    padded = np.pad(a, ((0, 0), (2, 2), (2, 2)), constant_values=9)
    windows = {
        padded[:, i : i + 4, j : j + 3].tobytes()
        for i in range(padded.shape[1] - 3)
        for j in range(padded.shape[2] - 2)
    }
    random.seed(0)
    seen = set()
    for _ in range(300):
        out = t(a)
        assert out.shape == (3, 4, 3) and out.dtype == np.uint8
        assert out.tobytes() in windows
        seen.add(out.tobytes())
    assert len(seen) > 20


@pytest.mark.parametrize("mode", ["edge", "reflect", "symmetric"])
def test_random_crop_padding_modes(mode):
    a = img(1, 5, 5)
    random.seed(1)
    out = T.RandomCrop(9, padding=2, padding_mode=mode)(a)  # the whole padded image
    np.testing.assert_array_equal(out, np.pad(a, ((0, 0), (2, 2), (2, 2)), mode=mode))


def test_random_crop_padding_forms_and_pad_if_needed():
    a = img(1, 2, 3)
    out = T.RandomCrop((4, 5), padding=(1, 1))(a)  # (l/r, t/b)
    np.testing.assert_array_equal(out[0, 1:3, 1:4], a[0])
    out = T.RandomCrop((3, 7), padding=(1, 0, 3, 1))(a)  # (l, t, r, b)
    np.testing.assert_array_equal(out[0, 0:2, 1:4], a[0])
    assert T.RandomCrop(6, pad_if_needed=True)(a).shape == (1, 6, 6)
    with pytest.raises(ValueError, match="larger than input image size"):
        T.RandomCrop(6)(a)


def test_random_horizontal_flip():
    a = img()
    np.testing.assert_array_equal(T.RandomHorizontalFlip(p=1.0)(a), a[..., ::-1])
    assert T.RandomHorizontalFlip(p=0.0)(a) is a
    random.seed(0)
    flips = sum(T.RandomHorizontalFlip()(a)[0, 0, 0] != a[0, 0, 0] for _ in range(2000))
    assert 900 < flips < 1100


def test_compose_and_tensors():
    t = T.Compose(
        [
            T.ToTensor(),
            T.RandomCrop(4, padding=1),
            T.RandomHorizontalFlip(),
            T.Normalize((0.5,), (0.5,)),
        ]
    )
    out = t(np.zeros((4, 4), np.uint8))
    assert tuple(out.shape) == (1, 4, 4)
    assert "RandomCrop" in repr(t)
    if EC is not None:
        assert isinstance(out, EC.Tensor)
        flipped = T.RandomHorizontalFlip(1.0)(EC.tensor([[[1.0, 2.0, 3.0]]]))
        assert isinstance(flipped, EC.Tensor) and flipped.tolist() == [[[3.0, 2.0, 1.0]]]
