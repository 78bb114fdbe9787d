"""Undo journals: the all-or-nothing guarantee for operations that update many tensors in place
(an optimizer's step, zero_grad, gradient clipping, Module/Optimizer.load_state_dict, a
scheduler's step).

Before the first write, `Journal.tensor(t)` keeps a raw copy of the bytes `t` spans in its storage
(NumPy on the CPU, the driver's own malloc + device-to-device copy on CUDA: no fault-injection
event, no host wait), `Journal.mapping(d)` a shallow copy of a dict's items and `Journal.attrs`
an object's attributes. `rollback()` puts all of them back with the same raw copies, in reverse
order; nothing in it allocates or launches through a fault point, so a failure anywhere in the
journaled operation (a bad argument found late, an injected fault, MemoryError, KeyboardInterrupt)
leaves every journaled tensor bit-identical. Use as a context manager: the body commits when it
returns and rolls back when it raises.

The copies cost one memcpy of each journaled tensor (measured in tests/test_atomic_steps.py's
docstring); a storage is copied once per journal however many of its tensors are journaled."""
from __future__ import annotations

_MISSING = object()


def _byte_range(t):
    """(lo, hi): the bytes of t's storage that t's elements span (hi == lo when t is empty)."""
    lay = t._meta.layout
    isz = t._dtype.itemsize
    lo = hi = lay.offset
    for n, s in zip(lay.shape, lay.stride):
        if n == 0:
            return 0, 0
        if s > 0:
            hi += (n - 1) * s
        else:
            lo += (n - 1) * s
    return lo * isz, (hi + 1) * isz


class Journal:
    __slots__ = ("_tensors", "_seen", "_maps", "_attrs", "_undo", "_vcs")

    def __init__(self):
        self._undo = []      # callables run first by rollback, last registered first
        self._vcs = {}       # id(version counter) -> (counter, value): a rolled-back tensor's _version too
        self._tensors = []   # (storage, buffer, lo, hi, saved copy)
        self._seen = {}      # id(storage) -> [(lo, hi)] already saved
        self._maps = []      # (dict, {items}) in journaling order
        self._attrs = []     # (obj, {name: value or _MISSING})

    # -- recording ---------------------------------------------------------------------------
    def tensor(self, t):
        """Keep the bytes `t` spans (its storage's current buffer) for rollback."""
        vc = t._vc
        if vc is not None and id(vc) not in self._vcs:
            self._vcs[id(vc)] = (vc, vc.value)
        storage = t._meta.storage
        lo, hi = _byte_range(t)
        if hi <= lo:
            return
        ranges = self._seen.setdefault(id(storage), [])
        for a, b in ranges:
            if a <= lo and hi <= b:
                return
        buf = storage._buf
        if storage.device.type == "cpu":
            saved = buf[lo:hi].copy()
        else:
            from .backends.cuda.active import driver
            from .backends.cuda.driver import Pointer
            idx = storage.device.index
            stream = driver.current_stream(idx)
            from .backends.cuda.driver import OutOfMemory
            try:
                saved = driver.malloc(hi - lo, idx, stream)
            except OutOfMemory as e:
                from .cuda.errors import OutOfMemoryError
                raise OutOfMemoryError(hi - lo, e.free, idx) from None
            driver.memcpy_dtod(Pointer(saved), Pointer(buf, lo), hi - lo, stream)
        ranges.append((lo, hi))
        self._tensors.append((storage, buf, lo, hi, saved))

    def tensors(self, ts):
        for t in ts:
            if t is not None:
                self.tensor(t)

    def mapping(self, d):
        """Keep a dict's items (a per-parameter optimizer state, a module's _buffers)."""
        self._maps.append((d, dict(d)))

    def attrs(self, obj, *names):
        self._attrs.append((obj, {n: obj.__dict__.get(n, _MISSING) if hasattr(obj, "__dict__")
                                  else getattr(obj, n, _MISSING) for n in names}))

    def on_rollback(self, fn):
        """Run `fn()` (which must not fail) if the journaled operation fails."""
        self._undo.append(fn)

    # -- undoing -------------------------------------------------------------------------------
    def rollback(self):
        for fn in reversed(self._undo):
            fn()
        for obj, saved in reversed(self._attrs):
            for n, v in saved.items():
                if v is _MISSING:
                    try:
                        delattr(obj, n)
                    except AttributeError:
                        pass
                else:
                    object.__setattr__(obj, n, v) if not hasattr(obj, "__dict__") else obj.__dict__.__setitem__(n, v)
        for d, saved in reversed(self._maps):
            d.clear()
            d.update(saved)
        for storage, buf, lo, hi, saved in reversed(self._tensors):
            if storage.device.type == "cpu":
                buf[lo:hi] = saved
            else:
                from .backends.cuda.active import driver
                from .backends.cuda.driver import Pointer
                idx = storage.device.index
                driver.memcpy_dtod(Pointer(buf, lo), Pointer(saved), hi - lo, driver.current_stream(idx))
        for vc, value in self._vcs.values():
            vc.value = value
        self.discard()

    def discard(self):
        for storage, buf, lo, hi, saved in self._tensors:
            if storage.device.type != "cpu":
                from .backends.cuda.active import driver
                driver.free(saved, driver.current_stream(storage.device.index))
        self._tensors = []
        self._seen = {}
        self._maps = []
        self._attrs = []
        self._undo = []
        self._vcs = {}

    def __enter__(self):
        return self

    def __exit__(self, et, ev, tb):
        if et is None:
            self.discard()
        else:
            self.rollback()
        return False
