"""Window functions for spectral analysis: hann, hamming, blackman, bartlett and
kaiser windows (symmetric, or periodic: the symmetric window of N + 1 points
without its last), computed in float64 and returned in the requested dtype.
"""

import numpy as np

from ember_core._base.dispatch import defop
from ember_core._ops.pointwise.special import i0
from ember_core._tensor import dtype as D
from ember_core._tensor.creation import ones, tensor


def _window(name, window_length, periodic, dtype, device, requires_grad, fn):
    if window_length < 0:
        raise RuntimeError(
            f"{name} requires non-negative window_length, got window_length={window_length}"
        )
    dt = dtype or D.get_default_dtype()
    if not dt.is_floating_point:
        raise RuntimeError(f"{name} expects floating point dtypes, got: {dt}")
    if window_length <= 1:
        r = ones(window_length, dtype=dt, device=device)
    else:
        n_total = window_length + 1 if periodic else window_length
        n = np.arange(window_length, dtype=np.float64)
        r = tensor(fn(n, n_total - 1), dtype=dt, device=device)
    return r.requires_grad_(True) if requires_grad else r


@defop(method=False, composite=True, differentiable=False, tags=("creation",))
def hann_window(
    window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False
):
    """0.5 - 0.5 cos(2 pi n / (N - 1)); periodic windows use N + 1 points and drop the last."""
    return _window(
        "hann_window",
        window_length,
        periodic,
        dtype,
        device,
        requires_grad,
        lambda n, m: 0.5 - 0.5 * np.cos(2 * np.pi * n / m),
    )


@defop(method=False, composite=True, differentiable=False, tags=("creation",))
def hamming_window(
    window_length,
    periodic=True,
    alpha=0.54,
    beta=0.46,
    *,
    dtype=None,
    layout=None,
    device=None,
    requires_grad=False,
):
    return _window(
        "hamming_window",
        window_length,
        periodic,
        dtype,
        device,
        requires_grad,
        lambda n, m: alpha - beta * np.cos(2 * np.pi * n / m),
    )


@defop(method=False, composite=True, differentiable=False, tags=("creation",))
def blackman_window(
    window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False
):
    return _window(
        "blackman_window",
        window_length,
        periodic,
        dtype,
        device,
        requires_grad,
        lambda n, m: 0.42 - 0.5 * np.cos(2 * np.pi * n / m) + 0.08 * np.cos(4 * np.pi * n / m),
    )


@defop(method=False, composite=True, differentiable=False, tags=("creation",))
def bartlett_window(
    window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False
):
    return _window(
        "bartlett_window",
        window_length,
        periodic,
        dtype,
        device,
        requires_grad,
        lambda n, m: 1 - np.abs(2 * n / m - 1),
    )


@defop(method=False, composite=True, differentiable=False, tags=("creation",))
def kaiser_window(
    window_length,
    periodic=True,
    beta=12.0,
    *,
    dtype=None,
    layout=None,
    device=None,
    requires_grad=False,
):
    """I0(beta sqrt(1 - ((n - m/2) / (m/2))^2)) / I0(beta)."""

    def kaiser(n, m):
        ratio = np.clip(1 - ((n - m / 2) / (m / 2)) ** 2, 0, None)
        vals = tensor(beta * np.sqrt(ratio), dtype=D.float64)
        return (i0(vals) / i0(tensor(float(beta), dtype=D.float64))).numpy()

    return _window("kaiser_window", window_length, periodic, dtype, device, requires_grad, kaiser)
