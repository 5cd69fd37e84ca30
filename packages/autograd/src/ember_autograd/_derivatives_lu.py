"""Backward formula of the packed LU factorization (ember_core.linalg's
_linalg_lu_factor_ex), PyTorch's linalg_lu_backward for square matrices:

    A = P L U,  gA = P L^-H (tril(L^H gL, -1) + triu(gU U^H)) U^-H

with gL, gU the strictly lower and upper parts of the packed gradient (^H a
plain transpose for real matrices)."""

import ember_core as ec
from ember_autograd._formula import derivative


@derivative("_linalg_lu_factor_ex", inputs=("A",), outputs=(0,))
def _(grad, A, result):
    LU, piv = result[0], result[1]
    m, n = LU.shape[-2], LU.shape[-1]
    if m != n:
        raise NotImplementedError(
            "the derivative of lu_factor is implemented for square matrices only"
        )
    P, L, U = ec.linalg.lu_unpack(LU, piv)
    gL = grad.tril(-1)
    gU = grad.triu()
    phi = (L.mH @ gL).tril(-1) + (gU @ U.mH).triu()
    st = ec.linalg.solve_triangular
    # L^-H phi: solve L^H X = phi;  X U^-H: solve X U^H = Y
    X = st(L.mH, phi, upper=True, unitriangular=True)
    X = st(U.mH, X, upper=False, left=False)
    return P @ X
