"""Derivative formulas of the LAPACK-backed ops (ember_core.linalg), registered
into the same table as _derivatives.py.

Every formula is written with ember ops (matmul, the triangular and general
solvers, the decompositions themselves), so create_graph=True differentiates
it again.  Real matrices only: transposes stand for conjugate transposes.

Note [Spectral gauge]
Eigen- and singular vectors are defined up to sign (and, for repeated values,
up to a rotation of their subspace).  As in PyTorch, the gradients of the
vectors divide by differences of eigenvalues (squared singular values): they
are finite only when those are distinct.  When the vectors received no
gradient (eigvalsh, svdvals, norms built on them) the formulas take the
values-only path, which is finite for repeated values too.
"""

import ember_core as ec
from ember_autograd._formula import derivative


def _eye(n, like):
    return ec.eye(n, dtype=like.dtype, device=like.device)


def _all_zero(g):
    """A gradient that is all zeros (the engine's stand-in for 'no gradient')."""
    return g.numel() == 0 or not bool(g.detach().any())


# ---------------------------------------------------------------- inverse, solve


@derivative("_linalg_inv_ex", inputs=("A",), outputs=(0,), saved_outputs=(0,))
def _(grad, result):
    inv = result[0]
    return -(inv.mT @ grad @ inv.mT)


@derivative("_linalg_solve", inputs=("A", "B"))
def _(grad, A, result, needs):
    # X = A^-1 B:  gB = A^-T g,  gA = -gB X^T
    gB = ec._linalg_solve(A.mT, grad)
    gA = -(gB @ result.mT) if needs[0] else None
    return gA, gB


@derivative("_linalg_solve_triangular", inputs=("A", "B"))
def _(grad, A, upper, unitriangular, result, needs):
    gB = ec._linalg_solve_triangular(A.mT, grad, not upper, unitriangular)
    gA = None
    if needs[0]:
        gA = -(gB @ result.mT)
        k = 1 if unitriangular else 0  # only the triangle A's values were read from
        gA = gA.triu(k) if upper else gA.tril(-k)
    return gA, gB


# ------------------------------------------------------------ determinants


def _prod_except_each(s):
    """p[..., i] = prod over j != i of s[..., j], without dividing."""
    one = ec.ones_like(s[..., :1])
    left = ec.cat([one, s[..., :-1]], -1).cumprod(-1)
    right = ec.cat([s[..., 1:], one], -1).flip((-1,)).cumprod(-1).flip((-1,))
    return left * right


def _det_grad_svd(A):
    """The cofactor matrix of A (d det / dA) through the SVD: valid for singular
    matrices too.  A = U S Vh gives cof(A) = det(U) det(Vh) U diag(prod_{j!=i} s_j) Vh."""
    U, S, Vh = ec._linalg_svd(A, False, True)
    sign = ec._linalg_det(U) * ec._linalg_det(Vh)
    cof = (U * _prod_except_each(S).unsqueeze(-2)) @ Vh
    return cof * sign.unsqueeze(-1).unsqueeze(-1)


@derivative("_linalg_det", inputs=("A",))
def _(grad, A, result):
    n = A.shape[-1]
    if n == 0:
        return ec.zeros_like(A)
    g = (grad * result).unsqueeze(-1).unsqueeze(-1)
    inv, info = ec._linalg_inv_ex(A)
    singular = info != 0
    if not bool(singular.any()):
        return g * inv.mT  # d det = det * A^-T
    cof = _det_grad_svd(A)
    return ec.where(
        singular.unsqueeze(-1).unsqueeze(-1), cof, result.unsqueeze(-1).unsqueeze(-1) * inv.mT
    ) * grad.unsqueeze(-1).unsqueeze(-1)


@derivative("_linalg_slogdet", inputs=("A",), outputs=(1,), saved_outputs=())
def _(grad, A):
    # d log|det A| = A^-T (sign carries no gradient)
    inv = ec._linalg_inv_ex(A)[0]
    return grad.unsqueeze(-1).unsqueeze(-1) * inv.mT


# ----------------------------------------------------------------- Cholesky


@derivative("_linalg_cholesky_ex", inputs=("A",), outputs=(0,), saved_outputs=(0,))
def _(grad, upper, result):
    # A = L L^T:  dL = L Phi(L^-1 dA L^-T), Phi = lower triangle with the
    # diagonal halved; its adjoint gives gA = L^-T Phi(L^T gL) L^-1, symmetrized.
    L, gL = result[0], grad
    if upper:
        L, gL = L.mT, gL.mT
    n = L.shape[-1]
    P = (L.mT @ gL).tril() * (1.0 - 0.5 * _eye(n, L))
    Y = ec._linalg_solve_triangular(L.mT, P, True)  # L^-T P
    gA = ec._linalg_solve_triangular(L.mT, Y.mT, True).mT  # L^-T P L^-1
    return 0.5 * (gA + gA.mT)


# ----------------------------------------------------------------------- QR


def _qr_backward_tall(gQ, gR, Q, R):
    """A = Q R with R square upper triangular:
    gA = (gQ + Q copyltu(M)) R^-T, M = R gR^T - gQ^T Q, where copyltu builds a
    symmetric matrix from M's lower triangle."""
    M = R @ gR.mT - gQ.mT @ Q
    b = gQ + Q @ (M.tril() + M.tril(-1).mT)
    return ec._linalg_solve_triangular(R, b.mT, True).mT


