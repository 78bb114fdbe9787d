"""The special functions (torch.special's kernels and their top-level forms): lgamma, digamma,
polygamma, mvlgamma, erfc, erfinv, i0, igamma/igammac, the Bessel and Airy functions, the normal
distribution's ndtr/ndtri/log_ndtr, erfcx, Hurwitz zeta and the orthogonal polynomials.

Each kernel op is an elementwise row over the generic unary/binary primitives (CPU:
backends/cpu/special_math.py through SciPy; CUDA: kernels/tensorlab/special_math.cuh functors);
polygamma and mvlgamma are composites over zeta/digamma and lgamma, as torch computes them.
Derivatives: autograd/derivatives_special.py."""
from __future__ import annotations

import math

from . import registry as R
from .elementwise import ANY, FLOATING, _Op, _binary, _binary_, _unary
from .elementwise import _make_binary as _elementwise_binary, _make_unary as _elementwise_unary
from ._composite import overwrite, tensor_arg, tl, to_out

_I2F, _DEF = R.INT_TO_FLOAT, R.DEFAULT

# unary: op name (as autograd and messages see it), kernel, public name(s) (top level "x", torch.special
# "special.x"), whether torch has Tensor.x / x_ (top-level ops only)
UNARY = (
    ("lgamma", "lgamma", True), ("digamma", "digamma", True), ("erfc", "erfc", True),
    ("erfinv", "erfinv", True), ("i0", "i0", True),
    ("special_i0e", "i0e", False), ("special_i1", "i1", False), ("special_i1e", "i1e", False),
    ("special_ndtr", "ndtr", False), ("special_ndtri", "ndtri", False), ("special_log_ndtr", "log_ndtr", False),
    ("special_erfcx", "erfcx", False), ("special_airy_ai", "airy_ai", False),
    ("special_bessel_j0", "bessel_j0", False), ("special_bessel_j1", "bessel_j1", False),
    ("special_bessel_y0", "bessel_y0", False), ("special_bessel_y1", "bessel_y1", False),
    ("special_modified_bessel_i0", "i0", False), ("special_modified_bessel_i1", "i1", False),
    ("special_modified_bessel_k0", "modified_bessel_k0", False),
    ("special_modified_bessel_k1", "modified_bessel_k1", False),
    ("special_scaled_modified_bessel_k0", "scaled_modified_bessel_k0", False),
    ("special_scaled_modified_bessel_k1", "scaled_modified_bessel_k1", False),
    ("special_spherical_bessel_j0", "spherical_bessel_j0", False),
    # polygamma(1, x), torch's trigamma kernel (no public name of its own)
    ("trigamma", "trigamma", False),
)
# the ones torch's autograd does not differentiate (their OpInfos say so)
_NOT_DIFFERENTIABLE = {"special_airy_ai", "special_bessel_j0", "special_bessel_j1", "special_bessel_y0",
                       "special_bessel_y1", "special_modified_bessel_i0", "special_modified_bessel_i1",
                       "special_modified_bessel_k0", "special_modified_bessel_k1",
                       "special_scaled_modified_bessel_k0", "special_scaled_modified_bessel_k1",
                       "special_spherical_bessel_j0"}

_POLYS = {"chebyshev_polynomial_t": "t", "chebyshev_polynomial_u": "u", "chebyshev_polynomial_v": "v",
          "chebyshev_polynomial_w": "w", "shifted_chebyshev_polynomial_t": "st",
          "shifted_chebyshev_polynomial_u": "su", "shifted_chebyshev_polynomial_v": "sv",
          "shifted_chebyshev_polynomial_w": "sw", "hermite_polynomial_h": "h", "hermite_polynomial_he": "he",
          "laguerre_polynomial_l": "l", "legendre_polynomial_p": "p"}
