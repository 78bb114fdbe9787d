"""torch.distributions.transformed_distribution: TransformedDistribution."""
from __future__ import annotations

import tensorlab as tl

from . import constraints
from .distribution import Distribution
from .independent import Independent
from .transforms import ComposeTransform, Transform
from .utils import _sum_rightmost

__all__ = ["TransformedDistribution"]


def _as_transform_list(ts):
    if isinstance(ts, Transform):
        return [ts]
    if not isinstance(ts, list):
        raise ValueError(f"transforms must be a Transform or list, but was {ts}")
    if any(not isinstance(t, Transform) for t in ts):
        raise ValueError("transforms must be a Transform or a list of Transforms")
    return ts


class TransformedDistribution(Distribution):
    """The distribution of `transforms[-1](...transforms[0](x))` for x drawn from `base_distribution`."""

    arg_constraints = {}

    def __init__(self, base_distribution, transforms, validate_args=None):
        self.transforms = _as_transform_list(transforms)
        chain = ComposeTransform(self.transforms)
        in_rank, out_rank = chain.domain.event_dim, chain.codomain.event_dim
        base = base_distribution
        n_base_event = len(base.event_shape)
        full = tl.Size(tuple(base.batch_shape) + tuple(base.event_shape))
        if len(full) < in_rank:
            raise ValueError(f"base_distribution needs to have shape with size at least "
                             f"{in_rank}, but got {full}.")
        pushed = chain.forward_shape(full)
        pulled = chain.inverse_shape(pushed)
        if tuple(pulled) != tuple(full):
            # the transforms broadcast the base's shape: grow the base's batch to match
            base = base.expand(pulled[:len(pulled) - n_base_event])
        extra = in_rank - n_base_event
        if extra > 0:
            base = Independent(base, extra)
        self.base_dist = base
        n_event = max(out_rank, n_base_event + (out_rank - in_rank))
        split = len(pushed) - n_event
        super().__init__(pushed[:split], pushed[split:], validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """This distribution with the base distribution expanded."""
        out = self._get_checked_instance(TransformedDistribution, _instance)
        size = tl.Size(batch_shape)
        full = tl.Size(tuple(size) + tuple(self.event_shape))
        for t in self.transforms[::-1]:
            full = t.inverse_shape(full)
        keep = len(full) - len(self.base_dist.event_shape)
        out.base_dist = self.base_dist.expand(full[:keep])
        out.transforms = self.transforms
        Distribution.__init__(out, size, self.event_shape, validate_args=False)
        out._validate_args = self._validate_args
        return out

    @constraints.dependent_property(is_discrete=False)
    def support(self):
        if len(self.transforms) == 0:
            return self.base_dist.support
        last = self.transforms[-1].codomain
        surplus = len(self.event_shape) - last.event_dim
        return constraints.independent(last, surplus) if surplus > 0 else last

    @property
    def has_rsample(self):
        return self.base_dist.has_rsample

    def _push(self, x):
        for t in self.transforms:
            x = t(x)
        return x

    def sample(self, sample_shape=tl.Size()):
        """A base sample pushed through the transforms, outside the graph."""
        with tl.no_grad():
            return self._push(self.base_dist.sample(sample_shape))

    def rsample(self, sample_shape=tl.Size()):
        """A reparameterized base sample pushed through the transforms."""
        return self._push(self.base_dist.rsample(sample_shape))

    def log_prob(self, value):
        """Change of variables: base log_prob of the inverse minus the log-det-Jacobians."""
        if self._validate_args:
            self._validate_sample(value)
        rank = len(self.event_shape)
        total = 0.0
        out = value
        for t in self.transforms[::-1]:
            inp = t.inv(out)
            rank = rank - t.codomain.event_dim + t.domain.event_dim
            ladj = t.log_abs_det_jacobian(inp, out)
            total = total - _sum_rightmost(ladj, rank - t.domain.event_dim)
            out = inp
        base_lp = self.base_dist.log_prob(out)
        return total + _sum_rightmost(base_lp, rank - len(self.base_dist.event_shape))

    def _flip_if_decreasing(self, u):
        s = 1
        for t in self.transforms:
            s = s * t.sign
        if isinstance(s, int) and s == 1:
            return u
        return 0.5 + s * (u - 0.5)

    def cdf(self, value):
        """The base cdf of the inverse-transformed value (flipped for decreasing transforms)."""
        x = value
        for t in self.transforms[::-1]:
            x = t.inv(x)
        if self._validate_args:
            self.base_dist._validate_sample(x)
        return self._flip_if_decreasing(self.base_dist.cdf(x))

    def icdf(self, value):
        """The transforms applied to the base icdf."""
        return self._push(self.base_dist.icdf(self._flip_if_decreasing(value)))
