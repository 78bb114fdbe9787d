"""cross_entropy / nll_loss over class indices as one NllLossBackward0 node (ops/nll_fused.py)
against torch and against the composite it replaces: losses, gradients, ignored targets (some,
all), double backward, retain_graph, and the composite's errors for out-of-range targets."""
import numpy as np
import pytest

import tensorlab as tl
from tensorlab.ops import nll_fused

F = tl.nn.functional


def _np(t):
    return t.detach().cpu().numpy()


TARGETS = {"plain": [1, 0, 4, 2, 3, 3], "ignored": [1, -100, 4, 2, -100, 3], "all_ignored": [-100] * 6,
           "ignore_1": [1, 0, 4, 1, 3, 1]}


@pytest.mark.parametrize("kind", sorted(TARGETS))
@pytest.mark.parametrize("reduction", ["mean", "sum"])
@pytest.mark.parametrize("fn", ["cross_entropy", "nll_loss"])
def test_nll_matches_torch(kind, reduction, fn, device, torch):
    rng = np.random.default_rng(0)
    xn = rng.standard_normal((6, 5))
    tn = np.array(TARGETS[kind])
    ii = 1 if kind == "ignore_1" else -100
    out = {}
    for lib, dev in ((tl, device), (torch, "cpu")):
        x = lib.tensor(xn, device=dev, requires_grad=True)
        inp = x if fn == "cross_entropy" else lib.nn.functional.log_softmax(x, 1)
        loss = getattr(lib.nn.functional, fn)(inp, lib.tensor(tn, device=dev), ignore_index=ii, reduction=reduction)
        loss.backward()
        out[lib] = (loss, x.grad)
        if lib is tl:
            assert loss.grad_fn.name() == "NllLossBackward0"  # as torch (its cross_entropy ends in nll_loss)
    for a, b in zip(out[tl], out[torch]):
        np.testing.assert_allclose(_np(a), b.detach().numpy(), rtol=1e-12, atol=1e-12, equal_nan=True)


def test_nll_float32_and_composite_agree(device):
    rng = np.random.default_rng(1)
    x0 = tl.tensor(rng.standard_normal((16, 7)).astype(np.float32), device=device)
    t = tl.tensor(rng.integers(0, 7, 16), device=device)
    t[3] = -100
    res = []
    for enabled in (True, False):
        nll_fused.ENABLED = enabled
        try:
            x = x0.double().clone().requires_grad_()
            loss = F.cross_entropy(x, t)
            (gx,) = tl.autograd.grad(loss, x, create_graph=True, retain_graph=True)
            (gx * gx).sum().backward(retain_graph=True)  # double backward through log_softmax's derivative
            loss.backward()  # the graph was retained
            res.append([_np(loss), _np(gx), _np(x.grad)])
        finally:
            nll_fused.ENABLED = True
    for a, b in zip(*res):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_nll_out_of_range_target_raises_as_torch():
    x = tl.zeros(3, 4, requires_grad=True)
    with pytest.raises(IndexError, match="Target 7 is out of bounds"):
        F.cross_entropy(x, tl.tensor([0, 7, 1]))
    with pytest.raises(IndexError, match="Target -3 is out of bounds"):
        F.cross_entropy(x, tl.tensor([0, -3, 1]))


@pytest.mark.parametrize("dtype", [tl.float32, tl.float64], ids=lambda d: d.name)
@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_cross_entropy_primitives_are_the_ops_they_replace(device, dtype, reduction):
    """backends/*/loss.py against the ops they stand for, bit for bit: log_softmax, gather, sum
    and div_ forward; exp, mul_ and scatter_ add backward (on CUDA the primitive composes those
    kernels; on the CPU, cross_entropy's plain case takes it for every loss)."""
    from tensorlab.ops._common import empty_tensor
    rng = np.random.default_rng(5)
    n, c = 37, 11
    x = tl.tensor(rng.standard_normal((n, c)) * 3, dtype=dtype, device=device)
    index = tl.tensor(rng.integers(0, c, n), device=device).unsqueeze(1)
    divisor = -n if reduction == "mean" else -1
    lp = empty_tensor((n, c), dtype, x.device)
    loss = empty_tensor((), dtype, x.device)
    x._backend.cross_entropy(loss, lp, x, index, divisor)
    want_lp = F.log_softmax(x, 1)
    np.testing.assert_array_equal(_np(lp), _np(want_lp))
    picked = want_lp.gather(1, index)
    want = picked.reshape(-1).sum().div_(divisor)
    assert _np(loss).tobytes() == _np(want).tobytes()
    sv = 0.37 / n
    q = empty_tensor((n, c), dtype, x.device)
    x._backend.cross_entropy_backward(q, lp, index, sv)
    ref = lp.exp()
    ref.mul_(-sv)
    ref.scatter_(1, index, value=sv, reduce="add")
    np.testing.assert_array_equal(_np(q), _np(ref))


def test_cross_entropy_plain_case_matches_torch_float32(torch):
    """The CPU plain case (every target counted) end to end against torch: loss and gradient."""
    rng = np.random.default_rng(6)
    xn = rng.standard_normal((64, 10)).astype(np.float32) * 4
    tn = rng.integers(0, 10, 64)
    res = []
    for lib in (tl, torch):
        x = lib.tensor(xn, requires_grad=True)
        loss = lib.nn.functional.cross_entropy(x, lib.tensor(tn))
        loss.backward()
        res.append((loss.detach().numpy(), x.grad.numpy()))
    np.testing.assert_allclose(res[0][0], res[1][0], rtol=2e-6)
    np.testing.assert_allclose(res[0][1], res[1][1], rtol=2e-5, atol=1e-8)