# binary: op name, kernel, accepted dtypes, promotion, number accepted as the first operand, in-place form
BINARY = (
    ("igamma", "igamma", FLOATING, _DEF, False, True),
    ("igammac", "igammac", FLOATING, _DEF, False, True),
    ("special_zeta", "zeta", ANY, _I2F, True, False),
    *((f"special_{n}", f"poly_{k}", ANY, _I2F, True, False) for n, k in _POLYS.items()),
)
_BINARY_NOT_DIFFERENTIABLE = {f"special_{n}" for n in _POLYS}

ROWS = R.register(
    *(R.OpDef(n, "special_functions", "unary", _I2F, n not in _NOT_DIFFERENTIABLE, ip, (k,)) for n, k, ip in UNARY),
    *(R.OpDef(n, "special_functions", "binary", p, n not in _BINARY_NOT_DIFFERENTIABLE, ip, (k,))
      for n, k, _, p, _, ip in BINARY),
)

_OPS = {n: _Op(n, k, "unary", _I2F, ANY) for n, k, _ in UNARY}
_OPS.update({n: _Op(n, k, "binary", p, acc, scalar_input=first) for n, k, acc, p, first, _ in BINARY})
for _d in _OPS.values():
    if _d.name.startswith("special_"):  # messages spell torch.special's names
        _d.iname = _d.name + "_"


def _make_unary(d):
    return _elementwise_unary(d, f"Elementwise {d.name.replace('special_', 'special.')} (torch's semantics).")


def _make_binary(d):
    return _elementwise_binary(d, f"Elementwise {d.name.replace('special_', 'special.')} with broadcasting (torch's "
                                  "semantics).")


_G = {}
for _n, _k, _ip in UNARY:
    _G[_n], _G[_n + "_"] = _make_unary(_OPS[_n])
for _n, *_ in BINARY:
    _G[_n], _G[_n + "_"] = _make_binary(_OPS[_n])
globals().update(_G)
del _n, _k, _ip


def _polynomial(name):
    d = _OPS[f"special_{name}"]

    def fn(input, n, *, out=None):
        return _binary(d, input, n, out)
    fn.__name__ = name
    fn.__doc__ = f"torch.special.{name}(input, n): the degree-n polynomial at input (n truncated to an integer)."
    return fn


def special_zeta_fn(input, other, *, out=None):
    """Hurwitz zeta(input, other) = sum_k (k + other)^-input (torch.special.zeta)."""
    return _binary(_OPS["special_zeta"], input, other, out)


# -- composites ------------------------------------------------------------------------------------

def _polygamma_value(n, x):
    t = tl()
    if n == 0:
        return t.digamma(x)
    if n == 1:
        return _G["trigamma"](x)
    # (-1)^(n+1) n! zeta(n + 1, x), torch's formula
    z = special_zeta(float(n + 1), x if x.dtype.is_floating_point else x.to(t.get_default_dtype()))
    return z * (((-1) ** (n + 1)) * float(math.factorial(n)))


def _check_n(n, op):
    if isinstance(n, bool) or not isinstance(n, int):
        if hasattr(n, "__index__") and not isinstance(n, bool):
            n = int(n)
        else:
            raise TypeError(f"{op}(): argument 'n' must be int, not {type(n).__name__}")
    if n < 0:
        raise RuntimeError(f"{op}(n, x) does not support negative n (got n={n}); polygamma is defined for n >= 0")
    return n


def polygamma(n, input, *, out=None):
    """The n-th derivative of digamma (torch.polygamma(n, input))."""
    n = _check_n(n, "polygamma")
    tensor_arg(input, "polygamma", "input", 2)
    return to_out(_polygamma_value(n, input), out, "polygamma")


def _polygamma_method(self, n):
    """Tensor.polygamma(n): polygamma(n, self), the n-th derivative of digamma."""
    return polygamma(n, self)


def polygamma_(self, n):
    n = _check_n(n, "polygamma_")
    tensor_arg(self, "polygamma_", "self")
    src = self.clone() if self.requires_grad else self
    return overwrite(self, _polygamma_value(n, src), "polygamma_")


