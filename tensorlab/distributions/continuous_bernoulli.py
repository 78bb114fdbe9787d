"""torch.distributions.continuous_bernoulli: ContinuousBernoulli(probs | logits) on [0, 1]."""
from __future__ import annotations

import math

import tensorlab as tl
import tensorlab.nn.functional as F

from . import constraints
from .exp_family import ExponentialFamily
from .utils import (_expand_params, _one_of_probs_logits, _scalar_or_shape, broadcast_all, clamp_probs,
                    lazy_property, logits_to_probs, probs_to_logits)

__all__ = ["ContinuousBernoulli"]

_LOG2 = math.log(2.0)


def _log_odds_gap(p):
    """log(1 - p) - log(p) = -logit(p)."""
    return (-p).log1p() - p.log()


class ContinuousBernoulli(ExponentialFamily):
    """Density proportional to p^x (1 - p)^(1 - x) on [0, 1] (Loaiza-Ganem and Cunningham, 2019).

    Near p = 1/2 (inside `lims`) the normalizer and moments use their Taylor expansions, as torch does."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    _mean_carrier_measure = 0
    has_rsample = True

    def __init__(self, probs=None, logits=None, lims=(0.499, 0.501), validate_args=None):
        name, given = _one_of_probs_logits(probs, logits)
        (t,) = broadcast_all(given)
        if name == "probs":
            # torch checks probs here whenever validate_args is given at all, then keeps them off 0 and 1
            if validate_args is not None and not bool(constraints.unit_interval.check(t).all()):
                raise ValueError("The parameter probs has invalid values")
            t = clamp_probs(t)
        setattr(self, name, t)
        self._param = t
        self._lims = lims
        super().__init__(_scalar_or_shape(t, given), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """This distribution with parameters expanded to `batch_shape`."""
        out = _expand_params(self, ContinuousBernoulli, batch_shape, _instance, ("probs", "logits"))
        out._lims = self._lims
        return out

    def _new(self, *args, **kwargs):
        return self._param.new(*args, **kwargs)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, True)

    @lazy_property
    def probs(self):
        return clamp_probs(logits_to_probs(self.logits, True))

    @property
    def param_shape(self):
        return self._param.size()

    # ---- the closed forms are 0/0 at p = 1/2: inside (lims[0], lims[1]] a Taylor series is used instead

    def _stable(self):
        lo, hi = self._lims
        p = self.probs
        return (p <= lo) | (p > hi)

    def _p_away_from_half(self):
        """probs, with the near-1/2 ones replaced by lims[0] (their closed form is then finite, and unused)."""
        p = self.probs
        return tl.where(self._stable(), p, tl.full_like(p, self._lims[0]))

    def _blend(self, closed, series):
        return tl.where(self._stable(), closed, series)

    def _log_norm_const(self):
        """log C(p), C(p) = 2 atanh(1 - 2p) / (1 - 2p)."""
        q = self._p_away_from_half()
        low_half = q <= 0.5
        # log|1 - 2q| computed on whichever side of 1/2 q lies
        log_gap = tl.where(low_half, (-2.0 * tl.where(low_half, q, tl.zeros_like(q))).log1p(),
                           (2.0 * tl.where(q >= 0.5, q, tl.ones_like(q)) - 1.0).log())
        closed = _log_odds_gap(q).abs().log() - log_gap
        d2 = (self.probs - 0.5).square()
        return self._blend(closed, _LOG2 + d2 * (4.0 / 3.0 + d2 * 104.0 / 45.0))

    @property
    def mean(self):
        q = self._p_away_from_half()
        closed = q / (2.0 * q - 1.0) + 1.0 / _log_odds_gap(q)
        d = self.probs - 0.5
        return self._blend(closed, 0.5 + d * (1.0 / 3.0 + d * d * 16.0 / 45.0))

    @property
    def variance(self):
        q = self._p_away_from_half()
        closed = q * (q - 1.0) / (1.0 - 2.0 * q).square() + _log_odds_gap(q).square().reciprocal()
        d2 = (self.probs - 0.5).square()
        return self._blend(closed, 1.0 / 12.0 - d2 * (1.0 / 15.0 - d2 * 128.0 / 945.0))

    @property
    def stddev(self):
        return self.variance.sqrt()

    def _uniforms(self, sample_shape):
        p = self.probs
        return tl.rand(self._extended_shape(sample_shape), dtype=p.dtype, device=p.device)

    def sample(self, sample_shape=tl.Size()):
        """icdf of uniforms, outside the graph."""
        u = self._uniforms(sample_shape)
        with tl.no_grad():
            return self.icdf(u)

    def rsample(self, sample_shape=tl.Size()):
        """icdf of uniforms (differentiable in the parameters)."""
        return self.icdf(self._uniforms(sample_shape))

    def log_prob(self, value):
        """-BCE-with-logits(logits, value) + log normalizer."""
        if self._validate_args:
            self._validate_sample(value)
        lg, x = broadcast_all(self.logits, value)
        return self._log_norm_const() - F.binary_cross_entropy_with_logits(lg, x, reduction="none")

    def cdf(self, value):
        """(p^x (1 - p)^(1 - x) + p - 1) / (2p - 1), x outside the unstable region."""
        if self._validate_args:
            self._validate_sample(value)
        q = self._p_away_from_half()
        closed = (q.pow(value) * (1.0 - q).pow(1.0 - value) + q - 1.0) / (2.0 * q - 1.0)
        inner = self._blend(closed, value)
        inner = tl.where(value >= 1.0, tl.ones_like(value), inner)
        return tl.where(value <= 0.0, tl.zeros_like(value), inner)

    def icdf(self, value):
        """Inverse of cdf."""
        q = self._p_away_from_half()
        log1m_q = (-q).log1p()
        closed = ((value * (2.0 * q - 1.0) - q).log1p() - log1m_q) / (q.log() - log1m_q)
        return self._blend(closed, value)

    def entropy(self):
        """mean (log(1 - p) - log p) - log normalizer - log(1 - p)."""
        log1m_p = (-self.probs).log1p()
        return self.mean * (log1m_p - self.probs.log()) - log1m_p - self._log_norm_const()

    @property
    def _natural_params(self):
        return (self.logits,)

    def _log_normalizer(self, x):
        # the same guard in natural-parameter terms (torch compares the logits against lims - 1/2)
        lo, hi = self._lims[0] - 0.5, self._lims[1] - 0.5
        stable = (x <= lo) | (x > hi)
        eta = tl.where(stable, x, tl.full_like(x, lo))
        closed = (eta.exp() - 1.0).abs().log() - eta.abs().log()
        x2 = x * x
        return tl.where(stable, closed, 0.5 * x + x2 / 24.0 - x2 * x2 / 2880.0)
