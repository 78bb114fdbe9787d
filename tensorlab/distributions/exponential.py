"""torch.distributions.exponential: Exponential(rate)."""
from __future__ import annotations

import tensorlab as tl

from . import constraints
from .exp_family import ExponentialFamily
from .utils import _expand_params, _scalar_or_shape, broadcast_all

__all__ = ["Exponential"]


class Exponential(ExponentialFamily):
    """Exponential distribution with density rate * exp(-rate * x) on x >= 0."""

    arg_constraints = {"rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(self, rate, validate_args=None):
        (lam,) = broadcast_all(rate)
        self.rate = lam
        super().__init__(_scalar_or_shape(lam, rate), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """This distribution with parameters expanded to `batch_shape`."""
        return _expand_params(self, Exponential, batch_shape, _instance, ("rate",))

    # the mean and the standard deviation are both 1 / rate
    mean = property(lambda self: 1 / self.rate)
    stddev = property(lambda self: 1 / self.rate)

    @property
    def mode(self):
        return tl.zeros_like(self.rate)

    @property
    def variance(self):
        return self.rate.square().reciprocal()

    def rsample(self, sample_shape=tl.Size()):
        """E / rate with E ~ Exp(1)."""
        lam = self.rate
        unit = tl.empty(self._extended_shape(sample_shape), dtype=lam.dtype, device=lam.device).exponential_()
        return unit / lam

    def log_prob(self, value):
        """log(rate) - rate * value."""
        if self._validate_args:
            self._validate_sample(value)
        return -value * self.rate + self.rate.log()

    def cdf(self, value):
        """1 - exp(-rate * value)."""
        if self._validate_args:
            self._validate_sample(value)
        return -(-value * self.rate).expm1()

    def icdf(self, value):
        """-log(1 - value) / rate."""
        return (-value).log1p().neg() / self.rate

    def entropy(self):
        """1 - log(rate)."""
        return 1.0 - self.rate.log()

    @property
    def _natural_params(self):
        return (self.rate.neg(),)

    def _log_normalizer(self, x):
        return (-x).log().neg()
