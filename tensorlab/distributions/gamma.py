"""torch.distributions.gamma: Gamma(concentration, rate)."""
from __future__ import annotations

from numbers import Number

import tensorlab as tl

from . import constraints
from .exp_family import ExponentialFamily
from .utils import broadcast_all

__all__ = ["Gamma"]


class Gamma(ExponentialFamily):
    """Gamma distribution with shape `concentration` and inverse scale `rate`."""

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _mean_carrier_measure = 0

    @property
    def mean(self):
        return self.concentration / self.rate

    @property
    def mode(self):
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self):
        return self.concentration / self.rate.pow(2)

    def __init__(self, concentration, rate, validate_args=None):
        self.concentration, self.rate = broadcast_all(concentration, rate)
        if isinstance(concentration, Number) and isinstance(rate, Number):
            batch_shape = tl.Size()
        else:
            batch_shape = self.concentration.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """This distribution with parameters expanded to `batch_shape`."""
        new = self._get_checked_instance(Gamma, _instance)
        batch_shape = tl.Size(batch_shape)
        new.concentration = self.concentration.expand(batch_shape)
        new.rate = self.rate.expand(batch_shape)
        super(Gamma, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def rsample(self, sample_shape=tl.Size()):
        """Standard Gamma draws (implicitly reparameterized) divided by rate, floored at the dtype's tiny."""
        shape = self._extended_shape(sample_shape)
        value = tl._standard_gamma(self.concentration.expand(shape)) / self.rate.expand(shape)
        value.detach().clamp_(min=tl.finfo(value.dtype).tiny)
        return value

    def log_prob(self, value):
        """c log r + (c - 1) log x - r x - lgamma(c)."""
        if not isinstance(value, tl.Tensor):
            value = tl.tensor(value, dtype=self.rate.dtype, device=self.rate.device)
        if self._validate_args:
            self._validate_sample(value)
        return (tl.xlogy(self.concentration, self.rate) + tl.xlogy(self.concentration - 1, value)
                - self.rate * value - tl.lgamma(self.concentration))

    def entropy(self):
        """c - log r + lgamma(c) + (1 - c) digamma(c)."""
        return (self.concentration - tl.log(self.rate) + tl.lgamma(self.concentration)
                + (1.0 - self.concentration) * tl.digamma(self.concentration))

    @property
    def _natural_params(self):
        return (self.concentration - 1, -self.rate)

    def _log_normalizer(self, x, y):
        return tl.lgamma(x + 1) + (x + 1) * tl.log(-y.reciprocal())

    def cdf(self, value):
        """The regularized lower incomplete gamma function P(c, r x)."""
        if self._validate_args:
            self._validate_sample(value)
        return tl.special.gammainc(self.concentration, self.rate * value)
