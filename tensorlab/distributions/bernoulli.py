"""torch.distributions.bernoulli: Bernoulli(probs | logits)."""
from __future__ import annotations

import math

import tensorlab as tl
import tensorlab.nn.functional as F

from . import constraints
from .exp_family import ExponentialFamily
from .utils import (_expand_params, _leading_support, _one_of_probs_logits, _scalar_or_shape, broadcast_all,
                    lazy_property, logits_to_probs, probs_to_logits)

__all__ = ["Bernoulli"]


class Bernoulli(ExponentialFamily):
    """Bernoulli distribution over {0, 1}, parameterized by `probs` or by `logits` (exactly one)."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.boolean
    has_enumerate_support = True
    _mean_carrier_measure = 0

    def __init__(self, probs=None, logits=None, validate_args=None):
        name, given = _one_of_probs_logits(probs, logits)
        (t,) = broadcast_all(given)
        setattr(self, name, t)
        self._param = t
        super().__init__(_scalar_or_shape(t, given), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """This distribution with parameters expanded to `batch_shape`."""
        return _expand_params(self, Bernoulli, batch_shape, _instance, ("probs", "logits"))

    def _new(self, *args, **kwargs):
        return self._param.new(*args, **kwargs)

    @property
    def mean(self):
        return self.probs

    @property
    def mode(self):
        p = self.probs
        # a fair coin has no single mode
        return tl.where(p == 0.5, tl.full_like(p, math.nan), (p > 0.5).to(p.dtype))

    @property
    def variance(self):
        p = self.probs
        return p - p * p

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, True)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits, True)

    @property
    def param_shape(self):
        return self._param.size()

    def sample(self, sample_shape=tl.Size()):
        """0/1 samples in the parameter's dtype."""
        p = self.probs.expand(self._extended_shape(sample_shape))
        with tl.no_grad():
            return tl.bernoulli(p)

    def log_prob(self, value):
        """-BCE-with-logits(logits, value)."""
        if self._validate_args:
            self._validate_sample(value)
        lg, x = broadcast_all(self.logits, value)
        return F.binary_cross_entropy_with_logits(lg, x, reduction="none").neg()

    def entropy(self):
        """BCE-with-logits(logits, probs)."""
        return F.binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none")

    def enumerate_support(self, expand=True):
        """[0, 1] along a new leading dim."""
        return _leading_support(2, self._param, self._batch_shape, expand)

    @property
    def _natural_params(self):
        return (tl.logit(self.probs),)

    def _log_normalizer(self, x):
        return x.exp().log1p()
