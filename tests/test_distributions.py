"""tensorlab.distributions against torch.distributions: every family's log_prob / cdf / icdf / entropy /
moments on the same parameters and values (float64), sample shapes, dtypes and devices, statistics of
samples with fixed seeds, gradients of log_prob and rsample, validation errors, and an actor-critic step."""
from __future__ import annotations

import math

import numpy as np
import pytest

import tensorlab as tl
import tensorlab.distributions as D
from tensorlab.distributions import constraints

# name -> (parameters as nested lists, values at which log_prob/cdf are evaluated or None: torch samples)
P3 = [0.5, 1.5, 2.5]
Q3 = [0.2, 0.5, 0.9]
PROBS = [[0.2, 0.3, 0.5], [0.1, 0.6, 0.3]]
CASES = {
    "Normal": dict(loc=[0.0, 1.0, -2.0], scale=P3),
    "Uniform": dict(low=[0.0, -1.0, 2.0], high=[1.0, 3.0, 2.5]),
    "Exponential": dict(rate=P3),
    "Laplace": dict(loc=[0.0, 1.0, -2.0], scale=P3),
    "Cauchy": dict(loc=[0.0, 1.0, -2.0], scale=P3),
    "LogNormal": dict(loc=[0.0, 0.5, -1.0], scale=P3),
    "HalfNormal": dict(scale=P3),
    "HalfCauchy": dict(scale=P3),
    "Gumbel": dict(loc=[0.0, 1.0, -2.0], scale=P3),
    "Pareto": dict(scale=P3, alpha=[1.5, 2.5, 4.0]),
    "Weibull": dict(scale=P3, concentration=[0.7, 1.5, 3.0]),
    "Gamma": dict(concentration=[0.4, 1.5, 6.0], rate=P3),
    "Chi2": dict(df=[0.8, 3.0, 7.5]),
    "Beta": dict(concentration1=[0.5, 2.0, 5.0], concentration0=[0.7, 3.0, 1.5]),
    "Dirichlet": dict(concentration=[[0.5, 2.0, 3.0], [1.5, 1.5, 0.4]]),
    "StudentT": dict(df=[0.8, 2.5, 9.0], loc=[0.0, 1.0, -2.0], scale=P3),
    "FisherSnedecor": dict(df1=[1.5, 3.0, 9.0], df2=[3.0, 5.0, 12.0]),
    "Bernoulli": dict(probs=Q3),
    "Bernoulli_logits": dict(logits=[-1.0, 0.3, 2.0]),
    "Geometric": dict(probs=Q3),
    "Poisson": dict(rate=[0.5, 4.0, 30.0]),
    "Binomial": dict(total_count=[10.0, 10.0, 10.0], probs=Q3),
    "NegativeBinomial": dict(total_count=[2.0, 5.0, 7.5], probs=Q3),
    "Categorical": dict(probs=PROBS),
    "Categorical_logits": dict(logits=[[0.1, -1.0, 2.0], [0.0, 0.5, 0.3]]),
    "OneHotCategorical": dict(probs=PROBS),
    "Multinomial": dict(total_count=6, probs=PROBS),
    "OneHotCategoricalStraightThrough": dict(probs=PROBS),
    "ContinuousBernoulli": dict(probs=[0.2, 0.4995, 0.9]),
    "ContinuousBernoulli_logits": dict(logits=[-1.5, 0.0001, 2.0]),
    "Kumaraswamy": dict(concentration1=[0.5, 2.0, 5.0], concentration0=[0.7, 3.0, 1.5]),
    "VonMises": dict(loc=[0.0, 1.0, -2.0], concentration=[0.5, 2.0, 10.0]),
    "LogisticNormal": dict(loc=[[0.0, 1.0, -1.0], [0.5, 0.2, 0.1]], scale=[[0.5, 1.0, 2.0], [1.0, 1.0, 1.0]]),
    "RelaxedBernoulli": dict(temperature=[0.7], probs=Q3),
    "RelaxedOneHotCategorical": dict(temperature=[0.5], probs=PROBS),
    "LKJCholesky": dict(dim=3, concentration=[0.5, 2.0]),
    "MultivariateNormal": dict(loc=[[0.0, 1.0], [1.0, -1.0]], scale_tril=[[[1.0, 0.0], [0.5, 2.0]],
                                                                         [[0.7, 0.0], [-0.3, 0.4]]]),
    "MultivariateNormal_cov": dict(loc=[0.0, 1.0, 2.0], covariance_matrix=[[2.0, 0.3, 0.1], [0.3, 1.0, -0.2],
                                                                          [0.1, -0.2, 0.5]]),
    "MultivariateNormal_prec": dict(loc=[0.0, 1.0, 2.0], precision_matrix=[[2.0, 0.3, 0.1], [0.3, 1.0, -0.2],
                                                                          [0.1, -0.2, 0.5]]),
    "LowRankMultivariateNormal": dict(loc=[[0.0, 1.0, 2.0], [1.0, 0.0, -1.0]],
                                      cov_factor=[[[0.5, 1.0], [0.2, -0.3], [1.0, 0.1]]],
                                      cov_diag=[[1.0, 0.5, 2.0], [0.3, 0.3, 0.3]]),
    "Wishart": dict(df=[3.0, 4.5], covariance_matrix=[[[2.0, 0.3], [0.3, 1.0]], [[1.0, -0.2], [-0.2, 0.5]]]),
    "Wishart_tril": dict(df=[3.0, 4.5], scale_tril=[[[1.0, 0.0], [0.5, 2.0]], [[0.7, 0.0], [-0.3, 0.4]]]),
    "InverseGamma": dict(concentration=[0.8, 2.5, 6.0], rate=P3),
    "GeneralizedPareto": dict(loc=[0.0, 1.0, -2.0], scale=P3, concentration=[0.3, 0.0, -0.4]),
}
# torch's GeneralizedPareto.log_prob raises for float64 parameters (isclose against a float32 zero): its oracle
# runs in float32, ours in float64
TORCH_FLOAT32 = {"GeneralizedPareto"}
NO_CDF = set()


def _cls(name):
    return name.split("_")[0]


def _tl_params(params, device):
    return {k: (tl.tensor(np.array(v, dtype=np.float64), device=device) if isinstance(v, list) else v)
            for k, v in params.items()}


def _torch_params(torch, params, name=""):
    dt = torch.float32 if name in TORCH_FLOAT32 else torch.float64
    return {k: (torch.tensor(v, dtype=dt) if isinstance(v, list) else v) for k, v in params.items()}


