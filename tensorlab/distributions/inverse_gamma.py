"""torch.distributions.inverse_gamma: InverseGamma(concentration, rate) = 1 / Gamma(concentration, rate)."""
from __future__ import annotations

import math

import tensorlab as tl

from . import constraints
from .gamma import Gamma
from .transformed_distribution import TransformedDistribution
from .transforms import PowerTransform

__all__ = ["InverseGamma"]


class InverseGamma(TransformedDistribution):
    """1 / X with X ~ Gamma(concentration, rate)."""

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, concentration, rate, validate_args=None):
        gam = Gamma(concentration, rate, validate_args=validate_args)
        minus_one = tl.full((), -1.0, dtype=gam.rate.dtype, device=gam.rate.device)
        super().__init__(gam, PowerTransform(minus_one), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """This distribution with parameters expanded to `batch_shape`."""
        return super().expand(batch_shape, _instance=self._get_checked_instance(InverseGamma, _instance))

    concentration = property(lambda self: self.base_dist.concentration)
    rate = property(lambda self: self.base_dist.rate)

    @property
    def mean(self):
        a, b = self.concentration, self.rate
        m = b / (a - 1)
        return tl.where(a <= 1, tl.full_like(m, math.inf), m)

    @property
    def mode(self):
        return self.rate / (1 + self.concentration)

    @property
    def variance(self):
        a, b = self.concentration, self.rate
        v = b.square() / ((a - 2) * (a - 1).square())
        return tl.where(a <= 2, tl.full_like(v, math.inf), v)

    def entropy(self):
        """a + log(b) + lgamma(a) - (1 + a) digamma(a)."""
        a = self.concentration
        return a + a.lgamma() - (a + 1) * a.digamma() + self.rate.log()
