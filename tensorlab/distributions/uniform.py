"""torch.distributions.uniform: Uniform(low, high) on [low, high)."""
from __future__ import annotations

import math

import tensorlab as tl

from . import constraints
from .distribution import Distribution
from .utils import _expand_params, _scalar_or_shape, broadcast_all

__all__ = ["Uniform"]

_ANY_REAL = constraints.dependent(is_discrete=False, event_dim=0)


class Uniform(Distribution):
    """Continuous uniform distribution on the half-open interval [low, high)."""

    arg_constraints = {"low": _ANY_REAL, "high": _ANY_REAL}
    has_rsample = True

    def __init__(self, low, high, validate_args=None):
        a, b = broadcast_all(low, high)
        self.low, self.high = a, b
        super().__init__(_scalar_or_shape(a, low, high), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """This distribution with parameters expanded to `batch_shape`."""
        return _expand_params(self, Uniform, batch_shape, _instance, ("low", "high"))

    @property
    def _width(self):
        return self.high - self.low

    @property
    def mean(self):
        return 0.5 * (self.low + self.high)

    @property
    def mode(self):
        return self.high * math.nan

    @property
    def stddev(self):
        return self._width / math.sqrt(12.0)

    @property
    def variance(self):
        return self._width.square() / 12

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        return constraints.interval(lower_bound=self.low, upper_bound=self.high)

    def rsample(self, sample_shape=tl.Size()):
        """low + U * (high - low), U ~ U[0, 1)."""
        a = self.low
        u = tl.rand(self._extended_shape(sample_shape), dtype=a.dtype, device=a.device)
        return self.icdf(u)

    def log_prob(self, value):
        """-log(high - low) inside [low, high), -inf outside."""
        if self._validate_args:
            self._validate_sample(value)
        inside = ((value >= self.low) & (value < self.high)).to(self.low.dtype)
        return inside.log() - self._width.log()

    def cdf(self, value):
        """(value - low) / (high - low), clamped to [0, 1]."""
        if self._validate_args:
            self._validate_sample(value)
        return ((value - self.low) / self._width).clamp(min=0, max=1)

    def icdf(self, value):
        """low + value * (high - low)."""
        return self.low + self._width * value

    def entropy(self):
        """log(high - low)."""
        return self._width.log()
