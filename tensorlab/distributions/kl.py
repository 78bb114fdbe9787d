"""torch.distributions.kl: kl_divergence and the register_kl dispatch table.

Same-family pairs use their closed forms. Cross-family pairs are written once as
KL(p || q) = -H(p) - E_p[log q(X)], with E_p[log q(X)] expanded in the moments of p that q's log density
needs (E[X], E[X^2], E[log X], E[log(1 - X)], E[exp(-X / s)]); a pair whose support of p is not inside
the support of q is infinite."""
from __future__ import annotations

import math
import warnings

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
from .multivariate_normal import MultivariateNormal, _tril_quad_form
from .normal import Normal
from .one_hot_categorical import OneHotCategorical
from .pareto import Pareto
from .poisson import Poisson
from .transformed_distribution import TransformedDistribution
from .uniform import Uniform
from .utils import _sum_rightmost, euler_constant as _euler_gamma

__all__ = ["register_kl", "kl_divergence"]

_TABLE = {}     # (type_p, type_q) -> registered function
_RESOLVED = {}  # (type(p), type(q)) -> function chosen for that exact pair (or NotImplemented)
# torch's module-level names for the two tables, which user code reaches into (e.g. to unregister)
_KL_REGISTRY, _KL_MEMOIZE = _TABLE, _RESOLVED


def register_kl(type_p, type_q):
    """Decorator registering `fn(p, q)` as KL(p || q) for distributions of types type_p and type_q
    (subclasses included; the most specific registration wins)."""
    for name, t in (("type_p", type_p), ("type_q", type_q)):
        if not (isinstance(t, type) and issubclass(t, Distribution)):
            raise TypeError(f"Expected {name} to be a Distribution subclass but got {t}")

    def install(fn):
        _TABLE[(type_p, type_q)] = fn
        _RESOLVED.clear()  # earlier lookups may now resolve differently
        return fn

    return install


def _no_less_specific(a, b):
    """Whether the type tuple `a` is at least as specific as `b`, position by position (the first position
    where they differ decides)."""
    for x, y in zip(a, b):
        if not issubclass(x, y):
            return False
        if x is not y:
            return True
    return True


def _most_specific(keys):
    best = keys[0]
    for k in keys[1:]:
        if k != best and _no_less_specific(k, best):
            best = k
    return best


def _resolve(tp, tq):
    hits = [k for k in _TABLE if issubclass(tp, k[0]) and issubclass(tq, k[1])]
    if not hits:
        return NotImplemented
    # prefer specificity in p first, then (as a cross-check) in q first
    by_p = _most_specific(hits)
    by_q = _most_specific([k[::-1] for k in hits])[::-1]
    chosen = _TABLE[by_p]
    if chosen is not _TABLE[by_q]:
        warnings.warn(f"Ambiguous kl_divergence({tp.__name__}, {tq.__name__}). Please register_kl("
                      f"{by_p[0].__name__}, {by_q[1].__name__})", RuntimeWarning)
    return chosen


def kl_divergence(p, q):
    """KL(p || q) = E_p[log p(X) - log q(X)], batched over the distributions' batch shape.

    Raises NotImplementedError when no formula is registered for the pair of types."""
    key = (type(p), type(q))
    if key not in _RESOLVED:
        _RESOLVED[key] = _resolve(*key)
    fn = _RESOLVED[key]
    if fn is NotImplemented:
        raise NotImplementedError(f"No KL(p || q) is implemented for p type {p.__class__.__name__} and "
                                  f"q type {q.__class__.__name__}")
    return fn(p, q)


def _infinite_like(t):
    return tl.full_like(t, math.inf)


def _inf_where(cond, value):
    return tl.where(cond, _infinite_like(value), value)


def _fix_edges(term, inf_mask, zero_mask):
    """term with +inf where q gives the mass no room and 0 where p puts none (0 log 0 = 0)."""
    term = tl.where(inf_mask, _infinite_like(term), term)
    return tl.where(zero_mask, tl.zeros_like(term), term)


# ---- same family ------------------------------------------------------------------------------------------

def _pair_bernoulli(p, q):
    a, b = p.probs, q.probs
    heads = a * (F.softplus(-q.logits) - F.softplus(-p.logits))
    tails = (1 - a) * (F.softplus(q.logits) - F.softplus(p.logits))
    return _fix_edges(heads, b == 0, a == 0) + _fix_edges(tails, b == 1, a == 1)


