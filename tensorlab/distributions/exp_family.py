"""torch.distributions.exp_family: ExponentialFamily, whose entropy follows from the log normalizer."""
from __future__ import annotations

import tensorlab as tl

from .distribution import Distribution

__all__ = ["ExponentialFamily"]


class ExponentialFamily(Distribution):
    """Distributions with density p(x; theta) = exp(<t(x), theta> - F(theta) + k(x)).

    Subclasses define `_natural_params`, `_log_normalizer` and `_mean_carrier_measure`; `entropy` is then
    the Bregman divergence of the log normalizer, computed with autograd."""

    def _missing(self, what):
        return NotImplementedError(f"{type(self).__name__} does not define {what}")

    @property
    def _natural_params(self):
        raise self._missing("_natural_params")

    def _log_normalizer(self, *natural_params):
        raise self._missing("_log_normalizer")

    @property
    def _mean_carrier_measure(self):
        raise self._missing("_mean_carrier_measure")

    def entropy(self):
        """Entropy from the log normalizer: F(theta) - <theta, grad F(theta)> - E[k(x)]."""
        theta = [t.detach().requires_grad_() for t in self._natural_params]
        with tl.enable_grad():
            log_z = self._log_normalizer(*theta)
            (*grad_f,) = tl.autograd.grad(log_z.sum(), theta, create_graph=True)
        h = log_z - self._mean_carrier_measure
        flat = tuple(self._batch_shape) + (-1,)
        for t, g in zip(theta, grad_f):
            h = h - (t * g).reshape(flat).sum(-1)
        return h
