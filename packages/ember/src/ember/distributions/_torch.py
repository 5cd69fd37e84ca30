"""The PyTorch-shaped namespace the distributions are written against
(``from ember.distributions import _torch as torch``), gathered from the packages
below the umbrella -- ember_core (tensors and ops, ``linalg``, the special
functions) and ember_autograd (grad modes, ``autograd.grad``) -- so that
ember.distributions does not import the umbrella that imports it."""

import ember_autograd as autograd
from ember import special  # noqa: F401 - ember.special imports ember_core only
from ember_core import *  # noqa: F403 - the tensor namespace, as torch's
from ember_core import Size, Tensor, _standard_gamma, linalg  # noqa: F401

enable_grad = autograd.enable_grad
no_grad = autograd.no_grad
