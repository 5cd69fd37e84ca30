"""ember_core.fft against numpy.fft: every transform with n/s, dim and norm,
padding and trimming, strided inputs, dtypes, and the helpers."""

import numpy as np
import pytest

import ember_core as ec

NORMS = [None, "backward", "ortho", "forward"]


def _real(shape, dtype=np.float64, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def _cplx(shape, dtype=np.complex128, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)


def _close(t, ref, tol=1e-10):
    assert isinstance(t, ec.Tensor)
    np.testing.assert_allclose(t.numpy(), ref, rtol=tol, atol=tol)


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("n", [None, 5, 8, 13])
@pytest.mark.parametrize("dim", [-1, 0, 1])
def test_one_dim_transforms(norm, n, dim):
    x = _cplx((6, 8, 3), seed=1)
    r = _real((6, 8, 3), seed=2)
    t, tr = ec.from_numpy(x), ec.from_numpy(r)
    _close(ec.fft.fft(t, n, dim, norm), np.fft.fft(x, n, dim, norm))
    _close(ec.fft.ifft(t, n, dim, norm), np.fft.ifft(x, n, dim, norm))
    _close(ec.fft.rfft(tr, n, dim, norm), np.fft.rfft(r, n, dim, norm))
    _close(ec.fft.irfft(t, n, dim, norm), np.fft.irfft(x, n, dim, norm))
    _close(ec.fft.hfft(t, n, dim, norm), np.fft.hfft(x, n, dim, norm))
    _close(ec.fft.ihfft(tr, n, dim, norm), np.fft.ihfft(r, n, dim, norm))
    # a real input to fft is promoted to complex
    _close(ec.fft.fft(tr, n, dim, norm), np.fft.fft(r, n, dim, norm))


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize(
    "s, dim",
    [(None, None), ((4, 6), None), (None, (0, 2)), ((5, -1), (2, 0)), ((3,), (1,)), (None, 1)],
)
def test_n_dim_transforms(norm, s, dim):
    x = _cplx((4, 6, 8), seed=3)
    r = _real((4, 6, 8), seed=4)
    t, tr = ec.from_numpy(x), ec.from_numpy(r)
    axes = dim if dim is None or isinstance(dim, tuple) else (dim,)
    axes_of_s = None if s is None else tuple(axes or range(3 - len(s), 3))
    ns = None if s is None else tuple(x.shape[a] if v == -1 else v for v, a in zip(s, axes_of_s))
    # irfftn: -1 for the last dim is its default output length, 2 * (m - 1)
    ns_c2r = ns
    if s is not None and s[-1] == -1:
        ns_c2r = ns[:-1] + (2 * (x.shape[axes_of_s[-1]] - 1),)
    if axes is None and s is not None:
        axes = axes_of_s
    _close(ec.fft.fftn(t, s, dim, norm), np.fft.fftn(x, ns, axes, norm))
    _close(ec.fft.ifftn(t, s, dim, norm), np.fft.ifftn(x, ns, axes, norm))
    _close(ec.fft.rfftn(tr, s, dim, norm), np.fft.rfftn(r, ns, axes, norm))
    _close(ec.fft.irfftn(t, s, dim, norm), np.fft.irfftn(x, ns_c2r, axes, norm))


@pytest.mark.parametrize("norm", NORMS)
def test_two_dim_transforms(norm):
    x = _cplx((3, 5, 6), seed=5)
    r = _real((3, 5, 6), seed=6)
    t, tr = ec.from_numpy(x), ec.from_numpy(r)
    _close(ec.fft.fft2(t, norm=norm), np.fft.fft2(x, norm=norm))
    _close(ec.fft.ifft2(t, s=(4, 9), norm=norm), np.fft.ifft2(x, s=(4, 9), norm=norm))
    _close(ec.fft.rfft2(tr, dim=(0, 1), norm=norm), np.fft.rfft2(r, axes=(0, 1), norm=norm))
    _close(ec.fft.irfft2(t, s=(5, 7), norm=norm), np.fft.irfft2(x, s=(5, 7), norm=norm))


def test_round_trips_and_strided_inputs():
    r = _real((16, 10), seed=7)
    t = ec.from_numpy(r)
    _close(ec.fft.irfft(ec.fft.rfft(t), n=10), r)
    _close(ec.fft.ifft(ec.fft.fft(t)).real, r)
    # transposed, sliced and reversed inputs are read where they lie
    _close(ec.fft.fft(t.T), np.fft.fft(r.T))
    _close(ec.fft.rfft(t[::2, 1:]), np.fft.rfft(r[::2, 1:]))
    _close(ec.fft.fft(t.flip(1)), np.fft.fft(r[:, ::-1]))
    _close(ec.fft.fft(ec.ones(3, 1).expand(3, 4)), np.fft.fft(np.ones((3, 4))))


def test_dtypes():
    x32 = ec.randn(8)
    assert ec.fft.fft(x32).dtype is ec.complex64
    assert ec.fft.rfft(x32).dtype is ec.complex64
    assert ec.fft.irfft(ec.fft.rfft(x32)).dtype is ec.float32
    assert ec.fft.fft(x32.double()).dtype is ec.complex128
    assert ec.fft.fft(ec.arange(4)).dtype is ec.complex64
    _close(ec.fft.fft(ec.arange(4)), np.fft.fft(np.arange(4)), 1e-5)
    with pytest.raises(RuntimeError, match="Unsupported dtype Half"):
        ec.fft.fft(ec.ones(4, dtype=ec.float16))
    with pytest.raises(RuntimeError, match="real input"):
        ec.fft.rfft(ec.ones(4, dtype=ec.complex64))
    with pytest.raises(RuntimeError, match="Invalid number of data points"):
        ec.fft.fft(ec.ones(4), n=0)
    with pytest.raises(ValueError, match="normalization"):
        ec.fft.fft(ec.ones(4), norm="bogus")
    out = ec.empty(4, dtype=ec.complex64)
    assert ec.fft.fft(ec.ones(4), out=out) is out and out.tolist()[0] == 4


def test_freqs_and_shifts():
    _close(ec.fft.fftfreq(7, 0.5, dtype=ec.float64), np.fft.fftfreq(7, 0.5))
    _close(ec.fft.fftfreq(8), np.fft.fftfreq(8).astype(np.float32), 1e-7)
    _close(ec.fft.rfftfreq(9, 2.0, dtype=ec.float64), np.fft.rfftfreq(9, 2.0))
    a = np.arange(30).reshape(5, 6)
    t = ec.from_numpy(a)
    _close(ec.fft.fftshift(t), np.fft.fftshift(a))
    _close(ec.fft.ifftshift(t), np.fft.ifftshift(a))
    _close(ec.fft.fftshift(t, dim=1), np.fft.fftshift(a, axes=1))
    _close(ec.fft.ifftshift(t, dim=(0,)), np.fft.ifftshift(a, axes=(0,)))


def test_large_transforms_use_threads():
    x = _cplx(1 << 14, np.complex64, seed=9)
    ec.set_num_threads(2)
    try:
        _close(ec.fft.fft(ec.from_numpy(x)), np.fft.fft(x).astype(np.complex64), 1e-2)
    finally:
        ec.set_num_threads(1)


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("s, dim", [(None, None), ((3, 7), None), (None, (0, 2))])
def test_hermitian_n_dim(norm, s, dim):
    x = _cplx((4, 5, 6), seed=11)
    r = _real((4, 5, 6), seed=12)
    axes = dim if dim is not None else (None if s is None else (1, 2))
    # hfftn is irfftn of the conjugate with the forward transform's scaling;
    # ihfftn is the conjugate of rfftn with the inverse's
    swap = {None: "forward", "backward": "forward", "forward": "backward", "ortho": "ortho"}
    _close(
        ec.fft.hfftn(ec.from_numpy(x), s, dim, norm),
        np.fft.irfftn(np.conj(x), s, axes, swap[norm]),
    )
    _close(
        ec.fft.ihfftn(ec.from_numpy(r), s, dim, norm),
        np.conj(np.fft.rfftn(r, s, axes, swap[norm])),
    )
    if dim is None and s is None:
        _close(
            ec.fft.hfft2(ec.from_numpy(x), norm=norm), np.fft.irfft2(np.conj(x), norm=swap[norm])
        )
        _close(
            ec.fft.ihfft2(ec.from_numpy(r), norm=norm), np.conj(np.fft.rfft2(r, norm=swap[norm]))
        )
