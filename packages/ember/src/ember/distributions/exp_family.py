"""``ExponentialFamily``: densities p(x; t) = exp(<t, T(x)> - F(t) + k(x)); the
entropy follows from the log normalizer F by automatic differentiation (Bregman)."""

from ember.distributions import _torch as torch
from ember.distributions.distribution import Distribution

__all__ = ["ExponentialFamily"]


class ExponentialFamily(Distribution):
    """Base of exponential-family distributions: subclasses give ``_natural_params``,
    ``_log_normalizer`` and ``_mean_carrier_measure``."""

    @property
    def _natural_params(self):
        raise NotImplementedError

    def _log_normalizer(self, *natural_params):
        raise NotImplementedError

    @property
    def _mean_carrier_measure(self):
        raise NotImplementedError

    def entropy(self):
        """Entropy through the Bregman divergence of the log normalizer."""
        result = -self._mean_carrier_measure
        nparams = [p.detach().requires_grad_() for p in self._natural_params]
        lg_normal = self._log_normalizer(*nparams)
        gradients = torch.autograd.grad(lg_normal.sum(), nparams, create_graph=True)
        result += lg_normal
        for np_, g in zip(nparams, gradients):
            result -= (np_ * g).reshape(self._batch_shape + (-1,)).sum(-1)
        return result
