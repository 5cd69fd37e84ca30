"""Flatten parameters into one vector and back."""

import ember_autograd as ag
import ember_core as ec


def parameters_to_vector(parameters):
    """One 1-D tensor of every parameter's values, in order."""
    return ec.cat([p.reshape(-1) for p in parameters])


def vector_to_parameters(vec, parameters):
    """Copy consecutive slices of vec into the parameters (their data, not their history)."""
    if not isinstance(vec, ec.Tensor):
        raise TypeError(f"expected ember.Tensor, but got: {type(vec).__name__}")
    pointer = 0
    for p in parameters:
        n = p.numel()
        with ag.no_grad():
            p.copy_(vec[pointer : pointer + n].view_as(p))
        pointer += n
