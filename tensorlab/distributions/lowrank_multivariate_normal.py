"""torch.distributions.lowrank_multivariate_normal: covariance cov_factor cov_factor^T + diag(cov_diag)."""
from __future__ import annotations

import math

import tensorlab as tl

from . import constraints
from .distribution import Distribution
from .multivariate_normal import _mat_vec, _tril_quad_form
from .utils import _standard_normal, lazy_property

__all__ = ["LowRankMultivariateNormal"]

_LOG_2PI = math.log(2 * math.pi)


def _scaled_factor_t(w, d):
    """W^T D^-1 (D diagonal, given as a vector)."""
    return w.mT / d.unsqueeze(-2)


def _inner_tril(w, d):
    """chol(I_m + W^T D^-1 W): the small m x m matrix behind Woodbury and the determinant lemma."""
    m = w.shape[-1]
    small = _scaled_factor_t(w, d) @ w
    return tl.linalg.cholesky(small + tl.eye(m, dtype=w.dtype, device=w.device))


def _logdet_lowrank(d, inner):
    """log det(W W^T + D) = log det(I + W^T D^-1 W) + log det D."""
    return d.log().sum(-1) + 2 * inner.diagonal(dim1=-2, dim2=-1).log().sum(-1)


def _quad_lowrank(w, d, v, inner):
    """v^T (W W^T + D)^-1 v = v^T D^-1 v - |inner^-1 W^T D^-1 v|^2 (Woodbury)."""
    proj = _mat_vec(_scaled_factor_t(w, d), v)
    return (v.square() / d).sum(-1) - _tril_quad_form(inner, proj)


class LowRankMultivariateNormal(Distribution):
    """Multivariate normal whose covariance is low rank plus diagonal."""

    arg_constraints = {"loc": constraints.real_vector, "cov_factor": constraints.independent(constraints.real, 2),
                       "cov_diag": constraints.independent(constraints.positive, 1)}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, cov_factor, cov_diag, validate_args=None):
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        ev = loc.shape[-1:]
        if cov_factor.dim() < 2:
            raise ValueError("cov_factor must be at least two-dimensional, with optional leading batch dimensions")
        if tuple(cov_factor.shape[-2:-1]) != tuple(ev):
            raise ValueError(f"cov_factor must be a batch of matrices with shape {ev[0]} x m")
        if tuple(cov_diag.shape[-1:]) != tuple(ev):
            raise ValueError(f"cov_diag must be a batch of vectors with shape {ev}")
        # broadcast all three as (..., n, ·) columns, then drop the helper column dim
        try:
            mu_col, w, d_col = tl.broadcast_tensors(loc.unsqueeze(-1), cov_factor, cov_diag.unsqueeze(-1))
        except RuntimeError as e:
            raise ValueError(f"Incompatible batch shapes: loc {loc.shape}, cov_factor {cov_factor.shape}, "
                             f"cov_diag {cov_diag.shape}") from e
        self.cov_factor = w
        self.loc, self.cov_diag = mu_col[..., 0], d_col[..., 0]
        self._unbroadcasted_cov_factor = cov_factor
        self._unbroadcasted_cov_diag = cov_diag
        self._capacitance_tril = _inner_tril(cov_factor, cov_diag)
        super().__init__(self.loc.shape[:-1], ev, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """This distribution with parameters expanded to `batch_shape`."""
        out = self._get_checked_instance(LowRankMultivariateNormal, _instance)
        size = tl.Size(batch_shape)
        vec_shape = tuple(size) + tuple(self.event_shape)
        out.loc, out.cov_diag = self.loc.expand(vec_shape), self.cov_diag.expand(vec_shape)
        out.cov_factor = self.cov_factor.expand(vec_shape + (self.cov_factor.shape[-1],))
        for name in ("_unbroadcasted_cov_factor", "_unbroadcasted_cov_diag", "_capacitance_tril"):
            setattr(out, name, getattr(self, name))
        Distribution.__init__(out, size, self.event_shape, validate_args=False)
        out._validate_args = self._validate_args
        return out

    def _full(self, t, matrix=True):
        return t.expand(tuple(self._batch_shape) + tuple(self._event_shape) * (2 if matrix else 1))

    mean = property(lambda self: self.loc)
    mode = property(lambda self: self.loc)

    @lazy_property
    def variance(self):
        w, d = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        return self._full(w.square().sum(-1) + d, matrix=False)

    @lazy_property
    def scale_tril(self):
        # Sigma = D^1/2 (I + D^-1/2 W W^T D^-1/2) D^1/2, and D^1/2 chol(...) is lower triangular
        n = self._event_shape[0]
        root_d = self._unbroadcasted_cov_diag.sqrt().unsqueeze(-1)
        u = self._unbroadcasted_cov_factor / root_d
        inner = u @ u.mT + tl.eye(n, dtype=root_d.dtype, device=root_d.device)
        return self._full(root_d * tl.linalg.cholesky(inner))

    @lazy_property
    def covariance_matrix(self):
        w = self._unbroadcasted_cov_factor
        return self._full(w @ w.mT + tl.diag_embed(self._unbroadcasted_cov_diag))

    @lazy_property
    def precision_matrix(self):
        # Woodbury: D^-1 - D^-1 W (I + W^T D^-1 W)^-1 W^T D^-1
        d = self._unbroadcasted_cov_diag
        a = tl.linalg.solve_triangular(self._capacitance_tril, _scaled_factor_t(self._unbroadcasted_cov_factor, d),
                                       upper=False)
        return self._full(tl.diag_embed(1 / d) - a.mT @ a)

    def rsample(self, sample_shape=tl.Size()):
        """loc + W eps_W + sqrt(D) eps_D."""
        full = self._extended_shape(sample_shape)
        mu = self.loc
        rank = self.cov_factor.shape[-1]
        z_w = _standard_normal(tuple(full[:-1]) + (rank,), dtype=mu.dtype, device=mu.device)
        z_d = _standard_normal(full, dtype=mu.dtype, device=mu.device)
        return mu + _mat_vec(self._unbroadcasted_cov_factor, z_w) + self._unbroadcasted_cov_diag.sqrt() * z_d

    def _logdet(self):
        return _logdet_lowrank(self._unbroadcasted_cov_diag, self._capacitance_tril)

    def log_prob(self, value):
        """Gaussian log density through the Woodbury and determinant-lemma identities."""
        if self._validate_args:
            self._validate_sample(value)
        quad = _quad_lowrank(self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag, value - self.loc,
                             self._capacitance_tril)
        return -0.5 * (quad + self._logdet() + self._event_shape[0] * _LOG_2PI)

    def entropy(self):
        """(k (1 + log 2 pi) + log det Sigma) / 2."""
        h = 0.5 * (self._logdet() + self._event_shape[0] * (1.0 + _LOG_2PI))
        return h.expand(self._batch_shape) if len(self._batch_shape) else h