def _mvlgamma_value(x, p, op):
    t = tl()
    if isinstance(p, bool) or not isinstance(p, int):
        raise TypeError(f"{op}(): argument 'p' must be int, not {type(p).__name__}")
    if p < 1:
        raise RuntimeError(f"{op}: p has to be greater than or equal to 1 (got p={p})")
    if x.dtype is t.bool:
        raise RuntimeError(f"{op}: The input tensor may not be a boolean tensor (got {x.dtype.torch_name}); convert "
                           "it to a floating dtype first")
    if not x.dtype.is_floating_point:
        x = x.to(t.get_default_dtype())
    # torch's order of the terms: lgamma(x + j) over j = -(p-1)/2, ..., -1/2, 0, summed (no domain check:
    # torch has none either)
    j = t.arange(p, dtype=x.dtype, device=x.device) * 0.5 - (p - 1) / 2
    s = t.lgamma(x.unsqueeze(-1) + j).sum(-1)
    return s + (p * (p - 1) / 4 * math.log(math.pi))


def mvlgamma(input, p, *, out=None):
    """The multivariate log-gamma function of dimension p (torch.mvlgamma)."""
    tensor_arg(input, "mvlgamma")
    return to_out(_mvlgamma_value(input, p, "mvlgamma"), out, "mvlgamma")


def mvlgamma_(self, p):
    tensor_arg(self, "mvlgamma_", "self")
    src = self.clone() if self.requires_grad else self
    return overwrite(self, _mvlgamma_value(src, p, "mvlgamma_"), "mvlgamma_")


def kaiser_window(window_length, periodic=True, beta=12.0, *, dtype=None, layout=None, device=None,
                  pin_memory=False, requires_grad=False):
    """torch.kaiser_window: i0(beta sqrt(1 - ((k - a) / a)^2)) / i0(beta), a = (N - 1) / 2 over
    k = 0..N-1 (N = window_length + 1 when periodic, the last point dropped)."""
    from .. import layouts
    layouts.check(layout, "kaiser_window")
    t = tl()
    from .. import dtypes
    dtype = dtype or dtypes.get_default_dtype()
    if not dtype.is_floating_point:
        raise RuntimeError(f"kaiser_window expects floating point dtypes, got: {dtype.torch_name}")
    if window_length < 0:
        raise RuntimeError(f"kaiser_window requires non-negative window_length, got window_length={window_length}")
    if window_length == 0:
        w = t.empty((0,), dtype=dtype, device=device)
    elif window_length == 1:
        w = t.ones((1,), dtype=dtype, device=device)
    else:
        n = window_length + 1 if periodic else window_length
        k = t.arange(n, dtype=dtype, device=device)
        alpha = (n - 1) / 2.0
        bt = t.tensor(beta, dtype=dtype, device=device)
        w = t.i0(bt * (1 - ((k - alpha) / alpha).pow(2)).sqrt()) / t.i0(bt)
        if periodic:
            w = w[:window_length]
    return w.requires_grad_(True) if requires_grad else w


_TOP = ("lgamma", "digamma", "erfc", "erfinv", "i0", "igamma", "igammac")
FUNCTIONS = _TOP + tuple(n + "_" for n in _TOP) + ("polygamma", "mvlgamma", "kaiser_window")
METHODS = {n: _G[n] for n in _TOP}
METHODS.update({n + "_": _G[n + "_"] for n in _TOP})
METHODS.update({"polygamma": _polygamma_method, "polygamma_": polygamma_, "mvlgamma": mvlgamma,
                "mvlgamma_": mvlgamma_})


def special_namespace():
    """{name: function} for tensorlab.special (torch.special's names, aliases included)."""
    g = globals()
    out = {n: g[f"special_{n}"] for n in ("i0e", "i1", "i1e", "ndtr", "ndtri", "log_ndtr", "erfcx", "airy_ai",
                                          "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_i0",
                                          "modified_bessel_i1", "modified_bessel_k0", "modified_bessel_k1",
                                          "scaled_modified_bessel_k0", "scaled_modified_bessel_k1",
                                          "spherical_bessel_j0")}
    out.update({n: _polynomial(n) for n in _POLYS})
    out["zeta"] = special_zeta_fn
    return out
