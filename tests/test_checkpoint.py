"""torch.utils.checkpoint: both modes recompute in backward, give torch's gradients, replay the
RNG (dropout masks) and the autocast state; checkpoint_sequential; torch's warnings and errors."""
from __future__ import annotations

import numpy as np
import pytest

import tensorlab as tl
from tensorlab.utils.checkpoint import checkpoint, checkpoint_sequential


def _net(device, p=0.0):
    tl.manual_seed(0)
    return tl.nn.Sequential(tl.nn.Linear(4, 6), tl.nn.Dropout(p), tl.nn.Tanh(), tl.nn.Linear(6, 6), tl.nn.ReLU(),
                            tl.nn.Linear(6, 2)).to(device)


def _grads(m, x):
    return [p.grad.clone() for p in m.parameters()] + ([x.grad.clone()] if x.grad is not None else [])


def _reset(m, x):
    for p in m.parameters():
        p.grad = None
    x.grad = None


@pytest.mark.parametrize("use_reentrant", [True, False])
def test_checkpoint_matches_plain_backward_with_dropout(device, use_reentrant):
    m = _net(device, p=0.5)
    x = tl.randn(5, 4, device=device, requires_grad=True)
    calls = []

    def fn(inp):
        calls.append(1)
        return m(inp)
    tl.manual_seed(3)
    if device == "cuda":
        tl.cuda.manual_seed(3)
    y = checkpoint(fn, x, use_reentrant=use_reentrant)
    after_forward = tl.rand(1, device=device)
    (y * y).sum().backward()
    assert len(calls) == 2  # recomputed in backward
    g1 = _grads(m, x)
    _reset(m, x)
    tl.manual_seed(3)
    if device == "cuda":
        tl.cuda.manual_seed(3)
    y2 = m(x)
    # the recomputation restored the RNG afterwards: the stream continues as without checkpointing
    assert float(after_forward) == float(tl.rand(1, device=device))
    (y2 * y2).sum().backward()
    np.testing.assert_array_equal(y.detach().cpu().numpy(), y2.detach().cpu().numpy())
    for a, b in zip(g1, _grads(m, x)):
        np.testing.assert_allclose(a.cpu().numpy(), b.cpu().numpy(), rtol=1e-6, atol=1e-7)


def test_checkpoint_matches_torch(device, torch):
    rng = np.random.default_rng(0)
    w = rng.standard_normal((4, 3))
    x = rng.standard_normal((2, 4))
    ours_w, ours_x = tl.tensor(w, device=device, requires_grad=True), tl.tensor(x, device=device, requires_grad=True)
    tw, tx = torch.tensor(w, requires_grad=True), torch.tensor(x, requires_grad=True)
    for ur in (True, False):
        out = checkpoint(lambda a, b: (a @ b).sin(), ours_x, ours_w, use_reentrant=ur)
        tout = torch.utils.checkpoint.checkpoint(lambda a, b: (a @ b).sin(), tx, tw, use_reentrant=ur)
        out.pow(2).sum().backward()
        tout.pow(2).sum().backward()
        np.testing.assert_allclose(ours_w.grad.cpu().numpy(), tw.grad.numpy(), rtol=1e-12)
        np.testing.assert_allclose(ours_x.grad.cpu().numpy(), tx.grad.numpy(), rtol=1e-12)


def test_non_reentrant_parameters_without_input_grad_and_kwargs(device):
    m = _net(device)
    x = tl.randn(3, 4, device=device)
    y = checkpoint(lambda inp, scale=1.0: m(inp) * scale, x, use_reentrant=False, scale=2.0)
    assert y.requires_grad
    y.sum().backward()
    g = [p.grad.clone() for p in m.parameters()]
    for p in m.parameters():
        p.grad = None
    (m(x) * 2.0).sum().backward()
    for a, p in zip(g, m.parameters()):
        np.testing.assert_allclose(a.cpu().numpy(), p.grad.cpu().numpy(), rtol=1e-6)
    # reentrant mode: no input needs grad -> torch's warning, and kwargs are refused
    with pytest.warns(UserWarning, match="None of the inputs have requires_grad=True"):
        checkpoint(m, x, use_reentrant=True)
    with pytest.raises(ValueError, match="Unexpected keyword arguments: scale"):
        checkpoint(m, x, use_reentrant=True, scale=2.0)
    with pytest.warns(UserWarning, match="use_reentrant parameter should be passed explicitly"):
        checkpoint(m, x.requires_grad_())


def test_checkpoint_replays_autocast(device):
    m = _net(device)
    x = tl.randn(3, 4, device=device, requires_grad=True)
    low = tl.bfloat16 if device == "cpu" else tl.float16
    with tl.amp.autocast(device, dtype=low):
        y = checkpoint(m, x, use_reentrant=False)
    assert y.dtype is low
    y.float().sum().backward()
    assert m[0].weight.grad.dtype is tl.float32


@pytest.mark.parametrize("use_reentrant", [True, False])
def test_checkpoint_sequential(device, use_reentrant):
    m = _net(device)
    x = tl.randn(5, 4, device=device, requires_grad=True)
    y = checkpoint_sequential(m, 3, x, use_reentrant=use_reentrant)
    y.sum().backward()
    g = _grads(m, x)
    _reset(m, x)
    y2 = m(x)
    y2.sum().backward()
    np.testing.assert_allclose(y.detach().cpu().numpy(), y2.detach().cpu().numpy(), rtol=1e-6)
    for a, b in zip(g, _grads(m, x)):
        np.testing.assert_allclose(a.cpu().numpy(), b.cpu().numpy(), rtol=1e-6, atol=1e-7)
    with pytest.raises(ValueError, match="Unexpected keyword arguments"):
        checkpoint_sequential(m, 2, x, use_reentrant=True, foo=1)
