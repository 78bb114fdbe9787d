"""torch.distributions.logistic_normal: LogisticNormal(loc, scale) on the simplex."""
from __future__ import annotations

from . import constraints
from .normal import Normal
from .transformed_distribution import TransformedDistribution
from .transforms import StickBreakingTransform

__all__ = ["LogisticNormal"]


class LogisticNormal(TransformedDistribution):
    """StickBreakingTransform of a Normal(loc, scale) vector: a distribution on the K+1 simplex."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        gauss = Normal(loc, scale, validate_args=validate_args)
        if len(gauss.batch_shape) == 0:
            # stick breaking needs at least one dim to act on
            gauss = gauss.expand((1,))
        super().__init__(gauss, StickBreakingTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """This distribution with parameters expanded to `batch_shape`."""
        return super().expand(batch_shape, _instance=self._get_checked_instance(LogisticNormal, _instance))

    def _normal(self):
        # base_dist is Independent(Normal, 1)
        return self.base_dist.base_dist

    @property
    def loc(self):
        return self._normal().loc

    @property
    def scale(self):
        return self._normal().scale
