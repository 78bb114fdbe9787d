"""Test helpers (tl.testing): fault injection, snapshots for exception-safety checks, assert_close.

Fault injection: every allocation ("alloc"), data copy ("copy") and other kernel launch ("launch")
passes through `tensorlab._faults.hit` before it changes anything. `count_events()` reports how
many of each an operation performs; `inject_fault(kind, n)` makes the n-th one raise
`InjectedFault`. Both act on the calling thread only. A sweep over every event proves the strong
exception guarantee of an operation:

    for kind, n in tl.testing.fault_points(lambda: op(make())):
        t = make(); snap = tl.testing.snapshot(t)
        with tl.testing.inject_fault(kind, n), pytest.raises(tl.testing.InjectedFault):
            op(t)
        tl.testing.assert_unchanged(snap)
"""
from __future__ import annotations

import contextlib
import math
import numbers

import numpy as np

from . import _faults, dtypes, layout as L
from .storage import UntypedStorage
from .tensor import Tensor

__all__ = ("InjectedFault", "EventCounts", "inject_fault", "count_events", "fault_points", "Snapshot", "snapshot",
           "assert_unchanged", "assert_close")

KINDS = _faults.KINDS


class InjectedFault(RuntimeError):
    """The failure `inject_fault` planted: the `n`-th event of `kind` on this thread."""

    def __init__(self, kind, n):
        super().__init__(f"tensorlab.testing: injected fault at {kind} event #{n} (inject_fault({kind!r}, {n}))")
        self.kind = kind
        self.n = n


class EventCounts:
    """How many fault-injection events ran, per kind (live while its context is open)."""

    __slots__ = ("alloc", "copy", "launch", "_parent")

    def __init__(self, parent=None):
        self.alloc = self.copy = self.launch = 0
        self._parent = parent

    @property
    def total(self):
        return self.alloc + self.copy + self.launch

    def as_dict(self):
        return {k: getattr(self, k) for k in KINDS}

    def hit(self, kind):
        if self._parent is not None:  # an enclosing count_events sees the events of nested plans too
            self._parent.hit(kind)
        setattr(self, kind, getattr(self, kind) + 1)

    def __repr__(self):
        return f"EventCounts(alloc={self.alloc}, copy={self.copy}, launch={self.launch})"


class _FaultPlan(EventCounts):
    __slots__ = ("kind", "n", "fired")

    def __init__(self, kind, n, parent):
        super().__init__(parent)
        self.kind = kind
        self.n = n
        self.fired = False

    def hit(self, kind):
        super().hit(kind)
        count = self.total if self.kind == "any" else getattr(self, kind) if kind == self.kind else 0
        if count == self.n and not self.fired:
            self.fired = True
            raise InjectedFault(kind, self.n)


@contextlib.contextmanager
def _installed(plan):
    prev = _faults.install(plan)
    try:
        yield plan
    finally:
        _faults.install(prev)


def count_events():
    """Context manager yielding live EventCounts of this thread's alloc/copy/launch events."""
    return _installed(EventCounts(_faults.current()))


def inject_fault(kind, n=1):
    """Context manager: the `n`-th (1-based) event of `kind` ("alloc", "copy", "launch", or "any"
    for the n-th event of any kind) on this thread raises InjectedFault, once. Yields the plan;
    `plan.fired` tells whether the fault was reached."""
    if kind not in KINDS and kind != "any":
        raise ValueError(f"inject_fault: kind must be one of {KINDS + ('any',)}, got {kind!r}")
    if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 1:
        raise ValueError(f"inject_fault: n must be a positive integer (the 1-based event number), got {n!r}")
    return _installed(_FaultPlan(kind, int(n), _faults.current()))


def _suspended():
    return _installed(None)


def fault_points(fn):
    """Run `fn()` once, counting, and return every (kind, n) it reaches: the plan of a full sweep."""
    with count_events() as c:
        fn()
    return [(k, i) for k in KINDS for i in range(1, getattr(c, k) + 1)]


# -- snapshots ------------------------------------------------------------------------------------

def _storage_state(s):
    return {"storage nbytes": s.nbytes(), "storage data_ptr": s.data_ptr(), "storage bytes": bytes(s.tolist()),
            "storage resizable": s.resizable()}


