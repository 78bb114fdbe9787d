"""The two autograd hooks DistributedDataParallel rides on: Tensor.register_post_accumulate_grad_hook
(torch's: called with the leaf after its .grad was accumulated) and engine.queue_callback (torch's
Variable._execution_engine.queue_callback: runs at the end of the backward pass)."""
from __future__ import annotations

import pytest

import tensorlab as tl
from tensorlab.autograd import engine


def test_post_accumulate_hook_sees_accumulated_grad(device, torch):
    def run(lib, dev):
        w = lib.ones(3, requires_grad=True, device=dev)
        seen = []
        h = w.register_post_accumulate_grad_hook(lambda t: seen.append(t.grad.tolist()))
        (w * 2).sum().backward()
        (w * w).sum().backward()
        h.remove()
        (w * 3).sum().backward()
        return seen, w.grad.tolist()
    assert run(tl, device) == run(torch, "cpu")
    assert run(tl, device) == ([[2.0] * 3, [4.0] * 3], [7.0] * 3)


def test_post_accumulate_hook_refusals():
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        tl.ones(2).register_post_accumulate_grad_hook(lambda t: None)
    x = tl.ones(2, requires_grad=True) * 2
    with pytest.raises(RuntimeError, match="non-leaf"):
        x.register_post_accumulate_grad_hook(lambda t: None)


def test_hooks_run_in_readiness_order_and_callback_last(device):
    a = tl.ones(2, requires_grad=True, device=device)
    b = tl.ones(2, requires_grad=True, device=device)
    events = []

    def queue(t):
        events.append(("acc", "a" if t is a else "b"))
        if len(events) == 1:
            engine.queue_callback(lambda: events.append("end"))
            engine.queue_callback(lambda: engine.queue_callback(lambda: events.append("queued by a callback")))
    a.register_post_accumulate_grad_hook(queue)
    b.register_post_accumulate_grad_hook(queue)
    y = (a * 2).sum()
    z = (y * b).sum()
    z.backward()
    assert events[-2:] == ["end", "queued by a callback"]
    assert sorted(events[:2]) == [("acc", "a"), ("acc", "b")]
    assert a.grad.tolist() == [4.0, 4.0] and b.grad.tolist() == [4.0, 4.0]


def test_queue_callback_outside_backward():
    with pytest.raises(RuntimeError, match="Final callbacks can only be installed during backward pass"):
        engine.queue_callback(lambda: None)


def test_callback_not_run_when_backward_fails():
    w = tl.ones(2, requires_grad=True)
    ran = []

    def hook(g):
        engine.queue_callback(lambda: ran.append(1))
        raise ValueError("boom")
    w.register_hook(hook)
    with pytest.raises(ValueError, match="boom"):
        (w * 2).sum().backward()
    assert ran == []
    with pytest.raises(RuntimeError):
        engine.queue_callback(lambda: None)  # the failed pass left no callback list behind
