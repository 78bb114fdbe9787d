"""torch.distributions.mixture_same_family: MixtureSameFamily(mixture_distribution, component_distribution)."""
from __future__ import annotations

import tensorlab as tl

from . import constraints
from .categorical import Categorical
from .distribution import Distribution

__all__ = ["MixtureSameFamily"]


def _check_parts(weights, comps):
    """Validate the pair and return (batch shape, number of components)."""
    if not isinstance(weights, Categorical):
        raise ValueError(" The Mixture distribution needs to be an  instance of torch.distributions.Categorical")
    if not isinstance(comps, Distribution):
        raise ValueError("The Component distribution need to be an instance of torch.distributions.Distribution")
    outer_w = weights.batch_shape
    outer_c = comps.batch_shape[:-1]
    # right-aligned broadcast compatibility of the two batch shapes
    for a, b in zip(tuple(outer_w)[::-1], tuple(outer_c)[::-1]):
        if 1 not in (a, b) and a != b:
            raise ValueError(f"`mixture_distribution.batch_shape` ({outer_w}) is not compatible with "
                             f"`component_distribution.batch_shape`({outer_c})")
    n_w = weights.logits.shape[-1]
    n_c = comps.batch_shape[-1]
    if n_w != n_c:
        raise ValueError(f"`mixture_distribution component` ({n_w}) does not equal "
                         f"`component_distribution.batch_shape[-1]` ({n_c})")
    return outer_c, n_w


class MixtureSameFamily(Distribution):
    """A mixture whose components are the rightmost batch dim of one distribution, weighted by a
    Categorical over that dim."""

    arg_constraints = {}
    has_rsample = False

    def __init__(self, mixture_distribution, component_distribution, validate_args=None):
        outer, k = _check_parts(mixture_distribution, component_distribution)
        self._mixture_distribution = mixture_distribution
        self._component_distribution = component_distribution
        self._num_component = k
        ev = component_distribution.event_shape
        self._event_ndims = len(ev)
        super().__init__(outer, ev, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """This distribution with both parts expanded to `batch_shape`."""
        out = self._get_checked_instance(MixtureSameFamily, _instance)
        size = tl.Size(batch_shape)
        out._mixture_distribution = self._mixture_distribution.expand(size)
        out._component_distribution = self._component_distribution.expand(
            tl.Size(tuple(size) + (self._num_component,)))
        out._num_component, out._event_ndims = self._num_component, self._event_ndims
        Distribution.__init__(out, size, out._component_distribution.event_shape, validate_args=False)
        out._validate_args = self._validate_args
        return out

    @constraints.dependent_property
    def support(self):
        return constraints.MixtureSameFamilyConstraint(self._component_distribution.support)

    @property
    def mixture_distribution(self):
        return self._mixture_distribution

    @property
    def component_distribution(self):
        return self._component_distribution

    # the component axis sits just left of the event dims
    @property
    def _k_axis(self):
        return -1 - self._event_ndims

    def _weights_for_components(self):
        """Mixture probabilities shaped to broadcast against per-component statistics."""
        w = self._mixture_distribution.probs
        return w.reshape(tuple(w.shape) + (1,) * self._event_ndims)

    def _weighted_sum(self, per_component):
        return (self._weights_for_components() * per_component).sum(dim=self._k_axis)

    @property
    def mean(self):
        return self._weighted_sum(self._component_distribution.mean)

    @property
    def variance(self):
        # law of total variance: E[Var | k] + Var[E | k]
        comp = self._component_distribution
        spread = (comp.mean - self.mean.unsqueeze(self._k_axis)).square()
        return self._weighted_sum(comp.variance) + self._weighted_sum(spread)

    def cdf(self, x):
        """Mixture-weighted component cdfs."""
        per_k = self._component_distribution.cdf(x.unsqueeze(self._k_axis))
        return (per_k * self._mixture_distribution.probs).sum(dim=-1)

    def log_prob(self, x):
        """logsumexp over components of component log_prob + log mixture weight."""
        if self._validate_args:
            self._validate_sample(x)
        per_k = self._component_distribution.log_prob(x.unsqueeze(self._k_axis))
        log_w = self._mixture_distribution.logits.log_softmax(dim=-1)
        return (per_k + log_w).logsumexp(dim=-1)

    def sample(self, sample_shape=tl.Size()):
        """Draw a component index, then take that component's sample."""
        lead = tl.Size(sample_shape)
        ev = tuple(self.event_shape)
        axis = len(lead) + len(self.batch_shape)
        with tl.no_grad():
            which = self._mixture_distribution.sample(lead)
            draws = self._component_distribution.sample(lead)
            wshape = tuple(which.shape)
            index = which.reshape(wshape + (1,) * (1 + len(ev))).expand(wshape + (1,) + ev)
            return draws.gather(axis, index).squeeze(axis)

    def __repr__(self):
        return f"MixtureSameFamily(\n  {self._mixture_distribution},\n  {self._component_distribution})"
