"""torch.distributions.studentT: StudentT(df, loc, scale)."""
from __future__ import annotations

import math

import tensorlab as tl

from . import constraints
from .chi2 import Chi2
from .distribution import Distribution
from .utils import _standard_normal, broadcast_all

__all__ = ["StudentT"]


class StudentT(Distribution):
    """Student's t distribution with `df` degrees of freedom, location `loc`, scale `scale`."""

    arg_constraints = {"df": constraints.positive, "loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    @property
    def mean(self):
        return tl.where(self.df <= 1, tl.full_like(self.loc, float("nan")), self.loc)

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        df = self.df
        finite = self.scale.pow(2) * df / (df - 2)
        m = tl.where(df > 2, finite, tl.full_like(finite, math.inf))
        return tl.where(df <= 1, tl.full_like(finite, float("nan")), m)

    def __init__(self, df, loc=0.0, scale=1.0, validate_args=None):
        self.df, self.loc, self.scale = broadcast_all(df, loc, scale)
        self._chi2 = Chi2(self.df)
        batch_shape = self.df.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """This distribution with parameters expanded to `batch_shape`."""
        new = self._get_checked_instance(StudentT, _instance)
        batch_shape = tl.Size(batch_shape)
        new.df = self.df.expand(batch_shape)
        new.loc = self.loc.expand(batch_shape)
        new.scale = self.scale.expand(batch_shape)
        new._chi2 = self._chi2.expand(batch_shape)
        super(StudentT, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def rsample(self, sample_shape=tl.Size()):
        """loc + scale * X / sqrt(Z / df), X ~ N(0, 1), Z ~ Chi2(df)."""
        shape = self._extended_shape(sample_shape)
        X = _standard_normal(shape, dtype=self.df.dtype, device=self.df.device)
        Z = self._chi2.rsample(sample_shape)
        Y = X * tl.rsqrt(Z / self.df)
        return self.loc + self.scale * Y

    def log_prob(self, value):
        """Student-t log density."""
        if self._validate_args:
            self._validate_sample(value)
        y = (value - self.loc) / self.scale
        Z = (self.scale.log() + 0.5 * self.df.log() + 0.5 * math.log(math.pi) + tl.lgamma(0.5 * self.df)
             - tl.lgamma(0.5 * (self.df + 1.0)))
        return -0.5 * (self.df + 1.0) * tl.log1p(y ** 2.0 / self.df) - Z

    def entropy(self):
        """Closed form over digamma and the log Beta function."""
        lbeta = tl.lgamma(0.5 * self.df) + math.lgamma(0.5) - tl.lgamma(0.5 * (self.df + 1))
        return (self.scale.log() + 0.5 * (self.df + 1) * (tl.digamma(0.5 * (self.df + 1)) - tl.digamma(0.5 * self.df))
                + 0.5 * self.df.log() + lbeta)
