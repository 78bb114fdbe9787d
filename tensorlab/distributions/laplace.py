"""torch.distributions.laplace: Laplace(loc, scale)."""
from __future__ import annotations

import math

import tensorlab as tl

from . import constraints
from .distribution import Distribution
from .utils import _expand_params, _scalar_or_shape, broadcast_all

__all__ = ["Laplace"]


class Laplace(Distribution):
    """Laplace distribution: density exp(-|x - loc| / scale) / (2 scale)."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        mu, b = broadcast_all(loc, scale)
        self.loc, self.scale = mu, b
        super().__init__(_scalar_or_shape(mu, loc, scale), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """This distribution with parameters expanded to `batch_shape`."""
        return _expand_params(self, Laplace, batch_shape, _instance, ("loc", "scale"))

    mean = property(lambda self: self.loc)
    mode = property(lambda self: self.loc)

    @property
    def variance(self):
        return self.scale.square() * 2

    @property
    def stddev(self):
        return math.sqrt(2.0) * self.scale

    def _from_signed_unit(self, t):
        """loc - scale * sign(t) log(1 - |t|) for t in (-1, 1): the inverse cdf at (1 + t) / 2."""
        return self.loc - self.scale * t.sign() * (-t.abs()).log1p()

    def rsample(self, sample_shape=tl.Size()):
        """Inverse-cdf sampling from U(eps - 1, 1)."""
        mu = self.loc
        t = tl.empty(self._extended_shape(sample_shape), dtype=mu.dtype, device=mu.device)
        t.uniform_(tl.finfo(mu.dtype).eps - 1, 1)
        return self._from_signed_unit(t)

    def log_prob(self, value):
        """-log(2 scale) - |value - loc| / scale."""
        if self._validate_args:
            self._validate_sample(value)
        return -(value - self.loc).abs() / self.scale - (2 * self.scale).log()

    def cdf(self, value):
        """0.5 - 0.5 sign(value - loc) expm1(-|value - loc| / scale)."""
        if self._validate_args:
            self._validate_sample(value)
        d = value - self.loc
        return 0.5 * (1 - d.sign() * (-d.abs() / self.scale).expm1())

    def icdf(self, value):
        """loc - scale sign(value - 0.5) log1p(-2 |value - 0.5|)."""
        return self._from_signed_unit(2 * value - 1)

    def entropy(self):
        """1 + log(2 scale)."""
        return (2 * self.scale).log() + 1