def _norm_repr(obj):
    import re
    text = obj if isinstance(obj, str) else repr(obj)
    text = re.sub(r", device='cuda:\d+'", "", text.replace("tensorlab", "torch"))
    return re.sub(r", dtype=torch.float(32|64)", "", text)


def _np(t):
    return t.detach().cpu().numpy()


def _close(ours, theirs, rtol=1e-6, atol=1e-8, what=""):
    if str(theirs.dtype) == "torch.float32":
        rtol, atol = max(rtol, 1e-5), max(atol, 1e-6)
    np.testing.assert_allclose(_np(ours), theirs.detach().numpy(), rtol=rtol, atol=atol, equal_nan=True, err_msg=what)


def _same_or_both_raise(torch, fn_ours, fn_theirs, what, rtol=1e-6):
    try:
        theirs = fn_theirs()
    except NotImplementedError:
        with pytest.raises(NotImplementedError):
            fn_ours()
        return False
    _close(fn_ours(), theirs, rtol=rtol, what=what)
    return True


@pytest.mark.parametrize("name", sorted(CASES))
def test_family_matches_torch(name, device, torch):
    import torch.distributions as TD
    params = CASES[name]
    ours = getattr(D, _cls(name))(**_tl_params(params, device))
    theirs = getattr(TD, _cls(name))(**_torch_params(torch, params, name))
    assert tuple(ours.batch_shape) == tuple(theirs.batch_shape)
    assert tuple(ours.event_shape) == tuple(theirs.event_shape)
    assert ours.has_rsample == theirs.has_rsample
    assert ours.has_enumerate_support == theirs.has_enumerate_support
    assert _norm_repr(ours.support) == _norm_repr(theirs.support)
    for moment in ("mean", "mode", "variance", "stddev"):
        _same_or_both_raise(torch, lambda: getattr(ours, moment), lambda: getattr(theirs, moment), moment)
    _same_or_both_raise(torch, ours.entropy, theirs.entropy, "entropy", rtol=1e-5)
    torch.manual_seed(0)
    values = theirs.sample((4,))
    v_ours = tl.tensor(values.numpy(), dtype=tl.float64, device=device)
    _close(ours.log_prob(v_ours), theirs.log_prob(values), rtol=1e-6, what="log_prob")
    try:
        cdf = theirs.cdf(values)
    except NotImplementedError:
        cdf = None
    if cdf is not None:
        _close(ours.cdf(v_ours), cdf, what="cdf")
    try:
        q_dtype = torch.float32 if name in TORCH_FLOAT32 else torch.float64
        q = torch.linspace(0.1, 0.9, int(np.prod(tuple(theirs.batch_shape))), dtype=q_dtype)
        q = q.reshape(tuple(theirs.batch_shape))
        icdf = theirs.icdf(q)
    except NotImplementedError:
        icdf = None
    if icdf is not None:
        _close(ours.icdf(tl.tensor(q.numpy(), dtype=tl.float64, device=device)), icdf, rtol=1e-6, what="icdf")
    if theirs.has_enumerate_support:
        for expand in (True, False):
            _close(ours.enumerate_support(expand), theirs.enumerate_support(expand), what="enumerate_support")
    # expand: parameters broadcast to a larger batch, same log_prob
    big = (2,) + tuple(theirs.batch_shape)
    e_ours, e_theirs = ours.expand(big), theirs.expand(big)
    assert tuple(e_ours.batch_shape) == big and type(e_ours) is type(ours)
    _close(e_ours.log_prob(v_ours[:2]), e_theirs.log_prob(values[:2]), what="expanded log_prob")
    # samples: shape, dtype, device, inside the support
    s = ours.sample((5,))
    ts = theirs.sample((5,))
    assert tuple(s.shape) == tuple(ts.shape)
    if name not in TORCH_FLOAT32:
        assert str(s.dtype).split(".")[-1] == str(ts.dtype).split(".")[-1]
    assert s.device.type == tl.device(device).type
    assert bool(ours.support.check(s).all())


# (family, params, sample-mean tolerance in standard errors)
STAT_CASES = ["Normal", "Exponential", "Laplace", "Gumbel", "Gamma", "Chi2", "Beta", "Dirichlet", "Poisson",
              "Binomial", "NegativeBinomial", "Geometric", "Bernoulli", "Categorical", "Multinomial", "Weibull",
              "LogNormal", "HalfNormal", "Uniform", "StudentT", "FisherSnedecor", "Pareto", "Wishart",
              "MultivariateNormal", "LowRankMultivariateNormal", "Kumaraswamy", "ContinuousBernoulli", "VonMises"]


@pytest.mark.parametrize("name", STAT_CASES)
def test_sample_statistics(name, device):
    """Sample means within 5 standard errors of the mean, with a fixed seed."""
    params = dict(CASES[name])
    if name == "StudentT":
        params["df"] = [3.5, 4.5, 9.0]
    if name == "FisherSnedecor":
        params["df2"] = [5.0, 7.0, 12.0]
    if name == "Pareto":
        params["alpha"] = [3.5, 4.5, 5.0]
    tl.manual_seed(1234)
    d = getattr(D, name)(**_tl_params(params, device))
    n = 4000
    s = d.sample((n,)).double()
    if name == "VonMises":  # circular: E[cos(x - loc)] = I1(k) / I0(k) = 1 - circular variance
        c = _np(tl.cos(s - d.loc).mean(0))
        assert np.all(np.abs(c - (1 - _np(d.variance))) < 5 / math.sqrt(n)), c
        assert float(s.min()) >= -math.pi and float(s.max()) < math.pi
        return
    mean = _np(s.mean(0))
    expected = _np(d.mean.double()) if name != "Categorical" else _np(
        (d.probs * tl.arange(3, dtype=tl.float64, device=device)).sum(-1))
    if name == "Categorical":
        var = _np((d.probs * tl.arange(3, dtype=tl.float64, device=device) ** 2).sum(-1)) - expected ** 2
    else:
        var = _np(d.variance.double())
    se = np.sqrt(var / n)
    assert np.all(np.abs(mean - expected) <= 5 * se + 1e-9), (mean, expected, se)
    if name in ("Gamma", "Beta", "Poisson", "Binomial", "Normal", "Chi2"):
        # and the second moment, through the sample variance
        sv = _np(s.var(0))
        assert np.all(np.abs(sv - var) <= 0.15 * var + 1e-9), (sv, var)


