"""torch.distributions.chi2: Chi2(df) = Gamma(df / 2, 1 / 2)."""
from __future__ import annotations

from . import constraints
from .gamma import Gamma

__all__ = ["Chi2"]


class Chi2(Gamma):
    """Chi-squared distribution with `df` degrees of freedom."""

    arg_constraints = {"df": constraints.positive}

    def __init__(self, df, validate_args=None):
        # shape df/2, rate 1/2
        super().__init__(df * 0.5, 0.5, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """This distribution with parameters expanded to `batch_shape`."""
        return super().expand(batch_shape, _instance=self._get_checked_instance(Chi2, _instance))

    @property
    def df(self):
        return 2 * self.concentration
