"""torch.distributions.cauchy: Cauchy(loc, scale)."""
from __future__ import annotations

import math

import tensorlab as tl

from . import constraints
from .distribution import Distribution
from .utils import _expand_params, _scalar_or_shape, broadcast_all

__all__ = ["Cauchy"]


class Cauchy(Distribution):
    """Cauchy (Lorentz) distribution with median `loc` and half width `scale`."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        x0, gamma = broadcast_all(loc, scale)
        self.loc, self.scale = x0, gamma
        super().__init__(_scalar_or_shape(x0, loc, scale), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """This distribution with parameters expanded to `batch_shape`."""
        return _expand_params(self, Cauchy, batch_shape, _instance, ("loc", "scale"))

    def _constant(self, v):
        x0 = self.loc
        return tl.full(self._extended_shape(), v, dtype=x0.dtype, device=x0.device)

    @property
    def mean(self):
        return self._constant(math.nan)  # undefined

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        return self._constant(math.inf)

    def _standardize(self, value):
        return (value - self.loc) / self.scale

    def rsample(self, sample_shape=tl.Size()):
        """loc + scale * C with C standard Cauchy."""
        x0 = self.loc
        c = tl.empty(self._extended_shape(sample_shape), dtype=x0.dtype, device=x0.device).cauchy_()
        return x0 + self.scale * c

    def log_prob(self, value):
        """-log(pi scale) - log1p(((value - loc) / scale)^2)."""
        if self._validate_args:
            self._validate_sample(value)
        z = self._standardize(value)
        return -(z * z).log1p() - self.scale.log() - math.log(math.pi)

    def cdf(self, value):
        """atan((value - loc) / scale) / pi + 1/2."""
        if self._validate_args:
            self._validate_sample(value)
        return 0.5 + self._standardize(value).atan() / math.pi

    def icdf(self, value):
        """loc + scale tan(pi (value - 1/2))."""
        return self.loc + self.scale * ((value - 0.5) * math.pi).tan()

    def entropy(self):
        """log(4 pi scale)."""
        return self.scale.log() + math.log(4 * math.pi)
