"""torch.distributions.gamma: Gamma(concentration, rate)."""
from __future__ import annotations

import tensorlab as tl

from . import constraints
from .exp_family import ExponentialFamily
from .utils import _expand_params, _scalar_or_shape, broadcast_all

__all__ = ["Gamma"]


class Gamma(ExponentialFamily):
    """Gamma distribution with shape `concentration` and inverse scale `rate`."""

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(self, concentration, rate, validate_args=None):
        k, r = broadcast_all(concentration, rate)
        self.concentration, self.rate = k, r
        super().__init__(_scalar_or_shape(k, concentration, rate), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """This distribution with parameters expanded to `batch_shape`."""
        return _expand_params(self, Gamma, batch_shape, _instance, ("concentration", "rate"))

    @property
    def mean(self):
        return self.concentration / self.rate

    @property
    def mode(self):
        return (self.concentration - 1).div(self.rate).clamp(min=0)

    @property
    def variance(self):
        return self.mean / self.rate

    def rsample(self, sample_shape=tl.Size()):
        """Standard Gamma draws (implicitly reparameterized) divided by rate, floored at the dtype's tiny."""
        full = self._extended_shape(sample_shape)
        draw = tl._standard_gamma(self.concentration.expand(full)) / self.rate.expand(full)
        draw.detach().clamp_(min=tl.finfo(draw.dtype).tiny)  # never exactly 0
        return draw

    def log_prob(self, value):
        """c log r + (c - 1) log x - r x - lgamma(c)."""
        r = self.rate
        x = value if isinstance(value, tl.Tensor) else tl.tensor(value, dtype=r.dtype, device=r.device)
        if self._validate_args:
            self._validate_sample(x)
        k = self.concentration
        return k.xlogy(r) + (k - 1).xlogy(x) - r * x - k.lgamma()

    def entropy(self):
        """c - log r + lgamma(c) + (1 - c) digamma(c)."""
        k = self.concentration
        return k + k.lgamma() + (1.0 - k) * k.digamma() - self.rate.log()

    @property
    def _natural_params(self):
        return self.concentration - 1, self.rate.neg()

    def _log_normalizer(self, x, y):
        return (x + 1).lgamma() + (x + 1) * (-1 / y).log()

    def cdf(self, value):
        """The regularized lower incomplete gamma function P(c, r x)."""
        if self._validate_args:
            self._validate_sample(value)
        return tl.special.gammainc(self.concentration, value * self.rate)
