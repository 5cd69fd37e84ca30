"""The array API standard's ``fft`` extension (2024.12) over ember_core.fft.

The standard takes complex input for the complex transforms and real input for
rfft/rfftn/ihfft (TypeError otherwise, as its reference); ``axis``/``axes``
name what ember_core.fft (torch.fft) calls ``dim``.
"""

import ember_core as ec
from ember_core.array_api._helpers import check_array, device_arg, dtype_arg

__all__ = [
    "fft",
    "ifft",
    "fftn",
    "ifftn",
    "rfft",
    "irfft",
    "rfftn",
    "irfftn",
    "hfft",
    "ihfft",
    "fftfreq",
    "rfftfreq",
    "fftshift",
    "ifftshift",
]


def _kind(op, x, complex_input):
    check_array(x)
    if complex_input and not x.dtype.is_complex:
        raise TypeError(f"fft.{op}: x must have a complex floating-point dtype, got {x.dtype}")
    if not complex_input and x.dtype.category != 2:
        raise TypeError(f"fft.{op}: x must have a real floating-point dtype, got {x.dtype}")
    return x


def _one(name, complex_input):
    def transform(x, /, *, n=None, axis=-1, norm="backward"):
        return getattr(ec.fft, name)(_kind(name, x, complex_input), n=n, dim=axis, norm=norm)

    transform.__name__ = transform.__qualname__ = name
    transform.__doc__ = f"The array API's fft.{name}: ember_core.fft.{name}."
    return transform


def _many(name, complex_input):
    def transform(x, /, *, s=None, axes=None, norm="backward"):
        x = _kind(name, x, complex_input)
        return getattr(ec.fft, name)(x, s=s, dim=axes, norm=norm)

    transform.__name__ = transform.__qualname__ = name
    transform.__doc__ = f"The array API's fft.{name}: ember_core.fft.{name}."
    return transform


fft = _one("fft", True)
ifft = _one("ifft", True)
irfft = _one("irfft", True)
hfft = _one("hfft", True)
rfft = _one("rfft", False)
ihfft = _one("ihfft", False)
fftn = _many("fftn", True)
ifftn = _many("ifftn", True)
irfftn = _many("irfftn", True)
rfftn = _many("rfftn", False)


def fftfreq(n, /, *, d=1.0, dtype=None, device=None):
    """The sample frequencies of an n-point FFT."""
    device_arg(device)
    return ec.fft.fftfreq(n, d, dtype=dtype_arg(dtype))


def rfftfreq(n, /, *, d=1.0, dtype=None, device=None):
    """The non-negative sample frequencies of an n-point rfft."""
    device_arg(device)
    return ec.fft.rfftfreq(n, d, dtype=dtype_arg(dtype))


def fftshift(x, /, *, axes=None):
    return ec.fft.fftshift(check_array(x), dim=axes)


def ifftshift(x, /, *, axes=None):
    return ec.fft.ifftshift(check_array(x), dim=axes)