def _log_beta_fn(a, b):
    return a.lgamma() + b.lgamma() - (a + b).lgamma()


def _pair_beta(p, q):
    a1, b1, a2, b2 = p.concentration1, p.concentration0, q.concentration1, q.concentration0
    s1 = a1 + b1
    return (_log_beta_fn(a2, b2) - _log_beta_fn(a1, b1) + (a1 - a2) * a1.digamma() + (b1 - b2) * b1.digamma()
            + (a2 + b2 - s1) * s1.digamma())


def _pair_binomial(p, q):
    n, m = p.total_count, q.total_count
    if bool((n < m).any()):
        raise NotImplementedError("KL between Binomials where q.total_count > p.total_count is not implemented")
    per_trial = p.probs * (p.logits - q.logits) + (-p.probs).log1p() - (-q.probs).log1p()
    return _inf_where(n > m, n * per_trial)


def _pair_categorical(p, q):
    terms = p.probs * (p.logits - q.logits)
    terms = _fix_edges(terms, (q.probs == 0).expand_as(terms), (p.probs == 0).expand_as(terms))
    return terms.sum(-1)


def _pair_continuous_bernoulli(p, q):
    own = p._log_norm_const() + (-p.probs).log1p()
    other = q._log_norm_const() + (-q.probs).log1p()
    return p.mean * (p.logits - q.logits) + own - other


def _pair_dirichlet(p, q):
    a, b = p.concentration, q.concentration
    a0 = a.sum(-1)
    expected_log = a.digamma() - a0.digamma().unsqueeze(-1)
    return (a0.lgamma() - b.sum(-1).lgamma() - (a.lgamma() - b.lgamma()).sum(-1)
            + ((a - b) * expected_log).sum(-1))


def _pair_exponential(p, q):
    r = q.rate / p.rate
    return r - r.log() - 1


def _pair_exp_family(p, q):
    if type(p) is not type(q):
        raise NotImplementedError("The cross KL-divergence between different exponential families cannot be "
                                  "computed using Bregman divergences")
    # Bregman divergence of the log normalizer A: A(eta_q) - A(eta_p) - <eta_q - eta_p, grad A(eta_p)>
    eta_p = [t.detach().requires_grad_() for t in p._natural_params]
    eta_q = q._natural_params
    with tl.enable_grad():
        a_p = p._log_normalizer(*eta_p)
        grads = tl.autograd.grad(a_p.sum(), eta_p, create_graph=True)
    out = q._log_normalizer(*eta_q) - a_p
    n_event = len(q.event_shape)
    for ep, eq, g in zip(eta_p, eta_q, grads):
        out = out - _sum_rightmost((eq - ep) * g, n_event)
    return out


def _pair_gamma(p, q):
    k1, r1, k2, r2 = p.concentration, p.rate, q.concentration, q.rate
    return (k2 * (r1 / r2).log() + k2.lgamma() - k1.lgamma() + (k1 - k2) * k1.digamma()
            + (r2 - r1) * k1 / r1)


def _pair_gumbel(p, q):
    s = p.scale / q.scale
    mq, mp = q.loc / q.scale, p.loc / q.scale
    return (mp - mq - s.log() + s * _euler_gamma + (mq - mp + (1 + s).lgamma()).exp()
            - (1 + _euler_gamma))


def _pair_geometric(p, q):
    return -p.entropy() - (-q.probs).log1p() / p.probs - q.logits


def _pair_halfnormal(p, q):
    return _pair_normal(p.base_dist, q.base_dist)


def _pair_laplace(p, q):
    s = p.scale / q.scale
    gap = (p.loc - q.loc).abs()
    return gap / q.scale + s * (-gap / p.scale).exp() - s.log() - 1


def _gaussian_kl_tril(mu_p, low_p, mu_q, low_q, n):
    """KL between Gaussians given lower Cholesky factors of their covariances:
    log det Lq - log det Lp + (|Lq^-1 Lp|_F^2 + |Lq^-1 (mu_q - mu_p)|^2 - n) / 2."""
    log_det_gap = (low_q.diagonal(dim1=-2, dim2=-1).log().sum(-1)
                   - low_p.diagonal(dim1=-2, dim2=-1).log().sum(-1))
    lead = tuple(tl.broadcast_shapes(tuple(low_q.shape[:-2]), tuple(low_p.shape[:-2])))
    mixed = tl.linalg.solve_triangular(low_q.expand(lead + (n, n)), low_p.expand(lead + (n, n)), upper=False)
    trace_term = mixed.square().flatten(-2).sum(-1)
    return log_det_gap + 0.5 * (trace_term + _tril_quad_form(low_q, mu_q - mu_p) - n)


