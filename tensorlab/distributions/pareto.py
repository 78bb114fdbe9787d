"""torch.distributions.pareto: Pareto(scale, alpha) = scale * exp(Exponential(alpha))."""
from __future__ import annotations

from . import constraints
from .exponential import Exponential
from .transformed_distribution import TransformedDistribution
from .transforms import AffineTransform, ExpTransform
from .utils import broadcast_all

__all__ = ["Pareto"]


class Pareto(TransformedDistribution):
    """Pareto type-1 distribution with minimum `scale` and tail index `alpha`."""

    arg_constraints = {"alpha": constraints.positive, "scale": constraints.positive}

    def __init__(self, scale, alpha, validate_args=None):
        xm, tail = broadcast_all(scale, alpha)
        self.scale, self.alpha = xm, tail
        # log(X / xm) ~ Exponential(alpha)
        chain = [ExpTransform(), AffineTransform(0, xm)]
        super().__init__(Exponential(tail, validate_args=validate_args), chain, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """This distribution with parameters expanded to `batch_shape`."""
        out = self._get_checked_instance(Pareto, _instance)
        out.alpha, out.scale = (p.expand(batch_shape) for p in (self.alpha, self.scale))
        return super().expand(batch_shape, _instance=out)

    @property
    def mean(self):
        k = self.alpha.clamp(min=1)  # k == 1 -> inf
        return self.scale * k / (k - 1)

    @property
    def mode(self):
        return self.scale

    @property
    def variance(self):
        k = self.alpha.clamp(min=2)  # k == 2 -> inf
        km1 = k - 1
        return k * self.scale.square() / (km1 * km1 * (k - 2))

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        return constraints.greater_than_eq(lower_bound=self.scale)

    def entropy(self):
        """log(scale / alpha) + 1 + 1 / alpha."""
        inv = 1.0 / self.alpha
        return self.scale.log() - self.alpha.log() + inv + 1
