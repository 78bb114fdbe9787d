"""The special functions' CPU kernels (torch.special, lgamma, digamma, igamma, zeta, ...): SciPy's
ufuncs evaluated in float64 and rounded once into the output, with torch's conventions where they
differ from SciPy's (digamma's poles, the orthogonal polynomials' integer degree, n < 0 and
|x| = 1 cases, which follow torch's case analysis and run in the compute dtype as torch's do).
scipy.special is imported on first use, so `import tensorlab` does not pay for it.

Kernels have the elementwise backend's signatures: k(o, a, dt) and k(o, a, b, dt)."""
from __future__ import annotations

import numpy as np

_U = "unsafe"
_sp = None


def _s():
    global _sp
    if _sp is None:
        import scipy.special as sp
        _sp = sp
    return _sp


def _f64(a):
    return np.asarray(a, dtype=np.float64)


def _store(o, r):
    np.copyto(o, r, casting=_U)


def _scipy1(name):
    def k(o, a, dt):
        with np.errstate(all="ignore"):
            _store(o, getattr(_s(), name)(_f64(a)))
    k.__name__ = name
    return k


def _digamma(o, a, dt):
    """torch: digamma(+-0) = -+inf, negative integers NaN (SciPy: psi(0) is NaN too)."""
    x = _f64(a)
    with np.errstate(all="ignore"):
        r = _s().psi(x)
        r = np.where(x == 0, np.copysign(np.inf, -x), r)
        r = np.where((x < 0) & (x == np.floor(x)), np.nan, r)
    _store(o, r)


def _lgamma(o, a, dt):
    x = _f64(a)
    with np.errstate(all="ignore"):
        r = _s().gammaln(x)
        r = np.where(np.isinf(x), np.inf, r)
    _store(o, r)


def _trigamma(o, a, dt):
    """polygamma(1, x), torch's way below 1/2: pi^2 / sin^2(pi x) - polygamma(1, 1 - x) with pi x (and pi^2)
    rounded to the compute dtype as torch's kernel rounds them, so float32 agrees with torch near the
    poles; the rest in float64."""
    x = np.asarray(a, dtype=dt)
    pi = dt.type(np.pi)
    with np.errstate(all="ignore"):
        arg = (pi * x).astype(np.float64)
        s = np.sin(arg)
        refl = float(pi * pi) / (s * s)
        xd = x.astype(np.float64)
        neg = xd < 0.5
        y = np.where(neg, 1.0 - xd, xd)
        p1 = _s().polygamma(1, y)
        r = np.where(neg, refl - p1, p1)
    _store(o, r)


def _airy_ai(o, a, dt):
    x = _f64(a)
    with np.errstate(all="ignore"):
        r = _s().airy(x)[0]
        r = np.where(np.isinf(x), np.nan, r)  # torch: NaN at both infinities
    _store(o, r)


def _spherical_bessel_j0(o, a, dt):
    x = np.asarray(a, dtype=dt)
    with np.errstate(all="ignore"):
        x2 = x * x
        small = dt.type(1) + x2 * (dt.type(-1 / 6) + x2 * (dt.type(1 / 120) + x2 * (
            dt.type(-1 / 5040) + x2 * (dt.type(1 / 362880) + x2 * (dt.type(-1 / 39916800)
                                                                   + x2 * dt.type(1 / 6227020800))))))
        r = np.where(np.abs(x) < dt.type(0.5), small, np.sin(x) / x)
        r = np.where(np.isinf(x), dt.type(0), r)
    _store(o, r)


def _log_ndtr(o, a, dt):
    _store(o, _s().log_ndtr(_f64(a)))


def _zeta(o, a, b, dt):
    """Hurwitz zeta(x, q) (torch.special.zeta; SciPy agrees on the edges: x = 1, x < 1, q <= 0)."""
    x, q = _f64(a), _f64(b)
    with np.errstate(all="ignore"):
        r = _s().zeta(x, q)
        r = np.where((q == np.inf) & (x != 1), np.nan, r)  # torch: NaN (SciPy: 0); x = 1 is inf first
    _store(o, r)


def _igamma(upper):
    """torch's order of the edge cases: x < 0 or a < 0 NaN, a == 0, then x == 0 and the infinities, so a
    NaN `a` with x == 0 or x == inf, and a NaN x with a == inf, have a value (SciPy: NaN)."""
    def k(o, a, b, dt):
        av, xv = np.broadcast_arrays(_f64(a), _f64(b))
        with np.errstate(all="ignore"):
            r = (_s().gammaincc if upper else _s().gammainc)(av, xv)
            lo, hi = (1.0, 0.0) if upper else (0.0, 1.0)
            edge = ~((xv < 0) | (av < 0) | (av == 0)) & np.isnan(av)
            r = np.where(edge & (xv == 0), lo, r)
            r = np.where(edge & (xv == np.inf), hi, r)
            # a = inf with a NaN x: torch's isinf(a) branch answers before x is looked at (SciPy: NaN)
            r = np.where((av == np.inf) & np.isnan(xv), lo, r)
        _store(o, r)
    k.__name__ = "igammac" if upper else "igamma"
    return k


