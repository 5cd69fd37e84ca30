"""Numerical calculus on sampled values: the trapezoidal rule (trapezoid,
cumulative_trapezoid; trapz is an alias) and finite-difference gradients
(gradient, NumPy's np.gradient).  Composites of public ops, so differentiable.
"""

import builtins

from ember_core._base.dispatch import defop
from ember_core._base.shape import normalize_dim
from ember_core._ops.shape.joining import cat
from ember_core._tensor import dtype as D
from ember_core._tensor.tensor import Tensor


def _float_of(t):
    return t if t.dtype.category >= 2 else t.to(D.get_default_dtype())


# ------------------------------------------------------------------ integration


def _dx_along(op, y, x, dx, dim):
    d = normalize_dim(dim, y.dim(), op)
    if x is not None:
        if x.dim() == 1:
            if x.shape[0] != y.shape[d]:
                raise RuntimeError(
                    f"{op}: There must be one `x` value for each sample point; got {x.shape[0]} "
                    f"values for {y.shape[d]} samples"
                )
            spacing = x.diff().reshape([-1 if i == d else 1 for i in range(y.dim())])
        else:
            spacing = x.diff(dim=dim)
        return d, spacing
    return d, 1.0 if dx is None else dx


@defop(method=False, composite=True, aliases=("trapz",))
def trapezoid(y, x=None, *, dx=None, dim=-1):
    """The trapezoidal rule along dim, with sample points x or a constant spacing dx."""
    if x is not None and not isinstance(x, Tensor):  # trapezoid(y, dx) positionally
        x, dx = None, x
    d, spacing = _dx_along("trapezoid", y, x, dx, dim)
    n = y.shape[d]
    if n == 0:
        return _float_of(y).sum(d) * 0
    mid = (y.narrow(d, 1, n - 1) + y.narrow(d, 0, n - 1)) * spacing
    return mid.sum(d) / 2


@defop(method=False, composite=True)
def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    if x is not None and not isinstance(x, Tensor):
        x, dx = None, x
    d, spacing = _dx_along("cumulative_trapezoid", y, x, dx, dim)
    n = y.shape[d]
    mid = y.narrow(d, 1, builtins.max(n - 1, 0)) + y.narrow(d, 0, builtins.max(n - 1, 0))
    return (mid * spacing / 2).cumsum(d)


# ------------------------------------------------------------------ gradient


def _gradient_dim(f, d, h, edge_order):
    """Central differences along d (NumPy's second-order scheme, also for
    non-uniform coordinates h, a 1-D tensor), one-sided at the edges."""
    n = f.shape[d]

    def sl(a, b=None):
        return f.narrow(d, a, (n if b is None else b) - a) if b is None or b > a else None

    def shape_1d(t):
        s = [1] * f.dim()
        s[d] = -1
        return t.reshape(s)

    if not isinstance(h, Tensor):
        interior = (sl(2, n) - sl(0, n - 2)) / (2.0 * h)
        if edge_order == 1:
            first = (f.narrow(d, 1, 1) - f.narrow(d, 0, 1)) / h
            last = (f.narrow(d, n - 1, 1) - f.narrow(d, n - 2, 1)) / h
        else:
            first = (
                -1.5 * f.narrow(d, 0, 1) + 2.0 * f.narrow(d, 1, 1) - 0.5 * f.narrow(d, 2, 1)
            ) / h
            last = (
                0.5 * f.narrow(d, n - 3, 1)
                - 2.0 * f.narrow(d, n - 2, 1)
                + 1.5 * f.narrow(d, n - 1, 1)
            ) / h
        return cat([first, interior, last], d)
    x = h.to(f.dtype)
    dx = x[1:] - x[:-1]
    hl, hr = shape_1d(dx[:-1]), shape_1d(dx[1:])
    interior = (
        hl * hl * sl(2, n) - hr * hr * sl(0, n - 2) + (hr * hr - hl * hl) * sl(1, n - 1)
    ) / (hl * hr * (hl + hr))
    if edge_order == 1:
        first = (f.narrow(d, 1, 1) - f.narrow(d, 0, 1)) / dx[0]
        last = (f.narrow(d, n - 1, 1) - f.narrow(d, n - 2, 1)) / dx[-1]
    else:
        d1, d2 = dx[0], dx[1]
        a = -(2.0 * d1 + d2) / (d1 * (d1 + d2))
        b = (d1 + d2) / (d1 * d2)
        c = -d1 / (d2 * (d1 + d2))
        first = a * f.narrow(d, 0, 1) + b * f.narrow(d, 1, 1) + c * f.narrow(d, 2, 1)
        d1, d2 = dx[-2], dx[-1]
        a = d2 / (d1 * (d1 + d2))
        b = -(d2 + d1) / (d1 * d2)
        c = (2.0 * d2 + d1) / (d2 * (d1 + d2))
        last = a * f.narrow(d, n - 3, 1) + b * f.narrow(d, n - 2, 1) + c * f.narrow(d, n - 1, 1)
    return cat([first, interior, last], d)


@defop(method=False, composite=True)
def gradient(input, *, spacing=1, dim=None, edge_order=1):
    """Estimate the gradient of a function sampled on a grid, one tensor per
    dimension (NumPy's np.gradient): central differences inside, first- or
    second-order one-sided differences at the edges."""
    if edge_order not in (1, 2):
        raise RuntimeError("torch.gradient only supports edge_order=1 and edge_order=2.")
    if dim is None:
        dims = list(builtins.range(input.dim()))
    elif isinstance(dim, int):
        dims = [dim]
    else:
        dims = list(dim)
    dims = [d % max(input.dim(), 1) for d in dims]
    if isinstance(spacing, (list, tuple)):
        if len(spacing) != len(dims):
            raise RuntimeError(
                f"torch.gradient expected spacing to be unspecified, a scalar or it's spacing "
                f"and dim arguments to have the same length, but got a spacing argument of "
                f"length {len(spacing)} and a dim argument of length {len(dims)}."
            )
        hs = list(spacing)
    else:
        hs = [spacing] * len(dims)
    for d in dims:
        if input.shape[d] < edge_order + 1:
            raise RuntimeError(
                "torch.gradient expected each dimension size to be at least edge_order+1"
            )
    f = input if input.dtype.category >= 2 else input.to(D.get_default_dtype())
    out = []
    for d, h in zip(dims, hs, strict=True):
        if isinstance(h, Tensor) and h.dim() == 0:
            h = h.item()
        out.append(_gradient_dim(f, d, h, edge_order))
    return tuple(out)
