# Complex tensors and torch.fft as signal-processing code uses them: a spectrum of a
# noisy sine, filtering in the frequency domain, complex arithmetic and parts, a
# complex parameter fitted by gradient descent, stft/istft round trip.
import math

import numpy as np
import torch

ERRORS = []


def chk(name, fn):
    """One independent check: prints CHECK name values, or CHECK name ERROR Type and carries on."""
    try:
        print("CHECK", name, *fn())
    except Exception as e:  # noqa: BLE001 - the audit wants every failure, not the first
        ERRORS.append(name)
        print(
            "CHECK", name, "ERROR", type(e).__name__, str(e).splitlines()[0][:100] if str(e) else ""
        )


n, fs = 256, 64.0
t = torch.arange(n, dtype=torch.float64) / fs
rng = np.random.default_rng(0)
noise = torch.from_numpy(rng.standard_normal(n)) * 0.1
signal = torch.sin(2 * math.pi * 5.0 * t) + 0.5 * torch.sin(2 * math.pi * 12.0 * t) + noise

spec = torch.fft.rfft(signal)
freqs = torch.fft.rfftfreq(n, d=1 / fs)
chk("rfft_shape", lambda: (tuple(spec.shape), spec.dtype, freqs[:3].tolist()))
peaks = spec.abs().topk(2).indices.sort().values
chk("peaks", lambda: (freqs[peaks].tolist(),))
chk("power", lambda: (round(float((spec.abs() ** 2).sum() / n), 4),))

# a low-pass filter: zero the bins above 8 Hz and transform back
filtered = torch.fft.irfft(spec * (freqs < 8.0), n=n)
chk("lowpass", lambda: (round(float((filtered - torch.sin(2 * math.pi * 5 * t)).abs().max()), 3),))

z = torch.tensor([1 + 2j, -3 + 0.5j, 2j], dtype=torch.complex64)
chk("parts", lambda: (z.real.tolist(), z.imag.tolist(), z.abs().tolist(), z.angle().tolist()))
chk("arith", lambda: ((z * z.conj()).real.tolist(), (z / (1 - 1j)).tolist(), z.sum().item()))
chk("promote", lambda: ((z * torch.ones(3, dtype=torch.float64)).dtype, (torch.ones(2) * 1j).dtype))
chk("view_as_real", lambda: (torch.view_as_real(z).tolist(),))
chk("polar", lambda: (torch.polar(torch.tensor([2.0]), torch.tensor([math.pi / 2])).tolist(),))
chk("complex_repr", lambda: (repr(z),))
chk("matmul", lambda: ((z.reshape(3, 1) @ z.reshape(1, 3).conj()).trace().item(),))
chk(
    "fft2_shift",
    lambda: (torch.fft.fftshift(torch.fft.fft2(torch.eye(4))).real.tolist(),),
)

# fit a complex gain w so that w * x matches y (real loss, complex parameter)
x = torch.tensor(rng.standard_normal(8) + 1j * rng.standard_normal(8), dtype=torch.complex128)
y = (0.5 - 1.5j) * x
w = torch.zeros((), dtype=torch.complex128, requires_grad=True)
opt = torch.optim.SGD([w], lr=0.05)
for _ in range(200):
    opt.zero_grad()
    loss = ((w * x - y).abs() ** 2).mean()
    loss.backward()
    opt.step()
chk("fit", lambda: (round(w.real.item(), 4), round(w.imag.item(), 4)))

win = torch.hann_window(32, dtype=torch.float64)
S = torch.stft(signal, 32, hop_length=8, window=win, return_complex=True)
back = torch.istft(S, 32, hop_length=8, window=win, length=n)
chk("stft", lambda: (tuple(S.shape), round(float((back - signal).abs().max()), 8)))

print("OK" if not ERRORS else f"ERRORS {len(ERRORS)}: {ERRORS}")
