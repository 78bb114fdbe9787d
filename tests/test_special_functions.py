"""The special functions (ops/special_functions.py, tl.special): values against torch over edge grids
(0, negative integers, poles, inf, NaN, large arguments) on every device, torch's promotion and
errors, out= and in-place forms, float64 gradients against torch and gradcheck, kaiser windows and
nn.init.trunc_normal_."""
from __future__ import annotations

import math

import numpy as np
import pytest

import tensorlab as tl

_GRID = [0.0, -0.0, 1.0, -1.0, -2.0, -3.0, 2.0, 0.5, -0.5, -2.5, 1e-3, -1e-3, 1.5, 3.7, 7.5, 10.0, 25.0, 31.0,
         -7.3, -12.0, 50.0, 100.0, 300.0, 700.0, 800.0, 1e-30, math.inf, -math.inf, math.nan, 0.99, -0.99,
         0.999999, 1.0000001, 2.5e-8, -40.0, -10.5, 5.0, 9.9, 20.3]
_PROB = [0.0, 1.0, 0.5, 1e-300, 1e-20, 1e-5, 0.025, 0.3, 0.7, 0.975, 1 - 1e-12, -0.5, 1.5, math.nan]
_ERFINV = [0.0, -0.0, 0.5, -0.5, 0.9, -0.999, 0.999999, 1.0, -1.0, 1.5, -2.0, 1e-10, math.nan]

# name in tl (dotted under tl.special), torch's name, the grid
UNARY = [
    ("lgamma", "lgamma", _GRID), ("digamma", "digamma", _GRID), ("erfc", "erfc", _GRID),
    ("erfinv", "erfinv", _ERFINV), ("i0", "i0", _GRID),
    ("special.i0e", "special.i0e", _GRID), ("special.i1", "special.i1", _GRID),
    ("special.i1e", "special.i1e", _GRID), ("special.ndtr", "special.ndtr", _GRID),
    ("special.ndtri", "special.ndtri", _PROB), ("special.log_ndtr", "special.log_ndtr", _GRID),
    ("special.erfcx", "special.erfcx", _GRID), ("special.airy_ai", "special.airy_ai", _GRID),
    ("special.bessel_j0", "special.bessel_j0", _GRID), ("special.bessel_j1", "special.bessel_j1", _GRID),
    ("special.bessel_y0", "special.bessel_y0", _GRID), ("special.bessel_y1", "special.bessel_y1", _GRID),
    ("special.modified_bessel_i0", "special.modified_bessel_i0", _GRID),
    ("special.modified_bessel_i1", "special.modified_bessel_i1", _GRID),
    ("special.modified_bessel_k0", "special.modified_bessel_k0", _GRID),
    ("special.modified_bessel_k1", "special.modified_bessel_k1", _GRID),
    ("special.scaled_modified_bessel_k0", "special.scaled_modified_bessel_k0", _GRID),
    ("special.scaled_modified_bessel_k1", "special.scaled_modified_bessel_k1", _GRID),
    ("special.spherical_bessel_j0", "special.spherical_bessel_j0", _GRID),
    # torch.special's aliases
    ("special.gammaln", "special.gammaln", _GRID), ("special.psi", "special.psi", _GRID),
    ("special.digamma", "special.digamma", _GRID), ("special.erfc", "special.erfc", _GRID),
    ("special.erfinv", "special.erfinv", _ERFINV), ("special.i0", "special.i0", _GRID),
]
# torch's float32 kernels lose accuracy where the function is steep or cancels; ours are the more accurate
# ones there (the CPU: double rounded once; CUDA: the float kernels of special_float.cuh, float-float where a
# series cancels, tests/test_special_float_kernels.py): compare them with torch's float64
_TORCH_APPROX = {"special.airy_ai", "special.bessel_j0", "special.bessel_j1", "special.bessel_y0",
                 "special.bessel_y1"}
