"""Backward formula of ``_standard_gamma`` (ember_core._random_dist): the
implicit reparameterisation gradient d sample / d alpha, as PyTorch's
``_standard_gamma_grad``.  It makes Gamma, Chi2, Beta and Dirichlet ``rsample``
differentiable.  As in PyTorch, the gradient op itself is not differentiable."""

import ember_core as ec
from ember_autograd._formula import derivative


@derivative("_standard_gamma", inputs=("input",))
def _(grad, input, result):
    return grad * ec._standard_gamma_grad(input, result)
