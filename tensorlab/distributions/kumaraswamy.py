"""torch.distributions.kumaraswamy: Kumaraswamy(concentration1, concentration0) on (0, 1)."""
from __future__ import annotations

import math

import tensorlab as tl

from . import constraints
from .transformed_distribution import TransformedDistribution
from .transforms import AffineTransform, PowerTransform
from .uniform import Uniform
from .utils import broadcast_all, euler_constant

__all__ = ["Kumaraswamy"]


def _raw_moment(a, b, n):
    """E[X^n] = b * B(1 + n / a, b)."""
    u = n / a + 1
    return b * (u.lgamma() + b.lgamma() - (u + b).lgamma()).exp()


class Kumaraswamy(TransformedDistribution):
    """(1 - U^(1/b))^(1/a) with U ~ U(0, 1), a = concentration1, b = concentration0."""

    arg_constraints = {"concentration1": constraints.positive, "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1, concentration0, validate_args=None):
        a, b = broadcast_all(concentration1, concentration0)
        self.concentration1, self.concentration0 = a, b
        unif = Uniform(tl.zeros_like(b), tl.ones_like(b), validate_args=validate_args)
        # U -> U^(1/b) -> 1 - U^(1/b) -> (1 - U^(1/b))^(1/a)
        chain = [PowerTransform(exponent=1 / b), AffineTransform(1.0, -1.0), PowerTransform(exponent=1 / a)]
        super().__init__(unif, chain, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """This distribution with parameters expanded to `batch_shape`."""
        out = self._get_checked_instance(Kumaraswamy, _instance)
        out.concentration0 = self.concentration0.expand(batch_shape)
        out.concentration1 = self.concentration1.expand(batch_shape)
        return super().expand(batch_shape, _instance=out)

    @property
    def mean(self):
        return _raw_moment(self.concentration1, self.concentration0, 1)

    @property
    def mode(self):
        a, b = self.concentration1, self.concentration0
        # torch's expression, kept for parity
        log_m = (-b).log1p() / b - (-(a * b)).log1p()
        return tl.where((a < 1) | (b < 1), tl.full_like(log_m, math.nan), log_m).exp()

    @property
    def variance(self):
        m1 = self.mean
        return _raw_moment(self.concentration1, self.concentration0, 2) - m1 * m1

    def entropy(self):
        """(1 - 1/a) + (1 - 1/b) H_b - log(a b), H_b the harmonic number digamma(b + 1) + Euler."""
        a, b = self.concentration1, self.concentration0
        harmonic_b = (b + 1).digamma() + euler_constant
        return (1 - 1 / b) + (1 - 1 / a) * harmonic_b - (a * b).log()