_F32_FROM_F64 = {"special.airy_ai", "digamma", "special.psi", "special.digamma", "lgamma", "special.gammaln",
                 "special.bessel_y0", "special.bessel_y1", "special.bessel_j0", "special.bessel_j1",
                 "special.log_ndtr", "special.ndtri", "special.spherical_bessel_j0"}


def _get(mod, name):
    for part in name.split("."):
        mod = getattr(mod, part)
    return mod


def _close(torch, got, want, rtol, atol):
    g = torch.tensor(np.asarray(got.cpu().tolist(), dtype=np.float64))
    w = want.to(torch.float64)
    torch.testing.assert_close(g, w, rtol=rtol, atol=atol, equal_nan=True)


_TOL = {"float32": (2e-5, 1e-6), "float64": (1e-9, 1e-12)}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name,tname,grid", UNARY, ids=[u[0] for u in UNARY])
def test_unary_against_torch(device, torch, name, tname, grid, dtype):
    x = tl.tensor(grid, dtype=getattr(tl, dtype), device=device)
    got = _get(tl, name)(x)
    assert got.dtype == x.dtype and got.device == x.device
    tdt = getattr(torch, dtype)
    if dtype == "float32" and name in _F32_FROM_F64:
        tdt = torch.float64
        grid = np.asarray(grid, dtype=np.float32).astype(np.float64).tolist()
    want = _get(torch, tname)(torch.tensor(grid, dtype=tdt))
    rtol, atol = _TOL[dtype]
    if name == "special.airy_ai" or name.startswith("special.bessel_"):
        atol = max(atol, 1e-14 if dtype == "float64" else 1e-6)  # near their zeros: absolute accuracy only
    if name in _TORCH_APPROX and dtype == "float64":
        # torch's float64 Airy/Bessel J, Y are accurate to ~1e-8 only: SciPy (Cephes at full precision) is
        # the reference here, torch the looser one
        sp = pytest.importorskip("scipy.special")
        ref = {"special.airy_ai": lambda v: sp.airy(v)[0], "special.bessel_j0": sp.j0, "special.bessel_j1": sp.j1,
               "special.bessel_y0": sp.y0, "special.bessel_y1": sp.y1}[name](np.asarray(grid, dtype=np.float64))
        ref = np.where(np.isinf(grid), np.asarray(want.tolist()), ref)
        _close(torch, got, torch.tensor(ref), 1e-11, 1e-14)
        rtol, atol = 1e-5, 1e-8
    _close(torch, got, want, rtol, atol)


def test_integer_and_bool_inputs_promote(device, torch):
    xi = tl.tensor([0, 1, 2, 5, -3], device=device)
    for name in ("lgamma", "digamma", "erfc", "i0", "special.i1e", "special.ndtr", "special.erfcx"):
        got = _get(tl, name)(xi)
        assert got.dtype == tl.float32
        want = _get(torch, name)(torch.tensor([0, 1, 2, 5, -3]))
        _close(torch, got, want, 2e-5, 1e-6)
    b = tl.tensor([True, False], device=device)
    assert tl.lgamma(b).dtype == tl.float32
    tl.set_default_dtype(tl.float64)
    assert tl.i0(xi).dtype == tl.float64


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", ["igamma", "igammac", "special.gammainc", "special.gammaincc"])
def test_igamma_against_torch(device, torch, name, dtype):
    a = [0.0, 0.5, 1.0, 2.5, 10.0, 100.0, -1.0, math.inf, 3.0, 1e-3, math.nan, 50.0]
    x = [0.0, 0.3, 1.0, 7.5, 0.1, 120.0, 1.0, 2.0, math.inf, 2.0, 1.0, 49.0]
    A, X = np.meshgrid(a, x)
    ta = tl.tensor(A.ravel().tolist(), dtype=getattr(tl, dtype), device=device)
    tx = tl.tensor(X.ravel().tolist(), dtype=getattr(tl, dtype), device=device)
    got = _get(tl, name)(ta, tx)
    want = _get(torch, name)(torch.tensor(A.ravel(), dtype=getattr(torch, dtype)),
                             torch.tensor(X.ravel(), dtype=getattr(torch, dtype)))
    rtol, atol = _TOL[dtype]
    _close(torch, got, want, rtol * 10, atol)


