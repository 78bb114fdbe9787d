"""torch.distributions.normal: Normal(loc, scale)."""
from __future__ import annotations

import math
from numbers import Real

import tensorlab as tl

from . import constraints
from .exp_family import ExponentialFamily
from .utils import _expand_params, _scalar_or_shape, _standard_normal, broadcast_all

__all__ = ["Normal"]

_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)
_SQRT2 = math.sqrt(2.0)


class Normal(ExponentialFamily):
    """Normal (Gaussian) distribution with mean `loc` and standard deviation `scale`."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(self, loc, scale, validate_args=None):
        mu, sigma = broadcast_all(loc, scale)
        self.loc, self.scale = mu, sigma
        super().__init__(_scalar_or_shape(mu, loc, scale), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """This distribution with parameters expanded to `batch_shape`."""
        return _expand_params(self, Normal, batch_shape, _instance, ("loc", "scale"))

    # location and spread
    mean = property(lambda self: self.loc)
    mode = property(lambda self: self.loc)
    stddev = property(lambda self: self.scale)

    @property
    def variance(self):
        return self.scale.square()

    def sample(self, sample_shape=tl.Size()):
        """Samples outside the autograd graph."""
        full = self._extended_shape(sample_shape)
        with tl.no_grad():
            return tl.normal(self.loc.expand(full), self.scale.expand(full))

    def rsample(self, sample_shape=tl.Size()):
        """loc + scale * eps, eps ~ N(0, 1)."""
        mu = self.loc
        z = _standard_normal(self._extended_shape(sample_shape), dtype=mu.dtype, device=mu.device)
        return mu + self.scale * z

    def log_prob(self, value):
        """Gaussian log density."""
        if self._validate_args:
            self._validate_sample(value)
        s = self.scale
        log_s = s.log() if not isinstance(s, Real) else math.log(s)
        dev = value - self.loc
        return -(dev * dev) / (2 * s * s) - log_s - _HALF_LOG_2PI

    def cdf(self, value):
        """Phi((value - loc) / scale)."""
        if self._validate_args:
            self._validate_sample(value)
        z = (value - self.loc) / self.scale
        return (1 + (z / _SQRT2).erf()) * 0.5

    def icdf(self, value):
        """loc + scale * sqrt(2) * erfinv(2 value - 1)."""
        return self.loc + _SQRT2 * self.scale * (2 * value - 1).erfinv()

    def entropy(self):
        """0.5 + 0.5 log(2 pi) + log(scale)."""
        return self.scale.log() + (0.5 + _HALF_LOG_2PI)

    @property
    def _natural_params(self):
        prec = self.scale.square().reciprocal()
        return self.loc * prec, -0.5 * prec

    def _log_normalizer(self, x, y):
        return 0.5 * (-math.pi / y).log() - 0.25 * x * x / y