def _scipy2(name):
    def k(o, a, b, dt):
        with np.errstate(all="ignore"):
            _store(o, getattr(_s(), name)(_f64(a), _f64(b)))
    k.__name__ = name
    return k


# -- the orthogonal polynomials, as torch evaluates them ----------------------------------------------
# torch takes the degree as n cast to the compute dtype and truncated to an integer; n < 0 gives 0;
# |x| = 1 (x = 0 or 1 for the shifted ones) has closed forms; above a degree threshold with the
# argument inside (-1, 1) the trigonometric form; otherwise the three-term recurrence, run in the
# compute dtype until k reaches n or the value turns NaN.

def _degree(n, dt, nan_to=None):
    n = np.asarray(n, dtype=dt)
    with np.errstate(all="ignore"):
        bad = ~np.isfinite(n)
        if nan_to is not None:
            n = np.where(bad, dt.type(nan_to), n)
            bad = np.zeros(n.shape, bool)
        # float -> int64 out of range is undefined in C; torch's CPU gives INT64_MIN there
        big = bad | (np.abs(n) >= 2.0 ** 63)
        return np.where(big, np.iinfo(np.int64).min, np.trunc(np.where(big, 0, n))).astype(np.int64)


def _recur(x, n, p0, p1, step, dt, start, nan_stop=True, need=None):
    """The three-term recurrence value at degree n per element: p0, p1 the degree 0 and 1 values
    (arrays), step(k, p, q) -> the next value; iterations k = start, start+1, ... while the
    element's limit is not reached (`n` as the loop bound k <= n or k < n per the caller)."""
    p, q = p0.copy(), p1.copy()
    r = q.copy()
    active = n >= start
    if need is not None:
        active &= need
    k = start
    with np.errstate(all="ignore"):
        while active.any():
            nxt = step(dt.type(k), p, q)
            p = np.where(active, q, p)
            q = np.where(active, nxt, q)
            r = np.where(active, nxt, r)
            k += 1
            active = active & (n >= k)
            if nan_stop:
                active &= ~np.isnan(q)
    return r


def _poly_kernel(kind):
    def k(o, a, b, dt):
        x = np.asarray(a, dtype=dt)
        n = _degree(b, dt, -1 if kind == "h" else None)
        x, n = np.broadcast_arrays(x, n)
        with np.errstate(all="ignore"):
            r = _POLY[kind](x.astype(dt), n, dt)
        _store(o, r)
    k.__name__ = f"poly_{kind}"
    return k


def _ones(x, dt):
    return np.ones(x.shape, dt)


def _cheb_family(y, n, dt, first, at_one, at_minus_one, trig, trig_min):
    """T/U/V/W at y (y = x or 2x - 1): first(y) the degree-1 value; at_one/at_minus_one(n) the values at
    y = +1 / -1 (the shifted forms test x == 1 / x == 0, i.e. the same y); trig(n, y) beyond degree
    trig_min with |y| < 1; else the recurrence r = 2y q - p."""
    one = dt.type(1)
    nf = n.astype(dt)
    need = ~(((n > trig_min) & (np.abs(y) < one)) | (np.abs(y) == one))
    r = _recur(y, n, _ones(y, dt), first(y), lambda k, p, q: (y + y) * q - p, dt, 2, need=need)
    r = np.where(n == 0, one, np.where(n == 1, first(y), r))
    r = np.where((n > trig_min) & (np.abs(y) < one), trig(nf, y), r)
    r = np.where(y == one, at_one(nf), np.where(y == -one, at_minus_one(nf, n), r))
    return np.where(n < 0, dt.type(0), r)


def _odd(n):
    return (n % 2) != 0


def _cheb_t(y, n, dt, trig_min=6):
    return _cheb_family(y, n, dt, lambda y: y, lambda nf: dt.type(1),
                        lambda nf, n: np.where(_odd(n), dt.type(-1), dt.type(1)),
                        lambda nf, y: np.cos(nf * np.arccos(y)), trig_min)


def _cheb_u(y, n, dt, trig_min=8):
    def trig(nf, y):
        t = np.arccos(y)
        s = np.sin(t)
        return np.where(s != 0, np.sin((nf + 1) * t) / s, (nf + 1) * np.cos((nf + 1) * t) / y)
    return _cheb_family(y, n, dt, lambda y: y + y, lambda nf: nf + 1,
                        lambda nf, n: np.where(_odd(n), -(nf + 1), nf + 1), trig, trig_min)


def _cheb_v(y, n, dt, trig_min=8):
    one = dt.type(1)

    def trig(nf, y):
        t = np.arccos(y)
        h = t / dt.type(2)
        alt = np.where(_odd(nf.astype(np.int64)), -(nf + nf + 1), nf + nf + 1)
        return np.where(np.sin(h) != one, np.cos((nf + dt.type(0.5)) * t) / np.cos(h), alt)
    return _cheb_family(y, n, dt, lambda y: y + y - one, lambda nf: one,
                        lambda nf, n: np.where(_odd(n), -(nf + nf + 1), nf + nf + 1), trig, trig_min)


