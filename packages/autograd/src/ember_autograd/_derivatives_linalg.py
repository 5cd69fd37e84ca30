"""Derivative formulas of the LAPACK-backed ops (ember_core.linalg), registered
into the same table as _derivatives.py.

Every formula is written with ember ops (matmul, the triangular and general
solvers, the decompositions themselves), so create_graph=True differentiates
it again.  They hold for complex matrices too, in PyTorch's convention (Note
[Complex gradients] in _formula.py): the transposes are conjugate transposes
(``.mH``, a plain transpose for real tensors), and the terms only complex
matrices have (the phase of a determinant's sign, the imaginary diagonals of
the spectral formulas) are PyTorch's.

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
    return -(inv.mH @ grad @ inv.mH)


@derivative("_linalg_solve", inputs=("A", "B"))
def _(grad, A, result, needs):
    # X = A^-1 B:  gB = A^-H g,  gA = -gB X^H
    gB = ec._linalg_solve(A.mH, grad)
    gA = -(gB @ result.mH) if needs[0] else None
    return gA, gB


@derivative("_linalg_solve_triangular", inputs=("A", "B"))
def _(grad, A, upper, unitriangular, result, needs):
    gB = ec._linalg_solve_triangular(A.mH, grad, not upper, unitriangular)
    gA = None
    if needs[0]:
        gA = -(gB @ result.mH)
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
    """The conjugate of A's cofactor matrix (d det / dA) through the SVD: valid
    for singular matrices too.  A = U S Vh gives cof(A) = det(U) det(Vh)
    conj(U diag(prod_{j!=i} s_j) Vh) (U^-T = conj(U) for a unitary U)."""
    U, S, Vh = ec._linalg_svd(A, False, True)
    sign = ec._linalg_det(U) * ec._linalg_det(Vh)
    p = _prod_except_each(S).unsqueeze(-2)
    cof = (U * (p.to(U.dtype) if U.dtype.is_complex else p)) @ Vh
    return cof * sign.conj().unsqueeze(-1).unsqueeze(-1)


@derivative("_linalg_det", inputs=("A",))
def _(grad, A, result):
    n = A.shape[-1]
    if n == 0:
        return ec.zeros_like(A)
    # d det = det * tr(A^-1 dA): gA = grad * conj(det) A^-H
    g = (grad * result.conj()).unsqueeze(-1).unsqueeze(-1)
    inv, info = ec._linalg_inv_ex(A)
    singular = info != 0
    if not bool(singular.any()):
        return g * inv.mH
    cof = _det_grad_svd(A)
    return ec.where(
        singular.unsqueeze(-1).unsqueeze(-1),
        cof,
        result.conj().unsqueeze(-1).unsqueeze(-1) * inv.mH,
    ) * grad.unsqueeze(-1).unsqueeze(-1)


@derivative("_linalg_slogdet", inputs=("A",), outputs=(0, 1), saved_outputs=(0,))
def _(grads, A, result):
    # d log|det A| = Re tr(A^-1 dA): gA = g A^-H.  A real sign carries no
    # gradient; a complex one, sign = exp(i theta) with d theta = Im tr(A^-1 dA),
    # adds -i Im(conj(g_sign) sign) to g.
    g_sign, g = grads
    if A.dtype.is_complex:
        g = g - 1j * (g_sign.conj() * result[0]).imag
    inv = ec._linalg_inv_ex(A)[0]
    return g.unsqueeze(-1).unsqueeze(-1) * inv.mH


# ----------------------------------------------------------------- Cholesky


@derivative("_linalg_cholesky_ex", inputs=("A",), outputs=(0,), saved_outputs=(0,))
def _(grad, upper, result):
    # A = L L^H:  dL = L Phi(L^-1 dA L^-H), Phi = lower triangle with the
    # diagonal halved; its adjoint, made Hermitian off the diagonal as PyTorch
    # does, gives gA = L^-H P L^-1 with P = (T + tril(T, -1)^H) / 2, T = tril(L^H gL).
    L, gL = result[0], grad
    if upper:
        L, gL = L.mH, gL.mH
    T = (L.mH @ gL).tril()
    P = 0.5 * (T + T.tril(-1).mH)
    Y = ec._linalg_solve_triangular(L.mH, P, True)  # L^-H P
    return ec._linalg_solve_triangular(L.mH, Y.mH, True).mH  # L^-H P L^-1


# ----------------------------------------------------------------------- QR


def _copyltu(M):
    low = M.tril(-1)
    d = M.diagonal(0, -2, -1)
    if M.dtype.is_complex:
        d = d.real.to(M.dtype)
    return low + low.mH + ec.diag_embed(d)


def _qr_backward_tall(gQ, gR, Q, R):
    """A = Q R with R square upper triangular:
    gA = (gQ + Q copyltu(M)) R^-H, M = R gR^H - gQ^H Q, where copyltu builds a
    Hermitian matrix from M's strict lower triangle and the real part of its
    diagonal."""
    M = R @ gR.mH - gQ.mH @ Q
    b = gQ + Q @ _copyltu(M)
    return ec._linalg_solve_triangular(R, b.mH, True).mH


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
    gX = _qr_backward_tall(gQ + Y @ gR2.mH, gR1, Q, R[..., :, :m])
    return ec.cat([gX, Q @ gR2], -1)


# --------------------------------------------------------------------- eigh


@derivative("_linalg_eigh", inputs=("A",), outputs=(0, 1))
def _(grads, compute_v, result):
    # A = V diag(L) V^H (Note [Spectral gauge]):
    # gA = V (diag(gL) + skew(V^H gV) / E) V^H,  E_ij = L_j - L_i
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
        return (V * gL.unsqueeze(-2).to(V.dtype)) @ V.mH
    VtgV = V.mH @ gV
    if V.dtype.is_complex:
        _check_phase_gauge("linalg_eigh_backward", VtgV.diagonal(0, -2, -1).imag)
    VtgV = 0.5 * (VtgV - VtgV.mH)
    E = L.unsqueeze(-2) - L.unsqueeze(-1) + eye
    inner = VtgV / E + eye * gL.unsqueeze(-1)
    return V @ inner @ V.mH


def _check_phase_gauge(op, imag_diag):
    """Complex eigen- and singular vectors are defined up to a phase e^(i phi)
    each; a loss that depends on the phases has no gradient (PyTorch's check)."""
    if bool((imag_diag.abs() > 1e-2).any()):
        raise RuntimeError(
            f"{op}: The eigenvectors in the complex case are specified up to multiplication "
            "by e^{i phi}. The specified loss function depends on this quantity, so it is "
            "ill-defined."
        )


# ---------------------------------------------------------------------- SVD


@derivative("_linalg_svd", inputs=("A",), outputs=(0, 1, 2))
def _(grads, A, full_matrices, compute_uv, result):
    # PyTorch's svd_backward (Note [Spectral gauge]):
    # gA = U [(skew(U^H gU) S + S skew(V^H gV)) / E + diag(gS)] Vh
    #      + (I - U U^H) gU S^-1 Vh + U S^-1 gV^H (I - V V^H),  E_ij = s_j^2 - s_i^2;
    # for complex matrices the diagonal gets i Im(diag(U^H gU)) / S as well.
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
    cplx = U.dtype.is_complex
    if _all_zero(gU) and _all_zero(gVh):
        return (U * (gS.unsqueeze(-2).to(U.dtype) if cplx else gS.unsqueeze(-2))) @ Vh
    eye = _eye(k, S)
    V, gV = Vh.mH, gVh.mH
    UhgU = U.mH @ gU
    VhgV = V.mH @ gV
    if cplx:
        _check_phase_gauge(
            "svd_backward",
            (UhgU.diagonal(0, -2, -1) + VhgV.diagonal(0, -2, -1)).imag,
        )
    skU = UhgU - UhgU.mH
    skV = VhgV - VhgV.mH
    S2 = S * S
    E = S2.unsqueeze(-2) - S2.unsqueeze(-1) + eye
    off = 1.0 - eye  # the skew parts' imaginary diagonals are the phase terms below
    gA = (skU * S.unsqueeze(-2) + S.unsqueeze(-1) * skV) / E * off + eye * gS.unsqueeze(-1)
    if cplx:
        gA = gA + ec.diag_embed(1j * UhgU.diagonal(0, -2, -1).imag / S)
    if m > n:
        gA = U @ gA
        gUSinv = gU / S.unsqueeze(-2)
        gA = (gA + gUSinv - U @ (U.mH @ gUSinv)) @ Vh
    elif m < n:
        gA = gA @ Vh
        gVSinv = gV / S.unsqueeze(-2)
        gA = U @ (gA + gVSinv.mH - (gVSinv.mH @ V) @ Vh)
    else:
        gA = U @ gA @ Vh
    return gA


# ------------------------------------------------------- pinv, least squares


def _pinv_backward(G, A, P):
    """The gradient with respect to A of <G, pinv(A)> where P = pinv(A) (at
    constant rank; Golub and Pereyra):
    gA = -P^H G P^H + (I - A P) G^H P P^H + P^H P G^H (I - P A)."""
    Gt = G.mH
    X = Gt @ (P @ P.mH)
    Z = (P.mH @ P) @ Gt
    return -(P.mH @ G @ P.mH) + (X - A @ (P @ X)) + (Z - (Z @ P) @ A)


@derivative("_linalg_pinv", inputs=("A",))
def _(grad, A, result):
    return _pinv_backward(grad, A, result)


@derivative("_linalg_lstsq", inputs=("A", "B"), outputs=(0,), saved_outputs=())
def _(grad, A, B, needs):
    # the solution is pinv(A) B
    P = ec._linalg_pinv(A)
    gB = P.mH @ grad
    gA = _pinv_backward(grad @ B.mH, A, P) if needs[0] else None
    return gA, gB
