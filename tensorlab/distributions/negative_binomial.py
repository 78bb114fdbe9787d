"""torch.distributions.negative_binomial: NegativeBinomial(total_count, probs | logits)."""
from __future__ import annotations

import tensorlab as tl
import tensorlab.nn.functional as F

from . import constraints
from .distribution import Distribution
from .gamma import Gamma
from .utils import (_expand_params, _one_of_probs_logits, broadcast_all, lazy_property, logits_to_probs,
                    probs_to_logits)

__all__ = ["NegativeBinomial"]


class NegativeBinomial(Distribution):
    """Number of successes before `total_count` failures of Bernoulli(probs) trials."""

    arg_constraints = {"total_count": constraints.greater_than_eq(0),
                       "probs": constraints.half_open_interval(0.0, 1.0), "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, total_count, probs=None, logits=None, validate_args=None):
        name, given = _one_of_probs_logits(probs, logits)
        r, t = broadcast_all(total_count, given)
        self.total_count = r.to(t.dtype)
        setattr(self, name, t)
        self._param = t
        super().__init__(t.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """This distribution with parameters expanded to `batch_shape`."""
        return _expand_params(self, NegativeBinomial, batch_shape, _instance, ("total_count", "probs", "logits"))

    def _new(self, *args, **kwargs):
        return self._param.new(*args, **kwargs)

    @property
    def _odds(self):
        return self.logits.exp()  # p / (1 - p)

    @property
    def mean(self):
        return self._odds * self.total_count

    @property
    def mode(self):
        return (self._odds * (self.total_count - 1)).floor().clamp(min=0.0)

    @property
    def variance(self):
        # mean / (1 - p)
        return self.mean / (-self.logits).sigmoid()

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, True)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits, True)

    @property
    def param_shape(self):
        return self._param.size()

    @lazy_property
    def _gamma(self):
        # Poisson-Gamma mixture: the Poisson rate ~ Gamma(r, rate (1 - p) / p)
        return Gamma(self.total_count, (-self.logits).exp(), validate_args=False)

    def sample(self, sample_shape=tl.Size()):
        """Poisson(Gamma(total_count, exp(-logits))) draws."""
        with tl.no_grad():
            return tl.poisson(self._gamma.sample(sample_shape))

    def log_prob(self, value):
        """r log(1 - p) + k log p + lgamma(r + k) - lgamma(k + 1) - lgamma(r) (0 when r + k = 0)."""
        if self._validate_args:
            self._validate_sample(value)
        r, lg = self.total_count, self.logits
        kernel = r * F.logsigmoid(-lg) + value * F.logsigmoid(lg)
        log_coef = (r + value).lgamma() - (value + 1.0).lgamma() - r.lgamma()
        # r + k = 0 is the point mass at 0: coefficient 1
        log_coef = log_coef.masked_fill(r + value == 0.0, 0.0)
        return kernel + log_coef
