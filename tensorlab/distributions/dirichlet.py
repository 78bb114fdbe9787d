"""torch.distributions.dirichlet: Dirichlet(concentration)."""
from __future__ import annotations

import tensorlab as tl
import tensorlab.nn.functional as F

from . import constraints
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
        if concentration.dim() < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        batch_shape, event_shape = concentration.shape[:-1], concentration.shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """This distribution with parameters expanded to `batch_shape`."""
        new = self._get_checked_instance(Dirichlet, _instance)
        batch_shape = tl.Size(batch_shape)
        new.concentration = self.concentration.expand(tuple(batch_shape) + tuple(self.event_shape))
        super(Dirichlet, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def rsample(self, sample_shape=()):
        """Normalized Gamma(concentration) draws."""
        shape = self._extended_shape(sample_shape)
        g = tl._standard_gamma(self.concentration.expand(shape))
        x = g / g.sum(-1, keepdim=True)
        x.detach().clamp_(min=tl.finfo(x.dtype).tiny)
        return x

    def log_prob(self, value):
        """sum (c - 1) log x + lgamma(sum c) - sum lgamma(c)."""
        if self._validate_args:
            self._validate_sample(value)
        return (tl.xlogy(self.concentration - 1.0, value).sum(-1) + tl.lgamma(self.concentration.sum(-1))
                - tl.lgamma(self.concentration).sum(-1))

    @property
    def mean(self):
        return self.concentration / self.concentration.sum(-1, True)

    @property
    def mode(self):
        concm1 = (self.concentration - 1).clamp(min=0.0)
        mode = concm1 / concm1.sum(-1, True)
        mask = (self.concentration < 1).all(dim=-1, keepdim=True)
        corner = F.one_hot(mode.argmax(-1), concm1.shape[-1]).to(mode.dtype)
        return tl.where(mask, corner, mode)

    @property
    def variance(self):
        con0 = self.concentration.sum(-1, True)
        return self.concentration * (con0 - self.concentration) / (con0.pow(2) * (con0 + 1))

    def entropy(self):
        """sum lgamma(c) - lgamma(c0) - (k - c0) digamma(c0) - sum (c - 1) digamma(c)."""
        k = self.concentration.size(-1)
        a0 = self.concentration.sum(-1)
        return (tl.lgamma(self.concentration).sum(-1) - tl.lgamma(a0) - (k - a0) * tl.digamma(a0)
                - ((self.concentration - 1.0) * tl.digamma(self.concentration)).sum(-1))

    @property
    def _natural_params(self):
        return (self.concentration,)

    def _log_normalizer(self, x):
        return x.lgamma().sum(-1) - tl.lgamma(x.sum(-1))
