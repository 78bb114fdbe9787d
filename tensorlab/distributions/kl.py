"""torch.distributions.kl: kl_divergence and the register_kl dispatch table.

Same-family pairs use their closed forms. Cross-family pairs are written once as
KL(p || q) = -H(p) - E_p[log q(X)], with E_p[log q(X)] expanded in the moments of p that q's log density
needs (E[X], E[X^2], E[log X], E[log(1 - X)], E[exp(-X / s)]); a pair whose support of p is not inside
the support of q is infinite."""
from __future__ import annotations

import math
import warnings
from functools import total_ordering

import tensorlab as tl
import tensorlab.nn.functional as F

from .bernoulli import Bernoulli
from .beta import Beta
from .binomial import Binomial
from .categorical import Categorical
from .cauchy import Cauchy
from .continuous_bernoulli import ContinuousBernoulli
from .dirichlet import Dirichlet
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .exponential import Exponential
from .gamma import Gamma
from .geometric import Geometric
from .gumbel import Gumbel
from .half_normal import HalfNormal
from .independent import Independent
from .laplace import Laplace
from .lowrank_multivariate_normal import LowRankMultivariateNormal
from .multivariate_normal import MultivariateNormal, _tril_quad_form as _batch_mahalanobis
from .normal import Normal
from .one_hot_categorical import OneHotCategorical
from .pareto import Pareto
from .poisson import Poisson
from .transformed_distribution import TransformedDistribution
from .uniform import Uniform
from .utils import _sum_rightmost, euler_constant as _euler_gamma

__all__ = ["register_kl", "kl_divergence"]

_KL_REGISTRY = {}  # (type_p, type_q) -> function
_KL_MEMOIZE = {}   # the same, with the dispatch answer for subclasses cached


def register_kl(type_p, type_q):
    """Decorator registering `fn(p, q)` as KL(p || q) for distributions of types type_p and type_q
    (subclasses included; the most specific registration wins)."""
    if not isinstance(type_p, type) or not issubclass(type_p, Distribution):
        raise TypeError(f"Expected type_p to be a Distribution subclass but got {type_p}")
    if not isinstance(type_q, type) or not issubclass(type_q, Distribution):
        raise TypeError(f"Expected type_q to be a Distribution subclass but got {type_q}")

    def decorator(fun):
        _KL_REGISTRY[type_p, type_q] = fun
        _KL_MEMOIZE.clear()
        return fun

    return decorator


@total_ordering
class _Match:
    """Orders registered (type_p, type_q) pairs: one is less than another when it is at least as specific
    in every position."""

    __slots__ = ["types"]

    def __init__(self, *types):
        self.types = types

    def __eq__(self, other):
        return self.types == other.types

    def __le__(self, other):
        for x, y in zip(self.types, other.types):
            if not issubclass(x, y):
                return False
            if x is not y:
                break
        return True


def _dispatch_kl(type_p, type_q):
    matches = [(super_p, super_q) for super_p, super_q in _KL_REGISTRY
               if issubclass(type_p, super_p) and issubclass(type_q, super_q)]
    if not matches:
        return NotImplemented
    left_p, left_q = min(_Match(*m) for m in matches).types
    right_q, right_p = min(_Match(*reversed(m)) for m in matches).types
    left_fun = _KL_REGISTRY[left_p, left_q]
    right_fun = _KL_REGISTRY[right_p, right_q]
    if left_fun is not right_fun:
        warnings.warn(f"Ambiguous kl_divergence({type_p.__name__}, {type_q.__name__}). Please register_kl("
                      f"{left_p.__name__}, {right_q.__name__})", RuntimeWarning)
    return left_fun