def test_igamma_refuses_integers_and_has_methods(device, torch):
    a = tl.tensor([1, 2], device=device)
    with pytest.raises(NotImplementedError):
        tl.igamma(a, a)
    with pytest.raises(NotImplementedError):
        torch.igamma(torch.tensor([1, 2]), torch.tensor([1, 2]))
    x = tl.tensor([1.0, 2.0], device=device)
    y = tl.tensor([0.5, 3.0], device=device)
    r = x.igamma(y)
    x.igammac_(y)
    _close(torch, x, 1 - torch.tensor(r.cpu().tolist()), 1e-6, 1e-6)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_zeta_against_torch(device, torch, dtype):
    xs = [1.0, 0.5, 1.5, 2.0, 3.0, 4.5, 10.0, 60.0, math.inf, math.nan, -2.0]
    qs = [1.0, 0.5, 0.0, -1.0, -1.5, 2.0, 10.0, 1e-3, 100.0, math.inf, math.nan]
    X, Q = np.meshgrid(xs, qs)
    t = getattr(tl, dtype)
    got = tl.special.zeta(tl.tensor(X.ravel().tolist(), dtype=t, device=device),
                          tl.tensor(Q.ravel().tolist(), dtype=t, device=device))
    tt = getattr(torch, dtype)
    want = torch.special.zeta(torch.tensor(X.ravel(), dtype=tt), torch.tensor(Q.ravel(), dtype=tt))
    rtol, atol = _TOL[dtype]
    _close(torch, got, want, rtol * 10, atol)
    # a number on either side
    q = tl.tensor([1.0, 2.0, 3.5], dtype=t, device=device)
    _close(torch, tl.special.zeta(2.0, q), torch.special.zeta(2.0, torch.tensor([1.0, 2.0, 3.5], dtype=tt)),
           rtol, atol)
    _close(torch, tl.special.zeta(q + 1, 2.0),
           torch.special.zeta(torch.tensor([2.0, 3.0, 4.5], dtype=tt), 2.0), rtol, atol)


_POLYS = ["chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w",
          "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
          "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
          "laguerre_polynomial_l", "legendre_polynomial_p"]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", _POLYS)
def test_polynomials_against_torch(device, torch, name, dtype):
    # (no NaN x: torch returns an uninitialized value there for most of these, a divergence row)
    xs = [0.0, 1.0, -1.0, 0.5, -0.3, 0.99, 1.5, -2.0, 0.25, 3.0, math.inf]
    ns = [-2.0, 0.0, 1.0, 2.0, 3.0, 5.0, 6.0, 7.0, 9.0, 12.0, 2.7, 30.0, math.nan, 200.0, 600.0]
    X, N = np.meshgrid(xs, ns)
    t, tt = getattr(tl, dtype), getattr(torch, dtype)
    got = _get(tl.special, name)(tl.tensor(X.ravel().tolist(), dtype=t, device=device),
                                 tl.tensor(N.ravel().tolist(), dtype=t, device=device))
    want = _get(torch.special, name)(torch.tensor(X.ravel(), dtype=tt), torch.tensor(N.ravel(), dtype=tt))
    g = np.asarray(got.cpu().tolist(), dtype=np.float64)
    w = want.double().numpy()
    # huge values (recurrences beyond |x| > 1) agree to the dtype's relative precision, FMA aside
    rtol = 1e-4 if dtype == "float32" else 1e-9
    np.testing.assert_allclose(g, w, rtol=rtol, atol=1e-4 if dtype == "float32" else 1e-9, equal_nan=True)
    # the degree as a number; integer tensors promote to the default dtype
    r = _get(tl.special, name)(tl.tensor([0.2, -0.4], device=device), 4)
    _close(torch, r, _get(torch.special, name)(torch.tensor([0.2, -0.4]), 4), 1e-5, 1e-6)
    ri = _get(tl.special, name)(tl.tensor([1, 2], device=device), tl.tensor([3, 2], device=device))
    assert ri.dtype == tl.float32