def test_samplers_against_scipy(device):
    scipy_stats = pytest.importorskip("scipy.stats")
    tl.manual_seed(7)
    for a in (0.3, 1.0, 4.0, 40.0):
        s = _np(tl._standard_gamma(tl.full((2000,), a, device=device)))
        assert scipy_stats.kstest(s, "gamma", args=(a,)).pvalue > 1e-3
    for lam in (0.7, 8.0, 25.0, 400.0):
        s = _np(tl.poisson(tl.full((2000,), lam, device=device)))
        assert abs(s.mean() - lam) < 5 * math.sqrt(lam / 2000)
        assert np.all(s == np.floor(s)) and s.min() >= 0
    for n, p in ((20.0, 0.3), (200.0, 0.4), (1000.0, 0.97), (3.0, 1.0), (0.0, 0.5)):
        s = _np(tl.binomial(tl.full((2000,), n, device=device), tl.full((2000,), p, device=device)))
        assert s.min() >= 0 and s.max() <= n
        assert abs(s.mean() - n * p) <= 5 * math.sqrt(n * p * (1 - p) / 2000) + 1e-9
    d = _np(tl._sample_dirichlet(tl.tensor([[0.5, 1.0, 3.0]] * 2000, device=device)))
    np.testing.assert_allclose(d.sum(-1), 1.0, rtol=1e-5)
    np.testing.assert_allclose(d.mean(0), [0.5 / 4.5, 1 / 4.5, 3 / 4.5], atol=0.02)


def test_standard_gamma_grad_matches_torch(device, torch):
    a = [0.3, 1.0, 2.5, 10.0, 0.05]
    x = [0.1, 0.8, 2.0, 12.0, 1e-3]
    ours = tl._standard_gamma_grad(tl.tensor(a, dtype=tl.float64, device=device),
                                   tl.tensor(x, dtype=tl.float64, device=device))
    theirs = torch._standard_gamma_grad(torch.tensor(a, dtype=torch.float64), torch.tensor(x, dtype=torch.float64))
    _close(ours, theirs, rtol=5e-4)  # torch's is an approximation; ours is the exact implicit gradient


@pytest.mark.parametrize("name", ["Normal", "Laplace", "Cauchy", "Exponential", "Gumbel", "LogNormal", "Gamma",
                                  "Beta", "StudentT", "Dirichlet", "Weibull", "Pareto", "Uniform"])
def test_log_prob_gradients_match_torch(name, device, torch):
    import torch.distributions as TD
    params = CASES[name]
    ours_p = {k: v.requires_grad_() for k, v in _tl_params(params, device).items() if isinstance(v, tl.Tensor)}
    theirs_p = {k: v.requires_grad_() for k, v in _torch_params(torch, params).items()}
    theirs = getattr(TD, name)(**theirs_p)
    torch.manual_seed(0)
    values = theirs.sample((3,))
    theirs.log_prob(values).sum().backward()
    getattr(D, name)(**ours_p).log_prob(tl.tensor(values.numpy(), device=device)).sum().backward()
    for k in ours_p:
        _close(ours_p[k].grad, theirs_p[k].grad, rtol=1e-6, what=k)


@pytest.mark.parametrize("name", ["Normal", "Laplace", "Exponential", "Cauchy", "Gumbel", "Uniform", "LogNormal",
                                  "HalfNormal", "HalfCauchy", "Weibull", "Pareto", "Kumaraswamy", "GeneralizedPareto",
                                  "ContinuousBernoulli", "LogisticNormal", "LowRankMultivariateNormal"])
def test_rsample_is_reparameterized(name, device):
    """Gradients of rsample with respect to every parameter, with the same noise, by gradcheck."""
    params = dict(CASES[name])
    if name == "GeneralizedPareto":  # at concentration 0 exactly the gradient is torch's: 0 (a separate branch)
        params["concentration"] = [0.3, 0.1, -0.4]
    params = _tl_params(params, device)
    tensors = [v.requires_grad_() for v in params.values()]

    def f(*ts):
        tl.manual_seed(5)
        return getattr(D, name)(*ts).rsample((3,))

    assert tl.autograd.gradcheck(f, tuple(tensors), eps=1e-6, atol=1e-5)


def test_gamma_rsample_gradient(device):
    """d sample / d concentration through the implicit gradient, against a finite difference with the
    same seed (Marsaglia-Tsang's transform is smooth in alpha for a fixed accepted draw)."""
    alpha = tl.tensor([0.7, 2.0, 5.0], dtype=tl.float64, device=device, requires_grad=True)
    rate = tl.tensor([1.0, 2.0, 0.5], dtype=tl.float64, device=device, requires_grad=True)
    tl.manual_seed(3)
    x = D.Gamma(alpha, rate).rsample()
    x.sum().backward()
    g_ours = _np(alpha.grad)
    grad_formula = _np(tl._standard_gamma_grad(alpha.detach(), x.detach() * rate.detach())) / _np(rate.detach())
    np.testing.assert_allclose(g_ours, grad_formula, rtol=1e-6)
    np.testing.assert_allclose(_np(rate.grad), -_np(x.detach()) / _np(rate.detach()), rtol=1e-6)


def test_validation_errors_match_torch(device, torch):
    import torch.distributions as TD
    with pytest.raises(ValueError, match="Expected parameter scale"):
        D.Normal(tl.tensor([0.0], device=device), tl.tensor([-1.0], device=device))
    with pytest.raises(ValueError, match="within the support"):
        D.Exponential(tl.tensor([1.0], device=device)).log_prob(tl.tensor([-1.0], device=device))
    with pytest.raises(ValueError, match="Either `probs` or `logits`"):
        D.Categorical()
    with pytest.raises(ValueError, match="must be a Tensor"):
        D.Normal(0.0, 1.0).log_prob(0.5)
    with pytest.raises(ValueError, match="broadcastable"):
        D.Normal(tl.zeros(3, device=device), 1.0).log_prob(tl.zeros(4, device=device))
    # the messages are torch's, word for word (up to the module name in the repr of the value)
    try:
        TD.Normal(torch.tensor([0.0]), torch.tensor([-1.0]))
    except ValueError as e:
        t_msg = str(e).split("but found")[0]
    try:
        D.Normal(tl.tensor([0.0]), tl.tensor([-1.0]))
    except ValueError as e:
        assert str(e).split("but found")[0] == t_msg
    # validate_args=False skips the checks; set_default_validate_args turns them off globally
    D.Normal(tl.tensor([0.0], device=device), tl.tensor([-1.0], device=device), validate_args=False)
    D.Distribution.set_default_validate_args(False)
    try:
        D.Normal(tl.tensor([0.0], device=device), tl.tensor([-1.0], device=device))
    finally:
        D.Distribution.set_default_validate_args(True)
    with pytest.raises(ValueError):
        D.Distribution.set_default_validate_args("yes")


