"""Distances and the norms they rest on: dist, cdist, pdist, pairwise_distance,
cosine_similarity, renorm, and the legacy frobenius_norm/nuclear_norm.

All are composites of public ops (norms, matrix products), so their gradients
come from those.
"""

import builtins

import numpy as np

from ember_core._base.dispatch import defop
from ember_core._ops.pointwise.elementwise import where
from ember_core._ops.reduction.reduction import vector_norm
from ember_core._ops.shape.rearrange import triu_indices
from ember_core._tensor.creation import empty, ones_like
from ember_core._tensor.views import broadcast_to
from ember_core.linalg import matrix_norm
from ember_core.linalg import vector_norm as linalg_vector_norm


def _tn(dtype):
    return {"float16": "Half", "bfloat16": "BFloat16"}.get(dtype.name, dtype.name.capitalize())


def _out(r, out):
    return out.copy_(r) if out is not None else r


# ------------------------------------------------------------------ distances


@defop(composite=True, tags=("reduction",))
def dist(input, other, p=2):
    """The p-norm of input - other (broadcast), as a 0-d tensor."""
    return linalg_vector_norm(input - other, ord=p)


@defop(method=False, composite=True, autocast="fp32")
def cdist(x1, x2, p=2.0, compute_mode=None):
    """p-norm distances between the rows of x1 (.., P, M) and of x2 (.., R, M): (.., P, R).
    p=2 goes through a matrix product when compute_mode allows (as PyTorch: by default
    when P or R exceeds 25), else the differences are formed directly."""
    if x1.dim() < 2 or x2.dim() < 2:
        raise RuntimeError(
            f"cdist only supports at least 2D tensors, X1 got: {x1.dim()}D, X2 got: {x2.dim()}D"
        )
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(
            f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} X2: {x2.shape[-1]}"
        )
    if not (x1.dtype.is_floating_point and x2.dtype.is_floating_point):
        raise RuntimeError(
            f"cdist only supports floating-point dtypes, X1 got: {x1.dtype}, X2 got: {x2.dtype}"
        )
    if p < 0:
        raise RuntimeError(f"cdist only supports non-negative p values, got {p}")
    modes = (
        None,
        "use_mm_for_euclid_dist_if_necessary",
        "use_mm_for_euclid_dist",
        "donot_use_mm_for_euclid_dist",
    )
    if compute_mode not in modes:
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    batch = np.broadcast_shapes(tuple(x1.shape[:-2]), tuple(x2.shape[:-2]))
    a = broadcast_to(x1, tuple(batch) + tuple(x1.shape[-2:]))
    b = broadcast_to(x2, tuple(batch) + tuple(x2.shape[-2:]))
    P, R = a.shape[-2], b.shape[-2]
    use_mm = p == 2 and (
        compute_mode == "use_mm_for_euclid_dist"
        or (compute_mode in (None, "use_mm_for_euclid_dist_if_necessary") and (P > 25 or R > 25))
    )
    if use_mm:
        # |a - b|^2 = |a|^2 - 2 a.b + |b|^2, one matrix product
        a2 = (a * a).sum(-1, keepdim=True)
        b2 = (b * b).sum(-1, keepdim=True)
        sq = a2 - 2 * a.matmul(b.transpose(-2, -1)) + b2.transpose(-2, -1)
        return sq.clamp_min(1e-30).sqrt()
    diff = a.unsqueeze(-2) - b.unsqueeze(-3)
    if P == 0 or R == 0 or a.shape[-1] == 0:
        return diff.abs().sum(-1)
    return vector_norm(diff, p, dim=-1)


@defop(method=False, composite=True)
def pdist(input, p=2):
    """The p-norm distances between the rows of a 2-D input, pairs (i, j) with
    i < j in row-major order: n * (n - 1) / 2 values."""
    if input.dim() != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.dim()}D")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    n = input.shape[0]
    if n < 2:
        return empty(0, dtype=input.dtype, device=input.device)
    rows, cols = triu_indices(n, n, 1, device=input.device)
    return (input[rows] - input[cols]).norm(p, -1)


@defop(method=False, composite=True)
def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """The p-norm of x1 - x2 + eps along the last dim."""
    return (x1 - x2 + eps).norm(p, -1, keepdim=keepdim)


@defop(method=False, composite=True)
def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """sum(x1 / ||x1|| * x2 / ||x2||) along dim, after broadcasting x1 and x2 (as PyTorch)."""
    if tuple(x1.shape) != tuple(x2.shape):
        a, b = tuple(x1.shape), tuple(x2.shape)
        n = builtins.max(len(a), len(b))
        a, b = (1,) * (n - len(a)) + a, (1,) * (n - len(b)) + b
        shape = tuple(builtins.max(i, j) if 1 in (i, j) else i for i, j in zip(a, b))
        x1, x2 = x1.expand(shape), x2.expand(shape)
    n1 = x1.norm(2, dim, keepdim=True).clamp_min(eps)
    n2 = x2.norm(2, dim, keepdim=True).clamp_min(eps)
    return ((x1 / n1) * (x2 / n2)).sum(dim)


# ------------------------------------------------------------------ norms


@defop(composite=True)
def renorm(input, p, dim, maxnorm, *, out=None):
    """Each slice along ``dim`` whose p-norm exceeds maxnorm is scaled to norm maxnorm."""
    if not input.dtype.is_floating_point:
        raise RuntimeError(
            f"renorm: expected a floating point or complex tensor as input. Got {_tn(input.dtype)}"
        )
    if p <= 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
    d = dim % builtins.max(input.dim(), 1)
    others = [i for i in builtins.range(input.dim()) if i != d]
    norms = linalg_vector_norm(input, p, dim=others, keepdim=True) if others else input.abs()
    factor = where(norms > maxnorm, maxnorm / (norms + 1e-7), ones_like(norms))
    return _out(input * factor, out)


@defop(composite=True, inplace_of="renorm", function=False)
def renorm_(input, p, dim, maxnorm):
    return input.copy_(renorm(input, p, dim, maxnorm))


@defop(method=False, composite=True)
def frobenius_norm(input, dim=(-2, -1), keepdim=False, *, out=None):
    """The 2-norm of the values over ``dim`` (legacy; linalg.matrix_norm's 'fro')."""
    return _out(linalg_vector_norm(input, 2, dim=dim, keepdim=keepdim), out)


@defop(method=False, composite=True)
def nuclear_norm(input, dim=None, keepdim=False, *, out=None):
    """The sum of the singular values (legacy; linalg.matrix_norm's 'nuc')."""
    r = matrix_norm(input, "nuc", dim=dim if dim is not None else (-2, -1), keepdim=keepdim)
    return _out(r, out)
