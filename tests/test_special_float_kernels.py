"""The special functions' float kernels (kernels/tensorlab/special_float.cuh, issue 37 item 4: no FP64 in a
float32/float16/bfloat16 kernel). On CUDA, float32 computes in float; the CPU backend evaluates SciPy in float64
and rounds once. So float32 results are checked against SciPy's float64 values at the float32 inputs, with
tolerances near torch's CUDA float accuracy (a few to ~30 ulps; absolute near a function's zeros, where any
float evaluation loses relative accuracy), the edges (0, poles, inf, NaN) against the CPU backend, and
float16/bfloat16 against the CPU backend within one 16-bit rounding (CUDA rounds its float result, the CPU
its double one). Every test runs on every device; on the CPU it checks the reference path itself."""
from __future__ import annotations

import math

import numpy as np
import pytest

import tensorlab as tl

sp = pytest.importorskip("scipy.special")

_RNG = np.random.default_rng(37)


def _u(lo, hi, n=96):
    return _RNG.uniform(lo, hi, n)


def _log(lo, hi, n=96):
    return np.exp(_RNG.uniform(math.log(lo), math.log(hi), n))


def _grid(*parts):
    return np.concatenate(parts).astype(np.float32)


def _trigamma(x):
    return sp.polygamma(1, x)


# name under tl.special, SciPy's float64 function, float32 grid (in the domain, away from torch-convention edges),
# rtol, atol. rtol 4e-6 is ~34 ulps of float32 (the float kernels measure <= 7 ulps on these grids but for
# digamma/airy/Bessel J, Y near their zeros, which atol covers); CUDA's j0f/j1f/y0f/y1f: 9 ulps below 8,
# 2.2e-6 absolute above (CUDA math API); igamma's prefactor carries a eps-sized exponent error (a <= 300 here).
UNARY = [
    ("digamma", sp.psi, _grid(_log(1e-6, 30), _u(-30, 0), _log(30, 1e30)), 4e-6, 2e-6),
    ("polygamma1", _trigamma, _grid(_log(0.5, 30), _log(30, 1e20)), 4e-6, 0.0),
    ("i0", sp.i0, _grid(_u(-88, 88), _u(-15, 15)), 4e-6, 0.0),
    ("i0e", sp.i0e, _grid(_u(-200, 200), _log(1e-3, 1e30)), 4e-6, 0.0),
    ("i1", sp.i1, _grid(_u(-88, 88), _u(-15, 15)), 4e-6, 0.0),
    ("i1e", sp.i1e, _grid(_u(-200, 200), _log(1e-3, 1e30)), 4e-6, 0.0),
    ("modified_bessel_i0", sp.i0, _grid(_u(-30, 30)), 4e-6, 0.0),
    ("modified_bessel_i1", sp.i1, _grid(_u(-30, 30)), 4e-6, 0.0),
    ("modified_bessel_k0", sp.k0, _grid(_log(1e-6, 90), _u(0.5, 3)), 4e-6, 0.0),
    ("modified_bessel_k1", sp.k1, _grid(_log(1e-6, 90), _u(0.5, 3)), 4e-6, 0.0),
    ("scaled_modified_bessel_k0", sp.k0e, _grid(_log(1e-6, 1e4), _u(0.5, 3)), 4e-6, 0.0),
    ("scaled_modified_bessel_k1", sp.k1e, _grid(_log(1e-6, 1e4), _u(0.5, 3)), 4e-6, 0.0),
    ("ndtri", sp.ndtri, _grid(_log(1e-44, 1), _u(0, 1)), 4e-6, 1e-6),
    ("airy_ai", lambda x: sp.airy(x)[0], _grid(_u(-100, 30), _u(-8, 3)), 4e-6, 1e-6),
    ("bessel_j0", sp.j0, _grid(_u(-100, 100)), 4e-6, 3e-6),
    ("bessel_j1", sp.j1, _grid(_u(-100, 100)), 4e-6, 3e-6),
    ("bessel_y0", sp.y0, _grid(_log(1e-3, 100)), 4e-6, 3e-6),
    ("bessel_y1", sp.y1, _grid(_log(1e-3, 100)), 4e-6, 3e-6),
    ("spherical_bessel_j0", lambda x: np.sin(x) / x, _grid(_u(0.5, 1e4), _u(-0.5, 0.5)), 4e-6, 1e-7),
]
_A = _log(1e-3, 300, 192)
BINARY = [
    ("gammainc", sp.gammainc, _grid(_A), _grid(_A * np.exp(_RNG.normal(0, 0.5, _A.size))), 1e-4, 2e-6),
    ("gammaincc", sp.gammaincc, _grid(_A), _grid(_log(1e-4, 1e3, 192)), 1e-4, 2e-6),
    ("zeta", sp.zeta, _grid(_u(1.01, 60, 192)), _grid(_log(1e-3, 1e3, 192)), 4e-6, 0.0),
]
EDGES = [0.0, -0.0, math.inf, -math.inf, math.nan, 1.0, -1.0, -2.0, -3.0, -12.0, -40.0, 0.5, -0.5, -2.5, 1e-30,
         -1e-30, 1e30, -1e30, 1e-3, 2.0, 5.0, 12.0, 12.5, 40.0, 41.0, 88.0, 100.0, 1e-6, 0.999999, 3.0e38]


def _fn(name):
    if name == "polygamma1":
        return lambda t: tl.special.polygamma(1, t)
    return getattr(tl.special, name)


def _values(t):
    return np.asarray(t.cpu().float().tolist(), dtype=np.float64)


