"""torch.distributions.poisson: Poisson(rate)."""
from __future__ import annotations

import tensorlab as tl

from . import constraints
from .exp_family import ExponentialFamily
from .utils import _expand_params, _scalar_or_shape, broadcast_all

__all__ = ["Poisson"]


class Poisson(ExponentialFamily):
    """Poisson distribution with mean `rate` on {0, 1, 2, ...}."""

    arg_constraints = {"rate": constraints.nonnegative}
    support = constraints.nonnegative_integer

    def __init__(self, rate, validate_args=None):
        (lam,) = broadcast_all(rate)
        self.rate = lam
        super().__init__(_scalar_or_shape(lam, rate), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """This distribution with parameters expanded to `batch_shape`."""
        return _expand_params(self, Poisson, batch_shape, _instance, ("rate",))

    # mean and variance both equal the rate
    mean = property(lambda self: self.rate)
    variance = property(lambda self: self.rate)

    @property
    def mode(self):
        return self.rate.floor()

    def sample(self, sample_shape=tl.Size()):
        """Counts (in the rate's dtype) from tensorlab's poisson sampler."""
        full = self.rate.expand(self._extended_shape(sample_shape))
        with tl.no_grad():
            return tl.poisson(full)

    def log_prob(self, value):
        """value log(rate) - rate - lgamma(value + 1)."""
        if self._validate_args:
            self._validate_sample(value)
        lam, k = broadcast_all(self.rate, value)
        return k.xlogy(lam) - (k + 1).lgamma() - lam

    @property
    def _natural_params(self):
        return (self.rate.log(),)

    def _log_normalizer(self, x):
        return x.exp()