@pytest.mark.parametrize("n", [0, 1, 2, 3, 4])
def test_polygamma_against_torch(device, torch, n):
    grid = [0.5, 1.0, 2.5, 7.0, 30.0, -0.5, -2.5, 1e-3, 100.0]
    x = tl.tensor(grid, dtype=tl.float64, device=device)
    want = torch.polygamma(n, torch.tensor(grid, dtype=torch.float64))
    _close(torch, tl.polygamma(n, x), want, 1e-9, 1e-12)
    _close(torch, x.polygamma(n), want, 1e-9, 1e-12)
    _close(torch, tl.special.polygamma(n, x), want, 1e-9, 1e-12)
    y = x.clone()
    assert y.polygamma_(n) is y
    _close(torch, y, want, 1e-9, 1e-12)
    out = tl.empty((0,), dtype=tl.float64, device=device)
    tl.polygamma(n, x, out=out)
    _close(torch, out, want, 1e-9, 1e-12)
    with pytest.raises(RuntimeError, match="negative n"):
        tl.polygamma(-1, x)


@pytest.mark.parametrize("p", [1, 3, 5])
def test_mvlgamma_against_torch(device, torch, p):
    grid = [3.0, 4.5, 10.0, 2.1, 50.0]
    x = tl.tensor(grid, dtype=tl.float64, device=device)
    want = torch.mvlgamma(torch.tensor(grid, dtype=torch.float64), p)
    _close(torch, tl.mvlgamma(x, p), want, 1e-10, 1e-12)
    _close(torch, x.mvlgamma(p), want, 1e-10, 1e-12)
    _close(torch, tl.special.multigammaln(x, p), want, 1e-10, 1e-12)
    y = x.clone()
    y.mvlgamma_(p)
    _close(torch, y, want, 1e-10, 1e-12)
    # torch checks no domain: below (p-1)/2 the terms are lgamma's of negative arguments
    low = [0.1, -0.7, 0.3]
    _close(torch, tl.mvlgamma(tl.tensor(low, dtype=tl.float64, device=device), p),
           torch.mvlgamma(torch.tensor(low, dtype=torch.float64), p), 1e-10, 1e-12)
    with pytest.raises(RuntimeError, match="p has to be"):
        tl.mvlgamma(x, 0)
    with pytest.raises(RuntimeError, match="boolean"):
        tl.mvlgamma(tl.tensor([True], device=device), p)
    y = x.clone()
    before = y.cpu().tolist()
    with pytest.raises(RuntimeError):
        y.mvlgamma_(0)
    assert y.cpu().tolist() == before  # a failing op changes nothing


def test_out_and_inplace_forms(device, torch):
    x = tl.tensor([0.3, 1.7, 2.2], device=device)
    for name in ("lgamma", "digamma", "erfc", "erfinv", "i0"):
        want = getattr(torch, name)(torch.tensor([0.3, 1.7, 2.2]))
        out = tl.empty((3,), device=device)
        assert getattr(tl, name)(x, out=out) is out
        _close(torch, out, want, 1e-6, 1e-6)
        y = x.clone()
        assert getattr(y, name + "_")() is y
        _close(torch, y, want, 1e-6, 1e-6)
        _close(torch, getattr(tl, name + "_")(x.clone()), want, 1e-6, 1e-6)
    out = tl.empty((3,), device=device)
    tl.special.i1e(x, out=out)
    _close(torch, out, torch.special.i1e(torch.tensor([0.3, 1.7, 2.2])), 1e-6, 1e-6)
    # an integer tensor cannot hold lgamma's float result in place (torch: RuntimeError)
    with pytest.raises(RuntimeError):
        tl.tensor([1, 2], device=device).lgamma_()
    with pytest.raises(TypeError):
        tl.lgamma([1.0, 2.0])


