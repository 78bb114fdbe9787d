"""tl.special: torch.special's names that tensorlab has, written over its ops (the rest of
torch.special needs the special-function kernels of a later round)."""
from __future__ import annotations

import math

from .ops.math_composites import _finish, _floating, _tensor, logit, sinc, xlog1py, xlogy  # noqa: F401


def _tl():
    import tensorlab as tl
    return tl


def expit(input, *, out=None):
    return _finish(_tl().sigmoid(input), out, "special.expit")


def exp2(input, *, out=None):
    return _finish(_tl().exp2(input), out, "special.exp2")


def expm1(input, *, out=None):
    return _finish(_tl().expm1(input), out, "special.expm1")


def log1p(input, *, out=None):
    return _finish(_tl().log1p(input), out, "special.log1p")


def erf(input, *, out=None):
    return _finish(_tl().erf(input), out, "special.erf")


def round(input, *, decimals=0, out=None):  # noqa: A001 (torch's name)
    return _finish(_tl().round(input, decimals=decimals), out, "special.round")


def logsumexp(input, dim, keepdim=False, *, out=None):
    return _finish(_tl().logsumexp(input, dim, keepdim), out, "special.logsumexp")


def softmax(input, dim, *, dtype=None):
    return _tl().softmax(input, dim, dtype=dtype)


def log_softmax(input, dim, *, dtype=None):
    return _tl().log_softmax(input, dim, dtype=dtype)


def entr(input, *, out=None):
    """-x log x for x > 0, 0 at 0, -inf below 0 (NaN stays NaN)."""
    tl = _tl()
    _tensor(input, "special.entr")
    x = _floating(input)
    pos = tl.where(x > 0, x, x.new_ones(()))
    r = tl.where(x > 0, -x * pos.log(), tl.where(x == 0, x.new_zeros(()), x.new_full((), -math.inf)))
    return _finish(tl.where(x.isnan(), x, r), out, "special.entr")


def _alias(fn, name):
    def f(*args, out=None, **kw):
        return _finish(fn(*args, **kw), out, f"special.{name}")
    f.__name__ = name
    f.__doc__ = f"torch.special.{name}"
    return f


def _special_kernels():
    from .ops import special_functions as sf
    tl = _tl()
    ns = sf.special_namespace()
    ns.update({"gammaln": _alias(tl.lgamma, "gammaln"), "digamma": _alias(tl.digamma, "digamma"),
               "psi": _alias(tl.digamma, "psi"), "erfc": _alias(tl.erfc, "erfc"),
               "erfinv": _alias(tl.erfinv, "erfinv"), "i0": _alias(tl.i0, "i0"),
               "multigammaln": _alias(tl.mvlgamma, "multigammaln"), "gammainc": _alias(tl.igamma, "gammainc"),
               "gammaincc": _alias(tl.igammac, "gammaincc"), "polygamma": _alias(tl.polygamma, "polygamma")})
    return ns


_SPECIAL = _special_kernels()
globals().update(_SPECIAL)

__all__ = sorted(_SPECIAL) + ["entr", "erf", "exp2", "expit", "expm1", "log1p", "log_softmax", "logit", "logsumexp", "round",
           "sinc", "softmax", "xlog1py", "xlogy"]
