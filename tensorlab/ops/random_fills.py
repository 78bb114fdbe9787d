"""The in-place random fills that transform a Philox draw: cauchy_, log_normal_, geometric_.

Each draws from tensorlab's Philox4x32-10 stream (ops/random.py's samplers, so the CPU and CUDA
backends give the same numbers from the same (seed, offset), and `generator=` works as for
uniform_), into a float64 scratch tensor on the target's device, transforms it there with the
elementwise ops, and writes the result with one copy_ (the target is untouched when a check fails):

    cauchy_(median, sigma):   median + sigma * tan(pi * (U - 1/2)),  U uniform in [0, 1)
    log_normal_(mean, std):   exp(N),  N normal(mean, std)
    geometric_(p):            ceil(E / -log1p(-p)),  E exponential(1) > 0, so every value is >= 1
                              (the number of Bernoulli(p) trials up to the first success)
"""
from __future__ import annotations

import math

from .. import dtypes
from ..tensor import Tensor
from . import creation
from . import random as R


def _scratch(self):
    return creation.empty(tuple(self.shape), dtype=dtypes.float64, device=self.device)


def _fill(self, op, gen, draw, transform):
    """Draw into float64 scratch, transform, publish with one copy (the in-place contract of random.py)."""
    R.check_writable(self, op)
    R.autograd_hooks.check_inplace(self, op)
    g = R._generator(gen, self.device, op)
    if self.numel():
        z = _scratch(self)
        draw(z, g)
        r = transform(z)
        self.detach().copy_(r)
    self._vc.bump()
    R.autograd_hooks.record_inplace(self, op, ())
    return self


def cauchy_(self, median=0.0, sigma=1.0, *, generator=None):
    """Fill with Cauchy(median, sigma) draws."""
    median, sigma = R._number(median, "cauchy_", "median"), R._number(sigma, "cauchy_", "sigma")
    if not self.dtype.is_floating_point:
        raise RuntimeError("Cauchy distribution is a continuous probability distribution. dtype must be a floating "
                           f"point but you specified {self.dtype.torch_name}")
    if not sigma > 0.0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={sigma:g}")
    return _fill(self, "cauchy_", generator, lambda z, g: R._fill_uniform(z, 0.0, 1.0, g),
                 lambda u: u.sub_(0.5).mul_(math.pi).tan_().mul_(sigma).add_(median))


def log_normal_(self, mean=1.0, std=2.0, *, generator=None):
    """Fill with exp(N(mean, std)) draws."""
    mean, std = R._number(mean, "log_normal_", "mean"), R._number(std, "log_normal_", "std")
    if not self.dtype.is_floating_point:
        raise NotImplementedError(f"\"log_normal_\" not implemented for '{self.dtype.torch_name}': log_normal_ "
                                  "samples a continuous distribution and needs a floating point dtype")
    if not std > 0.0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={std:g}")
    return _fill(self, "log_normal_", generator, lambda z, g: R._fill_normal(z, mean, std, g), lambda n: n.exp_())


def geometric_(self, p, *, generator=None):
    """Fill with Geometric(p) draws on {1, 2, ...} (any dtype but bool)."""
    p = R._number(p, "geometric_", "p")
    if self.dtype is dtypes.bool_:
        raise NotImplementedError("\"geometric_\" not implemented for 'Bool': geometric_ draws counts >= 1; use an "
                                  "integer or floating point dtype")
    if not 0.0 < p < 1.0:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p:g}")
    scale = -math.log1p(-p)
    return _fill(self, "geometric_", generator, lambda z, g: R._fill_exponential(z, 1.0, g),
                 lambda e: e.div_(scale).ceil_().clamp_(min=1.0))


FUNCTIONS = ()
METHODS = {"cauchy_": cauchy_, "log_normal_": log_normal_, "geometric_": geometric_}
