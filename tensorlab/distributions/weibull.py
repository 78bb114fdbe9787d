"""torch.distributions.weibull: Weibull(scale, concentration)."""
from __future__ import annotations

import tensorlab as tl

from . import constraints
from .exponential import Exponential
from .gumbel import euler_constant
from .transformed_distribution import TransformedDistribution
from .transforms import AffineTransform, PowerTransform
from .utils import broadcast_all

__all__ = ["Weibull"]


def _chain(lam, inv_k):
    # E ~ Exp(1) -> E^(1/k) -> lam * E^(1/k)
    return [PowerTransform(exponent=inv_k), AffineTransform(0, lam)]


class Weibull(TransformedDistribution):
    """Two-parameter Weibull: scale * E^(1/concentration), E ~ Exp(1)."""

    arg_constraints = {"scale": constraints.positive, "concentration": constraints.positive}
    support = constraints.positive

    def __init__(self, scale, concentration, validate_args=None):
        lam, k = broadcast_all(scale, concentration)
        self.scale, self.concentration = lam, k
        self.concentration_reciprocal = 1 / k
        unit_exp = Exponential(tl.ones_like(lam), validate_args=validate_args)
        super().__init__(unit_exp, _chain(lam, self.concentration_reciprocal), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """This distribution with parameters expanded to `batch_shape`."""
        out = self._get_checked_instance(Weibull, _instance)
        out.concentration = self.concentration.expand(batch_shape)
        out.scale = self.scale.expand(batch_shape)
        out.concentration_reciprocal = 1 / out.concentration
        TransformedDistribution.__init__(out, self.base_dist.expand(batch_shape),
                                         _chain(out.scale, out.concentration_reciprocal), validate_args=False)
        out._validate_args = self._validate_args
        return out

    def _gamma_fn(self, n):
        """Gamma(1 + n / k)."""
        return (n * self.concentration_reciprocal + 1).lgamma().exp()

    @property
    def mean(self):
        return self._gamma_fn(1) * self.scale

    @property
    def mode(self):
        k = self.concentration
        return self.scale * ((k - 1) / k).pow(1 / k)

    @property
    def variance(self):
        g1 = self._gamma_fn(1)
        return self.scale.square() * (self._gamma_fn(2) - g1 * g1)

    def entropy(self):
        """Euler (1 - 1/k) + log(scale / k) + 1."""
        inv_k = self.concentration_reciprocal
        return (1 - inv_k) * euler_constant + (self.scale * inv_k).log() + 1