def test_actor_critic_step_matches_torch(device, torch):
    """Categorical policy: log_prob of the taken actions times advantages, an entropy bonus, backward."""
    rng = np.random.default_rng(0)
    logits = rng.standard_normal((6, 4))
    actions = rng.integers(0, 4, size=6)
    adv = rng.standard_normal(6)

    def loss_of(lib, dist_mod, dev=None):
        kw = {"device": dev} if dev else {}
        lg = lib.tensor(logits, requires_grad=True, **kw)
        d = dist_mod.Categorical(logits=lg)
        a = lib.tensor(actions, **kw)
        loss = -(d.log_prob(a) * lib.tensor(adv, **kw)).mean() - 0.01 * d.entropy().mean()
        loss.backward()
        return loss, lg.grad

    import torch.distributions as TD
    l_ours, g_ours = loss_of(tl, D, device)
    l_theirs, g_theirs = loss_of(torch, TD)
    _close(l_ours, l_theirs)
    _close(g_ours, g_theirs)
    # sampled actions flow through log_prob too
    tl.manual_seed(0)
    lg = tl.tensor(logits, requires_grad=True, device=device)
    d = D.Categorical(logits=lg)
    act = d.sample()
    assert act.dtype == tl.int64 and tuple(act.shape) == (6,)
    d.log_prob(act).sum().backward()
    assert lg.grad is not None and tuple(lg.grad.shape) == (6, 4)


def test_constraints_and_biject_to(device, torch):
    import torch.distributions.constraints as TC
    from tensorlab.distributions import biject_to, transform_to
    x = tl.tensor([[0.3, -1.2, 2.0], [0.0, 0.5, -0.5]], dtype=tl.float64, device=device)
    for name in ("real", "positive", "unit_interval", "simplex", "nonnegative", "real_vector"):
        c = getattr(constraints, name)
        for reg in (biject_to, transform_to):
            t = reg(c)
            y = t(x)
            assert bool(c.check(y).all()), name
            _close(t.inv(y), torch.tensor(x.cpu().numpy())) if t.bijective and name != "simplex" else None
    for name in TC.__all__:
        assert hasattr(constraints, name), name
    assert repr(constraints.interval(0.0, 2.0)) == repr(TC.interval(0.0, 2.0))
    assert repr(constraints.independent(constraints.real, 1)) == repr(TC.independent(TC.real, 1))
    v = tl.tensor([0.0, 1.0, 2.0, -1.0, 0.5], device=device)
    _close(constraints.nonnegative_integer.check(v), TC.nonnegative_integer.check(torch.tensor(v.cpu().numpy())))
    _close(constraints.boolean.check(v), TC.boolean.check(torch.tensor(v.cpu().numpy())))


KL_SAME = ["Normal", "Bernoulli", "Beta", "Binomial", "Categorical", "ContinuousBernoulli", "Dirichlet", "Exponential",
           "Gamma", "Gumbel", "Geometric", "HalfNormal", "Laplace", "OneHotCategorical", "Pareto", "Poisson", "Uniform",
           "Cauchy", "MultivariateNormal", "LowRankMultivariateNormal", "LogNormal", "Wishart"]


def _other_params(name):
    """Second parameter set for the same family (positive parameters scaled, locations shifted)."""
    out = {}
    for k, v in CASES[name].items():
        if not isinstance(v, list):
            out[k] = v
            continue
        a = np.array(v, dtype=np.float64)
        if k in ("loc", "low", "logits"):
            a = a + 0.3
        elif k == "high":
            a = a + 0.5
        elif k in ("probs",):
            a = a[..., ::-1].copy() if a.ndim > 1 else np.clip(a * 0.8 + 0.05, 0.01, 0.99)
        elif k in ("scale_tril", "cov_factor", "total_count"):
            pass
        else:
            a = a * 1.3 + 0.1
        out[k] = a.tolist()
    if name == "Uniform":
        out["low"], out["high"] = [-1.0, -2.0, 1.0], [2.0, 4.0, 3.0]
    if name == "Pareto":
        out["scale"] = [0.3, 1.0, 2.0]
    return out


@pytest.mark.parametrize("name", KL_SAME)
def test_kl_same_family_matches_torch(name, device, torch):
    import torch.distributions as TD
    cls = _cls(name)
    qp = _other_params(name)
    p = getattr(D, cls)(**_tl_params(CASES[name], device))
    q = getattr(D, cls)(**_tl_params(qp, device))
    tp = getattr(TD, cls)(**_torch_params(torch, CASES[name]))
    tq = getattr(TD, cls)(**_torch_params(torch, qp))
    _close(D.kl_divergence(p, q), TD.kl_divergence(tp, tq), rtol=1e-6, what=name)
    _close(D.kl_divergence(q, p), TD.kl_divergence(tq, tp), rtol=1e-6, what=name + " reversed")


CROSS = [("Exponential", "Normal"), ("Gamma", "Normal"), ("Uniform", "Normal"), ("Beta", "Normal"),
         ("Gumbel", "Normal"), ("Laplace", "Normal"), ("Pareto", "Normal"), ("Gamma", "Exponential"),
         ("Beta", "Exponential"), ("Pareto", "Exponential"), ("Uniform", "Exponential"), ("Exponential", "Gamma"),
         ("Beta", "Gamma"), ("Pareto", "Gamma"), ("Uniform", "Gamma"), ("Exponential", "Gumbel"),
         ("Gamma", "Gumbel"), ("Normal", "Gumbel"), ("Uniform", "Gumbel"), ("Uniform", "Beta"), ("Uniform", "Pareto"),
         ("Normal", "Laplace"), ("Beta", "Uniform"), ("Bernoulli", "Poisson"), ("Normal", "Beta"),
         ("Exponential", "Uniform"), ("Gamma", "Pareto"), ("Poisson", "Bernoulli"), ("Laplace", "Gamma"),
         ("ContinuousBernoulli", "Normal"), ("ContinuousBernoulli", "Exponential"), ("ContinuousBernoulli", "Uniform"),
         ("Beta", "ContinuousBernoulli"), ("Uniform", "ContinuousBernoulli"), ("Normal", "ContinuousBernoulli")]


