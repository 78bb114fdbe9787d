"""torch.distributions.log_normal: LogNormal(loc, scale) = exp(Normal(loc, scale))."""
from __future__ import annotations

from . import constraints
from .normal import Normal
from .transformed_distribution import TransformedDistribution
from .transforms import ExpTransform

__all__ = ["LogNormal"]


class LogNormal(TransformedDistribution):
    """exp(X) with X ~ Normal(loc, scale)."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        gauss = Normal(loc, scale, validate_args=validate_args)
        super().__init__(gauss, ExpTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """This distribution with parameters expanded to `batch_shape`."""
        return super().expand(batch_shape, _instance=self._get_checked_instance(LogNormal, _instance))

    @property
    def loc(self):
        return self.base_dist.loc

    @property
    def scale(self):
        return self.base_dist.scale

    @property
    def mean(self):
        return (0.5 * self.scale.square() + self.loc).exp()

    @property
    def mode(self):
        return (self.loc - self.scale.square()).exp()

    @property
    def variance(self):
        s2 = self.scale.square()
        # (e^{s^2} - 1) e^{2 mu + s^2}
        return (self.loc * 2 + s2).exp() * s2.expm1()

    def entropy(self):
        """Normal entropy + loc."""
        return self.loc + self.base_dist.entropy()
