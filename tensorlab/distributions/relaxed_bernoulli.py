"""torch.distributions.relaxed_bernoulli: LogitRelaxedBernoulli and RelaxedBernoulli (binary Concrete)."""
from __future__ import annotations

from numbers import Number

import tensorlab as tl

from . import constraints
from .distribution import Distribution
from .transformed_distribution import TransformedDistribution
from .transforms import SigmoidTransform
from .utils import broadcast_all, clamp_probs, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["RelaxedBernoulli", "LogitRelaxedBernoulli"]

_PARAMS = {"probs": constraints.unit_interval, "logits": constraints.real}


def _logit(p):
    return p.log() - (-p).log1p()


class LogitRelaxedBernoulli(Distribution):
    """Logit of a RelaxedBernoulli sample: (logistic noise + logits) / temperature."""

    arg_constraints = dict(_PARAMS)
    support = constraints.real

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        if (logits is None) is (probs is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        self.temperature = temperature
        name, given = ("logits", logits) if probs is None else ("probs", probs)
        (t,) = broadcast_all(given)
        setattr(self, name, t)
        self._param = t
        shape = tl.Size() if isinstance(given, Number) else t.size()
        super().__init__(shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """This distribution with parameters expanded to `batch_shape`."""
        out = self._get_checked_instance(LogitRelaxedBernoulli, _instance)
        size = tl.Size(batch_shape)
        out.temperature = self.temperature
        for name in ("probs", "logits"):
            if name in self.__dict__:
                grown = getattr(self, name).expand(size)
                setattr(out, name, grown)
                out._param = grown
        Distribution.__init__(out, size, validate_args=False)
        out._validate_args = self._validate_args
        return out

    def _new(self, *args, **kwargs):
        return self._param.new(*args, **kwargs)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, True)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits, True)

    @property
    def param_shape(self):
        return self._param.size()

    def rsample(self, sample_shape=tl.Size()):
        """(logit(U) + logit(p)) / temperature."""
        out_shape = self._extended_shape(sample_shape)
        p = clamp_probs(self.probs.expand(out_shape))
        u = clamp_probs(tl.rand(out_shape, dtype=p.dtype, device=p.device))
        return (_logit(u) + _logit(p)) / self.temperature

    def log_prob(self, value):
        """log t + (logits - t x) - 2 softplus(logits - t x)."""
        if self._validate_args:
            self._validate_sample(value)
        lg, x = broadcast_all(self.logits, value)
        z = lg - self.temperature * x
        return z - 2 * z.exp().log1p() + self.temperature.log()


class RelaxedBernoulli(TransformedDistribution):
    """Binary Concrete distribution on (0, 1): sigmoid of a LogitRelaxedBernoulli sample."""

    arg_constraints = dict(_PARAMS)
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        inner = LogitRelaxedBernoulli(temperature, probs=probs, logits=logits)
        super().__init__(inner, SigmoidTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """This distribution with parameters expanded to `batch_shape`."""
        return super().expand(batch_shape, _instance=self._get_checked_instance(RelaxedBernoulli, _instance))

    @property
    def temperature(self):
        return self.base_dist.temperature

    @property
    def logits(self):
        return self.base_dist.logits

    @property
    def probs(self):
        return self.base_dist.probs