def kl_divergence(p, q):
    """KL(p || q) = E_p[log p(X) - log q(X)], batched over the distributions' batch shape.

    Raises NotImplementedError when no formula is registered for the pair of types."""
    try:
        fun = _KL_MEMOIZE[type(p), type(q)]
    except KeyError:
        fun = _dispatch_kl(type(p), type(q))
        _KL_MEMOIZE[type(p), type(q)] = fun
    if fun is NotImplemented:
        raise NotImplementedError(f"No KL(p || q) is implemented for p type {p.__class__.__name__} and "
                                  f"q type {q.__class__.__name__}")
    return fun(p, q)


def _infinite_like(t):
    return tl.full_like(t, math.inf)


def _inf_where(cond, value):
    return tl.where(cond, _infinite_like(value), value)


def _batch_trace_XXT(bmat):
    return bmat.pow(2).flatten(-2).sum(-1)


# ---- same family ------------------------------------------------------------------------------------------

@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p, q):
    t1 = p.probs * (F.softplus(-q.logits) - F.softplus(-p.logits))
    t1 = tl.where(q.probs == 0, _infinite_like(t1), t1)
    t1 = tl.where(p.probs == 0, tl.zeros_like(t1), t1)
    t2 = (1 - p.probs) * (F.softplus(q.logits) - F.softplus(p.logits))
    t2 = tl.where(q.probs == 1, _infinite_like(t2), t2)
    t2 = tl.where(p.probs == 1, tl.zeros_like(t2), t2)
    return t1 + t2


@register_kl(Beta, Beta)
def _kl_beta_beta(p, q):
    sum_p = p.concentration1 + p.concentration0
    sum_q = q.concentration1 + q.concentration0
    t1 = q.concentration1.lgamma() + q.concentration0.lgamma() + sum_p.lgamma()
    t2 = p.concentration1.lgamma() + p.concentration0.lgamma() + sum_q.lgamma()
    t3 = (p.concentration1 - q.concentration1) * tl.digamma(p.concentration1)
    t4 = (p.concentration0 - q.concentration0) * tl.digamma(p.concentration0)
    t5 = (sum_q - sum_p) * tl.digamma(sum_p)
    return t1 - t2 + t3 + t4 + t5


@register_kl(Binomial, Binomial)
def _kl_binomial_binomial(p, q):
    if bool((p.total_count < q.total_count).any()):
        raise NotImplementedError("KL between Binomials where q.total_count > p.total_count is not implemented")
    kl = p.total_count * (p.probs * (p.logits - q.logits) + (-p.probs).log1p() - (-q.probs).log1p())
    return _inf_where(p.total_count > q.total_count, kl)


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p, q):
    t = p.probs * (p.logits - q.logits)
    t = tl.where((q.probs == 0).expand_as(t), _infinite_like(t), t)
    t = tl.where((p.probs == 0).expand_as(t), tl.zeros_like(t), t)
    return t.sum(-1)


@register_kl(ContinuousBernoulli, ContinuousBernoulli)
def _kl_continuous_bernoulli_continuous_bernoulli(p, q):
    t1 = p.mean * (p.logits - q.logits)
    t2 = p._cont_bern_log_norm() + tl.log1p(-p.probs)
    t3 = -q._cont_bern_log_norm() - tl.log1p(-q.probs)
    return t1 + t2 + t3


@register_kl(Dirichlet, Dirichlet)
def _kl_dirichlet_dirichlet(p, q):
    sum_p = p.concentration.sum(-1)
    sum_q = q.concentration.sum(-1)
    t1 = sum_p.lgamma() - sum_q.lgamma()
    t2 = (p.concentration.lgamma() - q.concentration.lgamma()).sum(-1)
    t3 = p.concentration - q.concentration
    t4 = p.concentration.digamma() - sum_p.digamma().unsqueeze(-1)
    return t1 - t2 + (t3 * t4).sum(-1)


@register_kl(Exponential, Exponential)
def _kl_exponential_exponential(p, q):
    rate_ratio = q.rate / p.rate
    return -rate_ratio.log() + rate_ratio - 1


