"""Elementwise ops: the unary/binary/ternary table, composites written with
it, complex numbers, special functions and the predicates."""
