"""nn.functional.linear_cross_entropy against torch 2.13 on every device: the reference path
(class indices and probabilities, K-dimensional weights, bias, class weights, ignore_index, label
smoothing, every reduction) and the chunked path (LinearCrossEntropyOptions: chunk sizes, chunking
methods, 16-bit inputs computed in float32), float64 gradients, and torch's errors."""
from __future__ import annotations

import numpy as np
import pytest

import tensorlab as tl

pytestmark = pytest.mark.torch_oracle


def _args(torch, device, n=6, fin=4, c=5, k=(), seed=0, probs=False, grad=True):
    g = np.random.default_rng(seed)
    x, w, b = g.standard_normal((n, fin)), g.standard_normal((c, *k, fin)), g.standard_normal((c, *k))
    if probs:
        t = g.random((n, c, *k))
        t = t / t.sum(1, keepdims=True)
    else:
        t = g.integers(0, c, (n, *k))
        t.reshape(-1)[0] = -100
    ours = [tl.tensor(v, device=device, requires_grad=grad and v.dtype == np.float64) for v in (x, w, b)]
    theirs = [torch.tensor(v, requires_grad=grad and v.dtype == np.float64) for v in (x, w, b)]
    return theirs + [torch.tensor(t)], ours + [tl.tensor(t, device=device)]


