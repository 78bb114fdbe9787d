"""torch.distributions.multinomial: Multinomial(total_count, probs | logits)."""
from __future__ import annotations

import tensorlab as tl

from . import constraints
from .binomial import Binomial
from .categorical import Categorical
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["Multinomial"]


class Multinomial(Distribution):
    """Counts of each of K categories in `total_count` Categorical(probs) draws (event_shape (K,))."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.independent(constraints.real, 1)}
    total_count: int

    @property
    def mean(self):
        return self.probs * self.total_count

    @property
    def variance(self):
        return self.total_count * self.probs * (1 - self.probs)

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        if not isinstance(total_count, int):
            raise NotImplementedError("inhomogeneous total_count is not supported")
        self.total_count = total_count
        self._categorical = Categorical(probs=probs, logits=logits)
        self._binomial = Binomial(total_count=total_count, probs=self.probs)
        batch_shape = self._categorical.batch_shape
        event_shape = self._categorical.param_shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """This distribution with parameters expanded to `batch_shape`."""
        new = self._get_checked_instance(Multinomial, _instance)
        batch_shape = tl.Size(batch_shape)
        new.total_count = self.total_count
        new._categorical = self._categorical.expand(batch_shape)
        new._binomial = Binomial(total_count=self.total_count, probs=new._categorical.probs)
        super(Multinomial, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _new(self, *args, **kwargs):
        return self._categorical._new(*args, **kwargs)

    @constraints.dependent_property(is_discrete=True, event_dim=1)
    def support(self):
        return constraints.multinomial(self.total_count)

    @property
    def logits(self):
        return self._categorical.logits

    @property
    def probs(self):
        return self._categorical.probs

    @property
    def param_shape(self):
        return self._categorical.param_shape

    def sample(self, sample_shape=tl.Size()):
        """Category counts from total_count categorical draws, in the probabilities' dtype."""
        sample_shape = tl.Size(sample_shape)
        samples = self._categorical.sample(tl.Size((self.total_count,) + tuple(sample_shape)))
        order = list(range(1, samples.dim())) + [0]
        samples = samples.permute(*order)
        counts = tl.zeros(self._extended_shape(sample_shape), dtype=samples.dtype, device=samples.device)
        counts = counts.scatter_add(-1, samples, tl.ones_like(samples))
        return counts.type_as(self.probs)

    def entropy(self):
        """n H(categorical) - lgamma(n + 1) + sum_i E[lgamma(x_i + 1)] over the binomial marginals."""
        n = tl.tensor(self.total_count, dtype=self.probs.dtype, device=self.probs.device)
        cat_entropy = self._categorical.entropy()
        term1 = n * cat_entropy - tl.lgamma(n + 1)
        support = self._binomial.enumerate_support(expand=False)[1:]
        binomial_probs = tl.exp(self._binomial.log_prob(support))
        weights = tl.lgamma(support + 1)
        term2 = (binomial_probs * weights).sum([0, -1])
        return term1 + term2

    def log_prob(self, value):
        """lgamma(n + 1) - sum lgamma(x + 1) + sum x log p (0 * -inf taken as 0)."""
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        logits = tl.where((value == 0) & (logits == -float("inf")), tl.zeros_like(logits), logits)
        log_factorial_n = tl.lgamma(value.sum(-1) + 1)
        log_factorial_xs = tl.lgamma(value + 1).sum(-1)
        log_powers = (logits * value).sum(-1)
        return log_factorial_n - log_factorial_xs + log_powers
