"""grid_sample through its primitives (grid_sampler_fwd / grid_sampler_bwd: NumPy on the CPU,
kernels/grid_sample.cu on CUDA): float32/float16/bfloat16 against torch's CPU grid_sample (forward
and both gradients), the CUDA kernels against the CPU primitives, non-contiguous operands, one
gradient wanted at a time, the 64-bit index instantiations, the create_graph backward (through the
composite), and a fixed launch count with no host wait on CUDA."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

import tensorlab as tl
import tensorlab.nn.functional as F

_MODES_2D = list(itertools.product(["bilinear", "nearest", "bicubic"], ["zeros", "border", "reflection"],
                                   [True, False]))
_TOL = {"float64": dict(rtol=1e-10, atol=1e-12), "float32": dict(rtol=1e-4, atol=1e-5),
        "float16": dict(rtol=2e-2, atol=2e-2),
        "bfloat16": dict(rtol=5e-2, atol=5e-2)}


def _against_torch(torch, device, dtype, x, g, mode, padding, align, w):
    """Forward and gradients against torch's in the same dtype (its 16-bit kernels round the
    coordinates, weights and sums in 16 bits, as ours do; our backward accumulates in float, torch's
    in 16 bits: the gradients within a few per cent of their scale)."""
    ours = _run(device, dtype, x, g, mode, padding, align, w)
    tdt = getattr(torch, dtype)
    tx = torch.tensor(x).to(tdt).requires_grad_()
    tg = torch.tensor(g).to(tdt).requires_grad_()
    ty = torch.nn.functional.grid_sample(tx, tg, mode, padding, align)
    ty.backward(torch.tensor(w).to(tdt))
    np.testing.assert_allclose(ours[0], ty.double().detach().numpy(), **_TOL[dtype])
    for got, want in zip(ours[1:], (tx.grad.double().numpy(), tg.grad.double().numpy())):
        scale = max(np.abs(want).max(), 1)
        tol = _TOL[dtype] if dtype in ("float32", "float64") else dict(rtol=0.05, atol=0.05 * scale)
        np.testing.assert_allclose(got, want, **tol)


def _inputs(shape, gshape, seed):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(shape), rng.random(gshape) * 2.6 - 1.3


def _run(device, dtype, x, g, mode, padding, align, w):
    xt = tl.tensor(x, device=device).to(getattr(tl, dtype)).requires_grad_()
    gt = tl.tensor(g, device=device).to(getattr(tl, dtype)).requires_grad_()
    y = F.grid_sample(xt, gt, mode, padding, align)
    y.backward(tl.tensor(w, device=device).to(getattr(tl, dtype)))
    return [t.detach().double().cpu().numpy() for t in (y, xt.grad, gt.grad)]


@pytest.mark.parametrize("mode,padding,align", _MODES_2D)
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_grid_sample_2d_dtypes_match_torch(torch, device, dtype, mode, padding, align):
    x, g = _inputs((2, 3, 5, 6), (2, 4, 7, 2), 1)
    w = np.random.default_rng(3).standard_normal((2, 3, 4, 7))
    # torch's float16/bfloat16 answers round the coordinates in 16 bits as ours read them
    tdt = getattr(torch, dtype)
    x, g = (torch.tensor(a).to(tdt).double().numpy() for a in (x, g))
    _against_torch(torch, device, dtype, x, g, mode, padding, align, w)


@pytest.mark.parametrize("mode,padding,align", list(itertools.product(["bilinear", "nearest"],
                                                                      ["zeros", "border", "reflection"], [True, False])))
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_grid_sample_3d_dtypes_match_torch(torch, device, dtype, mode, padding, align):
    x, g = _inputs((2, 2, 4, 5, 3), (2, 3, 2, 4, 3), 4)
    w = np.random.default_rng(5).standard_normal((2, 2, 3, 2, 4))
    tdt = getattr(torch, dtype)
    x, g = (torch.tensor(a).to(tdt).double().numpy() for a in (x, g))
    _against_torch(torch, device, dtype, x, g, mode, padding, align, w)


@pytest.mark.parametrize("mode,padding,align", _MODES_2D[::2] + [("bilinear", "reflection", True)])
def test_cuda_kernels_agree_with_cpu_primitives(device, mode, padding, align):
    if device == "cpu":
        pytest.skip("compares the CUDA kernels with the CPU primitives")
    x, g = _inputs((2, 3, 5, 6), (2, 4, 7, 2), 6)
    w = np.random.default_rng(7).standard_normal((2, 3, 4, 7))
    for a, b in zip(_run("cpu", "float64", x, g, mode, padding, align, w),
                    _run(device, "float64", x, g, mode, padding, align, w)):
        np.testing.assert_allclose(b, a, rtol=1e-12, atol=1e-12)


def test_non_contiguous_operands_and_single_gradients(torch, device):
    x, g = _inputs((2, 6, 3, 5), (2, 7, 4, 2), 8)  # x used as (2, 3, 5, 6) through a permute; grid transposed
    tx = torch.tensor(x).permute(0, 2, 3, 1).requires_grad_()
    tg = torch.tensor(g).transpose(1, 2).requires_grad_()
    for want in ("input", "grid"):
        xt = tl.tensor(x, device=device).permute(0, 2, 3, 1)
        gt = tl.tensor(g, device=device).transpose(1, 2)
        (xt if want == "input" else gt).requires_grad_()
        ty = torch.nn.functional.grid_sample(tx, tg, "bilinear", "border", False)
        y = F.grid_sample(xt, gt, "bilinear", "border", False)
        np.testing.assert_allclose(y.detach().cpu().numpy(), ty.detach().numpy(), rtol=1e-10, atol=1e-12)
        leaf, tleaf = (xt, tx) if want == "input" else (gt, tg)
        (got,) = tl.autograd.grad(y.sum(), [leaf])
        (exp,) = torch.autograd.grad(ty.sum(), [tleaf])
        np.testing.assert_allclose(got.cpu().numpy(), exp.numpy(), rtol=1e-10, atol=1e-12)


def test_wide_indexing(torch, device):
    from tensorlab.backends.cuda.launch import wide_indexing
    x, g = _inputs((1, 2, 3, 4), (1, 2, 3, 2), 9)
    x3, g3 = _inputs((1, 2, 3, 4, 2), (1, 2, 2, 3, 3), 10)
    for dtype in ("float32", "float16", "bfloat16", "float64"):
        with wide_indexing():
            for xs, gs in ((x, g), (x3, g3)):
                w = np.random.default_rng(1).standard_normal((xs.shape[0], xs.shape[1]) + gs.shape[1:-1])
                _against_torch(torch, device, dtype, xs, gs, "bilinear", "zeros", True, w)


def test_double_backward_through_the_composite(torch, device):
    x, g = _inputs((1, 2, 3, 4), (1, 2, 3, 2), 11)
    xt = tl.tensor(x, device=device, requires_grad=True)
    gt = tl.tensor(g, device=device, requires_grad=True)
    tx, tg = torch.tensor(x, requires_grad=True), torch.tensor(g, requires_grad=True)
    outs = []
    for lib, a, b, F_ in ((tl, xt, gt, F), (torch, tx, tg, torch.nn.functional)):
        y = F_.grid_sample(a, b, "bicubic", "reflection", False)
        (gg,) = lib.autograd.grad((y * y).sum(), [b], create_graph=True)
        (ggx,) = lib.autograd.grad(gg.sum(), [a])
        outs.append((gg.detach().cpu().numpy() if lib is tl else gg.detach().numpy(),
                     ggx.cpu().numpy() if lib is tl else ggx.numpy()))
    for a, b in zip(*outs):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize("nd", [2, 3])
def test_cuda_launches_and_no_host_wait(device, nd):
    if device == "cpu":
        pytest.skip("counts CUDA launches")
    from tensorlab.backends.cuda import launch as K
    shape, gshape = ((2, 3, 5, 6), (2, 4, 7, 2)) if nd == 2 else ((2, 3, 4, 5, 6), (2, 3, 4, 5, 3))
    x, g = _inputs(shape, gshape, 12)
    xt = tl.tensor(x, device=device, requires_grad=True)
    gt = tl.tensor(g, device=device, requires_grad=True)
    F.grid_sample(xt, gt, "bilinear", "reflection", False).sum().backward()
    before = dict(K.LAUNCHES)  # the counter is the coverage test's: read a difference, never clear it
    with tl.cuda.sync_trace() as trace:
        F.grid_sample(xt, gt, "bilinear", "reflection", False).sum().backward()
    assert len(trace) == 0, str(trace)
    launched = {k: v - before.get(k, 0) for k, v in K.LAUNCHES.items() if v != before.get(k, 0)}
    ours = {k[1].split("<")[0]: v for k, v in launched.items() if k[0] == "grid_sample.cu"}
    assert ours == {"grid_sample_fwd": 1, "grid_sample_bwd": 1}, launched
    assert sum(launched.values()) <= 10, launched
