"""torch.distributions.lkj_cholesky: LKJCholesky(dim, concentration), Cholesky factors of LKJ correlation
matrices."""
from __future__ import annotations

import math

import tensorlab as tl

from . import constraints
from .beta import Beta
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["LKJCholesky"]


class LKJCholesky(Distribution):
    """Lower Cholesky factors L of correlation matrices with density proportional to det(L L^T)^(eta - 1).

    Sampled by the onion method: each row is a Beta-distributed squared norm times a uniform direction."""

    arg_constraints = {"concentration": constraints.positive}
    support = constraints.corr_cholesky

    def __init__(self, dim, concentration=1.0, validate_args=None):
        if dim < 2:
            raise ValueError(f"Expected dim to be an integer greater than or equal to 2. Found dim={dim}.")
        self.dim = dim
        (eta,) = broadcast_all(concentration)
        self.concentration = eta
        # per-row Beta for the squared norm of the below-diagonal part (torch's parameterization);
        # row 0 is fixed at e_0 but gets a placeholder Beta so that all rows sample together
        k = tl.arange(dim, dtype=eta.dtype, device=eta.device).sub(1).clamp(min=0)
        a = k + 0.5
        b = (eta + 0.5 * (dim - 2)).unsqueeze(-1) - 0.5 * k
        self._row_norm2 = Beta(a, b)
        super().__init__(eta.size(), tl.Size((dim, dim)), validate_args)

    def expand(self, batch_shape, _instance=None):
        """This distribution with parameters expanded to `batch_shape`."""
        out = self._get_checked_instance(LKJCholesky, _instance)
        size = tl.Size(batch_shape)
        out.dim = self.dim
        out.concentration = self.concentration.expand(size)
        out._row_norm2 = self._row_norm2.expand(tuple(size) + (self.dim,))
        Distribution.__init__(out, size, self.event_shape, validate_args=False)
        out._validate_args = self._validate_args
        return out

    def sample(self, sample_shape=tl.Size()):
        """Onion-method samples."""
        with tl.no_grad():
            r2 = self._row_norm2.sample(sample_shape).unsqueeze(-1)
            g = tl.randn(self._extended_shape(sample_shape), dtype=r2.dtype, device=r2.device).tril(-1)
            length = g.norm(dim=-1, keepdim=True)
            ok = length > 0
            direction = tl.where(ok, g / tl.where(ok, length, tl.ones_like(length)), tl.zeros_like(g))
            below = r2.sqrt() * direction
            floor = tl.finfo(below.dtype).tiny
            on_diag = (1 - below.square().sum(dim=-1)).clamp(min=floor).sqrt()
            return below + tl.diag_embed(on_diag)

    def log_prob(self, value):
        """sum_i (2 (eta - 1) + d - i) log L_ii - log normalizer."""
        if self._validate_args:
            self._validate_sample(value)
        d = self.dim
        eta = self.concentration
        log_diag = value.diagonal(dim1=-2, dim2=-1)[..., 1:].log()
        rows = tl.arange(2, d + 1, dtype=value.dtype, device=value.device)
        power = (2 * eta - 2).unsqueeze(-1) + (d - rows)
        kernel = (power * log_diag).sum(dim=-1)
        m = d - 1
        shape_a = eta + 0.5 * m
        log_norm = 0.5 * m * math.log(math.pi) + tl.mvlgamma(shape_a - 0.5, m) - m * shape_a.lgamma()
        return kernel - log_norm
