"""The activations' gradients as one kernel each (ops/activation_backward.py: "tanh_backward",
"sigmoid_backward", "threshold_backward" for relu, "silu_backward"), on every device: against the
formulas in float64 from the same operands, against torch's own backward ops (aten.tanh_backward
and its siblings), through autograd (the kernel is what runs, one launch per node), and under
create_graph (the differentiable composite) against torch's second derivative."""
from __future__ import annotations

import numpy as np
import pytest

import tensorlab as tl
from tensorlab.ops.activation_backward import activation_backward

KERNELS = ("tanh_backward", "sigmoid_backward", "threshold_backward", "silu_backward")
FORWARD = {"tanh_backward": "tanh", "sigmoid_backward": "sigmoid", "threshold_backward": "relu",
           "silu_backward": "silu"}
DTYPES = ("float32", "float64", "float16", "bfloat16")
# relative to |g| (the derivative factor is at most ~1.1) plus |result|: the three rounding steps,
# and torch's AVX2 kernels contract 1 - y*y into an FMA (its DEFAULT kernels do not), which near
# |y| = 1 moves the factor by an ulp of 1
EPS = {"float32": 2.0 ** -23, "float64": 2.0 ** -52, "float16": 2.0 ** -10, "bfloat16": 2.0 ** -7}


def _reference(kernel, g, v):
    """The derivative times g in float64 (v: the forward's result, or the input for silu)."""
    with np.errstate(over="ignore", invalid="ignore"):
        return _formula(kernel, g, v)


def _formula(kernel, g, v):
    if kernel == "tanh_backward":
        return g * (1 - v * v)
    if kernel == "sigmoid_backward":
        return g * (1 - v) * v
    if kernel == "threshold_backward":
        return np.where(v <= 0, 0.0, g)
    s = 1 / (1 + np.exp(-v))
    return g * s * (1 + v * (1 - s))


