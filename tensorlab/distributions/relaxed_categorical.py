"""torch.distributions.relaxed_categorical: ExpRelaxedCategorical and RelaxedOneHotCategorical (Concrete /
Gumbel-softmax)."""
from __future__ import annotations

import math

import tensorlab as tl

from . import constraints
from .categorical import Categorical
from .distribution import Distribution
from .transformed_distribution import TransformedDistribution
from .transforms import ExpTransform
from .utils import clamp_probs

__all__ = ["RelaxedOneHotCategorical", "ExpRelaxedCategorical"]

_PARAMS = {"probs": constraints.simplex, "logits": constraints.real_vector}


def _log_normalize(s):
    return s - s.logsumexp(dim=-1, keepdim=True)


class ExpRelaxedCategorical(Distribution):
    """Log of a RelaxedOneHotCategorical sample: log_softmax((logits + Gumbel noise) / temperature)."""

    arg_constraints = dict(_PARAMS)
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        self.temperature = temperature
        cat = Categorical(probs=probs, logits=logits)
        self._categorical = cat
        super().__init__(cat.batch_shape, cat.param_shape[-1:], validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """This distribution with parameters expanded to `batch_shape`."""
        out = self._get_checked_instance(ExpRelaxedCategorical, _instance)
        size = tl.Size(batch_shape)
        out._categorical = self._categorical.expand(size)
        out.temperature = self.temperature
        Distribution.__init__(out, size, self.event_shape, validate_args=False)
        out._validate_args = self._validate_args
        return out

    def _new(self, *args, **kwargs):
        return self._categorical._new(*args, **kwargs)

    @property
    def param_shape(self):
        return self._categorical.param_shape

    @property
    def logits(self):
        return self._categorical.logits

    @property
    def probs(self):
        return self._categorical.probs

    def rsample(self, sample_shape=tl.Size()):
        """Gumbel-softmax in log space."""
        lg = self.logits
        u = clamp_probs(tl.rand(self._extended_shape(sample_shape), dtype=lg.dtype, device=lg.device))
        g = -(-u.log()).log()  # standard Gumbel noise
        return _log_normalize((g + lg) / self.temperature)

    def log_prob(self, value):
        """The Concrete density in log space."""
        if self._validate_args:
            self._validate_sample(value)
        k = self._categorical._num_events
        t = self.temperature
        # log (K-1)! + (K-1) log t
        norm = (k - 1) * t.log() + math.lgamma(k)
        return _log_normalize(self.logits - t * value).sum(-1) + norm


class RelaxedOneHotCategorical(TransformedDistribution):
    """Concrete distribution on the simplex: exp of an ExpRelaxedCategorical sample."""

    arg_constraints = dict(_PARAMS)
    support = constraints.simplex
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        inner = ExpRelaxedCategorical(temperature, probs=probs, logits=logits, validate_args=validate_args)
        super().__init__(inner, ExpTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """This distribution with parameters expanded to `batch_shape`."""
        return super().expand(batch_shape, _instance=self._get_checked_instance(RelaxedOneHotCategorical, _instance))

    @property
    def temperature(self):
        return self.base_dist.temperature

    @property
    def logits(self):
        return self.base_dist.logits

    @property
    def probs(self):
        return self.base_dist.probs
