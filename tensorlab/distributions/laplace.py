"""torch.distributions.laplace: Laplace(loc, scale)."""
from __future__ import annotations

from numbers import Number

import tensorlab as tl

from . import constraints
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["Laplace"]


class Laplace(Distribution):
    """Laplace distribution: density exp(-|x - loc| / scale) / (2 scale)."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        return 2 * self.scale.pow(2)

    @property
    def stddev(self):
        return (2 ** 0.5) * self.scale

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all(loc, scale)
        batch_shape = tl.Size() if isinstance(loc, Number) and isinstance(scale, Number) else self.loc.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """This distribution with parameters expanded to `batch_shape`."""
        new = self._get_checked_instance(Laplace, _instance)
        batch_shape = tl.Size(batch_shape)
        new.loc = self.loc.expand(batch_shape)
        new.scale = self.scale.expand(batch_shape)
        super(Laplace, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def rsample(self, sample_shape=tl.Size()):
        """Inverse-cdf sampling from U(eps - 1, 1)."""
        shape = self._extended_shape(sample_shape)
        finfo = tl.finfo(self.loc.dtype)
        u = tl.empty(shape, dtype=self.loc.dtype, device=self.loc.device).uniform_(finfo.eps - 1, 1)
        return self.loc - self.scale * u.sign() * tl.log1p(-u.abs())

    def log_prob(self, value):
        """-log(2 scale) - |value - loc| / scale."""
        if self._validate_args:
            self._validate_sample(value)
        return -tl.log(2 * self.scale) - tl.abs(value - self.loc) / self.scale

    def cdf(self, value):
        """0.5 - 0.5 sign(value - loc) expm1(-|value - loc| / scale)."""
        if self._validate_args:
            self._validate_sample(value)
        return 0.5 - 0.5 * (value - self.loc).sign() * tl.expm1(-(value - self.loc).abs() / self.scale)

    def icdf(self, value):
        """loc - scale sign(value - 0.5) log1p(-2 |value - 0.5|)."""
        term = value - 0.5
        return self.loc - self.scale * (term).sign() * tl.log1p(-2 * term.abs())

    def entropy(self):
        """1 + log(2 scale)."""
        return 1 + tl.log(2 * self.scale)
