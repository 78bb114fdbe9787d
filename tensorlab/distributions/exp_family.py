"""torch.distributions.exp_family: ExponentialFamily, whose entropy follows from the log normalizer."""
from __future__ import annotations

import tensorlab as tl

from .distribution import Distribution

__all__ = ["ExponentialFamily"]


class ExponentialFamily(Distribution):
    """Distributions with density p(x; theta) = exp(<t(x), theta> - F(theta) + k(x)).

    Subclasses define `_natural_params`, `_log_normalizer` and `_mean_carrier_measure`; `entropy` is then
    the Bregman divergence of the log normalizer, computed with autograd."""

    @property
    def _natural_params(self):
        raise NotImplementedError(f"{type(self).__name__} does not define _natural_params")

    def _log_normalizer(self, *natural_params):
        raise NotImplementedError(f"{type(self).__name__} does not define _log_normalizer")

    @property
    def _mean_carrier_measure(self):
        raise NotImplementedError(f"{type(self).__name__} does not define _mean_carrier_measure")

    def entropy(self):
        """Entropy from the log normalizer: F(theta) - <theta, grad F(theta)> - E[k(x)]."""
        result = -self._mean_carrier_measure
        nparams = [p.detach().requires_grad_() for p in self._natural_params]
        with tl.enable_grad():
            lg_normal = self._log_normalizer(*nparams)
            gradients = tl.autograd.grad(lg_normal.sum(), nparams, create_graph=True)
        result = result + lg_normal
        for np_, g in zip(nparams, gradients):
            result = result - (np_ * g).reshape(self._batch_shape + (-1,)).sum(-1)
        return result
