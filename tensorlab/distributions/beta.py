"""torch.distributions.beta: Beta(concentration1, concentration0)."""
from __future__ import annotations

from numbers import Number, Real

import tensorlab as tl

from . import constraints
from .dirichlet import Dirichlet
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .utils import broadcast_all

__all__ = ["Beta"]


class Beta(ExponentialFamily):
    """Beta distribution on [0, 1]: the first coordinate of Dirichlet([concentration1, concentration0])."""

    arg_constraints = {"concentration1": constraints.positive, "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1, concentration0, validate_args=None):
        a, b = concentration1, concentration0
        if isinstance(a, Real) and isinstance(b, Real):
            pair = tl.tensor([float(a), float(b)])
        else:
            pair = tl.stack(list(broadcast_all(a, b)), dim=-1)
        # all the work is done by a two-category Dirichlet over (x, 1 - x)
        self._dirichlet = Dirichlet(pair, validate_args=validate_args)
        super().__init__(self._dirichlet.batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """This distribution with parameters expanded to `batch_shape`."""
        out = self._get_checked_instance(Beta, _instance)
        size = tl.Size(batch_shape)
        out._dirichlet = self._dirichlet.expand(size)
        Distribution.__init__(out, size, validate_args=False)
        out._validate_args = self._validate_args
        return out

    def _coordinate(self, i):
        c = self._dirichlet.concentration[..., i]
        return tl.tensor([c]) if isinstance(c, Number) else c

    @property
    def concentration1(self):
        return self._coordinate(0)

    @property
    def concentration0(self):
        return self._coordinate(1)

    @property
    def mean(self):
        a = self.concentration1
        return a / (a + self.concentration0)

    @property
    def mode(self):
        return self._dirichlet.mode[..., 0]

    @property
    def variance(self):
        a, b = self.concentration1, self.concentration0
        s = a + b
        return a * b / (s * s * (s + 1))

    def rsample(self, sample_shape=()):
        """The first coordinate of a Dirichlet rsample."""
        return self._dirichlet.rsample(sample_shape)[..., 0]

    def log_prob(self, value):
        """The Dirichlet log density of (value, 1 - value)."""
        if self._validate_args:
            self._validate_sample(value)
        return self._dirichlet.log_prob(tl.stack([value, 1.0 - value], dim=-1))

    def entropy(self):
        """The Dirichlet entropy."""
        return self._dirichlet.entropy()

    @property
    def _natural_params(self):
        return self.concentration1, self.concentration0

    def _log_normalizer(self, x, y):
        # log B(x, y)
        return x.lgamma() + y.lgamma() - (x + y).lgamma()
