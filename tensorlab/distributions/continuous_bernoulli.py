"""torch.distributions.continuous_bernoulli: ContinuousBernoulli(probs | logits) on [0, 1]."""
from __future__ import annotations

import math
from numbers import Number

import tensorlab as tl
import tensorlab.nn.functional as F

from . import constraints
from .exp_family import ExponentialFamily
from .utils import broadcast_all, clamp_probs, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["ContinuousBernoulli"]


class ContinuousBernoulli(ExponentialFamily):
    """Density proportional to p^x (1 - p)^(1 - x) on [0, 1] (Loaiza-Ganem and Cunningham, 2019).

    Near p = 1/2 (inside `lims`) the normalizer and moments use their Taylor expansions, as torch does."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    _mean_carrier_measure = 0
    has_rsample = True

    def __init__(self, probs=None, logits=None, lims=(0.499, 0.501), validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            is_scalar = isinstance(probs, Number)
            (self.probs,) = broadcast_all(probs)
            if validate_args is not None:
                if not bool(self.arg_constraints["probs"].check(self.probs).all()):
                    raise ValueError("The parameter probs has invalid values")
            self.probs = clamp_probs(self.probs)
        else:
            is_scalar = isinstance(logits, Number)
            (self.logits,) = broadcast_all(logits)
        self._param = self.probs if probs is not None else self.logits
        batch_shape = tl.Size() if is_scalar else self._param.size()
        self._lims = lims
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """This distribution with parameters expanded to `batch_shape`."""
        new = self._get_checked_instance(ContinuousBernoulli, _instance)
        new._lims = self._lims
        batch_shape = tl.Size(batch_shape)
        if "probs" in self.__dict__:
            new.probs = self.probs.expand(batch_shape)
            new._param = new.probs
        if "logits" in self.__dict__:
            new.logits = self.logits.expand(batch_shape)
            new._param = new.logits
        super(ContinuousBernoulli, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _new(self, *args, **kwargs):
        return self._param.new(*args, **kwargs)

    def _outside_unstable_region(self):
        return (self.probs <= self._lims[0]) | (self.probs > self._lims[1])

    def _cut_probs(self):
        return tl.where(self._outside_unstable_region(), self.probs, self._lims[0] * tl.ones_like(self.probs))

    def _cont_bern_log_norm(self):
        """log of the normalizing constant as a function of probs."""
        cut_probs = self._cut_probs()
        below = tl.where(cut_probs <= 0.5, cut_probs, tl.zeros_like(cut_probs))
        above = tl.where(cut_probs >= 0.5, cut_probs, tl.ones_like(cut_probs))
        log_norm = tl.log(tl.abs(tl.log1p(-cut_probs) - tl.log(cut_probs))) - tl.where(
            cut_probs <= 0.5, tl.log1p(-2.0 * below), tl.log(2.0 * above - 1.0))
        x = (self.probs - 0.5).pow(2)
        taylor = math.log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * x) * x
        return tl.where(self._outside_unstable_region(), log_norm, taylor)

    @property
    def mean(self):
        cut_probs = self._cut_probs()
        mus = cut_probs / (2.0 * cut_probs - 1.0) + 1.0 / (tl.log1p(-cut_probs) - tl.log(cut_probs))
        x = self.probs - 0.5
        taylor = 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * x.pow(2)) * x
        return tl.where(self._outside_unstable_region(), mus, taylor)

    @property
    def stddev(self):
        return tl.sqrt(self.variance)

    @property
    def variance(self):
        cut_probs = self._cut_probs()
        vars_ = (cut_probs * (cut_probs - 1.0) / (1.0 - 2.0 * cut_probs).pow(2)
                 + 1.0 / (tl.log1p(-cut_probs) - tl.log(cut_probs)).pow(2))
        x = (self.probs - 0.5).pow(2)
        taylor = 1.0 / 12.0 - (1.0 / 15.0 - 128.0 / 945.0 * x) * x
        return tl.where(self._outside_unstable_region(), vars_, taylor)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return clamp_probs(logits_to_probs(self.logits, is_binary=True))

    @property
    def param_shape(self):
        return self._param.size()

    def sample(self, sample_shape=tl.Size()):
        """icdf of uniforms, outside the graph."""
        shape = self._extended_shape(sample_shape)
        u = tl.rand(shape, dtype=self.probs.dtype, device=self.probs.device)
        with tl.no_grad():
            return self.icdf(u)

    def rsample(self, sample_shape=tl.Size()):
        """icdf of uniforms (differentiable in the parameters)."""
        shape = self._extended_shape(sample_shape)
        u = tl.rand(shape, dtype=self.probs.dtype, device=self.probs.device)
        return self.icdf(u)

    def log_prob(self, value):
        """-BCE-with-logits(logits, value) + log normalizer."""
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return -F.binary_cross_entropy_with_logits(logits, value, reduction="none") + self._cont_bern_log_norm()

    def cdf(self, value):
        """(p^x (1 - p)^(1 - x) + p - 1) / (2p - 1), x outside the unstable region."""
        if self._validate_args:
            self._validate_sample(value)
        cut_probs = self._cut_probs()
        cdfs = (cut_probs.pow(value) * (1.0 - cut_probs).pow(1.0 - value) + cut_probs - 1.0) / (2.0 * cut_probs - 1.0)
        unbounded_cdfs = tl.where(self._outside_unstable_region(), cdfs, value)
        return tl.where(value <= 0.0, tl.zeros_like(value),
                        tl.where(value >= 1.0, tl.ones_like(value), unbounded_cdfs))

    def icdf(self, value):
        """Inverse of cdf."""
        cut_probs = self._cut_probs()
        return tl.where(self._outside_unstable_region(),
                        (tl.log1p(-cut_probs + value * (2.0 * cut_probs - 1.0)) - tl.log1p(-cut_probs))
                        / (tl.log(cut_probs) - tl.log1p(-cut_probs)),
                        value)

    def entropy(self):
        """mean (log(1 - p) - log p) - log normalizer - log(1 - p)."""
        log_probs0 = tl.log1p(-self.probs)
        log_probs1 = tl.log(self.probs)
        return self.mean * (log_probs0 - log_probs1) - self._cont_bern_log_norm() - log_probs0

    @property
    def _natural_params(self):
        return (self.logits,)

    def _log_normalizer(self, x):
        out_unst_reg = (x <= self._lims[0] - 0.5) | (x > self._lims[1] - 0.5)
        cut_nat_params = tl.where(out_unst_reg, x, (self._lims[0] - 0.5) * tl.ones_like(x))
        log_norm = tl.log(tl.abs(tl.exp(cut_nat_params) - 1.0)) - tl.log(tl.abs(cut_nat_params))
        taylor = 0.5 * x + x.pow(2) / 24.0 - x.pow(4) / 2880.0
        return tl.where(out_unst_reg, log_norm, taylor)
