"""Grad modes, per thread as in torch: no_grad, enable_grad, set_grad_enabled, inference_mode.
Each works as a context manager and as a decorator (generator functions included)."""
from __future__ import annotations

import functools
import inspect
import threading

from .. import autograd_hooks as _hooks


class _State(threading.local):
    grad = True          # record graphs
    inference = False    # inference_mode: no graphs, results are inference tensors
    pending = None       # (tensor, version, snapshot) that check_inplace hands to record_inplace
    busy = False         # inside the anomaly forward check (its own ops are not checked)
    backward = False     # the engine is running derivatives (not a forward pass)


STATE = _State()

_lock = threading.Lock()
_inference_depth = 0     # threads x nestings currently inside inference_mode(True)


def is_grad_enabled():
    return STATE.grad


def is_inference_mode_enabled():
    return STATE.inference


def _refresh_slow():
    """autograd_hooks takes its slow path on every op while anomaly detection is on or some
    thread is in inference mode (so results can be checked / marked); otherwise only for inputs
    that require grad."""
    from . import anomaly
    _hooks._slow = (anomaly.is_anomaly_enabled() or _inference_depth > 0 or _hooks.profiler is not None
                   or _hooks.tracer is not None)


class _Mode:
    """Context manager + decorator. A fresh copy runs each decorated call, so one decorator is
    safe across threads and recursion."""

    def _copy(self):
        return type(self)()

    def __call__(self, fn):
        if inspect.isgeneratorfunction(fn):
            @functools.wraps(fn)
            def gen_wrapper(*args, **kwargs):
                gen = fn(*args, **kwargs)
                mode = self._copy()
                try:
                    with mode:
                        request = gen.send(None)
                    while True:
                        try:
                            response = yield request
                        except GeneratorExit:
                            with mode:
                                gen.close()
                            raise
                        except BaseException as e:
                            with mode:
                                request = gen.throw(e)
                        else:
                            with mode:
                                request = gen.send(response)
                except StopIteration as e:
                    return e.value
            return gen_wrapper

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self._copy():
                return fn(*args, **kwargs)
        return wrapper


class _GradSetter(_Mode):
    _value = True

    def __enter__(self):
        st = STATE
        self._prev = st.grad
        st.grad = self._value
        return self

    def __exit__(self, *exc):
        STATE.grad = self._prev
        return False


class no_grad(_GradSetter):
    """Ops inside record no graph: their results do not require grad."""
    _value = False


class enable_grad(_GradSetter):
    """Re-enables recording inside no_grad (not inside inference_mode's inference tensors)."""
    _value = True


class set_grad_enabled(_Mode):
    """set_grad_enabled(mode): takes effect at once when called, and restores the previous mode
    when used as a context manager (as torch)."""

    def __init__(self, mode):
        self._mode = bool(mode)
        self._prev = STATE.grad
        STATE.grad = self._mode

    def _copy(self):
        return set_grad_enabled(self._mode)

    def __call__(self, fn):
        STATE.grad = self._prev  # used as a decorator: only the decorated calls change the mode
        return super().__call__(fn)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        STATE.grad = self._prev
        return False


class inference_mode(_Mode):
    """No graphs and no grad; tensors created inside are inference tensors, which autograd
    refuses to save for backward later. inference_mode(False) turns it off inside an enclosing
inference_mode (tensors created there are normal tensors)."""

    def __init__(self, mode=True):
        self._mode = bool(mode)

    def _copy(self):
        return inference_mode(self._mode)

    def __enter__(self):
        global _inference_depth
        st = STATE
        self._prev = (st.grad, st.inference)
        if self._mode:
            st.grad, st.inference = False, True
            with _lock:
                _inference_depth += 1
                _refresh_slow()
        else:
            st.inference = False
        return self

    def __exit__(self, *exc):
        global _inference_depth
        st = STATE
        st.grad, st.inference = self._prev
        if self._mode:
            with _lock:
                _inference_depth -= 1
                _refresh_slow()
        return False
