"""torch.distributions.gumbel: Gumbel(loc, scale)."""
from __future__ import annotations

import math
from numbers import Number

import tensorlab as tl

from . import constraints
from .transformed_distribution import TransformedDistribution
from .transforms import AffineTransform, ExpTransform
from .uniform import Uniform
from .utils import broadcast_all, euler_constant

__all__ = ["Gumbel"]

_SD_PER_SCALE = math.pi / math.sqrt(6.0)


class Gumbel(TransformedDistribution):
    """Gumbel (type-I extreme value) distribution: loc - scale * log(-log U)."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real

    def __init__(self, loc, scale, validate_args=None):
        mu, beta = broadcast_all(loc, scale)
        self.loc, self.scale = mu, beta
        info = tl.finfo(mu.dtype)
        lo, hi = info.tiny, 1 - info.eps
        if not (isinstance(loc, Number) and isinstance(scale, Number)):
            lo, hi = tl.full_like(mu, lo), tl.full_like(mu, hi)
        unif = Uniform(lo, hi, validate_args=validate_args)
        log = ExpTransform().inv
        # U -> log U -> -log U -> log(-log U) -> loc - scale * log(-log U)
        chain = [log, AffineTransform(0, -tl.ones_like(beta)), log, AffineTransform(mu, -beta)]
        super().__init__(unif, chain, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """This distribution with parameters expanded to `batch_shape`."""
        out = self._get_checked_instance(Gumbel, _instance)
        out.scale, out.loc = self.scale.expand(batch_shape), self.loc.expand(batch_shape)
        return super().expand(batch_shape, _instance=out)

    def log_prob(self, value):
        """z - exp(z) - log(scale) with z = (loc - value) / scale."""
        if self._validate_args:
            self._validate_sample(value)
        z = (self.loc - value) / self.scale
        return z - z.exp() - self.scale.log()

    @property
    def mean(self):
        return euler_constant * self.scale + self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def stddev(self):
        return self.scale * _SD_PER_SCALE

    @property
    def variance(self):
        return self.stddev.square()

    def entropy(self):
        """log(scale) + 1 + Euler's constant."""
        return 1 + euler_constant + self.scale.log()
