"""The short-time Fourier transform and its inverse (torch.stft, torch.istft),
as composites: frames are views (``unfold``) of the padded signal, windowed and
transformed by ember_core.fft; istft overlap-adds the inverse transforms with
``index_add`` and divides by the summed squared window.  Both are differentiable
through the ops they are made of."""

from ember_core import fft
from ember_core._base.dispatch import defop
from ember_core._ops.nn.resample import constant_pad_nd, pad
from ember_core._ops.pointwise.complex import view_as_real
from ember_core._tensor import dtype as D
from ember_core._tensor.creation import arange, ones, zeros
from ember_core._tensor.tensor import Tensor


def _window(op, window, win_length, n_fft, dtype, device):
    """The window (ones by default), zero-padded on both sides to n_fft."""

    if window is None:
        window = ones((win_length,), dtype=dtype, device=device)
    elif not isinstance(window, Tensor) or window.dim() != 1 or window.shape[0] != win_length:
        raise RuntimeError(
            f"{op}: expected a 1D window tensor of size equal to win_length={win_length}, but "
            f"got window with size {tuple(getattr(window, 'shape', ()))}"
        )
    if win_length < n_fft:
        left = (n_fft - win_length) // 2
        window = constant_pad_nd(window, [left, n_fft - win_length - left], 0)
    return window


def _lengths(op, n_fft, hop_length, win_length, limit=None):
    hop = n_fft // 4 if hop_length is None else int(hop_length)
    win = n_fft if win_length is None else int(win_length)
    if n_fft <= 0 or (limit is not None and n_fft > limit):
        raise RuntimeError(
            f"{op}: expected 0 < n_fft <= {limit}, but got n_fft={n_fft}"
            if limit is not None
            else f"{op}: expected 0 < n_fft, but got n_fft={n_fft}"
        )
    if hop <= 0:
        raise RuntimeError(f"{op}: expected hop_length > 0, but got hop_length={hop}")
    if not 0 < win <= n_fft:
        raise RuntimeError(f"{op}: expected 0 < win_length <= n_fft, but got win_length={win}")
    return hop, win


@defop(composite=True, autocast="fp32")
def stft(
    input,
    n_fft,
    hop_length=None,
    win_length=None,
    window=None,
    center=True,
    pad_mode="reflect",
    normalized=False,
    onesided=None,
    return_complex=None,
):
    """The short-time Fourier transform (torch.stft): (freq, frames) per signal.

    >>> import ember_core as ec
    >>> ec.stft(ec.ones(16), 8, return_complex=True).shape
    (5, 9)
    """

    x = input
    if not isinstance(x, Tensor) or x.dim() not in (1, 2):
        raise RuntimeError(
            f"stft: expected a 1D or 2D tensor, but got {getattr(x, 'dim', lambda: '?')()}D"
        )
    complex_input = x.dtype.is_complex or (window is not None and window.dtype.is_complex)
    if return_complex is None:
        if not complex_input:
            raise RuntimeError(
                "stft requires the return_complex parameter be given for real inputs, and will "
                "further require that return_complex=True in a future PyTorch release."
            )
        return_complex = True
    batched = x.dim() == 2
    if not batched:
        x = x.unsqueeze(0)
    if center:
        half = n_fft // 2
        x = pad(x.unsqueeze(1), (half, half), mode=pad_mode).squeeze(1)
    hop, win = _lengths("stft", n_fft, hop_length, win_length, x.shape[-1])
    rd = x.dtype.to_real() if x.dtype.is_complex else x.dtype
    if rd.category < 2:
        rd = D.get_default_dtype()
        x = x.to(rd)
    w = _window("stft", window, win, n_fft, rd, x.device)
    frames = x.unfold(-1, n_fft, hop) * w  # (batch, frames, n_fft)
    side = not complex_input if onesided is None else onesided
    norm = "ortho" if normalized else "backward"
    if side:
        if complex_input:
            raise RuntimeError("Cannot have onesided output if window or input is complex")
        spec = fft.rfft(frames, n=n_fft, dim=-1, norm=norm)
    else:
        spec = fft.fft(frames, n=n_fft, dim=-1, norm=norm)
    spec = spec.transpose(1, 2)  # (batch, freq, frames)
    if not batched:
        spec = spec.squeeze(0)
    if not return_complex:
        return view_as_real(spec.contiguous())
    return spec


@defop(composite=True)
def istft(
    input,
    n_fft,
    hop_length=None,
    win_length=None,
    window=None,
    center=True,
    normalized=False,
    onesided=None,
    length=None,
    return_complex=False,
):
    """The inverse of stft (torch.istft): overlap-add of the inverse transforms of
    the frames, divided by the summed squared window."""

    z = input
    if not isinstance(z, Tensor) or not z.dtype.is_complex:
        raise RuntimeError("istft requires a complex-valued input tensor")
    if z.dim() not in (2, 3):
        raise RuntimeError(f"istft: expected a tensor with 2 or 3 dimensions, got {z.dim()}")
    batched = z.dim() == 3
    if not batched:
        z = z.unsqueeze(0)
    hop, win = _lengths("istft", n_fft, hop_length, win_length)
    n_freq, n_frames = z.shape[-2], z.shape[-1]
    side = n_freq != n_fft if onesided is None else onesided
    if side and n_freq != n_fft // 2 + 1:
        raise RuntimeError(
            f"istft: expected the frequency dimension (3rd to the last) of the input tensor to "
            f"match n_fft / 2 + 1 when onesided=True, but got {n_freq}"
        )
    rd = z.dtype.to_real()
    w = _window("istft", window, win, n_fft, rd, z.device)
    norm = "ortho" if normalized else "backward"
    spec = z.transpose(1, 2)  # (batch, frames, freq)
    if side:
        if return_complex:
            raise RuntimeError("istft: cannot have onesided output if return_complex=True")
        frames = fft.irfft(spec, n=n_fft, dim=-1, norm=norm)
    else:
        frames = fft.ifft(spec, n=n_fft, dim=-1, norm=norm)
        if not return_complex:
            frames = frames.real
    frames = frames * w
    total = n_fft + hop * (n_frames - 1)
    pos = (arange(n_frames) * hop).unsqueeze(1) + arange(n_fft)  # (frames, n_fft)
    pos = pos.reshape(-1)
    batch = frames.shape[0]
    y = zeros((batch, total), dtype=frames.dtype, device=frames.device)
    y = y.index_add(1, pos, frames.reshape(batch, -1))
    envelope = zeros((total,), dtype=rd, device=frames.device)
    envelope = envelope.index_add(0, pos, (w * w).expand(n_frames, n_fft).reshape(-1))
    start = n_fft // 2 if center else 0
    end = total - (n_fft // 2 if center else 0) if length is None else start + int(length)
    end = min(end, total)
    y, envelope = y[:, start:end], envelope[start:end]
    if bool((envelope.abs() < 1e-11).any()):
        raise RuntimeError(
            "istft: window overlap add min: the sum of squared windows is (near) zero somewhere "
            "(the NOLA condition fails): choose another window or hop_length"
        )
    y = y / envelope
    if length is not None and y.shape[-1] < length:
        y = constant_pad_nd(y, [0, int(length) - y.shape[-1]], 0)
    return y if batched else y.squeeze(0)
