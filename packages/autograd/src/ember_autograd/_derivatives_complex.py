"""Derivative formulas of the complex API (views of the parts, conj, complex,
angle) and of the FFT primitives (Note [FFT primitives] in ember_core.fft), in
PyTorch's convention (Note [Complex gradients] in _formula.py): the gradient
reaching a complex input is dL/d(re) + i dL/d(im)."""

import ember_core as ec
from ember_autograd._formula import derivative


@derivative("view_as_real")
def _(grad):
    return ec.view_as_complex(grad.contiguous())


@derivative("view_as_complex")
def _(grad):
    return ec.view_as_real(grad.contiguous())


@derivative("real")
def _(grad):
    return grad  # the node makes it complex (imaginary part 0) for a complex input


@derivative("imag")
def _(grad):
    return ec.complex(ec.zeros_like(grad), grad)


@derivative("conj")
def _(grad):
    return grad.conj()


@derivative("complex", inputs=("real", "imag"))
def _(grad, needs):
    return (ec.real(grad) if needs[0] else None, ec.imag(grad) if needs[-1] else None)


@derivative("_angle")
def _(grad, input):
    # d angle = (-b da + a db) / |z|^2, so the gradient is grad * i z / |z|^2
    a2 = input.abs().square()
    g = grad * input * 1j / ec.where(a2 == 0, 1.0, a2)
    return ec.where(input == 0, 0.0, g)


@derivative("_fft_c2c")
def _(grad, dim, normalization, forward):
    return ec._fft_c2c(grad, dim, normalization, not forward)


@derivative("_fft_r2c")
def _(grad, input_shape, dim, normalization, onesided):
    if onesided:
        # the missing (Hermitian) half contributes nothing: zero-pad to full length
        last = dim[-1] % len(input_shape)
        missing = input_shape[last] - grad.shape[last]
        if missing > 0:
            pad = [0, 0] * (len(input_shape) - 1 - last) + [0, missing]
            grad = ec.constant_pad_nd(grad, pad, 0)
    return ec.real(ec._fft_c2c(grad, dim, normalization, False))


@derivative("_fft_c2r")
def _(grad, input_shape, dim, normalization):
    g = ec._fft_r2c(grad, dim, normalization, True)
    last = dim[-1] % len(input_shape)
    # the bins that stand for two (conjugate) bins of the full spectrum count twice
    doubled = grad.shape[last] - g.shape[last]
    if doubled > 0:
        w = ec.ones(g.shape[last], dtype=grad.dtype)
        w[1 : 1 + doubled] = 2.0
        g = g * w.reshape([-1] + [1] * (len(input_shape) - 1 - last))
    return g
