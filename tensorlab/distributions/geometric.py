"""torch.distributions.geometric: Geometric(probs | logits) on {0, 1, 2, ...}."""
from __future__ import annotations

import tensorlab as tl
import tensorlab.nn.functional as F

from . import constraints
from .distribution import Distribution
from .utils import _expand_params, _scalar_or_shape, broadcast_all, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["Geometric"]


class Geometric(Distribution):
    """Number of failures before the first success of Bernoulli(probs) trials."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, probs=None, logits=None, validate_args=None):
        if (logits is None) is (probs is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        name, given = ("logits", logits) if probs is None else ("probs", probs)
        (t,) = broadcast_all(given)
        setattr(self, name, t)
        super().__init__(_scalar_or_shape(t, given), validate_args=validate_args)
        if self._validate_args and name == "probs":
            self._require_positive(t)

    def _require_positive(self, p):
        # p = 0 lies in unit_interval but gives no distribution: torch rejects it separately
        ok = p > 0
        if not bool(ok.all()):
            raise ValueError(f"Expected parameter probs ({type(p).__name__} of shape {tuple(p.shape)}) "
                             f"of distribution {self!r} to be positive but found invalid values:\n"
                             f"{p.detach()[~ok]}")

    def expand(self, batch_shape, _instance=None):
        """This distribution with parameters expanded to `batch_shape`."""
        return _expand_params(self, Geometric, batch_shape, _instance, ("probs", "logits"))

    @property
    def mean(self):
        return self.probs.reciprocal() - 1

    @property
    def mode(self):
        return tl.zeros_like(self.probs)

    @property
    def variance(self):
        p = self.probs
        return (1 - p) / (p * p)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, True)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits, True)

    def sample(self, sample_shape=tl.Size()):
        """floor(log U / log(1 - p)), U ~ U(tiny, 1)."""
        p = self.probs
        with tl.no_grad():
            u = tl.empty(self._extended_shape(sample_shape), dtype=p.dtype, device=p.device)
            u.uniform_(tl.finfo(p.dtype).tiny, 1)
            return (u.log() / (-p).log1p()).floor()

    def log_prob(self, value):
        """value log(1 - p) + log p (0 at value = 0 when p = 1)."""
        if self._validate_args:
            self._validate_sample(value)
        k, p = broadcast_all(value, self.probs)
        # 0 * log(0) at p = 1, k = 0 must read as 0
        p_safe = tl.where((k == 0) & (p == 1), tl.zeros_like(p), p)
        return self.probs.log() + k * (-p_safe).log1p()

    def entropy(self):
        """BCE-with-logits(logits, probs) / probs."""
        p = self.probs
        return F.binary_cross_entropy_with_logits(self.logits, p, reduction="none") / p
