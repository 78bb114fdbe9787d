"""torch.distributions.fishersnedecor: FisherSnedecor(df1, df2) (the F distribution)."""
from __future__ import annotations

import math
from numbers import Number

import tensorlab as tl

from . import constraints
from .distribution import Distribution
from .gamma import Gamma
from .utils import broadcast_all

__all__ = ["FisherSnedecor"]


def _nan_unless(cond, t):
    return tl.where(cond, t, tl.full_like(t, math.nan))


class FisherSnedecor(Distribution):
    """F distribution: (X1 / df1) / (X2 / df2) with X_i ~ Chi2(df_i)."""

    arg_constraints = {"df1": constraints.positive, "df2": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, df1, df2, validate_args=None):
        d1, d2 = broadcast_all(df1, df2)
        self.df1, self.df2 = d1, d2
        # Gamma(df / 2, rate df) is chi2(df) / (2 df); the factor 2 cancels in the ratio
        self._gamma1, self._gamma2 = Gamma(0.5 * d1, d1), Gamma(0.5 * d2, d2)
        scalar = isinstance(df1, Number) and isinstance(df2, Number)
        super().__init__(tl.Size() if scalar else d1.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """This distribution with parameters expanded to `batch_shape`."""
        out = self._get_checked_instance(FisherSnedecor, _instance)
        size = tl.Size(batch_shape)
        for name in ("df1", "df2", "_gamma1", "_gamma2"):
            setattr(out, name, getattr(self, name).expand(size))
        Distribution.__init__(out, size, validate_args=False)
        out._validate_args = self._validate_args
        return out

    @property
    def mean(self):
        d2 = self.df2
        return _nan_unless(d2 > 2, d2 / (d2 - 2))

    @property
    def mode(self):
        d1, d2 = self.df1, self.df2
        return _nan_unless(d1 > 2, (d1 - 2) * d2 / (d1 * (d2 + 2)))

    @property
    def variance(self):
        d1, d2 = self.df1, self.df2
        spread = 2 * d2.square() * (d1 + d2 - 2) / (d1 * (d2 - 2).square() * (d2 - 4))
        return _nan_unless(d2 > 4, spread)

    def rsample(self, sample_shape=tl.Size(())):
        """Ratio of two reparameterized Gamma draws."""
        full = self._extended_shape(sample_shape)
        num = self._gamma1.rsample(sample_shape).view(full)
        den = self._gamma2.rsample(sample_shape).view(full)
        floor = tl.finfo(den.dtype).tiny
        den.detach().clamp_(min=floor)  # keep the ratio finite without touching the gradient path
        ratio = num / den
        ratio.detach().clamp_(min=floor)
        return ratio

    def log_prob(self, value):
        """F log density."""
        if self._validate_args:
            self._validate_sample(value)
        a, b = 0.5 * self.df1, 0.5 * self.df2
        r = self.df1 / self.df2
        log_beta = a.lgamma() + b.lgamma() - (a + b).lgamma()
        return a * r.log() + (a - 1) * value.log() - (a + b) * (r * value).log1p() - log_beta
