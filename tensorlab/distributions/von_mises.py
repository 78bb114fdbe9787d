"""torch.distributions.von_mises: VonMises(loc, concentration), the circular normal distribution."""
from __future__ import annotations

import math

import tensorlab as tl

from . import constraints
from .distribution import Distribution
from ..ops.random_samplers import _PER_ROUND, _rejection
from .utils import broadcast_all, lazy_property

__all__ = ["VonMises"]

_ROUNDS = 12  # 48 candidates; Best-Fisher accepts with probability >= 0.65: all rejected with probability < 1e-21


def _log_i0(x):
    """log I0(x) = log(i0e(x)) + x, exact for every x >= 0."""
    return tl.log(tl.special.i0e(x)) + x


def _proposal_r(kappa):
    kappa2 = kappa ** 2
    tau = 1 + (1 + 4 * kappa2).sqrt()
    rho = (tau - (2 * tau).sqrt()) / (2 * kappa)
    r = (1 + rho ** 2) / (2 * rho)
    taylor = 1 / kappa + kappa  # r for kappa -> 0, where the formula above cancels
    return tl.where(kappa < 1e-5, taylor, r)


class VonMises(Distribution):
    """Von Mises distribution on the circle, mean direction `loc`, concentration `concentration`.

    Sampling is Best and Fisher's (1979) rejection method, computed in float64, vectorized with a fixed
    number of candidates per element (no host wait)."""

    arg_constraints = {"loc": constraints.real, "concentration": constraints.positive}
    support = constraints.real
    has_rsample = False

    def __init__(self, loc, concentration, validate_args=None):
        self.loc, self.concentration = broadcast_all(loc, concentration)
        batch_shape = self.loc.shape
        super().__init__(batch_shape, tl.Size(), validate_args=validate_args)

    def log_prob(self, value):
        """kappa cos(value - loc) - log(2 pi I0(kappa))."""
        if self._validate_args:
            self._validate_sample(value)
        log_prob = self.concentration * tl.cos(value - self.loc)
        return log_prob - math.log(2 * math.pi) - _log_i0(self.concentration)

    @lazy_property
    def _loc(self):
        return self.loc.to(tl.double)

    @lazy_property
    def _concentration(self):
        return self.concentration.to(tl.double)

    @lazy_property
    def _proposal_r(self):
        return _proposal_r(self._concentration)

    def sample(self, sample_shape=tl.Size()):
        """Angles in [-pi, pi) around loc, in loc's dtype."""
        shape = self._extended_shape(sample_shape)
        with tl.no_grad():
            k = (_PER_ROUND,) + tuple(shape)
            dev = self.loc.device
            conc = self._concentration.expand(shape)
            r = self._proposal_r.expand(shape)

            def draw():
                u = tl.rand((3,) + k, dtype=tl.float64, device=dev)
                z = tl.cos(math.pi * u[0])
                f = (1 + r * z) / (r + z)
                c = conc * (r - f)
                accept = ((c * (2 - c) - u[1]) > 0) | ((c / u[1]).log() + 1 - c >= 0)
                return (u[2] - 0.5).sign() * f.clamp(-1, 1).acos(), accept

            x = _rejection(_ROUNDS, draw, tl.zeros(shape, dtype=tl.float64, device=dev))
            x = (x + math.pi + self._loc) % (2 * math.pi) - math.pi
            return x.to(self.loc.dtype)

    def expand(self, batch_shape, _instance=None):
        """This distribution with parameters expanded to `batch_shape`."""
        new = self._get_checked_instance(VonMises, _instance)
        batch_shape = tl.Size(batch_shape)
        new.loc = self.loc.expand(batch_shape)
        new.concentration = self.concentration.expand(batch_shape)
        super(VonMises, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self):
        """The circular mean (loc)."""
        return self.loc

    @property
    def mode(self):
        return self.loc

    @lazy_property
    def variance(self):
        """The circular variance 1 - I1(kappa) / I0(kappa)."""
        k = self.concentration
        return 1 - tl.special.i1e(k) / tl.special.i0e(k)
