"""torch.distributions.half_normal: HalfNormal(scale) = |Normal(0, scale)|."""
from __future__ import annotations

import math

from . import constraints
from .normal import Normal
from .transformed_distribution import TransformedDistribution
from .transforms import AbsTransform
from .utils import _FoldedAtZero

__all__ = ["HalfNormal"]


class HalfNormal(_FoldedAtZero, TransformedDistribution):
    """|X| with X ~ Normal(0, scale)."""

    arg_constraints = {"scale": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, scale, validate_args=None):
        # the base never validates: its support is the whole line, ours is [0, inf)
        super().__init__(Normal(0, scale, validate_args=False), AbsTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """This distribution with parameters expanded to `batch_shape`."""
        return super().expand(batch_shape, _instance=self._get_checked_instance(HalfNormal, _instance))

    @property
    def mean(self):
        return math.sqrt(2 / math.pi) * self.scale

    @property
    def variance(self):
        return (1 - 2 / math.pi) * self.scale.square()

    def log_prob(self, value):
        """Normal log density + log 2 for value >= 0, -inf below."""
        if self._validate_args:
            self._validate_sample(value)
        return self._folded_log_density(value)
