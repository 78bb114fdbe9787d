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

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    total_count: int

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        if not isinstance(total_count, int):
            raise NotImplementedError("inhomogeneous total_count is not supported")
        cat = Categorical(probs=probs, logits=logits)
        self.total_count = total_count
        self._categorical = cat
        super().__init__(cat.batch_shape, cat.param_shape[-1:], validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """This distribution with parameters expanded to `batch_shape`."""
        out = self._get_checked_instance(Multinomial, _instance)
        size = tl.Size(batch_shape)
        out._categorical = self._categorical.expand(size)
        out.total_count = self.total_count
        Distribution.__init__(out, size, self.event_shape, validate_args=False)
        out._validate_args = self._validate_args
        return out

    def _new(self, *args, **kwargs):
        return self._categorical._new(*args, **kwargs)

    # parameters live on the per-trial Categorical
    probs = property(lambda self: self._categorical.probs)
    logits = property(lambda self: self._categorical.logits)
    param_shape = property(lambda self: self._categorical.param_shape)

    @property
    def mean(self):
        return self.total_count * self.probs

    @property
    def variance(self):
        p = self.probs
        return p * (1 - p) * self.total_count

    @constraints.dependent_property(is_discrete=True, event_dim=1)
    def support(self):
        return constraints.multinomial(self.total_count)

    def sample(self, sample_shape=tl.Size()):
        """Category counts from total_count categorical draws, in the probabilities' dtype."""
        lead = tl.Size(sample_shape)
        n = self.total_count
        # one categorical draw per trial, trials on the leading axis -> moved to the back
        picks = self._categorical.sample(tl.Size((n,) + tuple(lead)))
        picks = picks.permute(*range(1, picks.dim()), 0)
        tally = tl.zeros(self._extended_shape(lead), dtype=picks.dtype, device=picks.device)
        tally = tally.scatter_add(-1, picks, tl.ones_like(picks))
        return tally.to(self.probs.dtype)

    def entropy(self):
        """n H(categorical) - lgamma(n + 1) + sum_i E[lgamma(x_i + 1)] over the binomial marginals."""
        p = self.probs
        n = tl.tensor(float(self.total_count), dtype=p.dtype, device=p.device)
        # each count x_i is Binomial(n, p_i); E[log x_i!] taken over x_i = 1..n (x_i = 0 adds nothing)
        marginal = Binomial(total_count=self.total_count, probs=p)
        ks = marginal.enumerate_support(expand=False)[1:]
        expected_log_fact = (marginal.log_prob(ks).exp() * (ks + 1).lgamma()).sum([0, -1])
        return self._categorical.entropy() * n - (n + 1).lgamma() + expected_log_fact

    def log_prob(self, value):
        """lgamma(n + 1) - sum lgamma(x + 1) + sum x log p (0 * -inf taken as 0)."""
        if self._validate_args:
            self._validate_sample(value)
        lg, x = broadcast_all(self.logits, value)
        # a category with zero probability that was never drawn contributes 0, not nan
        lg = tl.where((x == 0) & (lg == float("-inf")), tl.zeros_like(lg), lg)
        coef = (x.sum(-1) + 1).lgamma() - (x + 1).lgamma().sum(-1)
        return coef + (x * lg).sum(-1)