def _check_f32(got, want, rtol, atol, where):
    with np.errstate(over="ignore"):
        w32 = want.astype(np.float32).astype(np.float64)
    normal = np.isfinite(w32) & (np.abs(want) >= np.finfo(np.float32).tiny)
    np.testing.assert_allclose(got[normal], want[normal], rtol=rtol, atol=atol, err_msg=where)
    over = ~np.isfinite(w32)  # beyond float32's range: the rounded value (inf), NaN where NaN
    np.testing.assert_array_equal(got[over], w32[over], err_msg=where)


@pytest.mark.parametrize("name,ref,grid,rtol,atol", UNARY, ids=[u[0] for u in UNARY])
def test_unary_float32_against_scipy(device, name, ref, grid, rtol, atol):
    got = _values(_fn(name)(tl.tensor(grid.tolist(), dtype=tl.float32, device=device)))
    with np.errstate(all="ignore"):
        want = ref(grid.astype(np.float64))
    _check_f32(got, want, rtol, atol, name)


@pytest.mark.parametrize("name,ref,a,b,rtol,atol", BINARY, ids=[b[0] for b in BINARY])
def test_binary_float32_against_scipy(device, name, ref, a, b, rtol, atol):
    got = _values(getattr(tl.special, name)(tl.tensor(a.tolist(), dtype=tl.float32, device=device),
                                            tl.tensor(b.tolist(), dtype=tl.float32, device=device)))
    with np.errstate(all="ignore"):
        want = ref(a.astype(np.float64), b.astype(np.float64))
    _check_f32(got, want, rtol, atol, name)


@pytest.mark.parametrize("name", [u[0] for u in UNARY])
def test_unary_edges_match_the_cpu(device, name):
    """Poles, zeros, infinities and NaN: torch's conventions (the CPU backend's) on every device. Below -2^23
    every float is a negative integer, a pole: torch and the CPU answer pi^2 / sin^2 of pi x rounded to float (a
    finite accident of the rounding, 16.1 at -1e30), and so does the float kernel (trig_float.cuh reduces every
    argument exactly)."""
    x = tl.tensor(EDGES, dtype=tl.float32)
    want = _values(_fn(name)(x))
    got = _values(_fn(name)(x.to(device)))
    np.testing.assert_allclose(got, want, rtol=4e-6, atol=3e-6, equal_nan=True, err_msg=name)


def test_binary_edges_match_the_cpu(device):
    e = [0.0, 0.5, 1.0, 2.0, -1.0, -1.5, 30.0, math.inf, math.nan, 1e-3, 1e3]
    A, B = (np.asarray(v, np.float32).ravel().tolist() for v in np.meshgrid(e, e))
    for name in ("gammainc", "gammaincc", "zeta"):
        fn = getattr(tl.special, name)
        want = _values(fn(tl.tensor(A), tl.tensor(B)))
        got = _values(fn(tl.tensor(A, device=device), tl.tensor(B, device=device)))
        np.testing.assert_allclose(got, want, rtol=4e-6, atol=2e-6, equal_nan=True, err_msg=name)


_HALF_RTOL = {"float16": 2.0 ** -10, "bfloat16": 2.0 ** -7}  # one unit in the last place


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("name", [u[0] for u in UNARY])
def test_unary_16bit_against_the_cpu(device, name, dtype):
    grid = next(u[2] for u in UNARY if u[0] == name)
    dt = getattr(tl, dtype)
    x = tl.tensor(np.concatenate([grid[::3], np.asarray(EDGES, np.float32)]).tolist(), dtype=dt)
    want = _values(_fn(name)(x))
    got = _values(_fn(name)(x.to(device)))
    np.testing.assert_allclose(got, want, rtol=_HALF_RTOL[dtype], atol=1e-6, equal_nan=True, err_msg=name)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_binary_16bit_against_the_cpu(device, dtype):
    dt = getattr(tl, dtype)
    for name, _, a, b, _, _ in BINARY:
        fn = getattr(tl.special, name)
        ta, tb = tl.tensor(a[::4].tolist(), dtype=dt), tl.tensor(b[::4].tolist(), dtype=dt)
        want = _values(fn(ta, tb))
        got = _values(fn(ta.to(device), tb.to(device)))
        np.testing.assert_allclose(got, want, rtol=2 * _HALF_RTOL[dtype], atol=1e-6, equal_nan=True, err_msg=name)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_polynomials_trig_form_against_the_cpu(device, dtype):
    """The Chebyshev trig forms (degree above 6-8, |x| < 1) take cos/sin of n acos(x) in float: reduced without
    CUDA's FP64 slow path, against the CPU's NumPy in the compute dtype."""
    dt = getattr(tl, dtype)
    xs = np.linspace(-0.97, 0.97, 13)
    ns = [7.0, 9.0, 31.0, 200.0, 1000.0, 54321.0]
    X, N = (v.ravel().tolist() for v in np.meshgrid(xs, ns))
    for name in ("chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
                 "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t"):
        fn = getattr(tl.special, name)
        x, n = tl.tensor(X, dtype=dt), tl.tensor(N, dtype=dt)
        want = _values(fn(x, n))
        got = _values(fn(x.to(device), n.to(device)))
        # U, V, W divide by sin/cos of the half angle: values up to ~2n, relative accuracy as float's
        scale = np.maximum(1.0, np.asarray(N))
        tol = (2e-5 if dtype == "float32" else 2 * _HALF_RTOL[dtype]) * scale
        with np.errstate(invalid="ignore"):
            ok = (got == want) | (np.abs(got - want) <= tol) | (np.isnan(got) & np.isnan(want))
        assert ok.all(), (name, np.asarray(X)[~ok], np.asarray(N)[~ok], got[~ok], want[~ok])
