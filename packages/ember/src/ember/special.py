"""torch.special: special functions, elementwise (real dtypes).

The kernels live in ember_core._ops.pointwise.special
(csrc/cpu/pointwise/special_fn.c); functions PyTorch also has elsewhere (erf,
expit, logsumexp...) are those very ops under this namespace's names.

>>> import ember
>>> ember.special.ndtr(ember.tensor([0.0])).item()
0.5
"""

import ember_core as _ec
from ember_core._ops.pointwise import special as _S

__all__ = [
    "airy_ai",
    "bessel_j0",
    "bessel_j1",
    "bessel_y0",
    "bessel_y1",
    "chebyshev_polynomial_t",
    "chebyshev_polynomial_u",
    "chebyshev_polynomial_v",
    "chebyshev_polynomial_w",
    "digamma",
    "entr",
    "erf",
    "erfc",
    "erfcx",
    "erfinv",
    "exp2",
    "expit",
    "expm1",
    "gammainc",
    "gammaincc",
    "gammaln",
    "hermite_polynomial_h",
    "hermite_polynomial_he",
    "i0",
    "i0e",
    "i1",
    "i1e",
    "laguerre_polynomial_l",
    "legendre_polynomial_p",
    "log1p",
    "log_ndtr",
    "log_softmax",
    "logit",
    "logsumexp",
    "modified_bessel_i0",
    "modified_bessel_i1",
    "modified_bessel_k0",
    "modified_bessel_k1",
    "multigammaln",
    "ndtr",
    "ndtri",
    "polygamma",
    "psi",
    "round",
    "scaled_modified_bessel_k0",
    "scaled_modified_bessel_k1",
    "shifted_chebyshev_polynomial_t",
    "shifted_chebyshev_polynomial_u",
    "shifted_chebyshev_polynomial_v",
    "shifted_chebyshev_polynomial_w",
    "sinc",
    "softmax",
    "spherical_bessel_j0",
    "xlog1py",
    "xlogy",
    "zeta",
]

# the same ops as at the top level
digamma = psi = _ec.digamma
gammaln = _ec.lgamma
erf = _ec.erf
erfc = _ec.erfc
erfinv = _ec.erfinv
exp2 = _ec.exp2
expit = _ec.sigmoid
expm1 = _ec.expm1
log1p = _ec.log1p
logit = _ec.logit
logsumexp = _ec.logsumexp
round = _ec.round  # noqa: A001 - torch.special.round
sinc = _ec.sinc
xlogy = _ec.xlogy
i0 = _ec.i0
polygamma = _ec.polygamma
gammainc = _ec.igamma
gammaincc = _ec.igammac

# torch.special's own kernels
i0e = _S.special_i0e
i1 = _S.special_i1
i1e = _S.special_i1e
ndtri = _S.special_ndtri
log_ndtr = _S.special_log_ndtr
erfcx = _S.special_erfcx
entr = _S.special_entr
xlog1py = _S.special_xlog1py
zeta = _S.special_zeta
airy_ai = _S.special_airy_ai
bessel_j0 = _S.special_bessel_j0
bessel_j1 = _S.special_bessel_j1
bessel_y0 = _S.special_bessel_y0
bessel_y1 = _S.special_bessel_y1
modified_bessel_i0 = _S.special_modified_bessel_i0
modified_bessel_i1 = _S.special_modified_bessel_i1
modified_bessel_k0 = _S.special_modified_bessel_k0
modified_bessel_k1 = _S.special_modified_bessel_k1
scaled_modified_bessel_k0 = _S.special_scaled_modified_bessel_k0
scaled_modified_bessel_k1 = _S.special_scaled_modified_bessel_k1
spherical_bessel_j0 = _S.special_spherical_bessel_j0
chebyshev_polynomial_t = _S.special_chebyshev_polynomial_t
chebyshev_polynomial_u = _S.special_chebyshev_polynomial_u
chebyshev_polynomial_v = _S.special_chebyshev_polynomial_v
chebyshev_polynomial_w = _S.special_chebyshev_polynomial_w
shifted_chebyshev_polynomial_t = _S.special_shifted_chebyshev_polynomial_t
shifted_chebyshev_polynomial_u = _S.special_shifted_chebyshev_polynomial_u
shifted_chebyshev_polynomial_v = _S.special_shifted_chebyshev_polynomial_v
shifted_chebyshev_polynomial_w = _S.special_shifted_chebyshev_polynomial_w
hermite_polynomial_h = _S.special_hermite_polynomial_h
hermite_polynomial_he = _S.special_hermite_polynomial_he
laguerre_polynomial_l = _S.special_laguerre_polynomial_l
legendre_polynomial_p = _S.special_legendre_polynomial_p


def ndtr(input, *, out=None):
    """The standard normal CDF: (1 + erf(input / sqrt 2)) / 2."""
    if not input.dtype.is_floating_point:
        input = input.to(_ec.get_default_dtype())
    r = (1.0 + (input * 0.7071067811865476).erf()) * 0.5
    if out is not None:
        return out.copy_(r)
    return r


def multigammaln(input, p, *, out=None):
    """Multivariate log-gamma of dimension p (torch.mvlgamma)."""
    return _ec.mvlgamma(input, p, out=out)


def softmax(input, dim, *, dtype=None):
    return _ec.softmax(input, dim, dtype=dtype)


def log_softmax(input, dim, *, dtype=None):
    return _ec.log_softmax(input, dim, dtype=dtype)
