"""Backward formulas of the samplers of ember_core._ops.random.random_dist.

``_standard_gamma``: the implicit reparameterisation gradient d sample / d alpha
(``_standard_gamma_grad``), which makes Gamma, Chi2, Beta and Dirichlet
``rsample`` differentiable; as in PyTorch the gradient op itself is not.
``poisson`` and ``binomial``: zero, as PyTorch (their outputs are integers in
float dtypes; the formula only makes them part of the graph)."""

import ember_core as ec
from ember_autograd._formula import derivative


@derivative("_standard_gamma", inputs=("input",))
def _(grad, input, result):
    return grad * ec._standard_gamma_grad(input, result)


@derivative("poisson", inputs=("input",))
def _(grad, input):
    return ec.zeros_like(input)


@derivative("binomial", inputs=("count", "prob"))
def _(grad, count, prob):
    return ec.zeros_like(count), ec.zeros_like(prob)
