"""Grad modes: no_grad, enable_grad, set_grad_enabled, inference_mode (context managers and
decorators, per thread), and the cost of the autograd check every op pays."""
from __future__ import annotations

import threading
import timeit

import pytest

import tensorlab as tl
from tensorlab import autograd_hooks


def test_no_grad_context_and_decorator(device):
    x = tl.ones(2, device=device, requires_grad=True)
    assert tl.is_grad_enabled()
    with tl.no_grad():
        assert not tl.is_grad_enabled()
        y = x * 2
    assert tl.is_grad_enabled()
    assert not y.requires_grad and y.grad_fn is None

    @tl.no_grad()
    def f(t):
        return t * 3
    assert not f(x).requires_grad and tl.is_grad_enabled()

    @tl.no_grad()
    def gen(t):
        yield t * 1
        yield tl.is_grad_enabled()
    a, enabled = list(gen(x))
    assert not a.requires_grad and enabled is False and tl.is_grad_enabled()


def test_enable_grad_inside_no_grad(device):
    x = tl.ones(2, device=device, requires_grad=True)
    with tl.no_grad():
        with tl.enable_grad():
            assert (x * 2).requires_grad
        assert not (x * 2).requires_grad

        @tl.enable_grad()
        def f():
            return x * 2
        assert f().requires_grad


def test_set_grad_enabled_function_context_and_decorator(device):
    x = tl.ones(2, device=device, requires_grad=True)
    tl.set_grad_enabled(False)
    try:
        assert not tl.is_grad_enabled() and not (x * 2).requires_grad
    finally:
        tl.set_grad_enabled(True)
    with tl.set_grad_enabled(False):
        assert not tl.is_grad_enabled()
    assert tl.is_grad_enabled()
    with tl.no_grad():
        with tl.set_grad_enabled(True):
            assert (x * 2).requires_grad
        assert not tl.is_grad_enabled()

    @tl.set_grad_enabled(False)
    def f():
        return tl.is_grad_enabled()
    assert tl.is_grad_enabled()  # decorating does not change the mode
    assert f() is False and tl.is_grad_enabled()


def test_grad_mode_is_per_thread(device):
    seen = {}

    def worker():
        seen["enabled"] = tl.is_grad_enabled()
        x = tl.ones(2, device=device, requires_grad=True)
        seen["recorded"] = (x * 2).requires_grad
    with tl.no_grad():
        t = threading.Thread(target=worker)
        t.start()
        t.join()
        assert not tl.is_grad_enabled()
    assert seen == {"enabled": True, "recorded": True}


def test_exceptions_restore_the_mode():
    with pytest.raises(ValueError):
        with tl.no_grad():
            raise ValueError
    assert tl.is_grad_enabled()
    with pytest.raises(ValueError):
        with tl.inference_mode():
            raise ValueError
    assert tl.is_grad_enabled() and not tl.is_inference_mode_enabled() and not autograd_hooks._slow


def test_inference_mode(device):
    w = tl.ones(3, device=device, requires_grad=True)
    with tl.inference_mode():
        assert tl.is_inference_mode_enabled() and not tl.is_grad_enabled()
        made = tl.ones(3, device=device)
        computed = w * 2
        r = tl.randn(3, device=device)
    assert not tl.is_inference_mode_enabled() and tl.is_grad_enabled()
    assert made.is_inference() and computed.is_inference() and r.is_inference()
    assert not computed.requires_grad
    assert not w.is_inference() and not tl.ones(1, device=device).is_inference()
    with pytest.raises(RuntimeError, match="Inference tensors cannot be saved for backward. To work around you can "
                                           "make a clone to get a normal tensor and use it in autograd."):
        (made * w).sum()
    (made + w).sum().backward()  # add saves nothing: allowed, as in torch
    assert w.grad.tolist() == [1.0, 1.0, 1.0]
    (made.clone() * w).sum().backward()  # the documented workaround
    with pytest.raises(RuntimeError, match="Inplace update to inference tensor outside InferenceMode"):
        made.add_(1)
    with pytest.raises(RuntimeError, match="Setting requires_grad=True on inference tensor"):
        made.requires_grad_()
    with tl.inference_mode():
        made.add_(1)  # fine inside
    assert made.tolist() == [2.0, 2.0, 2.0]


def test_inference_mode_decorator_and_false(device):
    @tl.inference_mode()
    def predict(t):
        return t * 2
    out = predict(tl.ones(2, device=device, requires_grad=True))
    assert out.is_inference() and not out.requires_grad
    with tl.inference_mode():
        with tl.inference_mode(False):
            assert not tl.is_inference_mode_enabled()
            assert not tl.ones(1, device=device).is_inference()
        assert tl.is_inference_mode_enabled()


def test_record_fast_path_costs_well_under_a_microsecond():
    """Every op calls autograd_hooks.record; with no input requiring grad and anomaly detection
    off it must return almost at once."""
    a, b = tl.ones(8), tl.ones(8)
    ops = (a, b)
    record, record_op = autograd_hooks.record, autograd_hooks.record_op
    n = 20000
    t = min(timeit.repeat(lambda: record(a, "add", ops), number=n, repeat=15)) / n
    t_op = min(timeit.repeat(lambda: record_op(a, "add", ops, ops, "add", {}), number=n, repeat=15)) / n
    assert t < 1e-6 and t_op < 1e-6, (t, t_op)
