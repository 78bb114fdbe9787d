"""torch.distributions.generalized_pareto: GeneralizedPareto(loc, scale, concentration)."""
from __future__ import annotations

import math
import tensorlab as tl

from . import constraints
from .distribution import Distribution
from .utils import _expand_params, _scalar_or_shape, broadcast_all

__all__ = ["GeneralizedPareto"]


class GeneralizedPareto(Distribution):
    """Generalized Pareto distribution: survival (1 + xi z)^(-1/xi), z = (x - loc) / scale, xi = concentration
    (exp(-z) at xi = 0). Exponential, Pareto and Uniform are special cases."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive, "concentration": constraints.real}
    has_rsample = True

    def __init__(self, loc, scale, concentration, validate_args=None):
        mu, sigma, xi = broadcast_all(loc, scale, concentration)
        self.loc, self.scale, self.concentration = mu, sigma, xi
        super().__init__(_scalar_or_shape(mu, loc, scale, concentration), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """This distribution with parameters expanded to `batch_shape`."""
        return _expand_params(self, GeneralizedPareto, batch_shape, _instance, ("loc", "scale", "concentration"))

    def _xi(self):
        """(xi == 0 mask, xi with zeros replaced by one) so both branches stay finite."""
        xi = self.concentration
        is_zero = tl.isclose(xi, tl.zeros_like(xi))
        return is_zero, tl.where(is_zero, tl.ones_like(xi), xi)

    def rsample(self, sample_shape=tl.Size()):
        """icdf of uniforms."""
        mu = self.loc
        return self.icdf(tl.rand(self._extended_shape(sample_shape), dtype=mu.dtype, device=mu.device))

    def log_prob(self, value):
        """-log scale - (1 + 1/xi) log1p(xi z), or -log scale - z at xi = 0."""
        if self._validate_args:
            self._validate_sample(value)
        z = (value - self.loc) / self.scale
        is_zero, xi = self._xi()
        power = 1 / xi + tl.ones_like(z)
        term = tl.where(power == 0, power, power * tl.log1p(xi * z))  # xi = -1 (uniform): no 0 * log 0
        return -self.scale.log() - tl.where(is_zero, z, term)

    def log_survival_function(self, value):
        """log P(X > value)."""
        if self._validate_args:
            self._validate_sample(value)
        z = (value - self.loc) / self.scale
        is_zero, xi = self._xi()
        return tl.where(is_zero, -z, -tl.log1p(xi * z) / xi)

    def log_cdf(self, value):
        """log P(X <= value)."""
        return tl.log1p(-tl.exp(self.log_survival_function(value)))

    def cdf(self, value):
        """P(X <= value)."""
        return tl.exp(self.log_cdf(value))

    def icdf(self, value):
        """loc + scale expm1(-xi log(1 - u)) / xi, or loc - scale log(1 - u) at xi = 0."""
        is_zero, xi = self._xi()
        log1mu = tl.log1p(-value)
        return tl.where(is_zero, self.loc - self.scale * log1mu,
                        self.loc + self.scale / xi * tl.expm1(-xi * log1mu))

    @property
    def mean(self):
        valid = self.concentration < 1
        xi = tl.where(valid, self.concentration, tl.full_like(self.concentration, 0.5))
        result = self.loc + self.scale / (1 - xi)
        return tl.where(valid, result, tl.full_like(result, math.nan))

    @property
    def variance(self):
        valid = self.concentration < 0.5
        xi = tl.where(valid, self.concentration, tl.full_like(self.concentration, 0.25))
        result = self.scale ** 2 / ((1 - xi) ** 2 * (1 - 2 * xi))
        return tl.where(valid, result, tl.full_like(result, math.nan))

    def entropy(self):
        """log scale + xi + 1."""
        return (tl.log(self.scale) + self.concentration + 1).expand(self._batch_shape)

    @property
    def mode(self):
        return self.loc

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        # bounded above only for negative concentration
        xi = self.concentration
        top = tl.where(xi < 0, self.loc - self.scale / xi, tl.full_like(self.loc, math.inf))
        return constraints.interval(self.loc, top)
