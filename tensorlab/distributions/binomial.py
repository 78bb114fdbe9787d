"""torch.distributions.binomial: Binomial(total_count, probs | logits)."""
from __future__ import annotations

import tensorlab as tl

from . import constraints
from .distribution import Distribution
from .utils import (_expand_params, _leading_support, _one_of_probs_logits, broadcast_all, lazy_property,
                    logits_to_probs, probs_to_logits)

__all__ = ["Binomial"]


class Binomial(Distribution):
    """Number of successes in `total_count` Bernoulli(probs) trials."""

    arg_constraints = {"total_count": constraints.nonnegative_integer, "probs": constraints.unit_interval,
                       "logits": constraints.real}
    has_enumerate_support = True

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        name, given = _one_of_probs_logits(probs, logits)
        n, t = broadcast_all(total_count, given)
        self.total_count = n.to(t.dtype)
        setattr(self, name, t)
        self._param = t
        super().__init__(t.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """This distribution with parameters expanded to `batch_shape`."""
        return _expand_params(self, Binomial, batch_shape, _instance, ("total_count", "probs", "logits"))

    def _new(self, *args, **kwargs):
        return self._param.new(*args, **kwargs)

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self.total_count)

    @property
    def mean(self):
        return self.probs * self.total_count

    @property
    def mode(self):
        n = self.total_count
        return (self.probs * (n + 1)).floor().clamp(max=n)

    @property
    def variance(self):
        p = self.probs
        return self.total_count * p * (1 - p)

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
        """Counts (in the parameters' dtype) from tensorlab's binomial sampler."""
        full = self._extended_shape(sample_shape)
        n, p = self.total_count.expand(full), self.probs.expand(full)
        with tl.no_grad():
            return tl.binomial(n, p)

    def log_prob(self, value):
        """log C(n, k) + k logit - n softplus(logit), written stably for either sign of the logit."""
        if self._validate_args:
            self._validate_sample(value)
        n, lg = self.total_count, self.logits
        log_choose = (n + 1).lgamma() - (value + 1).lgamma() - (n - value + 1).lgamma()
        # n * softplus(lg) = n * (max(lg, 0) + log1p(exp(-|lg|))); the max is taken halfway (x + |x|)/2 style
        # so that lg = -inf with n = 0 stays finite
        pos_part = (lg.clamp(min=0) + lg - lg.clamp(max=0)) * 0.5
        return log_choose + value * lg - n * pos_part - n * (-lg.abs()).exp().log1p()

    def _common_count(self, what):
        hi = int(self.total_count.max())
        if int(self.total_count.min()) != hi:
            raise NotImplementedError(f"Inhomogeneous total count not supported by `{what}`.")
        return hi

    def entropy(self):
        """-sum p log p over the support (total_count must be the same everywhere)."""
        self._common_count("entropy")
        lp = self.log_prob(self.enumerate_support(False))
        return -(lp.exp() * lp).sum(0)

    def enumerate_support(self, expand=True):
        """0..total_count along a new leading dim (total_count must be the same everywhere)."""
        n = self._common_count("enumerate_support")
        return _leading_support(n + 1, self._param, self._batch_shape, expand)