def _operands(kernel, dtype, n, seed):
    """(g, v) as float64 arrays holding values exactly representable in `dtype`, with the edges:
    signed zeros, infinities and NaN in v, infinities and NaN in g."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(n) * 4
    x[:8] = (0.0, -0.0, np.nan, np.inf, -np.inf, 1e-30, 30.0, -30.0)
    g = rng.standard_normal(n)
    g[8:11] = (np.inf, np.nan, -np.inf)
    with np.errstate(over="ignore", invalid="ignore"):
        v = {"tanh": np.tanh, "sigmoid": lambda a: 1 / (1 + np.exp(-a)), "relu": lambda a: np.where(a > 0, a, a * 0),
             "silu": lambda a: a}[FORWARD[kernel]](x)
    cast = tl.tensor(np.stack([g, v]), dtype=getattr(tl, dtype)).double().numpy()
    return cast[0], cast[1]


def _close(got, want, g, dtype, ulps=4):
    tol = ulps * EPS[dtype] * (np.abs(g) + np.abs(want))
    with np.errstate(invalid="ignore"):
        ok = (got == want) | (np.isnan(got) & np.isnan(want)) | (np.abs(got - want) <= tol)
    assert ok.all(), (f"{int((~ok).sum())} of {ok.size} differ; first: got {got[~ok][:4]}, want {want[~ok][:4]}, "
                      f"g {g[~ok][:4]}")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("n", [37, 70001])
def test_kernel_matches_the_formula(device, kernel, dtype, n):
    gn, vn = _operands(kernel, dtype, n, n)
    g = tl.tensor(gn, dtype=getattr(tl, dtype), device=device)
    v = tl.tensor(vn, dtype=getattr(tl, dtype), device=device)
    r = activation_backward(kernel, g, v)
    assert r.dtype == g.dtype and r.device == g.device and tuple(r.shape) == (n,)
    want = tl.tensor(_reference(kernel, gn, vn)).to(getattr(tl, dtype)).double().numpy()  # rounded once
    _close(r.double().cpu().numpy(), want, gn, dtype)
    if kernel == "threshold_backward":  # a selection: exact, +0 where the result is <= 0 (and NaN passes g)
        got = r.double().cpu().numpy()
        np.testing.assert_array_equal(got, want)
        assert not np.signbit(got[vn <= 0]).any()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kernel", KERNELS)
def test_kernel_matches_torch(device, torch, kernel, dtype):
    gn, vn = _operands(kernel, dtype, 4099, 7)
    tdt = getattr(torch, dtype)
    tg, tv = torch.tensor(gn).to(tdt), torch.tensor(vn).to(tdt)
    ops = torch.ops.aten
    want = {"tanh_backward": lambda: ops.tanh_backward(tg, tv), "sigmoid_backward": lambda: ops.sigmoid_backward(tg, tv),
            "threshold_backward": lambda: ops.threshold_backward(tg, tv, 0),
            "silu_backward": lambda: ops.silu_backward(tg, tv)}[kernel]().double().numpy()
    g = tl.tensor(gn, dtype=getattr(tl, dtype), device=device)
    v = tl.tensor(vn, dtype=getattr(tl, dtype), device=device)
    got = activation_backward(kernel, g, v).double().cpu().numpy()
    # torch's CPU sigmoid_backward rounds each step to float16 (its other kernels compute 16-bit in float32)
    _close(got, want, gn, dtype, ulps=8 if (kernel, dtype) == ("sigmoid_backward", "float16") else 4)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kernel", KERNELS)
def test_autograd_runs_the_kernel(device, torch, monkeypatch, kernel, dtype):
    # x.op().backward(g): one launch of the kernel for the node, and torch's gradient; an expanded
    # incoming gradient (sum's backward) is read strided
    rng = np.random.default_rng(11)
    xn = rng.standard_normal((33, 65)) * 3
    xn[0, :4] = (0.0, -0.0, 25.0, -25.0)
    x = tl.tensor(xn, dtype=getattr(tl, dtype), device=device).requires_grad_()
    xr = x.detach().double().cpu().numpy()
    name = FORWARD[kernel]
    fwd = getattr(tl.nn.functional, name)
    be = x._backend
    calls = []
    binary = be.binary

    def spy(out, op, *args, **kw):
        calls.append(op)
        return binary(out, op, *args, **kw)

    monkeypatch.setattr(be, "binary", spy)
    fwd(x).sum().backward()
    assert calls.count(kernel) == 1, calls
    monkeypatch.undo()
    tx = torch.tensor(xr).to(getattr(torch, dtype)).requires_grad_()
    getattr(torch.nn.functional, name)(tx).sum().backward()
    want = tx.grad.double().numpy()
    _close(x.grad.double().cpu().numpy(), want, np.ones_like(want), dtype, ulps=8)


@pytest.mark.parametrize("name", ["tanh", "sigmoid", "relu", "silu"])
def test_double_backward_matches_torch(device, torch, name):
    xn = np.linspace(-3, 3, 25) + 0.01
    x = tl.tensor(xn, device=device).requires_grad_()
    tx = torch.tensor(xn).requires_grad_()
    (g,) = tl.autograd.grad(getattr(tl.nn.functional, name)(x).pow(2).sum(), x, create_graph=True)
    (tg,) = torch.autograd.grad(getattr(torch.nn.functional, name)(tx).pow(2).sum(), tx, create_graph=True)
    assert g.grad_fn is not None
    np.testing.assert_allclose(g.detach().cpu().numpy(), tg.detach().numpy(), rtol=1e-12, atol=1e-12)
    g.sum().backward()
    tg.sum().backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), tx.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_operands_that_do_not_fit_take_the_composite(device):
    # another dtype or shape than the kernel's one: None, and autograd's composite answers
    y = tl.tensor([0.5, -0.25], device=device)
    assert activation_backward("tanh_backward", tl.ones(2, dtype=tl.float64, device=device), y) is None
    assert activation_backward("tanh_backward", tl.ones(1, device=device), y) is None
    assert activation_backward("tanh_backward", tl.ones(2, dtype=tl.int64, device=device),
                               tl.ones(2, dtype=tl.int64, device=device)) is None
    x = tl.tensor([0.5, -0.25], device=device).requires_grad_()
    y = x.tanh()
    y.backward(tl.tensor([1.0, 2.0], dtype=tl.float64, device=device).float())
    np.testing.assert_allclose(x.grad.cpu().numpy(), [1 - np.tanh(0.5) ** 2, 2 * (1 - np.tanh(0.25) ** 2)],
                               rtol=1e-6)
