"""torch.distributions.kumaraswamy: Kumaraswamy(concentration1, concentration0) on (0, 1)."""
from __future__ import annotations

import tensorlab as tl

from . import constraints
from .transformed_distribution import TransformedDistribution
from .transforms import AffineTransform, PowerTransform
from .uniform import Uniform
from .utils import broadcast_all, euler_constant

__all__ = ["Kumaraswamy"]


def _moments(a, b, n):
    """E[X^n] of Kumaraswamy(a, b) = b B(1 + n / a, b)."""
    arg1 = 1 + n / a
    log_value = tl.lgamma(arg1) + tl.lgamma(b) - tl.lgamma(arg1 + b)
    return b * tl.exp(log_value)


class Kumaraswamy(TransformedDistribution):
    """(1 - U^(1/b))^(1/a) with U ~ U(0, 1), a = concentration1, b = concentration0."""

    arg_constraints = {"concentration1": constraints.positive, "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1, concentration0, validate_args=None):
        self.concentration1, self.concentration0 = broadcast_all(concentration1, concentration0)
        base_dist = Uniform(tl.full_like(self.concentration0, 0), tl.full_like(self.concentration0, 1),
                            validate_args=validate_args)
        transforms = [PowerTransform(exponent=self.concentration0.reciprocal()), AffineTransform(loc=1.0, scale=-1.0),
                      PowerTransform(exponent=self.concentration1.reciprocal())]
        super().__init__(base_dist, transforms, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """This distribution with parameters expanded to `batch_shape`."""
        new = self._get_checked_instance(Kumaraswamy, _instance)
        new.concentration1 = self.concentration1.expand(batch_shape)
        new.concentration0 = self.concentration0.expand(batch_shape)
        return super().expand(batch_shape, _instance=new)

    @property
    def mean(self):
        return _moments(self.concentration1, self.concentration0, 1)

    @property
    def mode(self):
        log_mode = (self.concentration0.reciprocal() * (-self.concentration0).log1p()
                    - (-self.concentration0 * self.concentration1).log1p())
        bad = (self.concentration0 < 1) | (self.concentration1 < 1)
        return tl.where(bad, tl.full_like(log_mode, float("nan")), log_mode).exp()

    @property
    def variance(self):
        return _moments(self.concentration1, self.concentration0, 2) - tl.pow(self.mean, 2)

    def entropy(self):
        """(1 - 1/a) + (1 - 1/b) H_b - log(a b), H_b the harmonic number digamma(b + 1) + Euler."""
        t1 = 1 - self.concentration1.reciprocal()
        t0 = 1 - self.concentration0.reciprocal()
        H0 = tl.digamma(self.concentration0 + 1) + euler_constant
        return t0 + t1 * H0 - tl.log(self.concentration1) - tl.log(self.concentration0)
