"""torch.distributions.wishart: Wishart(df, covariance_matrix | precision_matrix | scale_tril)."""
from __future__ import annotations

import math
import warnings
from numbers import Number

import tensorlab as tl

from . import constraints
from .chi2 import Chi2
from .exp_family import ExponentialFamily
from .multivariate_normal import _cov_tril_from_precision
from .utils import lazy_property

__all__ = ["Wishart"]

_LOG_2 = math.log(2)


def _mvdigamma(x, p):
    """Multivariate digamma: sum_{i<p} digamma(x - i/2)."""
    return tl.digamma(x.unsqueeze(-1) - tl.arange(p, dtype=x.dtype, device=x.device) / 2).sum(-1)


class Wishart(ExponentialFamily):
    """Wishart distribution over positive definite p x p matrices with `df` degrees of freedom and scale
    matrix given by one of covariance_matrix, precision_matrix or scale_tril.

    rsample is the Bartlett decomposition: chi-squared diagonal, standard normal strict lower triangle."""

    arg_constraints = {"covariance_matrix": constraints.positive_definite,
                       "precision_matrix": constraints.positive_definite,
                       "scale_tril": constraints.lower_cholesky, "df": constraints.greater_than(0)}
    support = constraints.positive_definite
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(self, df, covariance_matrix=None, precision_matrix=None, scale_tril=None, validate_args=None):
        if (covariance_matrix is not None) + (scale_tril is not None) + (precision_matrix is not None) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified.")
        param = next(p for p in (scale_tril, covariance_matrix, precision_matrix) if p is not None)
        if param.dim() < 2:
            raise ValueError("scale_tril must be at least two-dimensional, with optional leading batch dimensions")
        if isinstance(df, Number):
            batch_shape = tl.Size(param.shape[:-2])
            self.df = tl.tensor(df, dtype=param.dtype, device=param.device)
        else:
            batch_shape = tl.Size(tl.broadcast_shapes(tuple(param.shape[:-2]), tuple(df.shape)))
            self.df = df.expand(batch_shape)
        event_shape = param.shape[-2:]
        if bool((self.df <= event_shape[-1] - 1).any()):
            raise ValueError(f"Value of df={df} expected to be greater than ndim - 1 = {event_shape[-1] - 1}.")
        kind = "scale_tril" if scale_tril is not None else (
            "covariance_matrix" if covariance_matrix is not None else "precision_matrix")
        setattr(self, kind, param.expand(tuple(batch_shape) + (-1, -1)))
        self.arg_constraints = {"covariance_matrix": constraints.positive_definite,
                                "precision_matrix": constraints.positive_definite,
                                "scale_tril": constraints.lower_cholesky,
                                "df": constraints.greater_than(event_shape[-1] - 1)}
        super().__init__(batch_shape, event_shape, validate_args=validate_args)
        self._batch_dims = list(range(-1, -len(self._batch_shape) - 1, -1))
        to_tril = {"scale_tril": lambda m: m, "covariance_matrix": tl.linalg.cholesky,
                   "precision_matrix": _cov_tril_from_precision}[kind]
        self._unbroadcasted_scale_tril = to_tril(param)
        p = self._event_shape[-1]
        self._dist_chi2 = Chi2(df=self.df.unsqueeze(-1) - tl.arange(p, dtype=param.dtype, device=param.device)
                               .expand(tuple(batch_shape) + (-1,)))

    def expand(self, batch_shape, _instance=None):
        """This distribution with parameters expanded to `batch_shape`."""
        new = self._get_checked_instance(Wishart, _instance)
        batch_shape = tl.Size(batch_shape)
        cov_shape = tuple(batch_shape) + tuple(self.event_shape)
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril.expand(cov_shape)
        new.df = self.df.expand(tuple(batch_shape))
        new._batch_dims = list(range(-1, -len(batch_shape) - 1, -1))
        for name in ("covariance_matrix", "scale_tril", "precision_matrix"):
            if name in self.__dict__:
                setattr(new, name, self.__dict__[name].expand(cov_shape))
        new.arg_constraints = self.arg_constraints
        p = self._event_shape[-1]
        new._dist_chi2 = Chi2(df=new.df.unsqueeze(-1) - tl.arange(p, dtype=new.df.dtype, device=new.df.device)
                              .expand(tuple(batch_shape) + (-1,)))
        super(Wishart, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @lazy_property
    def scale_tril(self):
        return self._unbroadcasted_scale_tril.expand(tuple(self._batch_shape) + tuple(self._event_shape))

    @lazy_property
    def covariance_matrix(self):
        L = self._unbroadcasted_scale_tril
        return (L @ L.mT).expand(tuple(self._batch_shape) + tuple(self._event_shape))

    @lazy_property
    def precision_matrix(self):
        return tl.cholesky_inverse(self._unbroadcasted_scale_tril).expand(
            tuple(self._batch_shape) + tuple(self._event_shape))

    def _df_matrix(self, x):
        return x.view(tuple(self._batch_shape) + (1, 1))

    @property
    def mean(self):
        return self._df_matrix(self.df) * self.covariance_matrix

    @property
    def mode(self):
        p = self.covariance_matrix.shape[-1]
        k = self.df - (p + 1)
        return self._df_matrix(tl.where(k > 0, k, tl.full_like(k, float("nan")))) * self.covariance_matrix

    @property
    def variance(self):
        V = self.covariance_matrix
        diag_V = V.diagonal(dim1=-2, dim2=-1)
        return self._df_matrix(self.df) * (V.pow(2) + diag_V.unsqueeze(-1) * diag_V.unsqueeze(-2))

    def _bartlett_sampling(self, sample_shape):
        chi2 = self._dist_chi2.rsample(sample_shape)
        diag = chi2.clamp(min=tl.finfo(chi2.dtype).eps).sqrt().diag_embed(dim1=-2, dim2=-1)
        shape = self._extended_shape(sample_shape)
        normal = tl.randn(shape, dtype=chi2.dtype, device=chi2.device).tril(-1)
        chol = self._unbroadcasted_scale_tril @ (diag + normal)
        return chol @ chol.mT

    def rsample(self, sample_shape=tl.Size(), max_try_correction=None):
        """L A A^T L^T by the Bartlett decomposition (A lower triangular, sqrt(chi2(df - i)) on the diagonal,
        N(0, 1) below it). As torch, a draw that is numerically singular is redrawn, up to
        `max_try_correction` times (default 10), with a warning; checking for it waits for the device."""
        if max_try_correction is None:
            max_try_correction = 10
        sample_shape = tl.Size(sample_shape)
        sample = self._bartlett_sampling(sample_shape)
        ok = tl.linalg.cholesky_ex(sample.detach()).info == 0
        if bool(ok.all()):
            return sample
        warnings.warn("Singular sample detected.")
        for _ in range(max_try_correction):
            fresh = self._bartlett_sampling(sample_shape)
            sample = tl.where(ok.unsqueeze(-1).unsqueeze(-1), sample, fresh)
            ok = tl.linalg.cholesky_ex(sample.detach()).info == 0
            if bool(ok.all()):
                return sample
        warnings.warn(f"Singular samples remain after {max_try_correction} corrections.")
        return sample

    def log_prob(self, value):
        """Wishart log density."""
        if self._validate_args:
            self._validate_sample(value)
        nu = self.df
        p = self._event_shape[-1]
        L = self._unbroadcasted_scale_tril
        return (-nu * (p * _LOG_2 / 2 + L.diagonal(dim1=-2, dim2=-1).log().sum(-1)) - tl.mvlgamma(nu / 2, p)
                + (nu - p - 1) / 2 * tl.linalg.slogdet(value).logabsdet
                - tl.cholesky_solve(value, L).diagonal(dim1=-2, dim2=-1).sum(dim=-1) / 2)

    def entropy(self):
        """(p + 1)/2 log det(2 V) + lmvgamma(nu / 2) - (nu - p - 1)/2 mvdigamma(nu / 2) + nu p / 2."""
        nu = self.df
        p = self._event_shape[-1]
        L = self._unbroadcasted_scale_tril
        return ((p + 1) * (p * _LOG_2 / 2 + L.diagonal(dim1=-2, dim2=-1).log().sum(-1)) + tl.mvlgamma(nu / 2, p)
                - (nu - p - 1) / 2 * _mvdigamma(nu / 2, p) + nu * p / 2)

    @property
    def _natural_params(self):
        p = self._event_shape[-1]
        return -self.precision_matrix / 2, (self.df - p - 1) / 2

    def _log_normalizer(self, x, y):
        p = self._event_shape[-1]
        return ((y + (p + 1) / 2) * (-tl.linalg.slogdet(-2 * x).logabsdet + _LOG_2 * p)
                + tl.mvlgamma(y + (p + 1) / 2, p))