@register_kl(ExponentialFamily, ExponentialFamily)
def _kl_expfamily_expfamily(p, q):
    if not type(p) == type(q):
        raise NotImplementedError("The cross KL-divergence between different exponential families cannot be "
                                  "computed using Bregman divergences")
    p_nparams = [np_.detach().requires_grad_() for np_ in p._natural_params]
    q_nparams = q._natural_params
    with tl.enable_grad():
        lg_normal = p._log_normalizer(*p_nparams)
        gradients = tl.autograd.grad(lg_normal.sum(), p_nparams, create_graph=True)
    result = q._log_normalizer(*q_nparams) - lg_normal
    for pnp, qnp, g in zip(p_nparams, q_nparams, gradients):
        result = result - _sum_rightmost((qnp - pnp) * g, len(q.event_shape))
    return result


@register_kl(Gamma, Gamma)
def _kl_gamma_gamma(p, q):
    t1 = q.concentration * tl.log(p.rate / q.rate)
    t2 = tl.lgamma(q.concentration) - tl.lgamma(p.concentration)
    t3 = (p.concentration - q.concentration) * tl.digamma(p.concentration)
    t4 = (q.rate - p.rate) * (p.concentration / p.rate)
    return t1 + t2 + t3 + t4


@register_kl(Gumbel, Gumbel)
def _kl_gumbel_gumbel(p, q):
    ct1 = p.scale / q.scale
    ct2 = q.loc / q.scale
    ct3 = p.loc / q.scale
    t1 = -ct1.log() - ct2 + ct3
    t2 = ct1 * _euler_gamma
    t3 = tl.exp(ct2 + (1 + ct1).lgamma() - ct3)
    return t1 + t2 + t3 - (1 + _euler_gamma)


@register_kl(Geometric, Geometric)
def _kl_geometric_geometric(p, q):
    return -p.entropy() - tl.log1p(-q.probs) / p.probs - q.logits


@register_kl(HalfNormal, HalfNormal)
def _kl_halfnormal_halfnormal(p, q):
    return _kl_normal_normal(p.base_dist, q.base_dist)


@register_kl(Laplace, Laplace)
def _kl_laplace_laplace(p, q):
    scale_ratio = p.scale / q.scale
    loc_abs_diff = (p.loc - q.loc).abs()
    return -scale_ratio.log() + loc_abs_diff / q.scale + scale_ratio * tl.exp(-loc_abs_diff / p.scale) - 1


def _kl_gaussian_from_tril(p_loc, p_L, q_loc, q_L, n):
    """KL between Gaussians given lower Cholesky factors of their covariances."""
    half_term1 = q_L.diagonal(dim1=-2, dim2=-1).log().sum(-1) - p_L.diagonal(dim1=-2, dim2=-1).log().sum(-1)
    batch = tl.broadcast_shapes(tuple(q_L.shape[:-2]), tuple(p_L.shape[:-2]))
    qL = q_L.expand(tuple(batch) + (n, n))
    pL = p_L.expand(tuple(batch) + (n, n))
    term2 = _batch_trace_XXT(tl.linalg.solve_triangular(qL, pL, upper=False))
    term3 = _batch_mahalanobis(q_L, q_loc - p_loc)
    return half_term1 + 0.5 * (term2 + term3 - n)


def _check_mvn_shapes(p, q):
    if tuple(p.event_shape) != tuple(q.event_shape):
        raise ValueError("KL-divergence between two Multivariate Normals with different event shapes cannot "
                         "be computed")


@register_kl(MultivariateNormal, MultivariateNormal)
def _kl_multivariatenormal_multivariatenormal(p, q):
    _check_mvn_shapes(p, q)
    return _kl_gaussian_from_tril(p.loc, p._unbroadcasted_scale_tril, q.loc, q._unbroadcasted_scale_tril,
                                  p.event_shape[0])


