"""The sparse implementations of ops (Note [Sparse layouts] in _tensor/sparse.py):
arithmetic (elementwise ops, sums, transposes) and products (sparse @ dense,
sparse @ sparse, addmm, the sparse softmax)."""
