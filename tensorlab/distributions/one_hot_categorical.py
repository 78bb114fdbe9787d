"""torch.distributions.one_hot_categorical: OneHotCategorical, OneHotCategoricalStraightThrough."""
from __future__ import annotations

import tensorlab as tl
import tensorlab.nn.functional as F

from . import constraints
from .categorical import Categorical
from .distribution import Distribution

__all__ = ["OneHotCategoricalStraightThrough", "OneHotCategorical"]


class OneHotCategorical(Distribution):
    """Categorical with one-hot samples of length K (event_shape (K,))."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.one_hot
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        cat = Categorical(probs=probs, logits=logits)
        self._categorical = cat
        super().__init__(cat.batch_shape, cat.param_shape[-1:], validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """This distribution with parameters expanded to `batch_shape`."""
        out = self._get_checked_instance(OneHotCategorical, _instance)
        size = tl.Size(batch_shape)
        out._categorical = self._categorical.expand(size)
        Distribution.__init__(out, size, self.event_shape, validate_args=False)
        out._validate_args = self._validate_args
        return out

    def _new(self, *args, **kwargs):
        return self._categorical._new(*args, **kwargs)

    @property
    def _param(self):
        return self._categorical._param

    @property
    def probs(self):
        return self._categorical.probs

    @property
    def logits(self):
        return self._categorical.logits

    @property
    def param_shape(self):
        return self._categorical.param_shape

    def _encode(self, idx):
        """Category indices -> one-hot vectors in the probabilities' dtype."""
        p = self.probs
        return F.one_hot(idx, num_classes=p.shape[-1]).to(p.dtype)

    @property
    def mean(self):
        return self.probs

    @property
    def mode(self):
        return self._encode(self.probs.argmax(dim=-1))

    @property
    def variance(self):
        p = self.probs
        return p - p * p

    def sample(self, sample_shape=tl.Size()):
        """One-hot vectors in the probabilities' dtype."""
        return self._encode(self._categorical.sample(tl.Size(sample_shape)))

    def log_prob(self, value):
        """The categorical log_prob of the argmax of `value`."""
        if self._validate_args:
            self._validate_sample(value)
        return self._categorical.log_prob(value.argmax(dim=-1))

    def entropy(self):
        """The categorical entropy."""
        return self._categorical.entropy()

    def enumerate_support(self, expand=True):
        """The K one-hot vectors along a new leading dim."""
        k = self.event_shape[0]
        ref = self._param
        nb = len(self.batch_shape)
        rows = tl.eye(k, dtype=ref.dtype, device=ref.device).reshape((k,) + (1,) * nb + (k,))
        return rows.expand((k,) + tuple(self.batch_shape) + (k,)) if expand else rows


class OneHotCategoricalStraightThrough(OneHotCategorical):
    """OneHotCategorical whose rsample is the straight-through estimator: the sample's value, the
    probabilities' gradient."""

    has_rsample = True

    def rsample(self, sample_shape=tl.Size()):
        """samples + (probs - probs.detach())."""
        hard = self.sample(sample_shape)
        p = self.probs
        # zero in value, d/dp = identity
        return hard + p - p.detach()