@register_kl(LowRankMultivariateNormal, LowRankMultivariateNormal)
@register_kl(LowRankMultivariateNormal, MultivariateNormal)
@register_kl(MultivariateNormal, LowRankMultivariateNormal)
def _kl_lowrank_gaussians(p, q):
    _check_mvn_shapes(p, q)
    return _kl_gaussian_from_tril(p.loc, p.scale_tril, q.loc, q.scale_tril, p.event_shape[0])


@register_kl(Normal, Normal)
def _kl_normal_normal(p, q):
    var_ratio = (p.scale / q.scale).pow(2)
    t1 = ((p.loc - q.loc) / q.scale).pow(2)
    return 0.5 * (var_ratio + t1 - 1 - var_ratio.log())


@register_kl(OneHotCategorical, OneHotCategorical)
def _kl_onehotcategorical_onehotcategorical(p, q):
    return _kl_categorical_categorical(p._categorical, q._categorical)


@register_kl(Pareto, Pareto)
def _kl_pareto_pareto(p, q):
    scale_ratio = p.scale / q.scale
    alpha_ratio = q.alpha / p.alpha
    result = q.alpha * scale_ratio.log() - alpha_ratio.log() + alpha_ratio - 1
    return _inf_where(p.scale < q.scale, result)


@register_kl(Poisson, Poisson)
def _kl_poisson_poisson(p, q):
    return p.rate * (p.rate.log() - q.rate.log()) - (p.rate - q.rate)


@register_kl(TransformedDistribution, TransformedDistribution)
def _kl_transformed_transformed(p, q):
    if p.transforms != q.transforms:
        raise NotImplementedError(f"KL between TransformedDistributions needs the same transforms, got "
                                  f"{p.transforms} and {q.transforms}")
    if tuple(p.event_shape) != tuple(q.event_shape):
        raise NotImplementedError(f"KL between TransformedDistributions needs the same event_shape, got "
                                  f"{p.event_shape} and {q.event_shape}")
    return kl_divergence(p.base_dist, q.base_dist)


@register_kl(Uniform, Uniform)
def _kl_uniform_uniform(p, q):
    result = ((q.high - q.low) / (p.high - p.low)).log()
    return _inf_where((q.low > p.low) | (q.high < p.high), result)


@register_kl(Cauchy, Cauchy)
def _kl_cauchy_cauchy(p, q):
    t1 = ((p.scale + q.scale).pow(2) + (p.loc - q.loc).pow(2)).log()
    t2 = (4 * p.scale * q.scale).log()
    return t1 - t2


@register_kl(Independent, Independent)
def _kl_independent_independent(p, q):
    if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
        raise NotImplementedError("KL between Independent distributions needs the same reinterpreted_batch_ndims")
    result = kl_divergence(p.base_dist, q.base_dist)
    return _sum_rightmost(result, p.reinterpreted_batch_ndims)


# ---- cross families: -H(p) - E_p[log q(X)] ----------------------------------------------------------------

def _mean_log(p):
    """E_p[log X] for the positive families p."""
    if isinstance(p, Exponential):
        return -_euler_gamma - p.rate.log()
    if isinstance(p, Gamma):
        return tl.digamma(p.concentration) - p.rate.log()
    if isinstance(p, Beta):
        return tl.digamma(p.concentration1) - tl.digamma(p.concentration1 + p.concentration0)
    if isinstance(p, Pareto):
        return p.scale.log() + p.alpha.reciprocal()
    if isinstance(p, Uniform):  # low >= 0 (callers send the other case to infinity)
        lo, hi = p.low.clamp(min=0), p.high.clamp(min=0)
        return (tl.xlogy(hi, hi) - hi - tl.xlogy(lo, lo) + lo) / (hi - lo)
    raise NotImplementedError(type(p).__name__)


def _mean_log1m(p):
    """E_p[log(1 - X)] for the families on [0, 1]."""
    if isinstance(p, Beta):
        return tl.digamma(p.concentration0) - tl.digamma(p.concentration1 + p.concentration0)
    if isinstance(p, Uniform):
        lo, hi = (1 - p.high).clamp(min=0), (1 - p.low).clamp(min=0)
        return (tl.xlogy(hi, hi) - hi - tl.xlogy(lo, lo) + lo) / (hi - lo)
    raise NotImplementedError(type(p).__name__)


