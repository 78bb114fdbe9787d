"""NaN/Inf provenance: detect_anomaly / set_detect_anomaly / is_anomaly_enabled.

With anomaly detection on:
- forward (check_forward=True, tensorlab's addition): the first op whose floating-point output
  holds NaN or Inf raises, naming the op, its inputs (dtype, shape, already non-finite or not)
  and the caller's file:line (the first frame outside the tensorlab package);
- backward (check_nan=True): a backward function that returns NaN raises "Function
  'DivBackward0' returned nan values in its 0th output.", with the forward call that created
  the node (every node records its caller while the mode is on); any other error raised in a
  backward function gets that forward traceback as a note.

The mode is process-wide, as torch's."""
from __future__ import annotations

import os
import sys
import threading
import traceback

from .grad_mode import STATE, _Mode, _refresh_slow

_lock = threading.Lock()
_enabled = False
_check_nan = True
_check_forward = True

_PKG = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
# ops that create no values (views) or store values the caller chose (fills, random numbers)
_NO_NEW_VALUES = frozenset(("view", "view_dtype", "permute", "transpose", "alias", "expand", "squeeze", "unsqueeze",
                            "as_strided", "narrow", "split", "select", "unfold", "diagonal", "getitem", "fill_",
                            "zero_", "uniform_", "normal_", "random_", "bernoulli_", "exponential_"))


def is_anomaly_enabled():
    return _enabled


def is_anomaly_check_nan_enabled():
    return _enabled and _check_nan


def forward_enabled():
    return _enabled and _check_forward and not STATE.backward


def _set(mode, check_nan, check_forward):
    global _enabled, _check_nan, _check_forward
    with _lock:
        _enabled, _check_nan, _check_forward = bool(mode), bool(check_nan), bool(check_forward)
    _refresh_slow()


class set_detect_anomaly(_Mode):
    """set_detect_anomaly(mode, check_nan=True, *, check_forward=True): takes effect at once;
    as a context manager, restores the previous settings on exit."""

    def __init__(self, mode, check_nan=True, *, check_forward=True):
        self._args = (mode, check_nan, check_forward)
        self._prev = (_enabled, _check_nan, _check_forward)
        _set(*self._args)

    def _copy(self):
        return set_detect_anomaly(self._args[0], self._args[1], check_forward=self._args[2])

    def __call__(self, fn):
        _set(*self._prev)
        return super().__call__(fn)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _set(*self._prev)
        return False


class detect_anomaly(_Mode):
    """Context manager / decorator turning anomaly detection on (see the module doc)."""

    def __init__(self, check_nan=True, *, check_forward=True):
        self._args = (check_nan, check_forward)

    def _copy(self):
        return detect_anomaly(self._args[0], check_forward=self._args[1])

    def __enter__(self):
        self._prev = (_enabled, _check_nan, _check_forward)
        _set(True, *self._args)
        return self

    def __exit__(self, *exc):
        _set(*self._prev)
        return False


# -- where the user called from ----------------------------------------------------------------
def user_frame():
    f = sys._getframe(1)
    while f is not None and f.f_code.co_filename.startswith(_PKG):
        f = f.f_back
    return f


def call_site():
    f = user_frame()
    if f is None:
        return "<unknown>"
    return f"{f.f_code.co_filename}:{f.f_lineno}"


def capture():
    """The user's stack at a node's creation (innermost frame last), for backward errors."""
    f = user_frame()
    if f is None:
        return None
    frames = traceback.StackSummary.extract(traceback.walk_stack(f), limit=32)
    frames.reverse()
    return frames


def _format_trace(trace):
    return "".join(traceback.format_list(trace)).rstrip()


def _site(f):
    """'file:line (in function):' and the source line."""
    if f is None:
        return "<unknown location>:"
    fs = traceback.StackSummary.extract([(f, f.f_lineno)])[0]
    code = f"\n    {fs.line.strip()}" if fs.line else ""
    return f"{fs.filename}:{fs.lineno} (in {fs.name}):{code}"


# -- checks -----------------------------------------------------------------------------------------
def finite_state(t):
    """None when t (floating) holds only finite values, else 'nan', 'inf' or 'nan and inf'."""
    if not t._dtype.is_floating_point or t.numel() == 0:
        return None
    prev, STATE.busy = STATE.busy, True
    try:
        if bool(t.isfinite().all()):  # the common case: one host sync per checked tensor
            return None
        nan = bool(t.isnan().any())
        inf = bool(t.isinf().any())
    finally:
        STATE.busy = prev
    if nan and inf:
        return "nan and inf"
    return "nan" if nan else "inf" if inf else None


def _is_nonfinite_number(x):
    return isinstance(x, float) and (x != x or x in (float("inf"), float("-inf")))


def _describe(t):
    return f"{t._dtype.name} {list(t.shape)}"


def check_forward(out, op, inputs, info, self_state=None):
    if op in _NO_NEW_VALUES or op.endswith("_") and op[:-1] in _NO_NEW_VALUES:
        return
    state = finite_state(out)
    if state is None:
        return
    scalars = [o for o in info.get("operands", ()) if not hasattr(o, "_dtype") and o is not None]
    if any(_is_nonfinite_number(x) for x in scalars):
        return  # the caller asked for it (masked_fill(mask, -inf), clamp(max=inf), ...)
    inplace = op.endswith("_")
    if inplace and op in ("copy_", "index_put_") and not inputs:
        return  # a Python number written by setitem / copy
    parts, prior = [], False
    if inplace:
        if self_state is None:
            parts.append(f"self (written in place): {_describe(out)}, finite before")
        else:
            parts.append(f"self (written in place): {_describe(out)}, already held {self_state} before")
            prior = True
    for i, t in enumerate(inputs):
        s = finite_state(t)
        prior = prior or s is not None
        parts.append(f"input {i}: {_describe(t)}, " + ("finite" if s is None else f"already held {s}"))
    if scalars:
        parts.append("numbers: " + ", ".join(repr(x) for x in scalars))
    if prior:
        why = ("Some inputs already held non-finite values: they come from an earlier op run without anomaly "
               "detection, or from the data itself (e.g. a tensor built with nan/inf).")
    else:
        why = (f"Every input was finite, so '{op}' created the non-finite values (e.g. a division by zero, the log "
               f"of a non-positive number, or an overflow of {out._dtype.name}).")
    raise RuntimeError(
        f"Anomaly detected in the forward pass: '{op}' returned {state} values in its output ({_describe(out)}) "
        f"at {_site(user_frame())}\n  " + "\n  ".join(parts) + f"\n{why}\n"
        f"(tensorlab.autograd.detect_anomaly(check_forward=False) checks only the backward pass.)")


def check_backward(node, outs):
    if not _check_nan:
        return
    for i, g in enumerate(outs):
        if g is None or not g._dtype.is_floating_point or g.numel() == 0:
            continue
        prev, STATE.busy = STATE.busy, True
        try:
            bad = bool(g.isnan().any())
        finally:
            STATE.busy = prev
        if bad:
            msg = f"Function '{node.name()}' returned nan values in its {i}th output."
            if node._trace:
                msg += (f"\nThe forward call that created {node.name()} (recorded by anomaly detection):\n"
                        f"{_format_trace(node._trace)}")
            raise RuntimeError(msg)


def add_forward_note(e, node):
    note = (f"Error detected in {node.name()}. Traceback of forward call that caused the error:\n"
            f"{_format_trace(node._trace)}")
    if note not in getattr(e, "__notes__", ()):
        e.add_note(note)
