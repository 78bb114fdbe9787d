"""NaN/Inf provenance: detect_anomaly names the forward op that first produced NaN/Inf (with the
caller's file:line) and the backward function that returned NaN (with the forward call that
created it). The seed's two examples: SGD with lr=1000 on a linear model, and
data / (data - 1.0) with a zero denominator."""
from __future__ import annotations

import inspect

import numpy as np
import pytest

import tensorlab as tl
from tensorlab import autograd_hooks


def _line_of(fn, marker):
    """The file line number of the source line of `fn` that contains `marker`."""
    lines, start = inspect.getsourcelines(fn)
    for i, line in enumerate(lines):
        if marker in line:
            return start + i
    raise AssertionError(marker)


@pytest.fixture(autouse=True)
def _anomaly_off():
    yield
    tl.autograd.set_detect_anomaly(False)
    assert not autograd_hooks._slow


def test_mode_switches():
    assert not tl.autograd.is_anomaly_enabled()
    with tl.autograd.detect_anomaly():
        assert tl.autograd.is_anomaly_enabled() and autograd_hooks._slow
    assert not tl.autograd.is_anomaly_enabled() and not autograd_hooks._slow
    tl.autograd.set_detect_anomaly(True)
    assert tl.autograd.is_anomaly_enabled()
    tl.autograd.set_detect_anomaly(False)
    with tl.autograd.set_detect_anomaly(True):
        assert tl.autograd.is_anomaly_enabled()
    assert not tl.autograd.is_anomaly_enabled()

    @tl.autograd.detect_anomaly()
    def inside():
        return tl.autograd.is_anomaly_enabled()
    assert inside() and not tl.autograd.is_anomaly_enabled()


def test_division_by_zero_is_caught_at_the_division(device):
    def preprocess():
        data = tl.tensor([0.0, 1.0, 2.0], device=device)
        return data / (data - 1.0)  # the zero denominator
    with tl.autograd.detect_anomaly():
        with pytest.raises(RuntimeError) as e:
            preprocess()
    msg = str(e.value)
    line = _line_of(preprocess, "the zero denominator")
    assert "'div' returned inf values in its output (float32 [3])" in msg
    assert f"{__file__}:{line} (in preprocess)" in msg
    assert "data / (data - 1.0)" in msg
    assert "input 0: float32 [3], finite" in msg and "input 1: float32 [3], finite" in msg
    assert "Every input was finite, so 'div' created the non-finite values" in msg
    # without anomaly detection the same code silently produces inf
    assert preprocess().isinf().any()


def _sgd_linear(steps, lr, device):
    """y = x @ w + b on synthetic data; a hand-written SGD step under no_grad."""
    rng = np.random.default_rng(0)
    x = tl.tensor(rng.normal(size=(64, 10)), dtype=tl.float32, device=device)
    y = x @ tl.tensor(rng.normal(size=(10, 1)), dtype=tl.float32, device=device) + 0.1
    w = tl.zeros(10, 1, device=device, requires_grad=True)
    b = tl.zeros(1, device=device, requires_grad=True)
    losses = []
    for _ in range(steps):
        pred = x @ w + b                    # forward: linear model
        loss = ((pred - y) ** 2).mean()     # forward: mse
        loss.backward()
        with tl.no_grad():
            w -= lr * w.grad                # the update
            b -= lr * b.grad
        w.grad = None
        b.grad = None
        losses.append(loss.item())
    return losses


def test_sgd_with_lr_1000_diverges_and_anomaly_detection_names_where(device):
    losses = _sgd_linear(30, 1000.0, device)
    assert not np.all(np.isfinite(losses))  # it does reach inf / nan
    assert np.all(np.isfinite(_sgd_linear(30, 0.01, device)))  # a sane learning rate does not
    with tl.autograd.detect_anomaly():
        with pytest.raises(RuntimeError) as e:
            _sgd_linear(30, 1000.0, device)
    msg = str(e.value)
    assert msg.startswith("Anomaly detected in the forward pass: '")
    op = msg.split("'")[1]
    lines = {_line_of(_sgd_linear, m): m for m in ("forward: linear model", "forward: mse", "the update",
                                                   "b -= lr * b.grad")}
    site = [ln for ln in lines if f"{__file__}:{ln} (in _sgd_linear)" in msg]
    assert len(site) == 1, msg
    ops_on_line = {"forward: linear model": {"matmul", "add"}, "forward: mse": {"sub", "pow", "mean"},
                   "the update": {"mul", "sub_"}, "b -= lr * b.grad": {"mul", "sub_"}}
    assert op in ops_on_line[lines[site[0]]], msg


