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