TORCH_KL_BOUNDARY_INF = {("ContinuousBernoulli", "Uniform"), ("Uniform", "ContinuousBernoulli")}


@pytest.mark.parametrize("pair", CROSS, ids=lambda pr: "-".join(pr))
def test_kl_cross_family_matches_torch(pair, device, torch):
    import torch.distributions as TD
    pn, qn = pair
    p_params = dict(CASES[pn])
    q_params = dict(CASES[qn])
    if pn == "Uniform" and qn in ("Beta", "ContinuousBernoulli"):
        p_params = dict(low=[0.1, 0.0, 0.3], high=[0.9, 0.5, 1.0])
    if pn == "Uniform" and qn in ("Gamma", "Exponential"):
        p_params = dict(low=[0.1, -1.0, 0.3], high=[0.9, 2.0, 4.0])
    if pn == "Uniform" and qn == "Pareto":
        p_params = dict(low=[0.1, 2.0, 3.0], high=[0.9, 4.0, 4.0])
    if qn == "Uniform":
        q_params = dict(low=[0.0, -1.0, 0.5], high=[1.0, 3.0, 2.5])
    p = getattr(D, pn)(**_tl_params(p_params, device))
    q = getattr(D, qn)(**_tl_params(q_params, device))
    tp = getattr(TD, pn)(**_torch_params(torch, p_params))
    tq = getattr(TD, qn)(**_torch_params(torch, q_params))
    ours, theirs = D.kl_divergence(p, q), TD.kl_divergence(tp, tq)
    if pair in TORCH_KL_BOUNDARY_INF:
        # torch answers inf whenever a support bound touches the other's (>=, <=): where it does and the
        # supports nest, the KL is finite; check those elements by quadrature of torch's own densities
        finite = torch.isfinite(theirs).numpy()
        np.testing.assert_allclose(_np(ours)[finite], theirs.numpy()[finite], rtol=1e-6)
        integrate = pytest.importorskip("scipy.integrate")
        for i in np.flatnonzero(~finite):
            lo, hi = (float(tp.low[i]), float(tp.high[i])) if pn == "Uniform" else (0.0, 1.0)

            tpi = getattr(TD, pn)(**{k: v[i] for k, v in _torch_params(torch, p_params).items()},
                                  validate_args=False)
            tqi = getattr(TD, qn)(**{k: v[i] for k, v in _torch_params(torch, q_params).items()},
                                  validate_args=False)

            def integrand(x, tpi=tpi, tqi=tqi):
                xt = torch.tensor(x, dtype=torch.float64)
                lp, lq = tpi.log_prob(xt), tqi.log_prob(xt)
                return float(lp.exp() * (lp - lq))

            expected = integrate.quad(integrand, lo + 1e-12, hi - 1e-12)[0]
            np.testing.assert_allclose(_np(ours)[i], expected, rtol=1e-6, atol=1e-8)
        return
    _close(ours, theirs, rtol=1e-6, what="-".join(pair))


def test_kl_registry(device):
    p = D.Normal(tl.zeros(2, device=device), tl.ones(2, device=device))
    with pytest.raises(NotImplementedError, match="No KL"):
        D.kl_divergence(p, D.VonMises(tl.zeros(2, device=device), tl.ones(2, device=device)))

    class MyNormal(D.Normal):
        pass

    # a subclass dispatches to its parent's formula until it registers its own
    q = MyNormal(tl.ones(2, device=device), tl.ones(2, device=device))
    np.testing.assert_allclose(_np(D.kl_divergence(p, q)), _np(D.kl_divergence(p, D.Normal(q.loc, q.scale))))

    @D.register_kl(D.Normal, MyNormal)
    def _kl(p, q):
        return tl.zeros_like(p.loc) + 7

    try:
        assert np.all(_np(D.kl_divergence(p, q)) == 7)
    finally:
        from tensorlab.distributions import kl as _kl_mod
        del _kl_mod._KL_REGISTRY[D.Normal, MyNormal]
        _kl_mod._KL_MEMOIZE.clear()
    # Independent / TransformedDistribution recurse into the base
    pi = D.Independent(p, 1)
    qi = D.Independent(D.Normal(tl.ones(2, device=device), tl.ones(2, device=device)), 1)
    assert tuple(D.kl_divergence(pi, qi).shape) == ()
    # the exponential-family Bregman fallback agrees with the closed form
    from tensorlab.distributions.kl import _pair_exp_family as _kl_expfamily_expfamily
    g1 = D.Gamma(tl.tensor([2.0, 3.0], dtype=tl.float64, device=device), tl.tensor([1.0, 0.5], dtype=tl.float64,
                                                                                  device=device))
    g2 = D.Gamma(tl.tensor([1.5, 4.0], dtype=tl.float64, device=device), tl.tensor([2.0, 1.5], dtype=tl.float64,
                                                                                  device=device))
    np.testing.assert_allclose(_np(_kl_expfamily_expfamily(g1, g2)), _np(D.kl_divergence(g1, g2)), rtol=1e-8)


TRANSFORMS = [
    ("ExpTransform", (), [-1.0, 0.5, 2.0]),
    ("SigmoidTransform", (), [-1.0, 0.5, 2.0]),
    ("TanhTransform", (), [-1.0, 0.5, 2.0]),
    ("SoftplusTransform", (), [-1.0, 0.5, 2.0]),
    ("AbsTransform", (), [-1.0, 0.5, 2.0]),
    ("PowerTransform", ("exponent",), [0.3, 0.5, 2.0]),
    ("AffineTransform", ("loc", "scale"), [-1.0, 0.5, 2.0]),
    ("SoftmaxTransform", (), [[-1.0, 0.5, 2.0]]),
    ("StickBreakingTransform", (), [[-1.0, 0.5, 2.0]]),
    ("LowerCholeskyTransform", (), [[[0.3, 0.2], [-1.0, 0.5]]]),
    ("PositiveDefiniteTransform", (), [[[0.3, 0.2], [-1.0, 0.5]]]),
    ("CorrCholeskyTransform", (), [[0.3, -0.2, 0.8]]),
]