def test_backward_nan_names_the_function_and_its_forward_call(device):
    def model(x):
        return (x.sqrt() * 0).sum()  # sqrt'(0) is inf, times 0: nan in backward only
    x = tl.tensor([0.0, 4.0], device=device, requires_grad=True)
    with tl.autograd.detect_anomaly():
        y = model(x)  # the forward pass is finite
        with pytest.raises(RuntimeError) as e:
            y.backward()
    msg = str(e.value)
    assert msg.startswith("Function 'SqrtBackward0' returned nan values in its 0th output.")
    assert f'File "{__file__}", line {_line_of(model, "x.sqrt() * 0")}, in model' in msg
    assert f"line {_line_of(test_backward_nan_names_the_function_and_its_forward_call, 'y = model(x)')}" in msg
    # without anomaly mode: silent nan
    x.grad = None
    model(x).backward()
    assert x.grad.isnan().any()


def test_division_backward_nan_names_div_backward(device):
    a = tl.tensor([0.0, 1.0], device=device, requires_grad=True)
    b = tl.tensor([0.0, 2.0], device=device, requires_grad=True)
    with tl.autograd.detect_anomaly(check_forward=False):
        y = (a / b).sum()  # 0 / 0: the forward nan is not checked here
        with pytest.raises(RuntimeError, match=r"Function 'DivBackward0' returned nan values in its 1th output"):
            y.backward()


def test_check_nan_false_checks_nothing_in_backward(device):
    x = tl.tensor([0.0], device=device, requires_grad=True)
    with tl.autograd.detect_anomaly(check_nan=False):
        (x.sqrt() * 0).sum().backward()
    assert x.grad.isnan().all()


def test_inputs_that_were_already_non_finite_are_reported(device):
    x = tl.tensor([1.0, float("nan")], device=device)
    with tl.autograd.detect_anomaly():
        with pytest.raises(RuntimeError) as e:
            x * 2
    msg = str(e.value)
    assert "'mul' returned nan values" in msg and "input 0: float32 [2], already held nan" in msg
    assert "Some inputs already held non-finite values" in msg


def test_deliberate_infinities_and_finite_programs_pass(device):
    scores = tl.tensor([[1.0, 2.0, 3.0], [0.5, 0.5, 0.5]], device=device, requires_grad=True)
    keep = tl.tensor([[True, True, False], [True, False, True]], device=device)
    with tl.autograd.detect_anomaly():
        masked = scores.masked_fill(~keep, float("-inf"))  # asked for: not an anomaly
        probs = masked.softmax(1)
        probs[:, 0].sum().backward()
        y = (scores * 2).clamp(max=float("inf")).sum()
        y.backward()
        t = tl.zeros(3, device=device)
        t[1] = float("inf")  # storing a number the caller chose
        t.fill_(float("nan"))
    assert scores.grad.isfinite().all()


def test_inplace_ops_are_checked_with_self_state(device):
    x = tl.tensor([1e38, 1.0], device=device)
    with tl.autograd.detect_anomaly():
        with pytest.raises(RuntimeError) as e:
            x.mul_(10)
    msg = str(e.value)
    assert "'mul_' returned inf values" in msg and "self (written in place): float32 [2], finite before" in msg


def test_backward_errors_get_the_forward_traceback(device):
    x = tl.tensor([1.0, 2.0], device=device, requires_grad=True)
    with tl.autograd.detect_anomaly():
        y = x.exp()
        y.add_(1)
        with pytest.raises(RuntimeError) as e:
            y.sum().backward()
    err = e.value
    assert "Hint: the backtrace further above shows the operation" in str(err)
    notes = "\n".join(getattr(err, "__notes__", ()))
    assert "Error detected in ExpBackward0. Traceback of forward call that caused the error" in notes
    assert "y = x.exp()" in notes


def test_anomaly_mode_does_not_change_results(device):
    rng = np.random.default_rng(2)
    v = rng.normal(size=(4, 3))
    x = tl.tensor(v, device=device, requires_grad=True)
    with tl.autograd.detect_anomaly():
        (x.tanh() @ x.t()).logsumexp(1).sum().backward()
    g1 = x.grad.clone()
    x.grad = None
    (x.tanh() @ x.t()).logsumexp(1).sum().backward()
    assert (g1 == x.grad).all()