def _mean_exp_neg(p, s):
    """E_p[exp(-X / s)] (the moment generating function at -1/s)."""
    if isinstance(p, Exponential):
        return p.rate / (p.rate + 1 / s)
    if isinstance(p, Gamma):
        return (p.rate / (p.rate + 1 / s)).pow(p.concentration)
    if isinstance(p, Normal):
        return tl.exp(-p.loc / s + p.scale.pow(2) / (2 * s.pow(2)))
    if isinstance(p, Uniform):
        return s * (tl.exp(-p.low / s) - tl.exp(-p.high / s)) / (p.high - p.low)
    raise NotImplementedError(type(p).__name__)


def _second_moment(p):
    return p.variance + p.mean.pow(2)


def _xlogq_normal(p, q):
    return (-0.5 * math.log(2 * math.pi) - q.scale.log()
            - (_second_moment(p) - 2 * q.loc * p.mean + q.loc.pow(2)) / (2 * q.scale.pow(2)))


def _xlogq_exponential(p, q):
    return q.rate.log() - q.rate * p.mean


def _xlogq_gamma(p, q):
    return (tl.xlogy(q.concentration, q.rate) - tl.lgamma(q.concentration)
            + (q.concentration - 1) * _mean_log(p) - q.rate * p.mean)


def _xlogq_gumbel(p, q):
    # log q(x) = -log s - (x - m) / s - exp(-(x - m) / s)
    return -q.scale.log() - (p.mean - q.loc) / q.scale - tl.exp(q.loc / q.scale) * _mean_exp_neg(p, q.scale)


def _xlogq_beta(p, q):
    a, b = q.concentration1, q.concentration0
    lbeta = tl.lgamma(a) + tl.lgamma(b) - tl.lgamma(a + b)
    return (a - 1) * _mean_log(p) + (b - 1) * _mean_log1m(p) - lbeta


def _xlogq_pareto(p, q):
    return q.alpha.log() + q.alpha * q.scale.log() - (q.alpha + 1) * _mean_log(p)


def _xlogq_continuous_bernoulli(p, q):
    # log q(x) = x logit(q) + log(1 - q) + log C(q)
    return p.mean * q.logits + tl.log1p(-q.probs) + q._cont_bern_log_norm()


def _xlogq_uniform(p, q):
    return -(q.high - q.low).log()


def _register_cross(pairs, xlogq, infinite_where=None):
    for tp, tq in pairs:
        def fn(p, q, _xlogq=xlogq, _inf=infinite_where):
            result = -p.entropy() - _xlogq(p, q)
            if _inf is not None:
                result = _inf_where(_inf(p, q), result)
            return result
        register_kl(tp, tq)(fn)


_register_cross([(Exponential, Normal), (Gamma, Normal), (Uniform, Normal), (Beta, Normal), (Gumbel, Normal),
                 (Laplace, Normal), (Pareto, Normal)], _xlogq_normal)
_register_cross([(Gamma, Exponential), (Beta, Exponential), (Pareto, Exponential)], _xlogq_exponential)
_register_cross([(Uniform, Exponential)], _xlogq_exponential, lambda p, q: p.low < 0)
_register_cross([(Exponential, Gamma), (Beta, Gamma), (Pareto, Gamma)], _xlogq_gamma)
_register_cross([(Uniform, Gamma)], _xlogq_gamma, lambda p, q: p.low < 0)
_register_cross([(Exponential, Gumbel), (Gamma, Gumbel), (Normal, Gumbel), (Uniform, Gumbel)], _xlogq_gumbel)
_register_cross([(Uniform, Beta)], _xlogq_beta, lambda p, q: (p.low < 0) | (p.high > 1))
_register_cross([(Uniform, Pareto)], _xlogq_pareto, lambda p, q: p.low < q.scale)
_register_cross([(ContinuousBernoulli, Normal)], _xlogq_normal)
_register_cross([(ContinuousBernoulli, Exponential)], _xlogq_exponential)
_register_cross([(ContinuousBernoulli, Uniform)], _xlogq_uniform, lambda p, q: (q.low > 0) | (q.high < 1))
_register_cross([(Beta, ContinuousBernoulli)], _xlogq_continuous_bernoulli)
_register_cross([(Uniform, ContinuousBernoulli)], _xlogq_continuous_bernoulli,
                lambda p, q: (p.low < 0) | (p.high > 1))


