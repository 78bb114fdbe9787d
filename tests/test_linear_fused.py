"""nn.functional.linear's fused path (ops/linear_fused.py: one GEMM, the bias added in place, a
derivative of matrix products on transposed views) against torch and against the composite
x.matmul(W.t()) + b it replaces: values, gradients, .grad layouts, grad_fn names, double
backward, the fallbacks' errors."""
import numpy as np
import pytest

import tensorlab as tl
from tensorlab.ops import linear_fused

F = tl.nn.functional


def _np(t):
    return t.detach().cpu().numpy()


CASES = [((4, 3), True), ((4, 3), False), ((2, 4, 3), True), ((2, 3, 4, 3), False), ((0, 3), True)]


@pytest.mark.parametrize("xs,bias", CASES)
@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_linear_matches_torch(xs, bias, dt, device, torch):
    rng = np.random.default_rng(1)
    xn, wn = rng.standard_normal(xs).astype(dt), rng.standard_normal((5, 3)).astype(dt)
    bn, gn = rng.standard_normal(5).astype(dt), rng.standard_normal(xs[:-1] + (5,)).astype(dt)
    out = {}
    for lib, dev in ((tl, device), (torch, "cpu")):
        x = lib.tensor(xn, device=dev, requires_grad=True)
        w = lib.tensor(wn, device=dev, requires_grad=True)
        b = lib.tensor(bn, device=dev, requires_grad=True) if bias else None
        y = lib.nn.functional.linear(x, w, b)
        y.backward(lib.tensor(gn, device=dev))
        out[lib] = [y, x.grad, w.grad] + ([b.grad] if bias else [])
        if lib is tl:
            assert w.grad.is_contiguous() and w.grad.stride() == w.stride()  # the grad layout contract
            if len(xs) == 2:
                assert y.grad_fn.name() == ("AddmmBackward0" if bias else "MmBackward0")
    tol = 1e-5 if dt == "float32" else 1e-12
    for a, b in zip(out[tl], out[torch]):
        np.testing.assert_allclose(_np(a), b.detach().numpy(), rtol=tol, atol=tol)


def test_linear_equals_composite(device):
    rng = np.random.default_rng(2)
    x0 = tl.tensor(rng.standard_normal((3, 6, 4)), device=device)
    w0 = tl.tensor(rng.standard_normal((5, 4)), device=device)
    b0 = tl.tensor(rng.standard_normal(5), device=device)
    res = []
    for enabled in (True, False):
        linear_fused.ENABLED = enabled
        try:
            x, w, b = (t.clone().requires_grad_() for t in (x0.transpose(0, 1), w0, b0))
            y = F.linear(x, w, b)
            # double backward: the gradients are themselves differentiable
            gx, gw, gb = tl.autograd.grad((y * y).sum(), (x, w, b), create_graph=True)
            (gx.sum() + (gw * gw).sum() + gb.sum()).backward()
            res.append([_np(t) for t in (y, gx, gw, gb, x.grad, w.grad, b.grad)])
        finally:
            linear_fused.ENABLED = True
    for a, b in zip(*res):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dt", ["float16", "bfloat16"])
def test_linear_halves(dt, device):
    rng = np.random.default_rng(3)
    x = tl.tensor(rng.standard_normal((4, 8)), device=device).to(getattr(tl, dt))
    w = tl.tensor(rng.standard_normal((3, 8)), device=device).to(getattr(tl, dt))
    b = tl.tensor(rng.standard_normal(3), device=device).to(getattr(tl, dt))
    y = F.linear(x, w, b)
    ref = x.float() @ w.float().t() + b.float()
    assert y.dtype == getattr(tl, dt)
    np.testing.assert_allclose(_np(y.float()), _np(ref), rtol=2e-2, atol=2e-2)


def test_linear_fallback_errors_as_torch(device, torch):
    x, w = tl.ones(4, 3, device=device), tl.ones(5, 2, device=device)
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(4x3 and 2x5\)"):
        F.linear(x, w)
    with pytest.raises(RuntimeError):
        torch.nn.functional.linear(torch.ones(4, 3), torch.ones(5, 2))
    # 1-D input and integer tensors take the composite, with torch's results
    v = F.linear(tl.ones(3, device=device), tl.ones(5, 3, device=device), tl.ones(5, device=device))
    assert v.shape == (5,) and _np(v).tolist() == [4.0] * 5
    i = F.linear(tl.ones(2, 3, dtype=tl.int64, device=device), tl.ones(5, 3, dtype=tl.int64, device=device))
    assert i.dtype == tl.int64 and _np(i).tolist() == [[3] * 5] * 2


def test_linear_version_check(device):
    x = tl.ones(2, 3, device=device, requires_grad=True)
    w = tl.ones(4, 3, device=device).requires_grad_()
    a = x * 1
    y = F.linear(a, w)
    a.mul_(2)  # the saved input changed: backward must refuse, as torch
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()