@pytest.mark.parametrize("name,args,x", TRANSFORMS, ids=[t[0] for t in TRANSFORMS])
def test_transforms_match_torch(name, args, x, device, torch):
    import torch.distributions.transforms as TT
    vals = {"exponent": 2.5, "loc": 1.5, "scale": -2.0}
    ours = getattr(D.transforms, name)(*[vals[a] for a in args])
    theirs = getattr(TT, name)(*[vals[a] for a in args])
    xo = tl.tensor(x, dtype=tl.float64, device=device)
    xt = torch.tensor(x, dtype=torch.float64)
    yo, yt = ours(xo), theirs(xt)
    _close(yo, yt, what="forward")
    _close(ours.inv(yo), theirs.inv(yt), what="inverse")
    try:
        ldj = theirs.log_abs_det_jacobian(xt, yt)
    except NotImplementedError:
        with pytest.raises(NotImplementedError):
            ours.log_abs_det_jacobian(xo, yo)
    else:
        _close(ours.log_abs_det_jacobian(xo, yo), ldj, what="log_abs_det_jacobian")
    assert tuple(ours.forward_shape(tuple(xo.shape))) == tuple(theirs.forward_shape(tuple(xt.shape)))
    assert ours.bijective == theirs.bijective
    assert ours.domain.event_dim == theirs.domain.event_dim and ours.codomain.event_dim == theirs.codomain.event_dim
    assert ours.inv.inv is ours


def test_composite_transforms(device, torch):
    import torch.distributions.transforms as TT
    x = [[0.3, -1.2, 2.0], [0.0, 0.5, -0.5]]
    xo, xt = tl.tensor(x, dtype=tl.float64, device=device), torch.tensor(x, dtype=torch.float64)
    pairs = [
        (D.transforms.ComposeTransform([D.transforms.AffineTransform(0.5, 2.0), D.transforms.ExpTransform()]),
         TT.ComposeTransform([TT.AffineTransform(0.5, 2.0), TT.ExpTransform()])),
        (D.transforms.IndependentTransform(D.transforms.SigmoidTransform(), 1),
         TT.IndependentTransform(TT.SigmoidTransform(), 1)),
        (D.transforms.ReshapeTransform((3,), (3, 1)), TT.ReshapeTransform((3,), (3, 1))),
        (D.transforms.CatTransform([D.transforms.ExpTransform(), D.transforms.TanhTransform()], dim=-1,
                                   lengths=[1, 2]),
         TT.CatTransform([TT.ExpTransform(), TT.TanhTransform()], dim=-1, lengths=[1, 2])),
        (D.transforms.StackTransform([D.transforms.ExpTransform(), D.transforms.AffineTransform(1.0, 3.0)], dim=0),
         TT.StackTransform([TT.ExpTransform(), TT.AffineTransform(1.0, 3.0)], dim=0)),
        (D.transforms.ComposeTransform([D.transforms.ExpTransform(), D.transforms.ExpTransform().inv]),
         TT.ComposeTransform([TT.ExpTransform(), TT.ExpTransform().inv])),
    ]
    for ours, theirs in pairs:
        yo, yt = ours(xo), theirs(xt)
        _close(yo, yt)
        _close(ours.inv(yo), theirs.inv(yt))
        _close(ours.log_abs_det_jacobian(xo, yo), theirs.log_abs_det_jacobian(xt, yt))
    # CumulativeDistributionTransform maps a Normal onto [0, 1]
    n_ours = D.Normal(tl.tensor(0.5, dtype=tl.float64, device=device), tl.tensor(2.0, dtype=tl.float64, device=device))
    n_theirs = __import__("torch.distributions", fromlist=["Normal"]).Normal(torch.tensor(0.5, dtype=torch.float64),
                                                                             torch.tensor(2.0, dtype=torch.float64))
    cdt, cdt_t = D.transforms.CumulativeDistributionTransform(n_ours), TT.CumulativeDistributionTransform(n_theirs)
    _close(cdt(xo), cdt_t(xt))
    _close(cdt.log_abs_det_jacobian(xo, cdt(xo)), cdt_t.log_abs_det_jacobian(xt, cdt_t(xt)))
    # caching: the inverse of a cached transform's output is the exact input object
    t = D.transforms.ExpTransform().with_cache(1)
    y = t(xo)
    assert t.inv(y) is xo


def test_independent_mixture_transformed(device, torch):
    import torch.distributions as TD
    loc = np.array([[0.0, 1.0, -1.0], [0.5, 0.2, 0.1]])
    scale = np.array([[0.5, 1.0, 2.0], [1.0, 0.3, 1.0]])
    ours = D.Independent(D.Normal(tl.tensor(loc, device=device), tl.tensor(scale, device=device)), 1)
    theirs = TD.Independent(TD.Normal(torch.tensor(loc), torch.tensor(scale)), 1)
    assert tuple(ours.batch_shape) == (2,) and tuple(ours.event_shape) == (3,)
    v = theirs.sample((4,))
    _close(ours.log_prob(tl.tensor(v.numpy(), device=device)), theirs.log_prob(v))
    _close(ours.entropy(), theirs.entropy())
    with pytest.raises(ValueError, match="reinterpreted_batch_ndims"):
        D.Independent(D.Normal(tl.zeros(3, device=device), 1.0), 2)
    # a Gaussian mixture over 3 components, batch 2
    mix_logits = np.array([[0.1, 0.5, -0.3], [1.0, 0.0, 0.0]])
    m_ours = D.MixtureSameFamily(D.Categorical(logits=tl.tensor(mix_logits, device=device)),
                                 D.Normal(tl.tensor(loc, device=device), tl.tensor(scale, device=device)))
    m_theirs = TD.MixtureSameFamily(TD.Categorical(logits=torch.tensor(mix_logits)),
                                    TD.Normal(torch.tensor(loc), torch.tensor(scale)))
    x = torch.tensor([[0.3, -0.2], [1.5, 0.0], [-2.0, 3.0]], dtype=torch.float64)
    xo = tl.tensor(x.numpy(), device=device)
    _close(m_ours.log_prob(xo), m_theirs.log_prob(x))
    _close(m_ours.cdf(xo), m_theirs.cdf(x))
    _close(m_ours.mean, m_theirs.mean)
    _close(m_ours.variance, m_theirs.variance)
    s = m_ours.sample((1000,))
    assert tuple(s.shape) == (1000, 2)
    np.testing.assert_allclose(_np(s.mean(0)), m_theirs.mean.numpy(), atol=0.25)
    # a mixture of MultivariateNormals (event dims)
    mvn = D.MultivariateNormal(tl.tensor(loc, device=device), scale_tril=tl.eye(3, dtype=tl.float64, device=device))
    mm = D.MixtureSameFamily(D.Categorical(logits=tl.tensor([0.0, 1.0], dtype=tl.float64, device=device)), mvn)
    assert tuple(mm.sample((5,)).shape) == (5, 3)
    mm_t = TD.MixtureSameFamily(TD.Categorical(logits=torch.tensor([0.0, 1.0], dtype=torch.float64)),
                                TD.MultivariateNormal(torch.tensor(loc), scale_tril=torch.eye(3, dtype=torch.float64)))
    v = mm_t.sample((3,))
    _close(mm.log_prob(tl.tensor(v.numpy(), device=device)), mm_t.log_prob(v))
    # TransformedDistribution with a chain
    base_o = D.Normal(tl.tensor(loc, device=device), tl.tensor(scale, device=device))
    base_t = TD.Normal(torch.tensor(loc), torch.tensor(scale))
    td_o = D.TransformedDistribution(base_o, [D.transforms.AffineTransform(1.0, -2.0), D.transforms.TanhTransform()])
    td_t = TD.TransformedDistribution(base_t, [TD.transforms.AffineTransform(1.0, -2.0), TD.transforms.TanhTransform()])
    v = td_t.sample((3,))
    _close(td_o.log_prob(tl.tensor(v.numpy(), device=device)), td_t.log_prob(v), rtol=1e-5)
    _close(td_o.cdf(tl.tensor(v.numpy(), device=device)), td_t.cdf(v), rtol=1e-6)
    q = torch.full((2, 3), 0.3, dtype=torch.float64)
    _close(td_o.icdf(tl.tensor(q.numpy(), device=device)), td_t.icdf(q))


