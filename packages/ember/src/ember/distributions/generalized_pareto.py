import math
from numbers import Number, Real

from ember.distributions import _torch as torch
from ember.distributions import constraints
from ember.distributions.distribution import Distribution
from ember.distributions.utils import broadcast_all

__all__ = ["GeneralizedPareto"]


class GeneralizedPareto(Distribution):
    """Generalized Pareto distribution with ``loc``, ``scale`` and ``concentration`` (xi).

    Survival function (1 + xi z)^(-1/xi) with z = (x - loc) / scale; xi = 0 is the
    exponential limit, xi < 0 gives a bounded support [loc, loc - scale / xi]."""

    arg_constraints = {
        "loc": constraints.real,
        "scale": constraints.positive,
        "concentration": constraints.real,
    }
    has_rsample = True

    def __init__(self, loc, scale, concentration, validate_args=None):
        self.loc, self.scale, self.concentration = broadcast_all(loc, scale, concentration)
        if all(isinstance(v, Number) for v in (loc, scale, concentration)):
            batch_shape = torch.Size()
        else:
            batch_shape = self.loc.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(GeneralizedPareto, _instance)
        batch_shape = torch.Size(batch_shape)
        new.loc = self.loc.expand(batch_shape)
        new.scale = self.scale.expand(batch_shape)
        new.concentration = self.concentration.expand(batch_shape)
        super(GeneralizedPareto, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _z(self, x):
        return (x - self.loc) / self.scale

    def _split(self):
        """(xi == 0 mask, xi with the zeros replaced by 1), to evaluate both branches safely."""
        xi = self.concentration
        eq_zero = torch.isclose(xi, torch.zeros_like(xi))
        return eq_zero, torch.where(eq_zero, torch.ones_like(xi), xi)

    def rsample(self, sample_shape=torch.Size()):  # noqa: B008 - Size is immutable
        shape = self._extended_shape(sample_shape)
        u = torch.rand(shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.icdf(u)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        z = self._z(value)
        eq_zero, xi = self._split()
        y = 1 / xi + torch.ones_like(z)
        # (1 / xi + 1) * log1p(xi z); the product is 0 when the factor is (xi = -1)
        nonzero = torch.where(y == 0, y, y * torch.log1p(xi * z))
        log_scale = math.log(self.scale) if isinstance(self.scale, Real) else self.scale.log()
        return -log_scale - torch.where(eq_zero, z, nonzero)

    def log_survival_function(self, value):
        if self._validate_args:
            self._validate_sample(value)
        z = self._z(value)
        eq_zero, xi = self._split()
        return torch.where(eq_zero, -z, -torch.log1p(xi * z) / xi)

    def log_cdf(self, value):
        return torch.log1p(-torch.exp(self.log_survival_function(value)))

    def cdf(self, value):
        return torch.exp(self.log_cdf(value))

    def icdf(self, value):
        eq_zero, xi = self._split()
        logu = torch.log1p(-value)
        nonzero = self.loc + self.scale / xi * torch.expm1(-xi * logu)
        return torch.where(eq_zero, self.loc - self.scale * logu, nonzero)

    @property
    def mean(self):
        valid = self.concentration < 1
        xi = torch.where(valid, self.concentration, 0.5)
        return torch.where(valid, self.loc + self.scale / (1 - xi), math.nan)

    @property
    def variance(self):
        valid = self.concentration < 0.5
        xi = torch.where(valid, self.concentration, 0.25)
        return torch.where(valid, self.scale**2 / ((1 - xi) ** 2 * (1 - 2 * xi)), math.nan)

    def entropy(self):
        ans = torch.log(self.scale) + self.concentration + 1
        return ans.expand(self._batch_shape)

    @property
    def mode(self):
        return self.loc

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        lower = self.loc
        upper = torch.where(
            self.concentration < 0, lower - self.scale / self.concentration, math.inf
        )
        return constraints.interval(lower, upper)
