"""The orthogonal parametrization (torch.nn.utils.parametrizations.orthogonal).

An unconstrained tensor X is mapped onto the (n, k) matrices with orthonormal
columns (rows, when n < k) by one of three maps: the matrix exponential or the
Cayley transform of the skew-symmetric matrix built from X's lower triangle, or
a product of Householder reflections read from X's strict lower triangle (as
LAPACK stores QR factors).  With use_trivialization (the default) the map's
output multiplies a fixed orthogonal `base`, re-based whenever a value is
assigned, so assigning any matrix works and training starts at the identity.
"""

import enum

import numpy as np

import ember_autograd as ag
import ember_core as ec
from ember_nn.modules.module import Module
from ember_nn.utils import parametrize

__all__ = ["orthogonal"]


def _is_orthogonal(Q):
    n, k = Q.size(-2), Q.size(-1)
    eye = ec.eye(k, dtype=Q.dtype, device=Q.device)
    eps = 10.0 * n * float(np.finfo(np.float64 if Q.dtype == ec.float64 else np.float32).eps)
    # allclose(Q^T Q, I, rtol=1e-5, atol=eps)
    return bool(((Q.mT @ Q - eye).abs() <= eps + 1e-5 * eye).all())


def _make_orthogonal(A):
    """The Q of A's QR factorisation whose R has a non-negative diagonal."""
    Q, R = ec.linalg.qr(A)
    return Q * R.diagonal(dim1=-2, dim2=-1).sgn().unsqueeze(-2)


def _householder_product(A, tau):
    """The first k columns of H_1 ... H_k, H_i = I - tau_i v_i v_i^T, with v_i the
    i-th column of A below the diagonal and 1 on it (LAPACK's orgqr), written with
    ember ops so that it is differentiable."""
    n, k = A.size(-2), A.size(-1)
    eye = ec.eye(n, dtype=A.dtype, device=A.device)
    Q = eye.expand(*A.shape[:-2], n, n)
    for i in range(k):
        v = A[..., :, i] * (ec.arange(n, device=A.device) > i).to(A.dtype) + eye[:, i]
        Qv = (Q @ v.unsqueeze(-1)).squeeze(-1)
        Q = Q - tau[..., i, None, None] * Qv.unsqueeze(-1) * v.unsqueeze(-2)
    return Q[..., :k]


def _geqrf(Q):
    """LAPACK's geqrf (R on and above the diagonal, Householder vectors below, and
    the tau factors) of a float (..., n, k) tensor, through NumPy's raw QR."""
    a = Q.detach().cpu().numpy()
    batch = a.shape[:-2]
    flat = a.reshape((-1,) + a.shape[-2:])
    out = np.empty_like(flat)
    taus = np.empty((flat.shape[0], min(a.shape[-2:])), dtype=a.dtype)
    for b in range(flat.shape[0]):
        h, tau = np.linalg.qr(flat[b].astype(np.float64), mode="raw")
        out[b] = h.T
        taus[b] = tau
    return (
        ec.tensor(out.reshape(a.shape), dtype=Q.dtype),
        ec.tensor(taus.reshape(batch + taus.shape[-1:]), dtype=Q.dtype),
    )


class _OrthMaps(enum.Enum):
    matrix_exp = enum.auto()
    cayley = enum.auto()
    householder = enum.auto()


class _Orthogonal(Module):
    def __init__(self, weight, orthogonal_map, *, use_trivialization=True):
        super().__init__()
        if weight.is_complex() and orthogonal_map == _OrthMaps.householder:
            raise ValueError("The householder parametrization does not support complex tensors.")
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X):
        n, k = X.size(-2), X.size(-1)
        transposed = n < k
        if transposed:
            X = X.mT
            n, k = k, n
        if self.orthogonal_map in (_OrthMaps.matrix_exp, _OrthMaps.cayley):
            X = X.tril()
            if n != k:
                X = ec.cat([X, X.new_zeros(n, n - k).expand(*X.shape[:-2], -1, -1)], dim=-1)
            A = X - X.mT
            if self.orthogonal_map == _OrthMaps.matrix_exp:
                Q = ec.matrix_exp(A)
            else:
                eye = ec.eye(n, dtype=A.dtype, device=A.device)
                Q = ec.linalg.solve(eye - 0.5 * A, eye + 0.5 * A)
            if n != k:
                Q = Q[..., :k]
        else:
            A = X.tril(diagonal=-1)
            tau = 2.0 / (1.0 + (A * A).sum(dim=-2))
            Q = _householder_product(A, tau)
            # PyTorch scales column i by int(X[i, i]): -1 for the identity start
            Q = Q * X.diagonal(dim1=-2, dim2=-1).int().unsqueeze(-2)
        if hasattr(self, "base"):
            Q = self.base @ Q
        if transposed:
            Q = Q.mT
        return Q

    def right_inverse(self, Q):
        with ag.no_grad():
            if tuple(Q.shape) != tuple(self.shape):
                raise ValueError(
                    f"Expected a matrix or batch of matrices of shape {self.shape}. "
                    f"Got a tensor of shape {Q.shape}."
                )
            Q_init = Q
            n, k = Q.size(-2), Q.size(-1)
            transpose = n < k
            if transpose:
                Q = Q.mT
                n, k = k, n
            if not hasattr(self, "base"):
                if self.orthogonal_map in (_OrthMaps.cayley, _OrthMaps.matrix_exp):
                    raise NotImplementedError(
                        "It is not possible to assign to the matrix exponential or the Cayley "
                        "parametrizations when use_trivialization=False."
                    )
                A, tau = _geqrf(Q)
                # the diagonal says which reflections to use: +-1 by the sign of R's
                # diagonal, flipped where LAPACK used no reflection (tau == 0)
                diag = A.diagonal(dim1=-2, dim2=-1).sign()
                diag = ec.where(tau == 0.0, -diag, diag)
                A.diagonal(dim1=-2, dim2=-1).copy_(diag)
                return A.mT if transpose else A
            if n == k:
                Q = Q.clone() if _is_orthogonal(Q) else _make_orthogonal(Q)
            else:
                N = ec.randn(*(tuple(Q.shape[:-2]) + (n, n - k)), dtype=Q.dtype, device=Q.device)
                Q = _make_orthogonal(ec.cat([Q, N], dim=-1))
            self.base = Q
            neg_id = ec.zeros_like(Q_init)
            neg_id.diagonal(dim1=-2, dim2=-1).fill_(-1.0)
            return neg_id


def orthogonal(module, name="weight", orthogonal_map=None, *, use_trivialization=True):
    """Constrain ``module.<name>`` to (batches of) orthogonal matrices.

    >>> lin = orthogonal(nn.Linear(20, 40))
    >>> Q = lin.weight
    >>> ember.dist(Q.T @ Q, ember.eye(20)) < 1e-5
    tensor(True)
    """
    weight = getattr(module, name, None)
    if not isinstance(weight, ec.Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError(
            f"Expected a matrix or batch of matrices. Got a tensor of {weight.ndim} dimensions."
        )
    if orthogonal_map is None:
        orthogonal_map = (
            "matrix_exp"
            if weight.size(-2) == weight.size(-1) or weight.is_complex()
            else "householder"
        )
    orth_enum = getattr(_OrthMaps, orthogonal_map, None)
    if orth_enum is None:
        raise ValueError(
            'orthogonal_map has to be one of "matrix_exp", "cayley", "householder". '
            f"Got: {orthogonal_map}"
        )
    orth = _Orthogonal(weight, orth_enum, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module