def test_straight_through_and_relaxed_rsample_gradients(device):
    probs = tl.tensor([[0.2, 0.3, 0.5]], dtype=tl.float64, device=device, requires_grad=True)
    st = D.OneHotCategoricalStraightThrough(probs=probs)
    s = st.rsample((4,))
    assert tuple(s.shape) == (4, 1, 3)
    (s * tl.tensor([1.0, 2.0, 3.0], dtype=tl.float64, device=device)).sum().backward()
    assert probs.grad is not None
    logits = tl.tensor([0.5, -0.5], dtype=tl.float64, device=device, requires_grad=True)
    r = D.RelaxedBernoulli(tl.tensor(0.5, dtype=tl.float64, device=device), logits=logits).rsample((3,))
    r.sum().backward()
    assert logits.grad is not None and bool((logits.grad > 0).all())
    lg = tl.tensor([0.5, -0.5, 0.1], dtype=tl.float64, device=device, requires_grad=True)
    r = D.RelaxedOneHotCategorical(tl.tensor(0.5, dtype=tl.float64, device=device), logits=lg).rsample((3,))
    np.testing.assert_allclose(_np(r.sum(-1)), 1.0, rtol=1e-9)
    (r[..., 0]).sum().backward()
    assert lg.grad is not None


def test_mvn_rsample_gradcheck(device):
    loc = tl.tensor([0.5, -1.0], dtype=tl.float64, device=device, requires_grad=True)
    tril = tl.tensor([[1.0, 0.0], [0.3, 0.8]], dtype=tl.float64, device=device, requires_grad=True)

    def f(loc, tril):
        tl.manual_seed(11)
        return D.MultivariateNormal(loc, scale_tril=tril, validate_args=False).rsample((3,))

    assert tl.autograd.gradcheck(f, (loc, tril), eps=1e-6, atol=1e-5)
    cov = tl.tensor([[2.0, 0.3], [0.3, 1.0]], dtype=tl.float64, device=device, requires_grad=True)
    x = tl.tensor([[0.1, 0.2], [1.0, -1.0]], dtype=tl.float64, device=device)
    assert tl.autograd.gradcheck(lambda c: D.MultivariateNormal(loc.detach(), (c + c.mT) / 2,
                                                                validate_args=False).log_prob(x), (cov,))


