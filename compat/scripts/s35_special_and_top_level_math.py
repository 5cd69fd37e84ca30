# A tour of torch.special, top-level math helpers (quantile, windows, distances,
# *_scatter, asarray), Tensor conveniences and the linalg LU family, the way
# scripts use them.  Each idiom prints CHECK lines; a missing one prints ERROR.
import copy
import math

import numpy as np
import torch


def r(t, n=5):
    if isinstance(t, torch.Tensor):
        t = t.tolist()
    if isinstance(t, list):
        return [r(v, n) for v in t]
    return round(t, n) if isinstance(t, float) and math.isfinite(t) else t


def check(name, fn):
    try:
        print("CHECK", name, *fn())
    except Exception as e:  # noqa: BLE001 - a tour: report and go on
        print("CHECK", name, "ERROR", type(e).__name__)


x = torch.tensor([-2.0, -0.5, 0.0, 0.25, 1.0, 3.0], dtype=torch.float64)
p = torch.tensor([0.01, 0.25, 0.5, 0.9], dtype=torch.float64)
S = torch.special
check("erf_family", lambda: (r(S.erf(x)), r(S.erfc(x)), r(S.erfcx(x)), r(S.erfinv(p))))
check("normal", lambda: (r(S.ndtr(x)), r(S.log_ndtr(x)), r(S.ndtri(p))))
check(
    "gamma",
    lambda: (
        r(S.gammaln(x.abs() + 0.5)),
        r(S.digamma(x.abs() + 0.5)),
        r(S.polygamma(2, x.abs() + 0.5)),
        r(S.multigammaln(x.abs() + 2, 3)),
    ),
)
check(
    "incgamma", lambda: (r(S.gammainc(x.abs() + 1, x.abs())), r(S.gammaincc(x.abs() + 1, x.abs())))
)
check("bessel_i", lambda: (r(S.i0(x)), r(S.i0e(x)), r(S.i1(x)), r(S.i1e(x))))
check(
    "bessel_jy",
    lambda: (
        r(S.bessel_j0(x)),
        r(S.bessel_j1(x)),
        r(S.bessel_y0(x.abs() + 0.1)),
        r(S.bessel_y1(x.abs() + 0.1)),
    ),
)
check(
    "bessel_k",
    lambda: (
        r(S.modified_bessel_k0(x.abs() + 0.1)),
        r(S.scaled_modified_bessel_k1(x.abs() + 0.1)),
        r(S.modified_bessel_i0(x)),
        r(S.spherical_bessel_j0(x)),
    ),
)
check("airy", lambda: (r(S.airy_ai(x)),))
check(
    "misc",
    lambda: (
        r(S.entr(x)),
        r(S.expit(x)),
        r(S.logit(p)),
        r(S.sinc(x)),
        r(S.exp2(x)),
        r(S.xlog1py(x, x.abs())),
        r(S.xlogy(x, x.abs())),
        r(S.zeta(x.abs() + 2, 1.5)),
    ),
)
check("softmax", lambda: (r(S.softmax(x, 0)), r(S.log_softmax(x, 0)), r(S.logsumexp(x, 0))))
check(
    "polys",
    lambda: (
        r(S.chebyshev_polynomial_t(x, 3)),
        r(S.hermite_polynomial_h(x, 4)),
        r(S.legendre_polynomial_p(x, 5)),
        r(S.laguerre_polynomial_l(x, 2)),
    ),
)

xg = torch.tensor([0.5, 1.5, 2.5], dtype=torch.float64, requires_grad=True)
check(
    "special_grads",
    lambda: (
        r(torch.autograd.grad(S.i0e(xg).sum(), xg)[0]),
        r(torch.autograd.grad(torch.polygamma(1, xg).sum(), xg)[0]),
        r(torch.autograd.grad(S.log_ndtr(xg).sum(), xg)[0]),
    ),
)
check(
    "top_special",
    lambda: (
        r(torch.i0(x)),
        r(torch.mvlgamma(x.abs() + 2, 2)),
        r(torch.igamma(x.abs() + 1, x.abs())),
        r(x.abs().polygamma(1)),
    ),
)
check("constants", lambda: (round(torch.pi, 6), round(torch.e, 6), torch.inf, torch.newaxis))