def test_special_namespace_has_torch_names(torch):
    missing = {n for n in dir(torch.special) if not n.startswith("_")} - set(dir(tl.special))
    assert missing <= {"Tensor", "torch", "common_args", "multi_dim_common"}, missing


_GRAD_UNARY = ["lgamma", "digamma", "erfc", "erfinv", "i0", "special.i0e", "special.i1", "special.i1e",
               "special.ndtr", "special.log_ndtr", "special.ndtri", "special.erfcx"]


@pytest.mark.parametrize("name", _GRAD_UNARY)
def test_unary_gradients(device, torch, name):
    vals = [0.2, 0.7, -0.4, 0.35] if name in ("erfinv", "special.ndtri") else [0.6, 1.7, 3.2, -2.3, 0.05]
    if name == "special.ndtri":
        vals = [0.2, 0.7, 0.45, 0.9]
    x = tl.tensor(vals, dtype=tl.float64, device=device, requires_grad=True)
    fn = _get(tl, name)
    assert tl.autograd.gradcheck(fn, (x,))
    g = tl.tensor([1.0, -2.0, 0.5, 3.0, 1.5][:len(vals)], dtype=tl.float64, device=device)
    (gx,) = tl.autograd.grad(fn(x), (x,), g)
    tx = torch.tensor(vals, dtype=torch.float64, requires_grad=True)
    (tgx,) = torch.autograd.grad(_get(torch, name)(tx), (tx,), torch.tensor(g.cpu().tolist(), dtype=torch.float64))
    _close(torch, gx, tgx, 1e-8, 1e-10)


def test_composite_and_binary_gradients(device, torch):
    x = tl.tensor([0.6, 1.7, 3.2, -2.3], dtype=tl.float64, device=device, requires_grad=True)
    for n in (0, 1, 3):
        assert tl.autograd.gradcheck(lambda t: tl.polygamma(n, t), (x,))
    y = tl.tensor([2.6, 1.7, 3.2], dtype=tl.float64, device=device, requires_grad=True)
    assert tl.autograd.gradcheck(lambda t: tl.mvlgamma(t, 3), (y,))
    a = tl.tensor([0.5, 2.0, 4.0], dtype=tl.float64, device=device)
    assert tl.autograd.gradcheck(lambda t: tl.igamma(a, t), (y,))
    assert tl.autograd.gradcheck(lambda t: tl.igammac(a, t), (y,))
    assert tl.autograd.gradcheck(lambda t: tl.special.zeta(a + 1.5, t), (y,))
    # torch's values for the second argument's gradient
    ty = torch.tensor([2.6, 1.7, 3.2], dtype=torch.float64, requires_grad=True)
    ta = torch.tensor([0.5, 2.0, 4.0], dtype=torch.float64)
    for tlf, tf in ((tl.igamma, torch.igamma), (tl.igammac, torch.igammac)):
        (g,) = tl.autograd.grad(tlf(a, y).sum(), (y,))
        (tg,) = torch.autograd.grad(tf(ta, ty).sum(), (ty,))
        _close(torch, g, tg, 1e-9, 1e-12)
    # the first argument has no derivative in torch
    aa = a.clone().requires_grad_(True)
    with pytest.raises(NotImplementedError):
        tl.igamma(aa, y).sum().backward()


