import math

from ember.distributions import _torch as torch
from ember.distributions import constraints
from ember.distributions.beta import Beta
from ember.distributions.distribution import Distribution
from ember.distributions.utils import broadcast_all

__all__ = ["LKJCholesky"]


class LKJCholesky(Distribution):
    """LKJ distribution over Cholesky factors of ``dim`` x ``dim`` correlation
    matrices, density proportional to det(L L^T)^(concentration - 1).

    Sampled by the onion method (Lewandowski, Kurowicka & Joe, 2009): row i is
    sqrt(y_i) times a uniform direction on the i-sphere, y_i ~ Beta, and the
    diagonal completes each row to unit norm."""

    arg_constraints = {"concentration": constraints.positive}
    support = constraints.corr_cholesky

    def __init__(self, dim, concentration=1.0, validate_args=None):
        if dim < 2:
            raise ValueError(
                f"Expected dim to be an integer greater than or equal to 2. Found dim={dim}."
            )
        self.dim = dim
        (self.concentration,) = broadcast_all(concentration)
        batch_shape = self.concentration.size()
        event_shape = torch.Size((dim, dim))
        # Beta parameters of the squared norm of each row's off-diagonal part
        marginal_conc = self.concentration + 0.5 * (self.dim - 2)
        offset = torch.arange(
            self.dim - 1, dtype=self.concentration.dtype, device=self.concentration.device
        )
        offset = torch.cat([torch.zeros(1, dtype=offset.dtype, device=offset.device), offset])
        beta_conc1 = offset + 0.5
        beta_conc0 = marginal_conc.unsqueeze(-1) - 0.5 * offset
        self._beta = Beta(beta_conc1, beta_conc0)
        super().__init__(batch_shape, event_shape, validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LKJCholesky, _instance)
        batch_shape = torch.Size(batch_shape)
        new.dim = self.dim
        new.concentration = self.concentration.expand(batch_shape)
        new._beta = self._beta.expand(batch_shape + (self.dim,))
        super(LKJCholesky, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def sample(self, sample_shape=torch.Size()):  # noqa: B008 - Size is immutable
        with torch.no_grad():
            y = self._beta.sample(sample_shape).unsqueeze(-1)
            u_normal = torch.randn(
                self._extended_shape(sample_shape), dtype=y.dtype, device=y.device
            ).tril(-1)
            norm = u_normal.norm(dim=-1, keepdim=True)
            # row 0 has no off-diagonal part: keep it zero instead of 0 / 0
            u_hypersphere = u_normal / torch.where(norm > 0, norm, torch.ones_like(norm))
            w = torch.sqrt(y) * u_hypersphere
            eps = torch.finfo(w.dtype).tiny
            diag_elems = torch.clamp(1 - torch.sum(w**2, dim=-1), min=eps).sqrt()
            return w + torch.diag_embed(diag_elems)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        diag_elems = value.diagonal(dim1=-1, dim2=-2)[..., 1:]
        order = torch.arange(
            2, self.dim + 1, dtype=self.concentration.dtype, device=self.concentration.device
        )
        order = 2 * (self.concentration - 1).unsqueeze(-1) + self.dim - order
        unnormalized_log_pdf = torch.sum(order * diag_elems.log(), dim=-1)
        # normalizer (Lewandowski et al., eq. 16), in terms of mvlgamma
        dm1 = self.dim - 1
        alpha = self.concentration + 0.5 * dm1
        denominator = torch.lgamma(alpha) * dm1
        numerator = torch.mvlgamma(alpha - 0.5, dm1)
        pi_constant = 0.5 * dm1 * math.log(math.pi)
        normalize_term = pi_constant + numerator - denominator
        return unnormalized_log_pdf - normalize_term
