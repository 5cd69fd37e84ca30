"""Helpers shared by the distributions: broadcasting parameters, logits <-> probs,
lazily computed properties, and packing lower triangles into vectors."""

from functools import update_wrapper
from numbers import Number

import ember.nn.functional as F
from ember.distributions import _torch as torch

__all__ = [
    "broadcast_all",
    "logits_to_probs",
    "clamp_probs",
    "probs_to_logits",
    "lazy_property",
    "tril_matrix_to_vec",
    "vec_to_tril_matrix",
]

euler_constant = 0.57721566490153286060  # Euler-Mascheroni


def broadcast_all(*values):
    """Broadcast tensors and numbers together; numbers become tensors of the
    first tensor's dtype and device (the default dtype when there is none)."""
    if not all(isinstance(v, (torch.Tensor, Number)) for v in values):
        raise ValueError(
            "Input arguments must all be instances of numbers.Number, "
            "torch.Tensor or objects implementing __torch_function__."
        )
    if not all(isinstance(v, torch.Tensor) for v in values):
        options = {"dtype": torch.get_default_dtype()}
        for value in values:
            if isinstance(value, torch.Tensor):
                options = {"dtype": value.dtype, "device": value.device}
                break
        values = [v if isinstance(v, torch.Tensor) else torch.tensor(v, **options) for v in values]
    shape = values[0].shape
    if all(v.shape == shape for v in values):
        return tuple(values)  # already broadcast: skip the views (hot in RL loops)
    return torch.broadcast_tensors(*values)


def _standard_normal(shape, dtype, device):
    return torch.empty(shape, dtype=dtype, device=device).normal_()


def _sum_rightmost(value, dim):
    """Sum out the ``dim`` rightmost dims of ``value``."""
    if dim == 0:
        return value
    required_shape = value.shape[: value.dim() - dim] + (-1,)
    return value.reshape(required_shape).sum(-1)


def logits_to_probs(logits, is_binary=False):
    """Logits to probabilities: sigmoid when binary, else softmax over the last dim."""
    if is_binary:
        return torch.sigmoid(logits)
    return F.softmax(logits, dim=-1)


def clamp_probs(probs):
    """Clamp probabilities into [eps, 1 - eps] of their dtype."""
    eps = torch.finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs, is_binary=False):
    """Probabilities to logits (log-odds when binary, log-probabilities otherwise)."""
    ps_clamped = clamp_probs(probs)
    if is_binary:
        return torch.log(ps_clamped) - torch.log1p(-ps_clamped)
    return torch.log(ps_clamped)


class lazy_property:
    """A property computed on first access and then cached on the instance
    (computed with grad enabled, so it can be differentiated later)."""

    def __init__(self, wrapped):
        self.wrapped = wrapped
        update_wrapper(self, wrapped)

    def __get__(self, instance, obj_type=None):
        if instance is None:
            return _lazy_property_and_property(self.wrapped)
        with torch.enable_grad():
            value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


class _lazy_property_and_property(lazy_property, property):
    """What the class sees: a property, so documentation and introspection work."""

    def __init__(self, wrapped):
        property.__init__(self, wrapped)


def tril_matrix_to_vec(mat, diag=0):
    """The lower triangle (from diagonal ``diag``) of the last two dims, row by row."""
    n = mat.shape[-1]
    if diag < -n or diag >= n:
        raise ValueError(f"diag ({diag}) provided is outside [{-n}, {n - 1}].")
    arange = torch.arange(n, device=mat.device)
    tril_mask = arange < arange.view(-1, 1) + (diag + 1)
    vec = mat[..., tril_mask]
    return vec


def vec_to_tril_matrix(vec, diag=0):
    """Inverse of ``tril_matrix_to_vec``: a vector into a lower-triangular matrix."""
    # n * (n + 1) / 2 + diag-related offset elements must fit exactly
    k = 1 + 2 * diag
    n = (-k + (k**2 + 8 * vec.shape[-1] + 4 * abs(diag) * (diag + 1)) ** 0.5) / 2
    eps = torch.finfo(vec.dtype).eps
    if round(n) - n > eps:
        raise ValueError(
            f"The size of last dimension is {vec.shape[-1]} which cannot be expressed as "
            + "the lower triangular part of a square D x D matrix."
        )
    n = round(n)
    mat = vec.new_zeros(vec.shape[:-1] + torch.Size((n, n)))
    arange = torch.arange(n, device=vec.device)
    tril_mask = arange < arange.view(-1, 1) + (diag + 1)
    mat[..., tril_mask] = vec
    return mat
