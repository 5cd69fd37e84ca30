"""Backward formulas of torch.special's kernels (ember_core._ops.pointwise.special), registered
into the same table as _derivatives.py.  They are PyTorch's (derivatives.yaml),
written with ember ops so double backward works.  Where PyTorch has no formula
for an input (zeta's, igamma's first argument) asking for it raises as there."""

import math

import ember_core as ec
from ember_autograd._formula import derivative
from ember_core._ops.pointwise import special as S

_SQRT_2PI = math.sqrt(2 * math.pi)


def _not_implemented(what):
    return NotImplementedError(f"the derivative for '{what}' is not implemented.")


@derivative("i0")
def _(grad, input):
    return grad * S.special_i1(input)


@derivative("special_i0e")
def _(grad, input, result):
    return grad * (S.special_i1e(input) - input.sgn() * result)


@derivative("special_i1")
def _(grad, input, result):
    # I1'(x) = I0(x) - I1(x) / x, and 1/2 at 0
    d = S.i0(input) - result / input
    return grad * ec.where(input == 0, ec.full_like(input, 0.5), d)


@derivative("special_i1e")
def _(grad, input, result):
    d = S.special_i0e(input) - result * (input.sgn() + 1.0 / input)
    return grad * ec.where(input == 0, ec.full_like(input, 0.5), d)


@derivative("special_ndtri")
def _(grad, result):
    return grad * _SQRT_2PI * (result * result * 0.5).exp()


@derivative("special_log_ndtr")
def _(grad, input, result):
    return grad / _SQRT_2PI * (-(input * input * 0.5) - result).exp()


@derivative("special_erfcx")
def _(grad, input, result):
    return grad * (2.0 * input * result - 2.0 / math.sqrt(math.pi))


@derivative("special_entr")
def _(grad, input):
    return grad * -(1.0 + input.log())


@derivative("_special_trigamma")
def _(grad, input):
    return grad * S.polygamma(2, input)


@derivative("polygamma", inputs=("input",))
def _(grad, n, input):
    return grad * S.polygamma(n + 1, input)


@derivative("special_zeta", inputs=("input", "other"))
def _(grad, input, other, needs):
    if needs[0]:
        raise _not_implemented("zeta")
    return None, grad * -input * S.special_zeta(input + 1.0, other)


@derivative("special_xlog1py", inputs=("input", "other"))
def _(grad, input, other):
    if isinstance(other, ec.Tensor):
        ga = grad * other.log1p()
        if isinstance(input, ec.Tensor):
            ga = ga.masked_fill((input == 0) & (other <= -1.0), 0.0)
    else:
        ga = grad * math.log1p(other)
    return ga, grad * input / (other + 1.0)


def _igamma_x_grad(a, x):
    # d/dx P(a, x) = x^(a-1) e^-x / Gamma(a)
    return ((a - 1.0) * x.log() - x - a.lgamma()).exp()


@derivative("igamma", inputs=("input", "other"))
def _(grad, input, other, needs):
    if needs[0]:
        raise _not_implemented("igamma: input")
    return None, grad * _igamma_x_grad(input, other)


@derivative("igammac", inputs=("input", "other"))
def _(grad, input, other, needs):
    if needs[0]:
        raise _not_implemented("igammac: input")
    return None, -grad * _igamma_x_grad(input, other)
