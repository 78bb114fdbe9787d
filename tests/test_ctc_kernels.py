"""ctc_loss through its primitives (ctc_loss_fwd / ctc_loss_bwd: NumPy on the CPU, kernels/ctc.cu on
CUDA): losses and gradients against torch's CPU ctc_loss for float32 and float64 over padded and
concatenated targets, repeated labels (the skip rule and a class's chain of states), impossible
alignments (inf / zero_infinity), empty targets and inputs, more states than a block's threads and
the 64-bit index instantiations; the CUDA path launches a fixed number of kernels whatever T is
and never waits for the device; the CPU and CUDA primitives agree."""
from __future__ import annotations

import numpy as np
import pytest

import tensorlab as tl
import tensorlab.nn.functional as F

_TOL = {"float64": dict(rtol=1e-9, atol=1e-10), "float32": dict(rtol=2e-4, atol=2e-5)}


def _log_softmax(x):
    return x - np.log(np.exp(x - x.max(-1, keepdims=True)).sum(-1, keepdims=True)) - x.max(-1, keepdims=True)


def _case(T, N, C, lens, tlens, seed, repeats=False, blank=0):
    rng = np.random.default_rng(seed)
    lp = _log_softmax(rng.standard_normal((T, N, C)) * 2)
    S = max(max(tlens), 1)
    labels = [c for c in range(C) if c != blank]
    tg = rng.choice(labels, (N, S))
    if repeats:  # runs of one class: no skip between equal neighbours, several states per class
        tg[:, 1::2] = tg[:, 0::2][:, :tg[:, 1::2].shape[1]]
    return lp, tg, list(lens), list(tlens)


def _compare(torch, device, dtype, lp, tg, il, sl, blank=0, zero_infinity=False, concatenated=False):
    tol = _TOL[dtype]
    if concatenated:
        tg = np.concatenate([tg[i, :n] for i, n in enumerate(sl)]) if sum(sl) else np.zeros(0, np.int64)
    x = tl.tensor(lp.astype(dtype), device=device, requires_grad=True)
    tx = torch.tensor(lp.astype(dtype), requires_grad=True)
    y = F.ctc_loss(x, tl.tensor(tg, device=device), il, sl, blank=blank, reduction="none",
                   zero_infinity=zero_infinity)
    ty = torch.nn.functional.ctc_loss(tx, torch.tensor(tg), il, sl, blank=blank, reduction="none",
                                      zero_infinity=zero_infinity)
    np.testing.assert_allclose(y.detach().cpu().numpy(), ty.detach().numpy(), equal_nan=True, **tol)
    g = np.random.default_rng(7).random(len(il)).astype(dtype) + 0.5
    y.backward(tl.tensor(g, device=device))
    ty.backward(torch.tensor(g))
    np.testing.assert_allclose(x.grad.cpu().numpy(), tx.grad.numpy(), equal_nan=True, **tol)


CASES = {
    "plain": dict(T=12, N=4, C=6, lens=(12, 10, 7, 12), tlens=(5, 3, 1, 4), seed=0),
    "repeats": dict(T=14, N=3, C=4, lens=(14, 13, 9), tlens=(6, 4, 3), seed=1, repeats=True),
    "empty_target": dict(T=6, N=3, C=5, lens=(6, 4, 1), tlens=(0, 2, 0), seed=2),
    "impossible": dict(T=5, N=3, C=5, lens=(5, 2, 5), tlens=(2, 3, 4), seed=3, repeats=True),
    "blank_last": dict(T=9, N=2, C=5, lens=(9, 8), tlens=(3, 4), seed=4, blank=4),
    "many_states": dict(T=150, N=2, C=7, lens=(150, 140), tlens=(140, 60), seed=5),
}


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_ctc_loss_matches_torch(torch, device, name, dtype):
    spec = dict(CASES[name])
    blank = spec.pop("blank", 0)
    lp, tg, il, sl = _case(blank=blank, **spec)
    _compare(torch, device, dtype, lp, tg, il, sl, blank=blank)
    _compare(torch, device, dtype, lp, tg, il, sl, blank=blank, zero_infinity=True, concatenated=True)


def test_ctc_loss_empty_input(torch, device):
    """An input length of 0: loss 0 with an empty target, inf (or 0 under zero_infinity) otherwise."""
    lp, tg, il, sl = _case(T=4, N=3, C=4, lens=(0, 0, 4), tlens=(0, 2, 2), seed=6)
    for zi in (False, True):
        _compare(torch, device, "float64", lp, tg, il, sl, zero_infinity=zi)


def test_ctc_loss_wide_indexing(torch, device):
    lp, tg, il, sl = _case(**CASES["plain"])
    from tensorlab.backends.cuda.launch import wide_indexing
    for dtype in ("float32", "float64"):
        with wide_indexing():
            _compare(torch, device, dtype, lp, tg, il, sl)


def test_ctc_primitives_agree_across_devices(device):
    """The CUDA primitives write what the CPU's write (alpha where defined, nll, the gradient)."""
    if device == "cpu":
        pytest.skip("compares the CUDA primitives with the CPU's")
    lp, tg, il, sl = _case(**CASES["repeats"])
    out = {}
    for dev in ("cpu", device):
        x = tl.tensor(lp, device=dev, requires_grad=True)
        y = F.ctc_loss(x, tl.tensor(tg, device=dev), il, sl, reduction="sum")
        y.backward()
        out[dev] = (y.detach().cpu().numpy(), x.grad.cpu().numpy())
    for a, b in zip(out["cpu"], out[device]):
        np.testing.assert_allclose(b, a, rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("T", [8, 40])
def test_ctc_launches_do_not_grow_with_time(device, T):
    """Forward and backward: the same kernels for any T (the recursions loop inside one launch)."""
    if device == "cpu":
        pytest.skip("counts CUDA launches")
    from tensorlab.backends.cuda import launch as K
    lp, tg, il, sl = _case(T=T, N=2, C=5, lens=(T, T - 1), tlens=(3, 2), seed=8)
    x = tl.tensor(lp, device=device, requires_grad=True)
    tg_t = tl.tensor(tg, device=device)
    F.ctc_loss(x, tg_t, il, sl, reduction="none").sum().backward()  # first use: module loads, lengths upload
    before = dict(K.LAUNCHES)  # the counter is the coverage test's: read a difference, never clear it
    with tl.cuda.sync_trace() as trace:
        F.ctc_loss(x, tg_t, il, sl, reduction="none").sum().backward()
    assert len(trace) == 0, str(trace)
    launched = {k: v - before.get(k, 0) for k, v in K.LAUNCHES.items() if v != before.get(k, 0)}
    ctc = {k: v for k, v in launched.items() if k[0] == "ctc.cu"}
    assert sorted(v for v in ctc.values()) == [1, 1, 1, 1], ctc
    assert sum(launched.values()) <= 12, launched