def _grads_match(torch, want, got, theirs, ours):
    want.sum().backward()
    got.sum().backward()
    for t, o in zip(theirs[:3], ours[:3]):
        if t.grad is None:  # an unused bias
            assert o.grad is None
            continue
        np.testing.assert_allclose(o.grad.cpu().numpy(), t.grad.numpy(), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("cw", [False, True])
@pytest.mark.parametrize("smoothing", [0.0, 0.2])
def test_reference_path(device, torch, reduction, bias, cw, smoothing):
    theirs, ours = _args(torch, device)
    kw_t = {"reduction": reduction, "label_smoothing": smoothing}
    kw_o = dict(kw_t)
    if bias:
        kw_t["linear_bias"], kw_o["linear_bias"] = theirs[2], ours[2]
    if cw:
        wts = np.arange(1.0, 6.0)
        kw_t["weight"], kw_o["weight"] = torch.tensor(wts), tl.tensor(wts, device=device)
    want = torch.nn.functional.linear_cross_entropy(theirs[0], theirs[1], theirs[3], **kw_t)
    got = tl.nn.functional.linear_cross_entropy(ours[0], ours[1], ours[3], **kw_o)
    np.testing.assert_allclose(got.detach().cpu().numpy(), want.detach().numpy(), rtol=1e-10, atol=1e-12)
    _grads_match(torch, want, got, theirs, ours)


def test_k_dimensional_probabilities_and_unbatched(device, torch):
    theirs, ours = _args(torch, device, k=(3,), seed=1)
    F, G = torch.nn.functional, tl.nn.functional
    want = F.linear_cross_entropy(theirs[0], theirs[1], theirs[3], linear_bias=theirs[2], reduction="none")
    got = G.linear_cross_entropy(ours[0], ours[1], ours[3], linear_bias=ours[2], reduction="none")
    np.testing.assert_allclose(got.detach().cpu().numpy(), want.detach().numpy(), rtol=1e-10)
    theirs, ours = _args(torch, device, seed=2, probs=True)
    want = F.linear_cross_entropy(theirs[0], theirs[1], theirs[3])
    got = G.linear_cross_entropy(ours[0], ours[1], ours[3])
    np.testing.assert_allclose(got.item(), want.item(), rtol=1e-10)
    want = F.linear_cross_entropy(theirs[0][0], theirs[1], torch.tensor(3))
    got = G.linear_cross_entropy(ours[0][0], ours[1], tl.tensor(3, device=device))
    np.testing.assert_allclose(got.item(), want.item(), rtol=1e-10)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("chunk", [{"batch_chunk_size": 1}, {"batch_chunk_size": 4}, {"chunking_method": "auto"},
                                   {"chunking_method": "aspect_ratio"}, {"chunking_method": None}], ids=str)
@pytest.mark.parametrize("cw", [False, True])
def test_chunked_path(device, torch, reduction, chunk, cw):
    theirs, ours = _args(torch, device, n=7, seed=3)
    kw_t = {"reduction": reduction, "linear_bias": theirs[2]}
    kw_o = {"reduction": reduction, "linear_bias": ours[2]}
    if cw:
        wts = np.arange(1.0, 6.0)
        kw_t["weight"], kw_o["weight"] = torch.tensor(wts), tl.tensor(wts, device=device)
    want = torch.nn.functional.linear_cross_entropy(
        theirs[0], theirs[1], theirs[3], options=torch.nn.LinearCrossEntropyOptions(allow_retain_graph=True, **chunk),
        **kw_t)
    got = tl.nn.functional.linear_cross_entropy(ours[0], ours[1], ours[3],
                                                options=tl.nn.LinearCrossEntropyOptions(**chunk), **kw_o)
    np.testing.assert_allclose(got.detach().cpu().numpy(), want.detach().numpy(), rtol=1e-10, atol=1e-12)
    _grads_match(torch, want, got, theirs, ours)


def test_chunked_half_computes_in_float32(device, torch):
    g = np.random.default_rng(4)
    x, w, t = g.standard_normal((8, 3)), g.standard_normal((6, 3)), g.integers(0, 6, 8)
    opts_t, opts_o = torch.nn.LinearCrossEntropyOptions(batch_chunk_size=3), tl.nn.LinearCrossEntropyOptions(
        batch_chunk_size=3)
    for dt in ("bfloat16", "float16"):
        want = torch.nn.functional.linear_cross_entropy(torch.tensor(x).to(getattr(torch, dt)),
                                                        torch.tensor(w).to(getattr(torch, dt)), torch.tensor(t),
                                                        reduction="none", options=opts_t)
        got = tl.nn.functional.linear_cross_entropy(tl.tensor(x, device=device).to(getattr(tl, dt)),
                                                    tl.tensor(w, device=device).to(getattr(tl, dt)),
                                                    tl.tensor(t, device=device), reduction="none", options=opts_o)
        assert got.dtype == getattr(tl, dt)
        np.testing.assert_allclose(got.float().cpu().numpy(), want.float().numpy(), rtol=1e-2, atol=1e-2)


def test_options_ignored_with_warning_and_errors(device):
    G = tl.nn.functional
    x, w = tl.ones((2, 3), device=device), tl.ones((4, 3), device=device)
    t = tl.tensor([0, 1], device=device)
    with pytest.warns(UserWarning, match="options"):
        G.linear_cross_entropy(x, w, t, label_smoothing=0.1, options=tl.nn.LinearCrossEntropyOptions())
    with pytest.raises(RuntimeError, match="dimensionality 1 or 2"):
        G.linear_cross_entropy(tl.ones((1, 2, 3), device=device), w, t)
    with pytest.raises(RuntimeError, match="at least 2"):
        G.linear_cross_entropy(x, tl.ones(3, device=device), t)
    with pytest.raises(RuntimeError, match="in_features"):
        G.linear_cross_entropy(x, tl.ones((4, 2), device=device), t)
    with pytest.raises(RuntimeError, match="linear_bias shape"):
        G.linear_cross_entropy(x, w, t, linear_bias=tl.ones(3, device=device))
    with pytest.raises(RuntimeError, match="requires batched input"):
        G.linear_cross_entropy(tl.ones(3, device=device), tl.ones((4, 2, 3), device=device), t)
    with pytest.raises(RuntimeError, match="ignore_index"):
        G.linear_cross_entropy(x, w, tl.ones((2, 4), device=device), ignore_index=1)
    with pytest.raises(ValueError):
        tl.nn.LinearCrossEntropyOptions(acc_policy="fast")