@register_kl(Normal, Laplace)
def _kl_normal_laplace(p, q):
    # E|X - m| for X ~ N(mu, sigma): sigma sqrt(2/pi) exp(-d^2 / 2 sigma^2) + d erf(d / (sigma sqrt 2))
    d = p.loc - q.loc
    mean_abs = (p.scale * math.sqrt(2 / math.pi) * tl.exp(-d.pow(2) / (2 * p.scale.pow(2)))
                + d * tl.erf(d / (p.scale * math.sqrt(2))))
    return -p.entropy() + tl.log(2 * q.scale) + mean_abs / q.scale


@register_kl(Beta, Uniform)
def _kl_beta_uniform(p, q):
    result = -p.entropy() + (q.high - q.low).log()
    return _inf_where((q.low > 0) | (q.high < 1), result)


@register_kl(Bernoulli, Poisson)
def _kl_bernoulli_poisson(p, q):
    return -p.entropy() - (p.probs * q.rate.log() - q.rate)


def _kl_infinite(value_of):
    def fn(p, q):
        return _infinite_like(value_of(p))
    return fn


_INFINITE = {
    (Exponential, Beta): lambda p: p.rate, (Exponential, ContinuousBernoulli): lambda p: p.rate,
    (Exponential, Uniform): lambda p: p.rate, (Exponential, Pareto): lambda p: p.rate,
    (Gamma, Beta): lambda p: p.concentration, (Gamma, ContinuousBernoulli): lambda p: p.concentration,
    (Gamma, Uniform): lambda p: p.concentration, (Gamma, Pareto): lambda p: p.concentration,
    (Gumbel, Beta): lambda p: p.loc, (Gumbel, ContinuousBernoulli): lambda p: p.loc,
    (Gumbel, Exponential): lambda p: p.loc, (Gumbel, Gamma): lambda p: p.loc, (Gumbel, Pareto): lambda p: p.loc,
    (Gumbel, Uniform): lambda p: p.loc,
    (Laplace, Beta): lambda p: p.loc, (Laplace, ContinuousBernoulli): lambda p: p.loc,
    (Laplace, Exponential): lambda p: p.loc, (Laplace, Gamma): lambda p: p.loc, (Laplace, Pareto): lambda p: p.loc,
    (Laplace, Uniform): lambda p: p.loc,
    (Normal, Beta): lambda p: p.loc, (Normal, ContinuousBernoulli): lambda p: p.loc,
    (Normal, Exponential): lambda p: p.loc, (Normal, Gamma): lambda p: p.loc, (Normal, Pareto): lambda p: p.loc,
    (Normal, Uniform): lambda p: p.loc,
    (Pareto, Beta): lambda p: p.scale, (Pareto, ContinuousBernoulli): lambda p: p.scale,
    (Pareto, Uniform): lambda p: p.scale,
    (Beta, Pareto): lambda p: p.concentration0, (ContinuousBernoulli, Pareto): lambda p: p.probs,
    (Poisson, Bernoulli): lambda p: p.rate, (Poisson, Binomial): lambda p: p.rate,
}
for (_tp, _tq), _value_of in _INFINITE.items():
    register_kl(_tp, _tq)(_kl_infinite(_value_of))
