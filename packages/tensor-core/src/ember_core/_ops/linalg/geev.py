"""torch.linalg.eig and eigvals: the eigendecomposition of general (not
necessarily Hermitian) square matrices by LAPACK's geev
(csrc/cpu/linalg/linalg_complex.c).

As in PyTorch the results are complex for real and complex input alike
(complex64 from float32/complex64, complex128 from float64/complex128): the
eigenvalues in LAPACK's order and the right eigenvectors as columns of unit
norm, each with its largest component real (LAPACK's normalization, which
PyTorch keeps).  ``_linalg_eig`` is the primitive op; its derivative formula
is in ember_autograd (_derivatives_linalg_geev.py).
"""

from ember_core._base.dispatch import defop
from ember_core._base.lib import check
from ember_core._base.return_types import return_type
from ember_core._ops.pointwise.elementwise import _tname
from ember_core._ops.reduction.reduction import return_types
from ember_core._tensor import dtype as D
from ember_core._tensor.tensor import empty

return_types.linalg_eig = return_type("linalg_eig", ["eigenvalues", "eigenvectors"])


def _eig_dtype(op, A):
    """The complex dtype of the results; PyTorch's errors for the other dtypes."""
    dt = A._dtype
    if dt is D.float32 or dt is D.complex64:
        return D.complex64
    if dt is D.float64 or dt is D.complex128:
        return D.complex128
    if dt.category == 2:
        raise NotImplementedError(f"\"linalg_eig_out_cpu\" not implemented for '{_tname(dt)}'")
    raise RuntimeError(
        f"{op}: Expected a floating point or complex tensor as input. Got {_tname(dt)}"
    )


@defop(method=False, autocast="fp32")
def _linalg_eig(A, compute_v=True):
    """(eigenvalues, right eigenvectors as columns) of square A (geev); the
    eigenvectors are empty when not compute_v."""
    from ember_core import linalg as L

    op = "linalg.eig"
    L._require_matrix(op, A)
    cdt = _eig_dtype(op, A)
    if A._numel and not bool(A.isfinite().all()):
        raise RuntimeError("torch.linalg.eig: input tensor should not contain infs or NaNs.")
    n = A._shape[-1]
    batch = A._shape[:-2]
    nb = L._numel(batch)
    dev = A._storage._device
    a = L._fortran(A)
    w = empty(batch + (n,), cdt, dev)
    v = L._fortran_empty(batch, n, n, w) if compute_v else None
    info = L._int32(batch, A)
    if nb and n:
        flops = nb * n * n * n * (4 if A._dtype.is_complex else 1)
        fn = dev._kn if flops > L._NOGIL_FLOPS else dev._k
        check(
            fn.ec_linalg_eig(
                A._dtype.code, nb, n, a._ptr, w._ptr, v._ptr if v is not None else 0, info._ptr
            ),
            op,
        )
    else:
        info.zero_()
    L._check_info(op, info, "eig")
    if v is None:
        return w, empty((0,), cdt, dev)
    return w, v.mT


@defop(
    "linalg_eig(A, *, out=None)",
    method=False,
    public=False,
    composite=True,
    autocast="fp32",
)
def eig(A, out=None):
    """(eigenvalues, eigenvectors) of square matrices, both complex; A V = V diag(w)."""
    from ember_core import linalg as L

    return L._out(return_types.linalg_eig(*_linalg_eig(A, True)), out)


@defop(
    "linalg_eigvals(A, *, out=None)",
    method=False,
    public=False,
    composite=True,
    autocast="fp32",
)
def eigvals(A, out=None):
    """The (complex) eigenvalues of square matrices."""
    from ember_core import linalg as L

    return L._out(_linalg_eig(A, L._wants_grad(A))[0], out)
