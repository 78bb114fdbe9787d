"""torch.distributions.studentT: StudentT(df, loc, scale)."""
from __future__ import annotations

import math

import tensorlab as tl

from . import constraints
from .chi2 import Chi2
from .distribution import Distribution
from .utils import _expand_params, _standard_normal, broadcast_all

__all__ = ["StudentT"]

_HALF_LOG_PI = 0.5 * math.log(math.pi)


class StudentT(Distribution):
    """Student's t distribution with `df` degrees of freedom, location `loc`, scale `scale`."""

    arg_constraints = {"df": constraints.positive, "loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, df, loc=0.0, scale=1.0, validate_args=None):
        nu, mu, sigma = broadcast_all(df, loc, scale)
        self.df, self.loc, self.scale = nu, mu, sigma
        self._chi2 = Chi2(nu)
        super().__init__(nu.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """This distribution with parameters expanded to `batch_shape`."""
        return _expand_params(self, StudentT, batch_shape, _instance, ("df", "loc", "scale", "_chi2"))

    @property
    def mean(self):
        # undefined for df <= 1
        return tl.where(self.df > 1, self.loc, tl.full_like(self.loc, math.nan))

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        nu = self.df
        v = self.scale.square() * nu / (nu - 2)
        v = tl.where(nu <= 2, tl.full_like(v, math.inf), v)  # infinite for 1 < df <= 2
        return tl.where(nu > 1, v, tl.full_like(v, math.nan))

    def rsample(self, sample_shape=tl.Size()):
        """loc + scale * X / sqrt(Z / df), X ~ N(0, 1), Z ~ Chi2(df)."""
        nu = self.df
        g = _standard_normal(self._extended_shape(sample_shape), dtype=nu.dtype, device=nu.device)
        chi = self._chi2.rsample(sample_shape)
        return self.loc + self.scale * g * (chi / nu).rsqrt()

    def log_prob(self, value):
        """Student-t log density."""
        if self._validate_args:
            self._validate_sample(value)
        nu = self.df
        z = (value - self.loc) / self.scale
        log_norm = (self.scale.log() + 0.5 * nu.log() + _HALF_LOG_PI
                    + (0.5 * nu).lgamma() - (0.5 * (nu + 1.0)).lgamma())
        return (z * z / nu).log1p() * (-0.5 * (nu + 1.0)) - log_norm

    def entropy(self):
        """Closed form over digamma and the log Beta function."""
        half, half_up = 0.5 * self.df, 0.5 * (self.df + 1)
        log_b = half.lgamma() + math.lgamma(0.5) - half_up.lgamma()
        return self.scale.log() + half_up * (half_up.digamma() - half.digamma()) + 0.5 * self.df.log() + log_b
