"""Ready-made parametrizations (torch.nn.utils.parametrizations): weight
normalisation and spectral normalisation through ``parametrize``.

>>> conv = weight_norm(nn.Conv2d(3, 8, 3))   # trains parametrizations.weight.original0/1
>>> disc = spectral_norm(nn.Linear(16, 1))   # weight divided by its top singular value
"""

import ember_autograd as ag
import ember_core as ec
from ember_nn import functional as F
from ember_nn.modules.conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from ember_nn.modules.module import Module
from ember_nn.utils import parametrize

__all__ = ["orthogonal", "spectral_norm", "weight_norm"]


def norm_except_dim(v, dim):
    """The 2-norm of v over every dimension but dim (size 1 there, v's size at
    dim); over the whole tensor when dim is -1 (PyTorch's convention here)."""
    if dim == -1:
        return v.norm()
    dim = dim % v.ndim
    axes = tuple(d for d in range(v.ndim) if d != dim)
    if not axes:
        return v.abs()
    return (v * v).sum(dim=axes, keepdim=True).sqrt()


def weight_norm_value(v, g, dim):
    """g * v / ||v|| (the norm taken as in norm_except_dim)."""
    return v * (g / norm_except_dim(v, dim))


class _WeightNorm(Module):
    def __init__(self, dim=0):
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g, weight_v):
        return weight_norm_value(weight_v, weight_g, self.dim)

    def right_inverse(self, weight):
        return norm_except_dim(weight, self.dim), weight


def weight_norm(module, name="weight", dim=0):
    """Reparametrize ``module.<name>`` as ``g * v / ||v||``: magnitude ``g``
    (``parametrizations.<name>.original0``) and direction ``v`` (``original1``),
    the norm over every dimension but ``dim`` (the whole tensor for ``dim=None``)."""
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)
    return module


class _SpectralNorm(Module):
    """weight / sigma, sigma its largest singular value estimated by power
    iteration (the vectors ``_u``, ``_v`` are buffers, refined in training mode)."""

    def __init__(self, weight, n_power_iterations=1, dim=0, eps=1e-12):
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError(
                "Dimension out of range (expected to be in range of "
                f"[-{ndim}, {ndim - 1}] but got {dim})"
            )
        if n_power_iterations <= 0:
            raise ValueError(
                "Expected n_power_iterations to be positive, but got "
                f"n_power_iterations={n_power_iterations}"
            )
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            weight_mat = self._reshape_weight_to_matrix(weight)
            h, w = weight_mat.shape
            u = weight_mat.new_empty(h).normal_(0, 1)
            v = weight_mat.new_empty(w).normal_(0, 1)
            self.register_buffer("_u", F.normalize(u, dim=0, eps=self.eps))
            self.register_buffer("_v", F.normalize(v, dim=0, eps=self.eps))
            # start from well-converged vectors
            self._power_method(weight_mat, 15)

    def _reshape_weight_to_matrix(self, weight):
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.ndim) if d != self.dim))
        return weight.flatten(1)

    def _power_method(self, weight_mat, n_power_iterations):
        with ag.no_grad():
            for _ in range(n_power_iterations):
                self._u.copy_(F.normalize(weight_mat @ self._v, dim=0, eps=self.eps))
                self._v.copy_(F.normalize(weight_mat.t() @ self._u, dim=0, eps=self.eps))

    def forward(self, weight):
        if weight.ndim == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        weight_mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(weight_mat, self.n_power_iterations)
        u = self._u.clone()
        v = self._v.clone()
        sigma = ec.dot(u, weight_mat @ v)
        return weight / sigma

    def right_inverse(self, value):
        return value


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """Divide ``module.<name>`` by its spectral norm (estimated by power iteration,
    one step per training-mode forward) — the GAN discriminator's Lipschitz bound."""
    weight = getattr(module, name, None)
    if not isinstance(weight, ec.Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        transposed = (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)
        dim = 1 if isinstance(module, transposed) else 0
    parametrize.register_parametrization(
        module, name, _SpectralNorm(weight, n_power_iterations, dim, eps)
    )
    return module


# the orthogonal parametrization lives in its own module
from ember_nn.utils.parametrizations_orthogonal import orthogonal  # noqa: E402
