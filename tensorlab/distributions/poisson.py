"""torch.distributions.poisson: Poisson(rate)."""
from __future__ import annotations

from numbers import Number

import tensorlab as tl

from . import constraints
from .exp_family import ExponentialFamily
from .utils import broadcast_all

__all__ = ["Poisson"]


class Poisson(ExponentialFamily):
    """Poisson distribution with mean `rate` on {0, 1, 2, ...}."""

    arg_constraints = {"rate": constraints.nonnegative}
    support = constraints.nonnegative_integer

    @property
    def mean(self):
        return self.rate

    @property
    def mode(self):
        return self.rate.floor()

    @property
    def variance(self):
        return self.rate

    def __init__(self, rate, validate_args=None):
        (self.rate,) = broadcast_all(rate)
        batch_shape = tl.Size() if isinstance(rate, Number) else self.rate.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """This distribution with parameters expanded to `batch_shape`."""
        new = self._get_checked_instance(Poisson, _instance)
        batch_shape = tl.Size(batch_shape)
        new.rate = self.rate.expand(batch_shape)
        super(Poisson, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def sample(self, sample_shape=tl.Size()):
        """Counts (in the rate's dtype) from tensorlab's poisson sampler."""
        shape = self._extended_shape(sample_shape)
        with tl.no_grad():
            return tl.poisson(self.rate.expand(shape))

    def log_prob(self, value):
        """value log(rate) - rate - lgamma(value + 1)."""
        if self._validate_args:
            self._validate_sample(value)
        rate, value = broadcast_all(self.rate, value)
        return value.xlogy(rate) - rate - (value + 1).lgamma()

    @property
    def _natural_params(self):
        return (tl.log(self.rate),)

    def _log_normalizer(self, x):
        return tl.exp(x)
