"""torch.distributions.categorical: Categorical(probs | logits)."""
from __future__ import annotations

import math

import tensorlab as tl

from . import constraints
from .distribution import Distribution
from .utils import lazy_property, logits_to_probs, probs_to_logits

__all__ = ["Categorical"]


def _normalized(probs, logits):
    """(name, normalized tensor) for whichever parameter was given."""
    if probs is not None:
        if probs.dim() == 0:
            raise ValueError("`probs` parameter must be at least one-dimensional.")
        return "probs", probs / probs.sum(dim=-1, keepdim=True)
    if logits.dim() == 0:
        raise ValueError("`logits` parameter must be at least one-dimensional.")
    return "logits", logits - logits.logsumexp(dim=-1, keepdim=True)


class Categorical(Distribution):
    """Distribution over {0, ..., K-1} with the last dim of `probs` (normalized) or `logits`
    (log-normalized) holding the K event weights."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        if (logits is None) is (probs is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        name, t = _normalized(probs, logits)
        setattr(self, name, t)
        self._param = t
        *outer, k = tuple(t.shape)
        self._num_events = k
        super().__init__(tl.Size(outer), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """This distribution with parameters expanded to `batch_shape`."""
        out = self._get_checked_instance(Categorical, _instance)
        size = tl.Size(batch_shape)
        full = tuple(size) + (self._num_events,)
        for name in ("probs", "logits"):
            if name in self.__dict__:
                grown = getattr(self, name).expand(full)
                setattr(out, name, grown)
                out._param = grown
        out._num_events = self._num_events
        Distribution.__init__(out, size, validate_args=False)
        out._validate_args = self._validate_args
        return out

    def _new(self, *args, **kwargs):
        return self._param.new(*args, **kwargs)

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self._num_events - 1)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits)

    @property
    def param_shape(self):
        return self._param.size()

    def _undefined(self):
        p = self.probs
        return tl.full(self._extended_shape(), math.nan, dtype=p.dtype, device=p.device)

    @property
    def mean(self):
        return self._undefined()

    @property
    def mode(self):
        return self.probs.argmax(dim=-1)

    @property
    def variance(self):
        return self._undefined()

    def sample(self, sample_shape=tl.Size()):
        """int64 category indices drawn with tensorlab's multinomial."""
        lead = tl.Size(sample_shape)
        draws = math.prod(lead)
        table = self.probs.reshape(-1, self._num_events)
        with tl.no_grad():
            picked = tl.multinomial(table, draws, True)  # (rows, draws)
        return picked.T.reshape(self._extended_shape(lead))

    def log_prob(self, value):
        """logits[value] (normalized)."""
        if self._validate_args:
            self._validate_sample(value)
        idx, table = tl.broadcast_tensors(value.long().unsqueeze(-1), self.logits)
        return table.gather(-1, idx[..., :1]).squeeze(-1)

    def entropy(self):
        """-sum p log p (logits clamped to the dtype's min so p = 0 contributes 0)."""
        lg = self.logits
        safe = lg.clamp(min=tl.finfo(lg.dtype).min)
        return -(self.probs * safe).sum(-1)

    def enumerate_support(self, expand=True):
        """0..K-1 along a new leading dim."""
        nb = len(self._batch_shape)
        ks = tl.arange(self._num_events, dtype=tl.long, device=self._param.device)
        ks = ks.reshape((self._num_events,) + (1,) * nb)
        return ks.expand((self._num_events,) + tuple(self._batch_shape)) if expand else ks