@derivative("_linalg_qr", inputs=("A",), outputs=(0, 1))
def _(grads, A, mode, result):
    gQ, gR = grads
    Q, R = result
    m, n = A.shape[-2], A.shape[-1]
    if mode == "r":
        raise RuntimeError(
            "The derivative of linalg.qr depends on Q, which is not computed when mode='r'. "
            "Please use linalg.qr(A, mode='reduced') if you are going to differentiate "
            "through linalg.qr."
        )
    if mode == "complete" and m > n:
        raise RuntimeError(
            "The QR decomposition is not differentiable when mode='complete' and nrows > ncols."
        )
    if m >= n:
        return _qr_backward_tall(gQ, gR, Q, R)
    # wide A = Q [R1 R2] = [X Y]: X = Q R1 is square, Y = Q R2
    gR1, gR2 = gR[..., :, :m], gR[..., :, m:]
    Y = A[..., :, m:]
    gX = _qr_backward_tall(gQ + Y @ gR2.mT, gR1, Q, R[..., :, :m])
    return ec.cat([gX, Q @ gR2], -1)


# --------------------------------------------------------------------- eigh


@derivative("_linalg_eigh", inputs=("A",), outputs=(0, 1))
def _(grads, compute_v, result):
    # A = V diag(L) V^T (Note [Spectral gauge]):
    # gA = V (diag(gL) + skew(V^T gV) / E) V^T,  E_ij = L_j - L_i
    gL, gV = grads
    L, V = result
    if not compute_v:
        raise RuntimeError(
            "linalg.eigh: the derivative of the eigenvalues needs the eigenvectors; call "
            "linalg.eigh (or linalg.eigvalsh on a tensor that requires grad)"
        )
    n = L.shape[-1]
    eye = _eye(n, L)
    if _all_zero(gV):
        return (V * gL.unsqueeze(-2)) @ V.mT
    VtgV = V.mT @ gV
    VtgV = 0.5 * (VtgV - VtgV.mT)
    E = L.unsqueeze(-2) - L.unsqueeze(-1) + eye
    inner = VtgV / E + eye * gL.unsqueeze(-1)
    return V @ inner @ V.mT


# ---------------------------------------------------------------------- SVD


@derivative("_linalg_svd", inputs=("A",), outputs=(0, 1, 2))
def _(grads, A, full_matrices, compute_uv, result):
    # PyTorch's svd_backward for real matrices (Note [Spectral gauge]):
    # gA = U [(skew(U^T gU) S + S skew(V^T gV)) / E + diag(gS)] Vh
    #      + (I - U U^T) gU S^-1 Vh + U S^-1 gV^T (I - V V^T),  E_ij = s_j^2 - s_i^2
    gU, gS, gVh = grads
    U, S, Vh = result
    if not compute_uv:
        raise RuntimeError(
            "linalg.svd: the derivative of the singular values needs the singular vectors; "
            "call linalg.svd (or linalg.svdvals on a tensor that requires grad)"
        )
    m, n = A.shape[-2], A.shape[-1]
    k = min(m, n)
    if full_matrices and (U.shape[-1] != k or Vh.shape[-2] != k):
        U, gU = U[..., :, :k], gU[..., :, :k]
        Vh, gVh = Vh[..., :k, :], gVh[..., :k, :]
    if _all_zero(gU) and _all_zero(gVh):
        return (U * gS.unsqueeze(-2)) @ Vh
    eye = _eye(k, S)
    V, gV = Vh.mT, gVh.mT
    UtgU = U.mT @ gU
    UtgU = UtgU - UtgU.mT
    VtgV = V.mT @ gV
    VtgV = VtgV - VtgV.mT
    S2 = S * S
    E = S2.unsqueeze(-2) - S2.unsqueeze(-1) + eye
    gA = (UtgU * S.unsqueeze(-2) + S.unsqueeze(-1) * VtgV) / E + eye * gS.unsqueeze(-1)
    if m > n:
        gA = U @ gA
        gUSinv = gU / S.unsqueeze(-2)
        gA = (gA + gUSinv - U @ (U.mT @ gUSinv)) @ Vh
    elif m < n:
        gA = gA @ Vh
        gVSinv = gV / S.unsqueeze(-2)
        gA = U @ (gA + gVSinv.mT - (gVSinv.mT @ V) @ Vh)
    else:
        gA = U @ gA @ Vh
    return gA


# ------------------------------------------------------- pinv, least squares


def _pinv_backward(G, A, P):
    """The gradient with respect to A of <G, pinv(A)> where P = pinv(A) (at
    constant rank; Golub and Pereyra):
    gA = -P^T G P^T + (I - A P) G^T P P^T + P^T P G^T (I - P A)."""
    Gt = G.mT
    X = Gt @ (P @ P.mT)
    Z = (P.mT @ P) @ Gt
    return -(P.mT @ G @ P.mT) + (X - A @ (P @ X)) + (Z - (Z @ P) @ A)


@derivative("_linalg_pinv", inputs=("A",))
def _(grad, A, result):
    return _pinv_backward(grad, A, result)


@derivative("_linalg_lstsq", inputs=("A", "B"), outputs=(0,), saved_outputs=())
def _(grad, A, B, needs):
    # the solution is pinv(A) B
    P = ec._linalg_pinv(A)
    gB = P.mT @ grad
    gA = _pinv_backward(grad @ B.mT, A, P) if needs[0] else None
    return gA, gB
