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
        (self.concentration,) = broadcast_all(concentration)
        batch_shape = self.concentration.size()
        event_shape = tl.Size((dim, dim))
        marginal_conc = self.concentration + 0.5 * (self.dim - 2)
        offset = tl.arange(self.dim - 1, dtype=self.concentration.dtype, device=self.concentration.device)
        offset = tl.cat([offset.new_zeros((1,)), offset])
        beta_conc1 = offset + 0.5
        beta_conc0 = marginal_conc.unsqueeze(-1) - 0.5 * offset
        self._beta = Beta(beta_conc1, beta_conc0)
        super().__init__(batch_shape, event_shape, validate_args)

    def expand(self, batch_shape, _instance=None):
        """This distribution with parameters expanded to `batch_shape`."""
        new = self._get_checked_instance(LKJCholesky, _instance)
        batch_shape = tl.Size(batch_shape)
        new.dim = self.dim
        new.concentration = self.concentration.expand(batch_shape)
        new._beta = self._beta.expand(tuple(batch_shape) + (self.dim,))
        super(LKJCholesky, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def sample(self, sample_shape=tl.Size()):
        """Onion-method samples."""
        with tl.no_grad():
            y = self._beta.sample(sample_shape).unsqueeze(-1)
            shape = self._extended_shape(sample_shape)
            u_normal = tl.randn(shape, dtype=y.dtype, device=y.device).tril(-1)
            norm = u_normal.norm(dim=-1, keepdim=True)
            u_hypersphere = tl.where(norm > 0, u_normal / tl.where(norm > 0, norm, tl.ones_like(norm)),
                                     tl.zeros_like(u_normal))
            w = tl.sqrt(y) * u_hypersphere
            tiny = tl.finfo(w.dtype).tiny
            diag_elems = tl.clamp(1 - tl.sum(w ** 2, dim=-1), min=tiny).sqrt()
            return w + tl.diag_embed(diag_elems)

    def log_prob(self, value):
        """sum_i (2 (eta - 1) + d - i) log L_ii - log normalizer."""
        if self._validate_args:
            self._validate_sample(value)
        diag_elems = value.diagonal(dim1=-1, dim2=-2)[..., 1:]
        order = tl.arange(2, self.dim + 1, dtype=value.dtype, device=value.device)
        order = 2 * (self.concentration - 1).unsqueeze(-1) + self.dim - order
        unnormalized_log_pdf = tl.sum(order * diag_elems.log(), dim=-1)
        dm1 = self.dim - 1
        alpha = self.concentration + 0.5 * dm1
        denominator = tl.lgamma(alpha) * dm1
        numerator = tl.mvlgamma(alpha - 0.5, dm1)
        pi_constant = 0.5 * dm1 * math.log(math.pi)
        normalize_term = pi_constant + numerator - denominator
        return unnormalized_log_pdf - normalize_term