@pytest.mark.parametrize("sym", [True, False])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_kaiser_windows(device, torch, sym, dtype):
    for M, beta in ((0, 12.0), (1, 12.0), (7, 12.0), (16, 5.0), (11, 0.0)):
        got = tl.signal.windows.kaiser(M, beta=beta, sym=sym, dtype=getattr(tl, dtype), device=device)
        want = torch.signal.windows.kaiser(M, beta=beta, sym=sym, dtype=getattr(torch, dtype))
        _close(torch, got, want, 1e-5 if dtype == "float32" else 1e-10, 1e-6 if dtype == "float32" else 1e-12)
        got = tl.kaiser_window(M, periodic=not sym, beta=beta, dtype=getattr(tl, dtype), device=device)
        want = torch.kaiser_window(M, periodic=not sym, beta=beta, dtype=getattr(torch, dtype))
        _close(torch, got, want, 1e-5 if dtype == "float32" else 1e-10, 1e-6 if dtype == "float32" else 1e-12)
    with pytest.raises(ValueError):
        tl.signal.windows.kaiser(5, beta=-1.0)


def test_trunc_normal(device):
    w = tl.empty((20000,), device=device)
    assert tl.nn.init.trunc_normal_(w, mean=0.5, std=2.0, a=-1.0, b=3.0) is w
    v = np.asarray(w.cpu().tolist())
    assert v.min() >= -1.0 and v.max() <= 3.0
    # the truncated normal's mean: mu + sigma (phi(alpha) - phi(beta)) / (Phi(beta) - Phi(alpha))
    al, be = (-1.0 - 0.5) / 2.0, (3.0 - 0.5) / 2.0

    def phi(z):
        return math.exp(-z * z / 2) / math.sqrt(2 * math.pi)

    def Phi(z):
        return 0.5 * (1 + math.erf(z / math.sqrt(2)))
    mean = 0.5 + 2.0 * (phi(al) - phi(be)) / (Phi(be) - Phi(al))
    assert abs(v.mean() - mean) < 0.05


def test_every_special_kernel_on_every_path(device, index, torch):
    """Each special-function kernel over float32 and float64 storage, contiguous (the vectorized kernels) and
    transposed (the strided ones), with 32- and 64-bit indexing (the `index` fixture), against the CPU."""
    from tensorlab.ops import special_functions as sf
    base = np.linspace(0.05, 0.95, 24).reshape(4, 6)
    for dt in (tl.float32, tl.float64):
        x = tl.tensor(base.tolist(), dtype=dt, device=device)
        n = tl.tensor((np.arange(24).reshape(4, 6) % 9).tolist(), dtype=dt, device=device)
        xc = tl.tensor(base.tolist(), dtype=dt)
        nc = tl.tensor((np.arange(24).reshape(4, 6) % 9).tolist(), dtype=dt)
        for name, *_ in sf.UNARY:
            fn = getattr(sf, name)
            for a, b in ((x, xc), (x.t(), xc.t())):
                np.testing.assert_allclose(np.asarray(fn(a).cpu().tolist(), dtype=float),
                                           np.asarray(fn(b).tolist(), dtype=float),
                                           rtol=1e-5 if dt is tl.float32 else 1e-12, atol=1e-6, err_msg=name)
        for name, *_ in sf.BINARY:
            fn = getattr(sf, name)
            first = x + 1 if name == "special_zeta" else x
            firstc = xc + 1 if name == "special_zeta" else xc
            for a, b, ac, bc in ((first, n, firstc, nc), (first.t(), n.t(), firstc.t(), nc.t())):
                np.testing.assert_allclose(np.asarray(fn(a, b).cpu().tolist(), dtype=float),
                                           np.asarray(fn(ac, bc).tolist(), dtype=float),
                                           rtol=1e-5 if dt is tl.float32 else 1e-12, atol=1e-6, err_msg=name)


def test_results_without_derivative_leave_the_graph(device, torch):
    x = tl.tensor([0.5, 1.0], device=device, requires_grad=True)
    for name in ("airy_ai", "bessel_j0", "modified_bessel_k1", "spherical_bessel_j0"):
        assert not getattr(tl.special, name)(x).requires_grad
        assert not getattr(torch.special, name)(torch.tensor([0.5, 1.0], requires_grad=True)).requires_grad
    for name in _POLYS:
        assert not getattr(tl.special, name)(x, 3).requires_grad
    assert tl.special.zeta(x + 1, x).requires_grad  # torch differentiates zeta in its second argument
