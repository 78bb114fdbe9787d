"""torch.distributions.dirichlet: Dirichlet(concentration)."""
from __future__ import annotations

import tensorlab as tl
import tensorlab.nn.functional as F

from . import constraints
from .distribution import Distribution
from .exp_family import ExponentialFamily

__all__ = ["Dirichlet"]


class Dirichlet(ExponentialFamily):
    """Dirichlet distribution over the simplex of the last dimension of `concentration`.

    rsample normalizes reparameterized Gamma draws, so gradients reach `concentration` through the
    Gamma samples' implicit gradient (torch differentiates the marginal Beta cdf instead: same
    distribution of gradients, different values per draw)."""

    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration, validate_args=None):
        if concentration.dim() == 0:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        *outer, k = tuple(concentration.shape)
        super().__init__(tl.Size(outer), tl.Size((k,)), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """This distribution with parameters expanded to `batch_shape`."""
        out = self._get_checked_instance(Dirichlet, _instance)
        size = tl.Size(batch_shape)
        out.concentration = self.concentration.expand(tuple(size) + tuple(self.event_shape))
        Distribution.__init__(out, size, self.event_shape, validate_args=False)
        out._validate_args = self._validate_args
        return out

    def _total(self, keepdim=False):
        return self.concentration.sum(-1, keepdim=keepdim)

    def rsample(self, sample_shape=()):
        """Normalized Gamma(concentration) draws."""
        g = tl._standard_gamma(self.concentration.expand(self._extended_shape(sample_shape)))
        point = g / g.sum(-1, keepdim=True)
        point.detach().clamp_(min=tl.finfo(point.dtype).tiny)  # keep log_prob finite at the draws
        return point

    def log_prob(self, value):
        """sum (c - 1) log x + lgamma(sum c) - sum lgamma(c)."""
        if self._validate_args:
            self._validate_sample(value)
        a = self.concentration
        return (a - 1.0).xlogy(value).sum(-1) - self._log_normalizer(a)

    @property
    def mean(self):
        return self.concentration / self._total(keepdim=True)

    @property
    def mode(self):
        excess = (self.concentration - 1).clamp(min=0.0)
        interior = excess / excess.sum(-1, keepdim=True)
        # all concentrations below 1: the density piles up at a vertex
        vertex = F.one_hot(interior.argmax(-1), excess.shape[-1]).to(interior.dtype)
        return tl.where((self.concentration < 1).all(dim=-1, keepdim=True), vertex, interior)

    @property
    def variance(self):
        a = self.concentration
        a0 = self._total(keepdim=True)
        return a * (a0 - a) / (a0 * a0 * (a0 + 1))

    def entropy(self):
        """sum lgamma(c) - lgamma(c0) - (k - c0) digamma(c0) - sum (c - 1) digamma(c)."""
        a = self.concentration
        a0 = self._total()
        k = a.shape[-1]
        return self._log_normalizer(a) + (a0 - k) * a0.digamma() - ((a - 1.0) * a.digamma()).sum(-1)

    @property
    def _natural_params(self):
        return (self.concentration,)

    def _log_normalizer(self, x):
        # log of the multivariate Beta function
        return x.lgamma().sum(-1) - x.sum(-1).lgamma()