def test_compat_import_path(tmp_path):
    import subprocess
    import sys
    script = tmp_path / "s.py"
    script.write_text("import torch\nfrom torch.distributions.normal import Normal\n"
                      "from torch.distributions import constraints, kl_divergence\n"
                      "import torch.distributions.transforms as T\n"
                      "d = Normal(torch.zeros(2), torch.ones(2))\n"
                      "print(type(d).__module__, d.log_prob(torch.zeros(2)).shape, T.ExpTransform.__module__,"
                      " constraints.positive)\n")
    import os
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    out = subprocess.run([sys.executable, "-m", "tensorlab.compat", str(script)], capture_output=True, text=True,
                         env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "tensorlab.distributions.normal" in out.stdout and "GreaterThan(lower_bound=0.0)" in out.stdout


def test_pathwise_gradients_are_unbiased(device):
    """Averaged over many draws, d rsample / d parameter is d mean / d parameter (Gamma through the implicit
    gradient, Beta and Dirichlet through normalized Gamma draws)."""
    n = 4000
    tl.manual_seed(21)
    a = tl.tensor(2.0, dtype=tl.float64, device=device, requires_grad=True)
    b = tl.tensor(3.0, dtype=tl.float64, device=device, requires_grad=True)
    D.Gamma(a, b).rsample((n,)).mean().backward()
    np.testing.assert_allclose([float(a.grad), float(b.grad)], [1 / 3.0, -2.0 / 9.0], rtol=0.05)
    a.grad = b.grad = None
    D.Beta(a, b).rsample((n,)).mean().backward()
    np.testing.assert_allclose([float(a.grad), float(b.grad)], [3.0 / 25.0, -2.0 / 25.0], rtol=0.08)
    c = tl.tensor([1.0, 2.0, 3.0], dtype=tl.float64, device=device, requires_grad=True)
    D.Dirichlet(c).rsample((n,))[:, 0].mean().backward()
    # d/dc_j of c_0 / sum(c): (delta_0j sum - c_0) / sum^2
    np.testing.assert_allclose(_np(c.grad), [5.0 / 36.0, -1.0 / 36.0, -1.0 / 36.0], rtol=0.1, atol=3e-3)


def _chi2_pvalue(scipy_stats, samples, pmf, support):
    """Pearson chi-square of integer samples against a pmf on `support`, tails merged into the end bins."""
    counts = np.array([(samples == k).sum() for k in support], dtype=np.float64)
    expected = pmf(np.array(support)) * len(samples)
    counts[0] += (samples < support[0]).sum()
    counts[-1] += (samples > support[-1]).sum()
    expected[0] += pmf(np.arange(0, support[0])).sum() * len(samples)
    expected[-1] += len(samples) - expected.sum()
    return scipy_stats.chisquare(counts, expected).pvalue


def test_discrete_samplers_goodness_of_fit(device):
    scipy_stats = pytest.importorskip("scipy.stats")
    tl.manual_seed(99)
    n = 6000
    for lam in (3.0, 25.0):  # both sides of the inversion / PTRS switch
        s = _np(tl.poisson(tl.full((n,), lam, dtype=tl.float64, device=device)))
        lo, hi = int(max(0, lam - 3 * lam ** 0.5)), int(lam + 3 * lam ** 0.5)
        assert _chi2_pvalue(scipy_stats, s, lambda k: scipy_stats.poisson.pmf(k, lam), list(range(lo, hi + 1))) > 1e-4
    for cnt, p in ((20.0, 0.3), (200.0, 0.4), (60.0, 0.9)):  # inversion, BTRS, and the p > 1/2 reflection
        s = _np(tl.binomial(tl.full((n,), cnt, dtype=tl.float64, device=device),
                            tl.full((n,), p, dtype=tl.float64, device=device)))
        mu, sd = cnt * p, (cnt * p * (1 - p)) ** 0.5
        lo, hi = int(max(0, mu - 3 * sd)), int(min(cnt, mu + 3 * sd))
        assert _chi2_pvalue(scipy_stats, s, lambda k: scipy_stats.binom.pmf(k, cnt, p), list(range(lo, hi + 1))) > 1e-4


BAD_PARAMS = [
    ("Normal", dict(loc=[0.0, 1.0], scale=[1.0, -1.0])),
    ("Gamma", dict(concentration=[0.0, 1.0], rate=[1.0, 1.0])),
    ("Beta", dict(concentration1=[1.0, -1.0], concentration0=[1.0, 1.0])),
    ("Bernoulli", dict(probs=[0.5, 1.5])),
    ("Categorical", dict(probs=[[0.5, -0.5]])),
    ("Dirichlet", dict(concentration=[[1.0, 0.0]])),
    ("Poisson", dict(rate=[-1.0])),
    ("Uniform", dict(low=[0.0], high=[1.0])),
    ("Exponential", dict(rate=[0.0])),
    ("MultivariateNormal", dict(loc=[0.0, 0.0], covariance_matrix=[[1.0, 2.0], [2.0, 1.0]])),
]


@pytest.mark.parametrize("name,params", BAD_PARAMS, ids=[b[0] for b in BAD_PARAMS])
def test_invalid_parameters_raise_torchs_error(name, params, device, torch):
    import torch.distributions as TD
    try:
        getattr(TD, name)(**_torch_params(torch, params))
    except ValueError as e:
        theirs = str(e).split("but found")[0]
    else:
        theirs = None
    if theirs is None:
        getattr(D, name)(**_tl_params(params, device))
        return
    with pytest.raises(ValueError) as info:
        getattr(D, name)(**_tl_params(params, device))
    ours = str(info.value).split("but found")[0]
    assert _norm_repr(ours) == _norm_repr(theirs)


def test_repr_matches_torch(device, torch):
    import torch.distributions as TD
    for name in ("Normal", "Gamma", "Categorical", "Bernoulli"):
        ours = getattr(D, name)(**_tl_params(CASES[name], device))
        theirs = getattr(TD, name)(**_torch_params(torch, CASES[name]))
        assert repr(ours).replace("tensorlab.", "torch.") == repr(theirs)
    assert repr(D.Normal(tl.tensor(0.0, device=device), tl.tensor(1.0, device=device))).startswith("Normal(loc: ")


def test_sampler_errors_match_torch(device, torch):
    cases = [
        (lambda m, **k: m.poisson(m.tensor([1, 2], **k)), None),
        (lambda m, **k: m._standard_gamma(m.tensor([1, 2], **k)), None),
        (lambda m, **k: m._sample_dirichlet(m.tensor([1, 2], **k)), None),
        (lambda m, **k: m.binomial(m.tensor([1], **k), m.tensor([0.5], **k)), None),
        (lambda m, **k: m.binomial(m.tensor([1.0], **k), m.tensor([1], **k)), None),
        (lambda m, **k: m.binomial(m.tensor([1.0], **k), m.tensor([0.5], dtype=m.float64, **k)), None),
        (lambda m, **k: m.poisson([1.0]), None),
    ]
    for fn, _ in cases:
        with pytest.raises(Exception) as theirs:
            fn(torch)
        with pytest.raises(type(theirs.value)):
            fn(tl, device=device)
    # the samples keep the input's dtype and device, with no gradient
    for dt in (tl.float32, tl.float64):
        r = tl.tensor([0.5, 3.0, 40.0], dtype=dt, device=device)
        for s in (tl.poisson(r), tl._standard_gamma(r), tl.binomial(r.floor(), r / 50)):
            assert s.dtype == dt and s.device.type == tl.device(device).type and tuple(s.shape) == (3,)


@pytest.mark.parametrize("name", sorted(CASES))
def test_float32_parameters_stay_float32(name, device):
    """Every family with float32 parameters samples, scores and measures entropy in float32, finitely."""
    params = {k: (tl.tensor(np.array(v, dtype=np.float32), device=device) if isinstance(v, list) else v)
              for k, v in CASES[name].items()}
    tl.manual_seed(0)
    d = getattr(D, _cls(name))(**params)
    s = d.sample((3,))
    lp = d.log_prob(s)
    assert lp.dtype == tl.float32 and bool(tl.isfinite(lp).all())
    if d.has_rsample:
        assert d.rsample((2,)).dtype == tl.float32
    try:
        assert d.entropy().dtype == tl.float32
    except NotImplementedError:
        pass


def test_actor_critic_script_runs_as_on_torch():
    """A PPO-style update written as a plain torch script, run unchanged under `python -m tensorlab.compat`:
    every step's loss matches torch's."""
    import os

    from test_compat_runner import SCRIPTS, _compare_with_torch, _run, _split
    script = os.path.join(SCRIPTS, "actor_critic.py")
    res = _run([script])
    assert res.returncode == 0, res.stderr
    losses, _ = _split(res.stdout)
    assert len(losses) == 7 and losses[5] < losses[0]
    _compare_with_torch(script, [], res)
