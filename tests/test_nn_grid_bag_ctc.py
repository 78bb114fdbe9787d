"""grid_sample (bilinear / nearest / bicubic x zeros / border / reflection x align_corners, 4-D and
5-D), grid_sampler_2d/3d's integer modes, affine_grid, embedding_bag (sum / mean / max, offsets,
per_sample_weights, include_last_offset, padding_idx) and ctc_loss (reductions, zero_infinity,
blank, padded and concatenated targets, torch's gradient) against torch, with float64 gradients,
gradcheck, the layers (EmbeddingBag, CTCLoss) and torch's errors."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

import tensorlab as tl
import tensorlab.nn as nn
import tensorlab.nn.functional as F

from layers_oracle import leaf, rand, raises_like

F64 = dict(rtol=1e-9, atol=1e-10)


def _close(ours, theirs, **tol):
    got = ours.detach().cpu().numpy()
    want = theirs.detach().numpy()
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_allclose(got, want, equal_nan=True, **(tol or F64))


def _grid(shape, seed):
    return np.random.default_rng(seed).random(shape) * 2.6 - 1.3


@pytest.mark.parametrize("mode,padding,align", list(itertools.product(["bilinear", "nearest", "bicubic"],
                                                                      ["zeros", "border", "reflection"], [True, False])))
def test_grid_sample_2d(torch, device, mode, padding, align):
    (x, tx), (g, tg) = leaf(torch, device, rand((2, 3, 5, 6), 1)), leaf(torch, device, _grid((2, 4, 7, 2), 2))
    y = F.grid_sample(x, g, mode, padding, align)
    ty = torch.nn.functional.grid_sample(tx, tg, mode, padding, align)
    _close(y, ty)
    w = rand(tuple(ty.shape), 3)
    y.backward(tl.tensor(w, device=device))
    ty.backward(torch.tensor(w))
    _close(x.grad, tx.grad)
    _close(g.grad, tg.grad)


@pytest.mark.parametrize("mode,padding,align", list(itertools.product(["bilinear", "nearest"],
                                                                      ["zeros", "border", "reflection"], [True, False])))
def test_grid_sample_3d(torch, device, mode, padding, align):
    (x, tx), (g, tg) = leaf(torch, device, rand((2, 2, 4, 5, 3), 1)), leaf(torch, device, _grid((2, 3, 2, 4, 3), 2))
    code = {"bilinear": 0, "nearest": 1}[mode], {"zeros": 0, "border": 1, "reflection": 2}[padding]
    y = tl.grid_sampler_3d(x, g, *code, align)
    ty = torch.grid_sampler_3d(tx, tg, *code, align)
    _close(y, ty)
    _close(F.grid_sample(x, g, mode, padding, align), ty)
    w = rand(tuple(ty.shape), 3)
    y.backward(tl.tensor(w, device=device))
    ty.backward(torch.tensor(w))
    _close(x.grad, tx.grad)
    _close(g.grad, tg.grad)


def test_grid_sample_errors_and_gradcheck(torch, device):
    x, g = tl.tensor(rand((1, 2, 3, 3)), device=device), tl.tensor(_grid((1, 2, 2, 2), 0), device=device)
    tx, tg = torch.tensor(rand((1, 2, 3, 3))), torch.tensor(_grid((1, 2, 2, 2), 0))
    raises_like(lambda: F.grid_sample(x, g, mode="cubic", align_corners=False),
                lambda: torch.nn.functional.grid_sample(tx, tg, mode="cubic", align_corners=False))
    raises_like(lambda: F.grid_sample(x, g, padding_mode="wrap", align_corners=False),
                lambda: torch.nn.functional.grid_sample(tx, tg, padding_mode="wrap", align_corners=False))
    raises_like(lambda: F.grid_sample(x, g[..., :1], align_corners=False),
                lambda: torch.nn.functional.grid_sample(tx, tg[..., :1], align_corners=False))
    raises_like(lambda: F.grid_sample(x.unsqueeze(2), g, align_corners=False),
                lambda: torch.nn.functional.grid_sample(tx.unsqueeze(2), tg, align_corners=False))
    x5, g5 = tl.tensor(rand((1, 1, 2, 2, 2)), device=device), tl.tensor(_grid((1, 1, 1, 2, 3), 0), device=device)
    raises_like(lambda: F.grid_sample(x5, g5, mode="bicubic", align_corners=False),
                lambda: torch.nn.functional.grid_sample(torch.tensor(rand((1, 1, 2, 2, 2))),
                                                        torch.tensor(_grid((1, 1, 1, 2, 3), 0)), mode="bicubic",
                                                        align_corners=False))
    xg = tl.tensor(rand((1, 2, 3, 4), 5), device=device, requires_grad=True)
    gg = tl.tensor(_grid((1, 2, 3, 2), 6), device=device, requires_grad=True)
    for mode in ("bilinear", "bicubic"):
        assert tl.autograd.gradcheck(lambda a, b: F.grid_sample(a, b, mode, "reflection", False), (xg, gg))


@pytest.mark.parametrize("align", [True, False])
def test_affine_grid(torch, device, align):
    for size, shape in (((2, 3, 4, 5), (2, 2, 3)), ((2, 3, 4, 5, 6), (2, 3, 4)), ((1, 1, 1, 3), (1, 2, 3))):
        th, tth = leaf(torch, device, rand(shape, 4))
        y, ty = F.affine_grid(th, size, align), torch.nn.functional.affine_grid(tth, size, align)
        _close(y, ty)
        w = rand(tuple(ty.shape), 5)
        y.backward(tl.tensor(w, device=device))
        ty.backward(torch.tensor(w))
        _close(th.grad, tth.grad)
    raises_like(lambda: F.affine_grid(tl.zeros(2, 2, 3, device=device), (2, 3, 4), align),
                lambda: torch.nn.functional.affine_grid(torch.zeros(2, 2, 3), (2, 3, 4), align))
    raises_like(lambda: F.affine_grid(tl.zeros(2, 3, 3, device=device), (2, 3, 4, 4), align),
                lambda: torch.nn.functional.affine_grid(torch.zeros(2, 3, 3), (2, 3, 4, 4), align))


BAGS = [(mode, ilo, pad) for mode in ("sum", "mean", "max") for ilo in (False, True) for pad in (None, 2, -10)]


@pytest.mark.parametrize("mode,ilo,pad", BAGS)
def test_embedding_bag(torch, device, mode, ilo, pad):
    w, tw = leaf(torch, device, rand((10, 3), 1))
    idx = np.array([1, 2, 4, 5, 4, 3, 2, 9, 0, 0])
    offs = np.array([0, 4, 4, 7] + ([10] if ilo else []))
    kw = dict(mode=mode, include_last_offset=ilo, padding_idx=pad)
    psw = rand((10,), 2)
    ours_kw = dict(kw, per_sample_weights=tl.tensor(psw, device=device)) if mode == "sum" else kw
    theirs_kw = dict(kw, per_sample_weights=torch.tensor(psw)) if mode == "sum" else kw
    y = F.embedding_bag(tl.tensor(idx, device=device), w, tl.tensor(offs, device=device), **ours_kw)
    ty = torch.nn.functional.embedding_bag(torch.tensor(idx), tw, torch.tensor(offs), **theirs_kw)
    _close(y, ty)
    g = rand(tuple(ty.shape), 3)
    y.backward(tl.tensor(g, device=device))
    ty.backward(torch.tensor(g))
    _close(w.grad, tw.grad)


def test_embedding_bag_2d_layer_and_errors(torch, device):
    idx = np.random.default_rng(0).integers(0, 10, (3, 4))
    torch.manual_seed(0)
    tm = torch.nn.EmbeddingBag(10, 3, mode="max", padding_idx=1).double()
    m = nn.EmbeddingBag(10, 3, mode="max", padding_idx=1).to(device=device, dtype=tl.float64)
    assert list(m.state_dict()) == list(tm.state_dict())
    m.load_state_dict({"weight": tl.tensor(tm.weight.detach().numpy(), device=device)})
    _close(m(tl.tensor(idx, device=device)), tm(torch.tensor(idx)))
    w, tw = tl.tensor(rand((10, 3)), device=device), torch.tensor(rand((10, 3)))
    raises_like(lambda: F.embedding_bag(tl.tensor(idx, device=device), w, tl.tensor([0, 1], device=device)),
                lambda: torch.nn.functional.embedding_bag(torch.tensor(idx), tw, torch.tensor([0, 1])))
    raises_like(lambda: F.embedding_bag(tl.tensor(idx[0], device=device), w),
                lambda: torch.nn.functional.embedding_bag(torch.tensor(idx[0]), tw))
    raises_like(lambda: F.embedding_bag(tl.tensor(idx, device=device), w, mode="max",
                                        per_sample_weights=tl.tensor(rand((3, 4)), device=device)),
                lambda: torch.nn.functional.embedding_bag(torch.tensor(idx), tw, mode="max",
                                                          per_sample_weights=torch.tensor(rand((3, 4)))))
    raises_like(lambda: F.embedding_bag(tl.tensor(idx, device=device), w, mode="min"),
                lambda: torch.nn.functional.embedding_bag(torch.tensor(idx), tw, mode="min"))


def _ctc_inputs(T=8, N=3, C=5, S=4, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((T, N, C))
    lp = x - np.log(np.exp(x).sum(-1, keepdims=True))
    tg = rng.integers(1, C, (N, S))
    return lp, tg, [T, T - 2, T - 1], [S, 2, 0]


@pytest.mark.parametrize("reduction,zero_inf", list(itertools.product(["none", "mean", "sum"], [False, True])))
def test_ctc_loss(torch, device, reduction, zero_inf):
    lp, tg, il, sl = _ctc_inputs()
    il[1] = 1 if zero_inf else il[1]  # an impossible alignment: inf, or zero with zero_infinity
    (x, tx) = leaf(torch, device, lp)
    y = F.ctc_loss(x, tl.tensor(tg, device=device), tl.tensor(il, device=device), tl.tensor(sl, device=device),
                   reduction=reduction, zero_infinity=zero_inf)
    ty = torch.nn.functional.ctc_loss(tx, torch.tensor(tg), torch.tensor(il), torch.tensor(sl), reduction=reduction,
                                      zero_infinity=zero_inf)
    _close(y, ty)
    if zero_inf or reduction == "none":
        g = rand(tuple(ty.shape), 1)
        y.backward(tl.tensor(g, device=device))
        ty.backward(torch.tensor(g))
        _close(x.grad, tx.grad)


def test_ctc_loss_concatenated_blank_unbatched_layer(torch, device):
    lp, tg, il, sl = _ctc_inputs(seed=2)
    flat = np.concatenate([tg[0, :4], tg[1, :2]]) - 1  # labels 0..3, blank 4
    y = nn.CTCLoss(blank=4, reduction="sum")(tl.tensor(lp, device=device), tl.tensor(flat, device=device), il, sl)
    ty = torch.nn.CTCLoss(blank=4, reduction="sum")(torch.tensor(lp), torch.tensor(flat), il, sl)
    _close(y, ty)
    y1 = F.ctc_loss(tl.tensor(lp[:, 0], device=device), tl.tensor(tg[0], device=device), [8], [4])
    _close(y1, torch.nn.functional.ctc_loss(torch.tensor(lp[:, 0]), torch.tensor(tg[0]), [8], [4]))
    raises_like(lambda: F.ctc_loss(tl.tensor(lp, device=device), tl.tensor(tg, device=device), [9, 1, 1], sl),
                lambda: torch.nn.functional.ctc_loss(torch.tensor(lp), torch.tensor(tg), [9, 1, 1], sl))
