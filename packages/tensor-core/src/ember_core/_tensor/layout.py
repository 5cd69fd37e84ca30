"""Tensor layouts (``torch.layout``): how a tensor's elements are stored.

``strided`` is the dense layout of every ordinary Tensor; ``sparse_coo`` and
``sparse_csr`` are the sparse layouts of sparse.py (Note [Sparse layouts]).  The
other names exist so that programs naming them import; ember makes no tensors of
them.
"""


class layout:  # noqa: N801 - PyTorch's name (torch.layout)
    """A tensor layout (``ember.strided``, ``ember.sparse_coo``, ...)."""

    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"ember.{self.name}"

    def __reduce__(self):
        return (_by_name, (self.name,))


strided = layout("strided")
sparse_coo = layout("sparse_coo")
sparse_csr = layout("sparse_csr")
sparse_csc = layout("sparse_csc")
sparse_bsr = layout("sparse_bsr")
sparse_bsc = layout("sparse_bsc")

LAYOUTS = {
    lay.name: lay for lay in (strided, sparse_coo, sparse_csr, sparse_csc, sparse_bsr, sparse_bsc)
}


def _by_name(name):
    return LAYOUTS[name]