def _state(obj):
    if isinstance(obj, UntypedStorage):
        return _storage_state(obj)
    if not isinstance(obj, Tensor):
        raise TypeError(f"snapshot: expected Tensor or UntypedStorage, got {type(obj).__name__}")
    storage, lay = obj._meta
    return {"shape": tuple(lay.shape), "stride": tuple(lay.stride), "storage_offset": lay.offset,
            "dtype": obj._dtype, "storage object": storage, "_version": obj._vc.value,
            "requires_grad": obj._requires_grad, **_storage_state(storage)}


class Snapshot:
    """The observable state of some tensors/storages: shape, stride, offset, dtype, storage
    identity, nbytes, data_ptr and bytes, _version. Holds the objects to compare them later."""

    __slots__ = ("objects", "states")

    def __init__(self, objects):
        self.objects = tuple(objects)
        with _suspended():  # reading bytes back must not count as (or trip) an injected event
            self.states = [_state(o) for o in self.objects]


def snapshot(*objects):
    """Snapshot of Tensors and/or UntypedStorages (pass every view of a storage you care about)."""
    return Snapshot(objects)


def assert_unchanged(snap):
    """AssertionError naming each object and field that differs from the snapshot."""
    with _suspended():
        now = [_state(o) for o in snap.objects]
    problems = []
    for i, (obj, before, after) in enumerate(zip(snap.objects, snap.states, now)):
        for key, old in before.items():
            new = after[key]
            if old != new:
                if key == "storage bytes":
                    n = min(len(old), len(new))
                    diff = next((j for j in range(n) if old[j] != new[j]), n)
                    problems.append(f"object {i} ({type(obj).__name__}): storage bytes differ from byte {diff}")
                else:
                    problems.append(f"object {i} ({type(obj).__name__}): {key} was {old!r}, now {new!r}")
    if problems:
        raise AssertionError("state changed by a failed operation:\n  " + "\n  ".join(problems))


# -- assert_close -------------------------------------------------------------------------------

_DEFAULT_TOLS = {"float16": (1e-3, 1e-5), "bfloat16": (1.6e-2, 1e-5), "float32": (1.3e-6, 1e-5),
                 "float64": (1e-7, 1e-7)}


def _default_tols(*dts):
    rtol = atol = 0.0
    for d in dts:
        r, a = _DEFAULT_TOLS.get(d.name, (0.0, 0.0))
        rtol, atol = max(rtol, r), max(atol, a)
    return rtol, atol


def _is_scalar(x):
    return isinstance(x, (numbers.Number, np.generic)) and not isinstance(x, Tensor)


def _as_array(x):
    """(NumPy values, DType, device or None) of a tensor-like; torch's dtypes for Python numbers."""
    if isinstance(x, Tensor):
        return x._host("assert_close"), x._dtype, x.device
    if isinstance(x, bool):
        return np.asarray(x), dtypes.bool_, None
    if isinstance(x, numbers.Integral) and not isinstance(x, np.generic):
        return np.asarray(x, dtype=np.int64), dtypes.int64, None
    if isinstance(x, numbers.Real) and not isinstance(x, np.generic):
        return np.asarray(x, dtype=np.float64), dtypes.float64, None
    arr = np.asarray(x)
    return arr, dtypes.from_numpy_dtype(arr.dtype), None


def _fmt_index(flat, shape):
    return str(tuple(int(i) for i in np.unravel_index(flat, shape))) if shape else "()"


