"""The ops, one subpackage per family: pointwise, shape, indexing, reduction,
linalg, random, nn and spectral.  Each module declares its ops with defop
(docs/design.md "One declaration per op")."""
