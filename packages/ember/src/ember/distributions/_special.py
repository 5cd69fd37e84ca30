"""Private special functions the distributions need and ember_core lacks (the
``surface`` branch adds ``ember.special``; these stay private): the regularized
lower incomplete gamma P(a, x) (for Gamma/Chi2 ``cdf``) and mvlgamma (for
LKJCholesky and Wishart).

Computed in float64 NumPy (series for x < a + 1, Lentz's continued fraction for
the complement otherwise).  Differentiable in x (dP/dx is the gamma density), not
in a, as PyTorch's ``special.gammainc``."""

import math

import numpy as np

import ember as torch

_EPS = 1e-16
_TINY = 1e-300
_MAX_ITER = 2000


def _gammainc_np(a, x):
    a = np.asarray(a, dtype=np.float64)
    x = np.asarray(x, dtype=np.float64)
    a, x = np.broadcast_arrays(a, x)
    out = np.full(a.shape, np.nan)
    ok = (a > 0) & (x >= 0)
    out[ok & (x == 0)] = 0.0
    out[ok & np.isinf(x)] = 1.0
    todo = ok & (x > 0) & np.isfinite(x)
    lgam = np.vectorize(math.lgamma, otypes=[np.float64])
    series = todo & (x < a + 1)
    if series.any():
        aa, xx = a[series], x[series]
        term = 1.0 / aa
        total = term.copy()
        n = 0.0
        live = np.ones(aa.shape, dtype=bool)
        for _ in range(_MAX_ITER):
            n += 1.0
            term = np.where(live, term * xx / (aa + n), term)
            total = np.where(live, total + term, total)
            live &= np.abs(term) > np.abs(total) * _EPS
            if not live.any():
                break
        out[series] = total * np.exp(-xx + aa * np.log(xx) - lgam(aa))
    frac = todo & ~(x < a + 1)
    if frac.any():
        aa, xx = a[frac], x[frac]
        b = xx + 1.0 - aa
        c = np.full(aa.shape, 1.0 / _TINY)
        d = 1.0 / b
        h = d.copy()
        live = np.ones(aa.shape, dtype=bool)
        for i in range(1, _MAX_ITER):
            an = -i * (i - aa)
            b = b + 2.0
            d = an * d + b
            d = np.where(np.abs(d) < _TINY, _TINY, d)
            c = b + an / c
            c = np.where(np.abs(c) < _TINY, _TINY, c)
            d = 1.0 / d
            delta = d * c
            h = np.where(live, h * delta, h)
            live &= np.abs(delta - 1.0) > _EPS
            if not live.any():
                break
        out[frac] = 1.0 - np.exp(-xx + aa * np.log(xx) - lgam(aa)) * h
    return out


def gammainc(a, x):
    """P(a, x) = gamma(a, x) / Gamma(a), elementwise over broadcast ``a`` and ``x``."""
    a, x = torch.broadcast_tensors(torch.as_tensor(a, dtype=x.dtype), x)
    value = torch.from_numpy(_gammainc_np(a.detach().numpy(), x.detach().numpy())).to(x.dtype)
    if x.requires_grad and torch.is_grad_enabled():
        # dP/dx = x^(a-1) e^-x / Gamma(a): attach it as the gradient, value unchanged
        density = torch.exp(torch.xlogy(a - 1, x) - x - torch.lgamma(a)).detach()
        value = value + density * (x - x.detach())
    return value


def mvlgamma(a, p):
    """The multivariate log-gamma function of dimension p:
    p (p - 1) / 4 log(pi) + sum_{j=1..p} lgamma(a + (1 - j) / 2)."""
    steps = torch.arange(p, dtype=a.dtype, device=a.device) * -0.5
    return torch.lgamma(a.unsqueeze(-1) + steps).sum(-1) + p * (p - 1) / 4 * math.log(math.pi)
