"""stft/istft: frames and spectra against a NumPy reference, round trips, and
(parity) against torch.stft/istft."""

import numpy as np
import pytest

import ember_core as ec


def _np_stft(x, n_fft, hop, window, center):
    if center:
        x = np.pad(x, [(0, 0), (n_fft // 2, n_fft // 2)], mode="reflect")
    n = 1 + (x.shape[-1] - n_fft) // hop
    frames = np.stack([x[:, i * hop : i * hop + n_fft] for i in range(n)], axis=1)
    return np.fft.rfft(frames * window, axis=-1).transpose(0, 2, 1)


@pytest.mark.parametrize("n_fft, hop, win_length", [(16, 4, 16), (16, 5, 12), (15, 3, 15)])
@pytest.mark.parametrize("center", [True, False])
def test_stft_against_numpy_and_round_trip(n_fft, hop, win_length, center):
    x = np.random.default_rng(0).standard_normal((2, 120))
    w = ec.hann_window(win_length, dtype=ec.float64)
    left = (n_fft - win_length) // 2
    wfull = np.pad(w.numpy(), (left, n_fft - win_length - left))
    spec = ec.stft(ec.tensor(x), n_fft, hop, win_length, w, center=center, return_complex=True)
    np.testing.assert_allclose(spec.numpy(), _np_stft(x, n_fft, hop, wfull, center), atol=1e-12)
    one = ec.stft(ec.tensor(x[0]), n_fft, hop, win_length, w, center=center, return_complex=True)
    np.testing.assert_allclose(one.numpy(), spec.numpy()[0], atol=1e-12)
    if center:  # with the padding every sample is covered by a window: exact inverse
        back = ec.istft(spec, n_fft, hop, win_length, w, center=True, length=120)
        np.testing.assert_allclose(back.numpy(), x, atol=1e-12)


def test_stft_options_and_errors():
    x = ec.randn(64, dtype=ec.float64)
    r = ec.stft(x, 16, return_complex=False)
    assert r.shape == (9, 17, 2) and r.dtype is ec.float64
    full = ec.stft(x, 16, onesided=False, return_complex=True)
    assert full.shape == (16, 17)
    norm = ec.stft(x, 16, normalized=True, return_complex=True)
    np.testing.assert_allclose(
        norm.numpy(), ec.stft(x, 16, return_complex=True).numpy() / 4, atol=1e-12
    )
    with pytest.raises(RuntimeError, match="return_complex"):
        ec.stft(x, 16)
    with pytest.raises(RuntimeError, match="win_length"):
        ec.stft(x, 16, window=ec.ones(5), return_complex=True)
    with pytest.raises(RuntimeError, match="complex"):
        ec.istft(x, 16)


def test_stft_is_differentiable():
    pytest.importorskip("ember_autograd")
    import ember_autograd as ag

    x = ec.randn(40, dtype=ec.float64, requires_grad=True)
    w = ec.hann_window(8, dtype=ec.float64)
    assert ag.gradcheck(lambda t: ec.stft(t, 8, 3, window=w, return_complex=True).abs(), (x,))


@pytest.mark.parity
@pytest.mark.parametrize(
    "kw",
    [
        dict(n_fft=16),
        dict(n_fft=16, hop_length=5, win_length=12),
        dict(n_fft=15, center=False, normalized=True),
        dict(n_fft=16, onesided=False),
        dict(n_fft=10, pad_mode="constant"),
    ],
)
def test_stft_istft_match_torch(kw):
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(1).standard_normal((3, 90))
    wl = kw.get("win_length", kw["n_fft"])
    e = ec.stft(
        ec.tensor(x), window=ec.hann_window(wl, dtype=ec.float64), return_complex=True, **kw
    )
    t = torch.stft(
        torch.tensor(x),
        window=torch.hann_window(wl, dtype=torch.float64),
        return_complex=True,
        **kw,
    )
    np.testing.assert_allclose(e.numpy(), t.numpy(), atol=1e-12)
    ikw = {k: v for k, v in kw.items() if k != "pad_mode"}
    if ikw.get("center", True):
        ie = ec.istft(e, window=ec.hann_window(wl, dtype=ec.float64), length=90, **ikw)
        it = torch.istft(t, window=torch.hann_window(wl, dtype=torch.float64), length=90, **ikw)
        np.testing.assert_allclose(ie.numpy(), it.numpy(), atol=1e-12)
