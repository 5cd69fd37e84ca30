"""The derivative formula of the general eigendecomposition (``_linalg_eig``,
ember_core/_ops/linalg/geev.py), PyTorch's linalg_eig_backward, registered into
the same table as _derivatives.py.

A = V diag(L) V^-1 with eigenvector columns of unit norm.  With E_ij = L_j - L_i
(Note [Spectral gauge] in _derivatives_linalg.py: finite for distinct
eigenvalues only) and W = V^H gV projected onto the tangent space of unit-norm
columns (W - V^H V diag(Re diag(W))):
    gA = V^-H (diag(gL) + W / conj(E)) V^H.
Each eigenvector is defined up to a phase, so a loss that depends on the phases
has no gradient (the check PyTorch makes).  The gradient of a real A is the
real part (Note [Complex gradients] in _formula.py).
"""

import ember_core as ec
from ember_autograd._derivatives_linalg import _all_zero, _check_phase_gauge
from ember_autograd._formula import derivative


@derivative("_linalg_eig", inputs=("A",), outputs=(0, 1))
def _(grads, compute_v, result):
    gL, gV = grads
    L, V = result
    if not compute_v:
        raise RuntimeError(
            "linalg.eig: the derivative of the eigenvalues needs the eigenvectors; call "
            "linalg.eig (or linalg.eigvals on a tensor that requires grad)"
        )
    n = L.shape[-1]
    eye = ec.eye(n, dtype=V.dtype, device=V.device)
    VhgV = None
    if not _all_zero(gV):
        VhgV = V.mH @ gV
        diag = VhgV.diagonal(0, -2, -1)
        _check_phase_gauge("linalg_eig_backward", diag.imag)
        VhgV = VhgV - V.mH @ (V * diag.real.to(V.dtype).unsqueeze(-2))
    if VhgV is None:
        inner = eye * gL.unsqueeze(-1)
    else:
        Econj = (L.unsqueeze(-2) - L.unsqueeze(-1)).conj() + eye
        inner = VhgV / Econj * (1 - eye) + eye * gL.unsqueeze(-1)
    # V^-H inner V^H as a solve
    return ec._linalg_solve(V.mH, inner @ V.mH)
