"""GELU's gradient through the one-kernel "gelu_backward" path (ops/activation_backward.py) against
torch: both approximations, the float dtypes, sizes below and above the CPU's cache block, the
negative tail, and create_graph (the differentiable composite) giving torch's second derivative."""
from __future__ import annotations

import math

import numpy as np
import pytest

import tensorlab as tl

TOL = {"float32": dict(rtol=2e-6, atol=2e-6), "float64": dict(rtol=1e-12, atol=1e-12),
       "float16": dict(rtol=2e-3, atol=2e-3), "bfloat16": dict(rtol=1.6e-2, atol=1.6e-2)}


def _exact(x, g, approximate):
    """The derivative in float64 from math.erf / tanh (torch's own vectorized float kernels differ
    from it in the saturated tails, so long inputs are compared with this)."""
    if approximate == "tanh":
        beta, kappa = math.sqrt(2 / math.pi), 0.044715
        t = np.tanh(beta * (x + kappa * x ** 3))
        return g * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * beta * (1 + 3 * kappa * x * x))
    cdf = np.array([0.5 * math.erfc(-v / math.sqrt(2)) for v in x])
    return g * (cdf + x * np.exp(-0.5 * x * x) / math.sqrt(2 * math.pi))


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
@pytest.mark.parametrize("approximate", ["none", "tanh"])
@pytest.mark.parametrize("n", [7, 70001])
def test_gelu_grad_matches_the_exact_derivative(device, torch, dtype, approximate, n):
    rng = np.random.default_rng(n)
    xn = rng.standard_normal(n) * 4
    xn[:3] = (-9.0, 0.0, 9.0)
    gn = rng.standard_normal(n)
    x = tl.tensor(xn, dtype=getattr(tl, dtype), device=device).requires_grad_()
    g = tl.tensor(gn, dtype=x.dtype, device=device)
    tl.nn.functional.gelu(x, approximate=approximate).backward(g)
    got = x.grad.cpu().double().numpy()
    xr, gr = x.detach().cpu().double().numpy(), g.cpu().double().numpy()
    tol = TOL[dtype]
    if approximate == "tanh" and dtype == "float32":  # torch's formula: 1 - tanh^2 in float32 near |t| = 1
        tol = dict(rtol=2e-6, atol=1e-5)
    np.testing.assert_allclose(got, _exact(xr, gr, approximate), **tol)
    if n < 100:  # torch's scalar path is exact enough to compare with directly
        tx = torch.tensor(xr, dtype=getattr(torch, dtype)).requires_grad_()
        torch.nn.functional.gelu(tx, approximate=approximate).backward(torch.tensor(gr, dtype=tx.dtype))
        np.testing.assert_allclose(got, tx.grad.double().numpy(), **tol)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_double_backward_matches_torch(device, torch, approximate):
    xn = np.linspace(-4, 4, 33)
    x = tl.tensor(xn, device=device).requires_grad_()
    tx = torch.tensor(xn).requires_grad_()
    (g,) = tl.autograd.grad(tl.nn.functional.gelu(x, approximate=approximate).sum(), x, create_graph=True)
    (tg,) = torch.autograd.grad(torch.nn.functional.gelu(tx, approximate=approximate).sum(), tx, create_graph=True)
    np.testing.assert_allclose(g.detach().cpu().numpy(), tg.detach().numpy(), rtol=1e-12, atol=1e-12)
    g.sum().backward()
    tg.sum().backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), tx.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_gelu_grad_of_a_broadcast_gradient(device, torch):
    # the incoming gradient is an expanded view (sum's backward): the kernel reads it strided
    xn = np.random.default_rng(3).standard_normal((40, 900)).astype(np.float32)
    x = tl.tensor(xn, device=device).requires_grad_()
    tx = torch.tensor(xn).requires_grad_()
    tl.nn.functional.gelu(x).sum().backward()
    torch.nn.functional.gelu(tx).sum().backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), tx.grad.numpy(), rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("n", [9, 70001])
def test_gelu_grad_from_the_kept_result(device, dtype, n):
    """The "gelu_backward_out" kernel (Phi(x) = gelu(x) / x off the forward's result; the CPU's
    exact gelu keeps its result for it) against the float64 derivative, special values included
    (+-0 -> 0.5, +-inf and NaN -> NaN as torch, the far tail: no -0.0)."""
    from tensorlab.ops.activation_backward import gelu_backward_from_output
    rng = np.random.default_rng(n)
    xs = np.concatenate([[0.0, -0.0, np.inf, -np.inf, np.nan, -20.0, -9.0, -3.0, 1.0], rng.standard_normal(n) * 3])
    x = tl.tensor(xs, dtype=getattr(tl, dtype), device=device)
    g = tl.tensor(rng.standard_normal(xs.size) + 1.5, dtype=x.dtype, device=device)
    y = tl.nn.functional.gelu(x)
    got = gelu_backward_from_output(g, x, y).double().cpu().numpy()
    xv = x.double().cpu().numpy()
    gv = g.double().cpu().numpy()
    fin = np.isfinite(xv)
    want = _exact(xv[fin], gv[fin], "none")
    tol = TOL[dtype]
    np.testing.assert_allclose(got[fin], want, rtol=tol["rtol"] * 4, atol=tol["atol"])
    assert np.isnan(got[~fin]).all()
    np.testing.assert_allclose(got[:2], 0.5 * gv[:2], rtol=tol["rtol"])  # gelu'(+-0) = 1/2
    if dtype == "float32":  # gelu'(-20) underflows: +0, as torch's cdf + x * pdf gives it (not -0)
        assert got[5] == 0 and not np.signbit(got[5])


def test_gelu_result_changed_in_place_is_no_error():
    """The CPU keeps gelu's result for the backward, but torch's GeluBackward keeps only the input:
    changing the result in place afterwards must not raise, and the gradient is the same."""
    rng = np.random.default_rng(3)
    xs = rng.standard_normal((4, 5)).astype(np.float32)
    grads = []
    for change in (False, True):
        x = tl.tensor(xs, requires_grad=True)
        y = tl.nn.functional.gelu(x)
        z = y * 2
        if change:
            y.add_(1.0)  # y is not needed by mul's gradient w.r.t. x ... but gelu kept it
        z.sum().backward()
        grads.append(x.grad.numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=2e-6, atol=2e-7)
    np.testing.assert_allclose(grads[0], 2 * _exact(xs.ravel().astype(np.float64), 1.0, "none").reshape(4, 5),
                               rtol=2e-6, atol=2e-6)