def _compare(actual, expected, rtol, atol, equal_nan, check_dtype, check_device, msg, where):
    if _is_scalar(actual) and _is_scalar(expected) and check_dtype and type(actual) is not type(expected):
        raise AssertionError(msg or f"The (d)types do not match: {type(actual)} != {type(expected)}.{where}")
    a, adt, adev = _as_array(actual)
    e, edt, edev = _as_array(expected)
    if a.shape != e.shape:
        raise AssertionError(msg or f"The values for attribute 'shape' do not match: {L.Size(a.shape)!r} != "
                                    f"{L.Size(e.shape)!r}.{where}")
    if check_device and adev is not None and edev is not None and adev != edev:
        raise AssertionError(msg or f"The values for attribute 'device' do not match: {adev} != {edev}.{where}")
    if check_dtype and adt is not edt:
        raise AssertionError(msg or f"The values for attribute 'dtype' do not match: {adt!r} != {edt!r}.{where}")
    if rtol is None:
        rtol, atol = _default_tols(adt, edt)
    exact = rtol == 0 and atol == 0 and not (adt.is_floating_point or edt.is_floating_point)
    if exact:  # integers and bools compare exactly, without a float64 round trip
        ai, ei = a.astype(np.int64) if a.dtype == np.bool_ else a, e.astype(np.int64) if e.dtype == np.bool_ else e
        ok = ai == ei
        diff = np.abs(ai.astype(np.float64) - ei.astype(np.float64))
    else:
        af, ef = a.astype(np.float64), e.astype(np.float64)
        with np.errstate(invalid="ignore", over="ignore"):
            diff = np.abs(af - ef)
            ok = np.isfinite(diff) & (diff <= atol + rtol * np.abs(ef))  # inf vs -inf: inf <= inf
        ok |= af == ef  # equal infinities
        if equal_nan:
            ok |= np.isnan(af) & np.isnan(ef)
    if ok.all():
        return
    if msg:
        raise AssertionError(msg)
    with np.errstate(invalid="ignore", divide="ignore"):
        rel = diff / np.abs(e.astype(np.float64))
    rel = np.where(diff == 0, 0.0, rel)
    close = "equal" if exact else "close"
    tol_a = "" if exact else f" (up to {atol} allowed)"
    tol_r = "" if exact else f" (up to {rtol} allowed)"
    if a.ndim == 0:
        raise AssertionError(f"Scalars are not {close}!\n\nExpected {e.item()} but got {a.item()}.\n"
                             f"Absolute difference: {diff.item()}{tol_a}\nRelative difference: {rel.item()}{tol_r}"
                             f"{where}")
    bad = int((~ok).sum())
    ia = int(np.nanargmax(diff)) if not np.isnan(diff).all() else 0
    ir = int(np.nanargmax(rel)) if not np.isnan(rel).all() else 0
    fmt = (lambda v: str(int(v))) if exact else (lambda v: str(float(v)))
    raise AssertionError(
        f"Tensor-likes are not {close}!\n\nMismatched elements: {bad} / {a.size} ({100.0 * bad / a.size:.1f}%)\n"
        f"Greatest absolute difference: {fmt(diff.ravel()[ia])} at index {_fmt_index(ia, a.shape)}{tol_a}\n"
        f"Greatest relative difference: {float(rel.ravel()[ir])} at index {_fmt_index(ir, a.shape)}{tol_r}{where}")


def assert_close(actual, expected, *, rtol=None, atol=None, equal_nan=False, check_dtype=True, check_device=True,
                 msg=None):
    """torch.testing.assert_close for tensorlab tensors, NumPy arrays, Python numbers and (nested)
    sequences of those, compared pairwise. |actual - expected| <= atol + rtol * |expected|, with
    torch's defaults chosen from the dtypes (float16 1e-3/1e-5, bfloat16 1.6e-2/1e-5, float32
    1.3e-6/1e-5, float64 1e-7/1e-7, integers and bool exact). Raises AssertionError."""
    if (rtol is None) != (atol is None):
        missing = "atol" if atol is None else "rtol"
        raise ValueError(f"Both 'rtol' and 'atol' must be either specified or omitted, but got no {missing}.")
    if rtol is not None and (rtol < 0 or atol < 0 or math.isnan(rtol) or math.isnan(atol)):
        raise ValueError(f"assert_close: rtol and atol must be non-negative, got rtol={rtol}, atol={atol}")
    _walk(actual, expected, rtol, atol, equal_nan, check_dtype, check_device, msg, ())


def _walk(actual, expected, rtol, atol, equal_nan, check_dtype, check_device, msg, path):
    if isinstance(actual, (list, tuple)) and isinstance(expected, (list, tuple)):
        if len(actual) != len(expected):
            raise AssertionError(msg or f"The length of the sequences mismatch: {len(actual)} != {len(expected)}"
                                        f"{_where(path)}")
        for i, (a, e) in enumerate(zip(actual, expected)):
            _walk(a, e, rtol, atol, equal_nan, check_dtype, check_device, msg, path + (i,))
        return
    _compare(actual, expected, rtol, atol, equal_nan, check_dtype, check_device, msg, _where(path))


def _where(path):
    return "" if not path else "\n\nThe failure occurred for item " + "".join(f"[{i}]" for i in path)
