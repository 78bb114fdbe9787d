"""The special functions' derivatives (ops/special_functions.py), torch's formulas from its
derivatives.yaml, registered into derivatives.DERIVATIVES by tensorlab.autograd. polygamma and
mvlgamma are composites (over zeta/digamma and lgamma) and differentiate through them."""
from __future__ import annotations

import math

from .derivatives import ALL, DERIVATIVES, NOT_DIFFERENTIABLE, _binary, _unary, _x

_2_SQRT_PI = 2.0 / math.sqrt(math.pi)
_SQRT_PI_2 = math.sqrt(math.pi) / 2.0
_SQRT_2PI = math.sqrt(2.0 * math.pi)


def _tl():
    import tensorlab
    return tensorlab


def _sp():
    from ..ops import special_functions
    return special_functions


def _i1_grad(c, g):
    """i1'(x) = i0(x) - i1(x) / x, 1/2 at 0."""
    x, t = _x(c), _tl()
    safe = t.where(x == 0, 1.0, x)
    return g * t.where(x == 0, 0.5, x.i0() - c.result() / safe)


def _i1e_grad(c, g):
    """i1e'(x) = i0e(x) - i1e(x) (sign(x) + 1/x), 1/2 at 0."""
    x, t, sf = _x(c), _tl(), _sp()
    safe = t.where(x == 0, 1.0, x)
    return g * t.where(x == 0, 0.5, sf.special_i0e(x) - c.result() * (x.sign() + 1 / safe))


def _igamma_x(sign):
    def f(ctx, g, na, nb):
        if na:
            raise NotImplementedError(f"the derivative for '{ctx.info.get('op', 'igamma')}' with respect to its "
                                      "first argument (input) is not implemented (as in torch); differentiate "
                                      "with respect to other only")
        a, x = ctx.operand(0), ctx.operand(1)
        t = _tl()
        if not isinstance(a, t.Tensor):
            a = t.tensor(a, dtype=x.dtype, device=x.device)
        # d/dx P(a, x) = x^(a-1) e^-x / Gamma(a)
        return None, g * sign * ((a - 1) * x.log() - x - a.lgamma()).exp()
    return f


def _zeta_q(ctx, g, na, nb):
    if na:
        raise NotImplementedError("the derivative for 'special_zeta' with respect to its first argument (self) "
                                  "is not implemented (as in torch); differentiate with respect to other only")
    s, q = ctx.operand(0), ctx.operand(1)
    return None, g * -s * _sp().special_zeta(s + 1.0, q)


DERIVATIVES.update({
    "lgamma": _unary(lambda c, g: g * _x(c).digamma(), save_x=True),
    "digamma": _unary(lambda c, g: g * _tl().polygamma(1, _x(c)), save_x=True),
    "trigamma": _unary(lambda c, g: g * _tl().polygamma(2, _x(c)), save_x=True),
    "erfc": _unary(lambda c, g: -_2_SQRT_PI * g * (-_x(c) * _x(c)).exp(), save_x=True),
    "erfinv": _unary(lambda c, g: _SQRT_PI_2 * g * (c.result() * c.result()).exp(), result=True),
    "i0": _unary(lambda c, g: g * _sp().special_i1(_x(c)), save_x=True),
    "special_i0e": _unary(lambda c, g: g * (_sp().special_i1e(_x(c)) - _x(c).sign() * c.result()),
                          save_x=True, result=True),
    "special_i1": _unary(_i1_grad, save_x=True, result=True),
    "special_i1e": _unary(_i1e_grad, save_x=True, result=True),
    "special_ndtr": _unary(lambda c, g: g * (-0.5 * _x(c) * _x(c)).exp() / _SQRT_2PI, save_x=True),
    "special_log_ndtr": _unary(lambda c, g: g / _SQRT_2PI * (-0.5 * _x(c) * _x(c) - c.result()).exp(),
                               save_x=True, result=True),
    "special_ndtri": _unary(lambda c, g: g * _SQRT_2PI * (0.5 * c.result() * c.result()).exp(), result=True),
    "special_erfcx": _unary(lambda c, g: g * (2 * _x(c) * c.result() - _2_SQRT_PI), save_x=True, result=True),
    "igamma": _binary(_igamma_x(1.0), save=ALL),
    "igammac": _binary(_igamma_x(-1.0), save=ALL),
    "special_zeta": _binary(_zeta_q, save=ALL),
})

# torch gives these no derivative: their results never take part in a graph (requires_grad False)
for _n in ("special_airy_ai", "special_bessel_j0", "special_bessel_j1", "special_bessel_y0", "special_bessel_y1",
           "special_modified_bessel_i0", "special_modified_bessel_i1", "special_modified_bessel_k0",
           "special_modified_bessel_k1", "special_scaled_modified_bessel_k0", "special_scaled_modified_bessel_k1",
           "special_spherical_bessel_j0", "special_chebyshev_polynomial_t", "special_chebyshev_polynomial_u",
           "special_chebyshev_polynomial_v", "special_chebyshev_polynomial_w",
           "special_shifted_chebyshev_polynomial_t", "special_shifted_chebyshev_polynomial_u",
           "special_shifted_chebyshev_polynomial_v", "special_shifted_chebyshev_polynomial_w",
           "special_hermite_polynomial_h", "special_hermite_polynomial_he", "special_laguerre_polynomial_l",
           "special_legendre_polynomial_p"):
    DERIVATIVES[_n] = NOT_DIFFERENTIABLE
del _n