def _cheb_w(y, n, dt, trig_min=8):
    one = dt.type(1)

    def trig(nf, y):
        t = np.arccos(y)
        h = t / dt.type(2)
        alt = np.where(y > 0, nf + nf + 1, np.where(_odd(nf.astype(np.int64)), -one, one))
        return np.where(np.cos(h) != one, np.sin((nf + dt.type(0.5)) * t) / np.sin(h), alt)
    return _cheb_family(y, n, dt, lambda y: y + y + one, lambda nf: nf + nf + 1,
                        lambda nf, n: np.where(_odd(n), -one, one), trig, trig_min)


def _shifted(fn, trig_min):
    def g(x, n, dt):
        one = dt.type(1)
        y = x + x - one
        # torch tests x == 1 and x == 0 (not y == +-1), and recurs with 2y computed as y + y
        r = fn(y, n, dt, trig_min)
        return np.where(n < 0, dt.type(0), r)
    return g


def _hermite(x, n, dt, phys):
    limit = 128 if dt == np.float32 else 512
    one = dt.type(1)
    first = x + x if phys else x
    if phys:
        r = _recur(x, n, _ones(x, dt), first, lambda k, p, q: (x + x) * q - (k + k - 2) * p, dt, 2,
                   nan_stop=False)
    else:
        r = _recur(x, n, _ones(x, dt), first, lambda k, p, q: x * q - (k - 1) * p, dt, 2, nan_stop=False)
    r = np.where(n > limit, dt.type(np.nan), r)
    r = np.where(n == 0, one, np.where(n == 1, first, r))
    return np.where(n < 0, dt.type(0), r)


def _laguerre(x, n, dt):
    one = dt.type(1)
    r = _laguerre_div(x, n, dt)
    r = np.where(n == 0, one, np.where(n == 1, one - x, r))
    r = np.where(x == 0, one, r)
    return np.where(n < 0, dt.type(0), r)


def _laguerre_div(x, n, dt):
    one = dt.type(1)
    p, q = _ones(x, dt), one - x
    r = q.copy()
    k = 1
    active = n > k
    while active.any():
        kk = dt.type(k)
        nxt = (((kk + kk) + (one - x)) * q - kk * p) / (kk + one)
        p = np.where(active, q, p)
        q = np.where(active, nxt, q)
        r = np.where(active, nxt, r)
        k += 1
        active = active & (n > k) & ~np.isnan(q)
    return r


def _legendre(x, n, dt):
    one = dt.type(1)
    p, q = _ones(x, dt), x.copy()
    r = q.copy()
    k = 1
    active = n > k
    while active.any():
        kk = dt.type(k)
        nxt = ((kk + kk + one) * x * q - kk * p) / (kk + one)
        p = np.where(active, q, p)
        q = np.where(active, nxt, q)
        r = np.where(active, nxt, r)
        k += 1
        active = active & (n > k) & ~np.isnan(q)
    r = np.where(n == 0, one, np.where(n == 1, x, r))
    r = np.where(np.abs(x) == one, np.where((x > 0) | ~_odd(n), one, -one), r)
    return np.where(n < 0, dt.type(0), r)


_POLY = {
    "t": _cheb_t, "u": _cheb_u, "v": _cheb_v, "w": _cheb_w,
    "st": _shifted(_cheb_t, 6), "su": _shifted(_cheb_u, 6), "sv": _shifted(_cheb_v, 6), "sw": _shifted(_cheb_w, 4),
    "h": lambda x, n, dt: _hermite(x, n, dt, True), "he": lambda x, n, dt: _hermite(x, n, dt, False),
    "l": _laguerre, "p": _legendre,
}

UNARY = {
    "lgamma": _lgamma, "digamma": _digamma, "trigamma": _trigamma, "erfc": _scipy1("erfc"), "erfinv": _scipy1("erfinv"),
    "i0": _scipy1("i0"), "i0e": _scipy1("i0e"), "i1": _scipy1("i1"), "i1e": _scipy1("i1e"),
    "ndtr": _scipy1("ndtr"), "ndtri": _scipy1("ndtri"), "log_ndtr": _log_ndtr, "erfcx": _scipy1("erfcx"),
    "airy_ai": _airy_ai, "bessel_j0": _scipy1("j0"), "bessel_j1": _scipy1("j1"), "bessel_y0": _scipy1("y0"),
    "bessel_y1": _scipy1("y1"), "modified_bessel_k0": _scipy1("k0"), "modified_bessel_k1": _scipy1("k1"),
    "scaled_modified_bessel_k0": _scipy1("k0e"), "scaled_modified_bessel_k1": _scipy1("k1e"),
    "spherical_bessel_j0": _spherical_bessel_j0,
}
BINARY = {
    "igamma": _igamma(False), "igammac": _igamma(True), "zeta": _zeta,
    **{f"poly_{k}": _poly_kernel(k) for k in _POLY},
}

__all__ = []  # kernels of the generic unary/binary primitives (backends/cpu/elementwise.py), no primitives
