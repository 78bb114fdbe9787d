"""torch.distributions.independent: Independent (batch dims reinterpreted as event dims)."""
from __future__ import annotations

import tensorlab as tl

from . import constraints
from .distribution import Distribution
from .utils import _sum_rightmost

__all__ = ["Independent"]


class Independent(Distribution):
    """`base_distribution` with its `reinterpreted_batch_ndims` rightmost batch dims made event dims
    (log_prob and entropy summed over them)."""

    arg_constraints = {}

    def __init__(self, base_distribution, reinterpreted_batch_ndims, validate_args=None):
        outer = tuple(base_distribution.batch_shape)
        inner = tuple(base_distribution.event_shape)
        n = reinterpreted_batch_ndims
        if n > len(outer):
            raise ValueError("Expected reinterpreted_batch_ndims <= len(base_distribution.batch_shape), "
                             f"actual {n} vs {len(outer)}")
        self.base_dist = base_distribution
        self.reinterpreted_batch_ndims = n
        keep = len(outer) - n
        super().__init__(outer[:keep], outer[keep:] + inner, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """This distribution with its batch dims expanded."""
        out = self._get_checked_instance(Independent, _instance)
        size = tl.Size(batch_shape)
        moved = tuple(self.event_shape)[:self.reinterpreted_batch_ndims]
        out.base_dist = self.base_dist.expand(tuple(size) + moved)
        out.reinterpreted_batch_ndims = self.reinterpreted_batch_ndims
        Distribution.__init__(out, size, self.event_shape, validate_args=False)
        out._validate_args = self._validate_args
        return out

    @property
    def has_rsample(self):
        return self.base_dist.has_rsample

    @property
    def has_enumerate_support(self):
        return self.reinterpreted_batch_ndims == 0 and self.base_dist.has_enumerate_support

    @constraints.dependent_property
    def support(self):
        inner = self.base_dist.support
        n = self.reinterpreted_batch_ndims
        return constraints.independent(inner, n) if n else inner

    @property
    def mean(self):
        return self.base_dist.mean

    @property
    def mode(self):
        return self.base_dist.mode

    @property
    def variance(self):
        return self.base_dist.variance

    def sample(self, sample_shape=tl.Size()):
        """The base distribution's sample."""
        return self.base_dist.sample(sample_shape)

    def rsample(self, sample_shape=tl.Size()):
        """The base distribution's rsample."""
        return self.base_dist.rsample(sample_shape)

    def _fold(self, t):
        return _sum_rightmost(t, self.reinterpreted_batch_ndims)

    def log_prob(self, value):
        """The base log_prob summed over the reinterpreted dims."""
        return self._fold(self.base_dist.log_prob(value))

    def entropy(self):
        """The base entropy summed over the reinterpreted dims."""
        return self._fold(self.base_dist.entropy())

    def enumerate_support(self, expand=True):
        """Only without reinterpreted dims (the cartesian product is not enumerated, as in torch)."""
        if self.reinterpreted_batch_ndims:
            raise NotImplementedError("Enumeration over cartesian product is not implemented")
        return self.base_dist.enumerate_support(expand=expand)

    def __repr__(self):
        return f"{type(self).__name__}({self.base_dist}, {self.reinterpreted_batch_ndims})"
