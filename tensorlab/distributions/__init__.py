"""tensorlab.distributions: torch.distributions' families, transforms, constraints and KL registry,
written over tensorlab ops (so they run on every device tensorlab runs on)."""
from importlib import import_module as _import_module

from . import constraints, transforms
from .transforms import *  # noqa: F401,F403

# submodule -> the public names it contributes to this package (loaded in this order; kl goes last
# because its registrations refer to the families above)
_FAMILIES = (
    ("distribution", "Distribution"), ("exp_family", "ExponentialFamily"),
    ("bernoulli", "Bernoulli"), ("beta", "Beta"), ("binomial", "Binomial"), ("categorical", "Categorical"),
    ("cauchy", "Cauchy"), ("chi2", "Chi2"), ("continuous_bernoulli", "ContinuousBernoulli"),
    ("constraint_registry", "biject_to transform_to"), ("dirichlet", "Dirichlet"),
    ("exponential", "Exponential"), ("fishersnedecor", "FisherSnedecor"), ("gamma", "Gamma"),
    ("generalized_pareto", "GeneralizedPareto"), ("geometric", "Geometric"), ("gumbel", "Gumbel"),
    ("half_cauchy", "HalfCauchy"), ("half_normal", "HalfNormal"), ("independent", "Independent"),
    ("inverse_gamma", "InverseGamma"), ("kumaraswamy", "Kumaraswamy"), ("laplace", "Laplace"),
    ("lkj_cholesky", "LKJCholesky"), ("log_normal", "LogNormal"), ("logistic_normal", "LogisticNormal"),
    ("lowrank_multivariate_normal", "LowRankMultivariateNormal"),
    ("mixture_same_family", "MixtureSameFamily"), ("multinomial", "Multinomial"),
    ("multivariate_normal", "MultivariateNormal"), ("negative_binomial", "NegativeBinomial"),
    ("normal", "Normal"), ("one_hot_categorical", "OneHotCategorical OneHotCategoricalStraightThrough"),
    ("pareto", "Pareto"), ("poisson", "Poisson"), ("relaxed_bernoulli", "RelaxedBernoulli"),
    ("relaxed_categorical", "RelaxedOneHotCategorical"), ("studentT", "StudentT"),
    ("transformed_distribution", "TransformedDistribution"), ("uniform", "Uniform"),
    ("von_mises", "VonMises"), ("weibull", "Weibull"), ("wishart", "Wishart"),
    ("kl", "kl_divergence register_kl"),
)

__all__ = []
for _mod, _names in _FAMILIES:
    _m = _import_module(f".{_mod}", __name__)
    for _n in _names.split():
        globals()[_n] = getattr(_m, _n)
        __all__.append(_n)
__all__ += transforms.__all__
del _mod, _names, _m, _n
