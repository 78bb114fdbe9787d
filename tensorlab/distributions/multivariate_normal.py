"""torch.distributions.multivariate_normal: MultivariateNormal(loc, covariance_matrix | precision_matrix |
scale_tril)."""
from __future__ import annotations

import math

import tensorlab as tl

from . import constraints
from .distribution import Distribution
from .utils import _standard_normal, lazy_property

__all__ = ["MultivariateNormal"]

_LOG_2PI = math.log(2 * math.pi)


def _mat_vec(mat, vec):
    """mat @ vec over broadcast batch dims."""
    return (mat @ vec.unsqueeze(-1)).squeeze(-1)


def _tril_quad_form(low, v):
    """|low^-1 v|^2 = v^T (low low^T)^-1 v for lower-triangular `low`, broadcasting the batch dims."""
    n = v.shape[-1]
    lead = tuple(tl.broadcast_shapes(tuple(low.shape[:-2]), tuple(v.shape[:-1])))
    w = tl.linalg.solve_triangular(low.expand(lead + (n, n)), v.expand(lead + (n,)).unsqueeze(-1), upper=False)
    return w.squeeze(-1).square().sum(-1)


def _cov_tril_from_precision(prec):
    """Lower Cholesky factor of prec^-1 without inverting prec.

    With J the exchange (flip) matrix, chol(J P J) = Lf gives P = (J Lf J)(J Lf J)^T where J Lf J is upper
    triangular; so P^-1 = U^-T U^-1 with U^-T = (J Lf J)^-T lower triangular."""
    lf = tl.linalg.cholesky(prec.flip((-2, -1)))
    upper_t = lf.flip((-2, -1)).mT  # lower triangular
    eye = tl.eye(prec.shape[-1], dtype=prec.dtype, device=prec.device)
    return tl.linalg.solve_triangular(upper_t, eye, upper=False)


_MATRIX_ARGS = ("scale_tril", "covariance_matrix", "precision_matrix")


class MultivariateNormal(Distribution):
    """Multivariate normal with mean `loc` and one of covariance_matrix, precision_matrix or scale_tril."""

    arg_constraints = {"loc": constraints.real_vector, "covariance_matrix": constraints.positive_definite,
                       "precision_matrix": constraints.positive_definite, "scale_tril": constraints.lower_cholesky}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, covariance_matrix=None, precision_matrix=None, scale_tril=None, validate_args=None):
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        given = {"scale_tril": scale_tril, "covariance_matrix": covariance_matrix,
                 "precision_matrix": precision_matrix}
        given = {k: v for k, v in given.items() if v is not None}
        if len(given) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified.")
        (kind, mat), = given.items()
        if mat.dim() < 2:
            raise ValueError(f"{kind} matrix must be at least two-dimensional, "
                             "with optional leading batch dimensions")
        outer = tuple(tl.broadcast_shapes(tuple(mat.shape[:-2]), tuple(loc.shape[:-1])))
        setattr(self, kind, mat.expand(outer + (-1, -1)))
        self.loc = loc.expand(outer + (-1,))
        super().__init__(outer, self.loc.shape[-1:], validate_args=validate_args)
        # everything downstream works from one (unbroadcast) lower Cholesky factor of the covariance
        if kind == "scale_tril":
            self._unbroadcasted_scale_tril = mat
        elif kind == "covariance_matrix":
            self._unbroadcasted_scale_tril = tl.linalg.cholesky(mat)
        else:
            self._unbroadcasted_scale_tril = _cov_tril_from_precision(mat)

    def expand(self, batch_shape, _instance=None):
        """This distribution with parameters expanded to `batch_shape`."""
        out = self._get_checked_instance(MultivariateNormal, _instance)
        size = tl.Size(batch_shape)
        vec_shape = tuple(size) + tuple(self.event_shape)
        held = vars(self)
        for kind in _MATRIX_ARGS:
            if kind in held:
                setattr(out, kind, held[kind].expand(vec_shape + tuple(self.event_shape)))
        out.loc = self.loc.expand(vec_shape)
        out._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril
        Distribution.__init__(out, size, self.event_shape, validate_args=False)
        out._validate_args = self._validate_args
        return out

    def _full(self, t, matrix=True):
        tail = tuple(self._event_shape) * (2 if matrix else 1)
        return t.expand(tuple(self._batch_shape) + tail)

    @lazy_property
    def scale_tril(self):
        return self._full(self._unbroadcasted_scale_tril)

    @lazy_property
    def covariance_matrix(self):
        low = self._unbroadcasted_scale_tril
        return self._full(low @ low.mT)

    @lazy_property
    def precision_matrix(self):
        return self._full(tl.cholesky_inverse(self._unbroadcasted_scale_tril))

    mean = property(lambda self: self.loc)
    mode = property(lambda self: self.loc)

    @property
    def variance(self):
        # diag(L L^T) = row sums of L^2
        return self._full(self._unbroadcasted_scale_tril.square().sum(-1), matrix=False)

    def rsample(self, sample_shape=tl.Size()):
        """loc + L eps."""
        mu = self.loc
        z = _standard_normal(self._extended_shape(sample_shape), dtype=mu.dtype, device=mu.device)
        return mu + _mat_vec(self._unbroadcasted_scale_tril, z)

    def _log_det_half(self):
        """log det(L) = 0.5 log det(Sigma)."""
        return self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)

    def log_prob(self, value):
        """-(k log 2 pi + Mahalanobis^2) / 2 - log det L."""
        if self._validate_args:
            self._validate_sample(value)
        k = self._event_shape[0]
        quad = _tril_quad_form(self._unbroadcasted_scale_tril, value - self.loc)
        return -0.5 * (quad + k * _LOG_2PI) - self._log_det_half()

    def entropy(self):
        """k (1 + log 2 pi) / 2 + log det L."""
        k = self._event_shape[0]
        h = self._log_det_half() + 0.5 * k * (1.0 + _LOG_2PI)
        return h.expand(self._batch_shape) if len(self._batch_shape) else h
