"""torch.sparse: functions on sparse tensors (Note [Sparse layouts] in _tensor/sparse.py).

The sparse tensors themselves, ``sparse_coo_tensor``/``sparse_csr_tensor`` and the
Tensor methods (``to_dense``, ``coalesce``, ``indices``, ...) are in the main
namespace as in PyTorch; this namespace holds the functions PyTorch keeps here.

>>> import ember_core as ec
>>> s = ec.sparse_coo_tensor([[0, 1], [1, 0]], [2.0, 3.0], (2, 2))
>>> ec.sparse.mm(s, ec.ones(2, 1)).tolist()
[[2.0], [3.0]]
"""

from ember_core._ops.sparse import arithmetic as _sparse_ops
from ember_core._ops.sparse import products as _sparse_products
from ember_core._tensor import sparse as _sparse

__all__ = [
    "addmm",
    "check_sparse_tensor_invariants",
    "log_softmax",
    "mm",
    "sampled_addmm",
    "softmax",
    "spdiags",
    "sum",
]


def mm(mat1, mat2):
    """The product of a sparse matrix and a dense (or sparse) one; gradients
    reach the sparse operand's values and the dense operand."""
    return _sparse_products.sparse_mm("sparse.mm", mat1, mat2)


def addmm(mat, mat1, mat2, *, beta=1.0, alpha=1.0):
    """beta * mat + alpha * (mat1 @ mat2) for sparse ``mat1`` and dense ``mat``, ``mat2``."""
    return _sparse_products.sparse_addmm(mat, mat1, mat2, beta=beta, alpha=alpha)


def sum(input, dim=None, dtype=None):  # noqa: A001 - PyTorch's name
    """The sum of a sparse tensor over ``dim`` (every dim by default): dense when
    every sparse dim is summed, else sparse."""
    return _sparse_ops.sparse_sum(input, dim, dtype)


def softmax(input, dim, dtype=None):
    """A softmax along ``dim`` over the stored elements; unstored ones stay zero."""
    return _sparse_products.sparse_softmax(input, dim, dtype)


def log_softmax(input, dim, dtype=None):
    """The log of ``softmax`` over the stored elements along ``dim``."""
    return _sparse_products.sparse_log_softmax(input, dim, dtype)


def spdiags(diagonals, offsets, shape, layout=None):
    """A sparse matrix with the rows of ``diagonals`` on the diagonals ``offsets``."""
    return _sparse.spdiags(diagonals, offsets, shape, layout)


def sampled_addmm(input, mat1, mat2, *, beta=1.0, alpha=1.0, out=None):
    """beta * input + alpha * (mat1 @ mat2) where the CSR matrix ``input`` stores elements."""
    return _sparse_products.sampled_addmm(input, mat1, mat2, beta=beta, alpha=alpha, out=out)


class check_sparse_tensor_invariants:  # noqa: N801 - PyTorch's name
    """PyTorch's switch for checking sparse tensors' indices at construction.

    ember always checks them (an index out of range would make ``to_dense`` write
    outside its result), so this context manager / decorator changes nothing and
    ``is_enabled()`` is always True; it exists so that programs using it run."""

    def __init__(self, enable=True):
        self.enable_ = enable

    @staticmethod
    def is_enabled():
        return True

    @staticmethod
    def enable():
        pass

    @staticmethod
    def disable():
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def __call__(self, fn):
        return fn
