"""torch.distributions.fishersnedecor: FisherSnedecor(df1, df2) (the F distribution)."""
from __future__ import annotations

from numbers import Number

import tensorlab as tl

from . import constraints
from .distribution import Distribution
from .gamma import Gamma
from .utils import broadcast_all

__all__ = ["FisherSnedecor"]


class FisherSnedecor(Distribution):
    """F distribution: (X1 / df1) / (X2 / df2) with X_i ~ Chi2(df_i)."""

    arg_constraints = {"df1": constraints.positive, "df2": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, df1, df2, validate_args=None):
        self.df1, self.df2 = broadcast_all(df1, df2)
        self._gamma1 = Gamma(self.df1 * 0.5, self.df1)
        self._gamma2 = Gamma(self.df2 * 0.5, self.df2)
        batch_shape = tl.Size() if isinstance(df1, Number) and isinstance(df2, Number) else self.df1.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """This distribution with parameters expanded to `batch_shape`."""
        new = self._get_checked_instance(FisherSnedecor, _instance)
        batch_shape = tl.Size(batch_shape)
        new.df1 = self.df1.expand(batch_shape)
        new.df2 = self.df2.expand(batch_shape)
        new._gamma1 = self._gamma1.expand(batch_shape)
        new._gamma2 = self._gamma2.expand(batch_shape)
        super(FisherSnedecor, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self):
        df2 = tl.where(self.df2 <= 2, tl.full_like(self.df2, float("nan")), self.df2)
        return df2 / (df2 - 2)

    @property
    def mode(self):
        mode = (self.df1 - 2) / self.df1 * self.df2 / (self.df2 + 2)
        return tl.where(self.df1 <= 2, tl.full_like(mode, float("nan")), mode)

    @property
    def variance(self):
        df2 = tl.where(self.df2 <= 4, tl.full_like(self.df2, float("nan")), self.df2)
        return 2 * df2.pow(2) * (self.df1 + df2 - 2) / (self.df1 * (df2 - 2).pow(2) * (df2 - 4))

    def rsample(self, sample_shape=tl.Size(())):
        """Ratio of two reparameterized Gamma draws."""
        shape = self._extended_shape(sample_shape)
        X1 = self._gamma1.rsample(sample_shape).view(shape)
        X2 = self._gamma2.rsample(sample_shape).view(shape)
        tiny = tl.finfo(X2.dtype).tiny
        X2.detach().clamp_(min=tiny)
        Y = X1 / X2
        Y.detach().clamp_(min=tiny)
        return Y

    def log_prob(self, value):
        """F log density."""
        if self._validate_args:
            self._validate_sample(value)
        half1 = self.df1 * 0.5
        half2 = self.df2 * 0.5
        ratio = self.df1 / self.df2
        norm = (half1 + half2).lgamma() - half1.lgamma() - half2.lgamma()
        return norm + half1 * ratio.log() + (half1 - 1) * tl.log(value) - (half1 + half2) * tl.log1p(ratio * value)
