"""torch.distributions.half_cauchy: HalfCauchy(scale) = |Cauchy(0, scale)|."""
from __future__ import annotations

import math

import tensorlab as tl

from . import constraints
from .cauchy import Cauchy
from .transformed_distribution import TransformedDistribution
from .transforms import AbsTransform
from .utils import _FoldedAtZero

__all__ = ["HalfCauchy"]


class HalfCauchy(_FoldedAtZero, TransformedDistribution):
    """|X| with X ~ Cauchy(0, scale)."""

    arg_constraints = {"scale": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, scale, validate_args=None):
        # the base never validates: its support is the whole line, ours is [0, inf)
        super().__init__(Cauchy(0, scale, validate_args=False), AbsTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """This distribution with parameters expanded to `batch_shape`."""
        return super().expand(batch_shape, _instance=self._get_checked_instance(HalfCauchy, _instance))

    @property
    def mean(self):
        s = self.scale
        return tl.full(self._extended_shape(), math.inf, dtype=s.dtype, device=s.device)

    @property
    def variance(self):
        return self.base_dist.variance

    def log_prob(self, value):
        """Cauchy log density + log 2 for value >= 0, -inf below."""
        s = self.scale
        x = value if isinstance(value, tl.Tensor) else tl.tensor(value, dtype=s.dtype, device=s.device)
        if self._validate_args:
            self._validate_sample(x)
        return self._folded_log_density(x)