data = torch.tensor([[1.0, 7.0, 3.0, 0.5], [4.0, 5.0, 6.0, 2.0]])
check(
    "quantile",
    lambda: (
        r(torch.quantile(data, 0.3)),
        r(data.quantile(torch.tensor([0.25, 0.75]), dim=1)),
        r(torch.quantile(data, 0.4, dim=0, interpolation="nearest")),
        r(torch.quantile(data, 0.4, dim=1, keepdim=True, interpolation="midpoint")),
    ),
)
nan_data = data.clone()
nan_data[0, 1] = float("nan")
check(
    "nanquantile",
    lambda: (r(torch.nanquantile(nan_data, 0.5, dim=1)), r(nan_data.nanquantile(0.5))),
)
check(
    "windows",
    lambda: (
        r(torch.hann_window(5)),
        r(torch.hamming_window(4, periodic=False)),
        r(torch.blackman_window(5)),
        r(torch.bartlett_window(5)),
        r(torch.kaiser_window(5, True, 8.0)),
    ),
)
a = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
b = torch.tensor([[1.0, 0.0, 3.0], [0.0, 5.0, 1.0]])
check(
    "distances",
    lambda: (
        r(torch.cosine_similarity(a, b)),
        r(torch.pairwise_distance(a, b)),
        r(torch.pdist(a)),
        r(torch.dist(a, b)),
        r(a.dist(b, 1)),
    ),
)
check("renorm", lambda: (r(torch.renorm(a, 2, 0, 5.0)),))
check(
    "scatters",
    lambda: (
        torch.slice_scatter(torch.zeros(4, 2), torch.ones(2, 2), 0, 1, 3).tolist(),
        torch.select_scatter(torch.zeros(2, 2), torch.ones(2), 0, 1).tolist(),
        torch.diagonal_scatter(torch.zeros(2, 2), torch.ones(2)).tolist(),
    ),
)
check(
    "asarray",
    lambda: (
        torch.asarray(np.array([1.0, 2.0])).dtype,
        torch.asarray([1, 2]).tolist(),
        torch.asarray(a) is a,
        torch.asarray(a, dtype=torch.float64).dtype,
    ),
)
check("range", lambda: (torch.range(1, 4).tolist(), torch.range(0, 1, 0.5).dtype))
check(
    "tensor_methods",
    lambda: (
        a.sum_to_size(1, 3).tolist(),
        a.new((1, 2)).tolist(),
        a.allclose(a + 1e-9),
        a.isclose(b).tolist(),
        a.equal(a),
        [t.tolist() for t in reversed(torch.tensor([1, 2, 3]))],
        a.is_neg(),
        a.resolve_neg() is a,
    ),
)
check(
    "copies",
    lambda: (
        torch.narrow_copy(a, 1, 0, 2).tolist(),
        torch.t_copy(a).is_contiguous(),
        [t.shape for t in torch.unsafe_chunk(a, 2, 1)],
    ),
)
check("deepcopy", lambda: (copy.deepcopy(xg).requires_grad, copy.deepcopy(xg).is_leaf))
check(
    "misc_top",
    lambda: (
        torch.typename(a),
        torch.is_inference(a),
        torch.get_device(a),
        torch.chain_matmul(a, a.t(), a).tolist(),
    ),
)

A = torch.tensor([[4.0, 3.0, 1.0], [6.0, 3.0, 2.0], [1.0, 5.0, 7.0]], dtype=torch.float64)
B = torch.tensor([[1.0], [2.0], [3.0]], dtype=torch.float64)
check("lu", lambda: tuple(r(t) for t in torch.linalg.lu(A)))
LU, piv = torch.linalg.lu_factor(A)
check(
    "lu_solve",
    lambda: (
        r(torch.linalg.lu_solve(LU, piv, B)),
        r(torch.linalg.lu_solve(LU, piv, B, adjoint=True)),
        r(torch.linalg.lu_solve(LU, piv, B.t(), left=False)),
        r(torch.lu_solve(B, LU, piv)),
    ),
)
check("lu_unpack", lambda: tuple(r(t) for t in torch.lu_unpack(*torch.lu(A))))
check(
    "tensor_linalg",
    lambda: (
        r(torch.linalg.tensorinv(torch.eye(4, dtype=torch.float64).reshape(4, 2, 2) * 2, ind=1)),
        r(torch.linalg.tensorsolve(A, B.squeeze(1))),
    ),
)
check(
    "householder",
    lambda: (
        r(torch.linalg.householder_product(A, torch.tensor([1.2, 0.5], dtype=torch.float64))),
    ),
)
Ag = A.clone().requires_grad_(True)
check(
    "lu_grad",
    lambda: (
        r(torch.autograd.grad(torch.linalg.lu_solve(*torch.linalg.lu_factor(Ag), B).sum(), Ag)[0]),
    ),
)
grid = torch.tensor([[1.0, 2.0, 4.0, 7.0], [0.0, 1.0, 1.0, 3.0], [2.0, 2.0, 5.0, 1.0]])
check(
    "gradient",
    lambda: (
        [r(g) for g in torch.gradient(grid)],
        [r(g) for g in torch.gradient(grid, spacing=2.0, dim=1, edge_order=2)],
        [r(g) for g in torch.gradient(grid[0], spacing=(torch.tensor([0.0, 1.0, 1.5, 3.0]),))],
    ),
)
check(
    "geqrf",
    lambda: (
        r(torch.geqrf(A)[0].triu().abs()),
        r(torch.orgqr(*torch.geqrf(A)).abs()),
        r(torch.ormqr(*torch.geqrf(A), B).abs()),
    ),
)
Sym = torch.tensor([[0.0, 1.0, 2.0], [1.0, 0.0, 0.5], [2.0, 0.5, 3.0]], dtype=torch.float64)
check(
    "ldl",
    lambda: (
        r(torch.linalg.ldl_factor(Sym).LD),
        torch.linalg.ldl_factor(Sym).pivots.tolist(),
        r(torch.linalg.ldl_solve(*torch.linalg.ldl_factor(Sym), B)),
    ),
)
print("OK")