def _same_event(p, q):
    if tuple(p.event_shape) != tuple(q.event_shape):
        raise ValueError("KL-divergence between two Multivariate Normals with different event shapes cannot "
                         "be computed")


def _pair_mvn(p, q):
    _same_event(p, q)
    return _gaussian_kl_tril(p.loc, p._unbroadcasted_scale_tril, q.loc, q._unbroadcasted_scale_tril,
                             p.event_shape[0])


def _pair_any_gaussians(p, q):
    _same_event(p, q)
    return _gaussian_kl_tril(p.loc, p.scale_tril, q.loc, q.scale_tril, p.event_shape[0])


def _pair_normal(p, q):
    v = (p.scale / q.scale).square()
    z = ((p.loc - q.loc) / q.scale).square()
    return 0.5 * (v + z - 1 - v.log())


def _pair_onehot(p, q):
    return _pair_categorical(p._categorical, q._categorical)


def _pair_pareto(p, q):
    ratio_a = q.alpha / p.alpha
    out = q.alpha * (p.scale / q.scale).log() + ratio_a - ratio_a.log() - 1
    return _inf_where(p.scale < q.scale, out)


def _pair_poisson(p, q):
    lam, mu = p.rate, q.rate
    return lam * (lam.log() - mu.log()) - lam + mu


def _pair_transformed(p, q):
    if p.transforms != q.transforms:
        raise NotImplementedError(f"KL between TransformedDistributions needs the same transforms, got "
                                  f"{p.transforms} and {q.transforms}")
    if tuple(p.event_shape) != tuple(q.event_shape):
        raise NotImplementedError(f"KL between TransformedDistributions needs the same event_shape, got "
                                  f"{p.event_shape} and {q.event_shape}")
    return kl_divergence(p.base_dist, q.base_dist)


def _pair_uniform(p, q):
    out = ((q.high - q.low) / (p.high - p.low)).log()
    return _inf_where((q.low > p.low) | (q.high < p.high), out)


def _pair_cauchy(p, q):
    s1, s2 = p.scale, q.scale
    return ((s1 + s2).square() + (p.loc - q.loc).square()).log() - (4 * s1 * s2).log()


def _pair_independent(p, q):
    n = p.reinterpreted_batch_ndims
    if n != q.reinterpreted_batch_ndims:
        raise NotImplementedError("KL between Independent distributions needs the same reinterpreted_batch_ndims")
    return _sum_rightmost(kl_divergence(p.base_dist, q.base_dist), n)


_SAME_FAMILY = (
    (Bernoulli, _pair_bernoulli), (Beta, _pair_beta), (Binomial, _pair_binomial),
    (Categorical, _pair_categorical), (ContinuousBernoulli, _pair_continuous_bernoulli),
    (Dirichlet, _pair_dirichlet), (Exponential, _pair_exponential), (ExponentialFamily, _pair_exp_family),
    (Gamma, _pair_gamma), (Gumbel, _pair_gumbel), (Geometric, _pair_geometric), (HalfNormal, _pair_halfnormal),
    (Laplace, _pair_laplace), (MultivariateNormal, _pair_mvn),
    # any mix of the two Gaussian parameterizations goes through scale_tril
    ((MultivariateNormal, LowRankMultivariateNormal), _pair_any_gaussians),
    ((LowRankMultivariateNormal, MultivariateNormal), _pair_any_gaussians),
    (LowRankMultivariateNormal, _pair_any_gaussians),
    (Normal, _pair_normal), (OneHotCategorical, _pair_onehot), (Pareto, _pair_pareto), (Poisson, _pair_poisson),
    (TransformedDistribution, _pair_transformed), (Uniform, _pair_uniform), (Cauchy, _pair_cauchy),
    (Independent, _pair_independent),
)
for _key, _fn in _SAME_FAMILY:
    register_kl(*(_key if isinstance(_key, tuple) else (_key, _key)))(_fn)


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
    return p.mean * q.logits + tl.log1p(-q.probs) + q._log_norm_const()


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
