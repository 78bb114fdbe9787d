"""Checks of device data that never make the host wait (issue 35): index bounds today.

A check runs on the device, on the op's stream, before the op's writing kernel:

- Each checked op takes a serial number (per device, from 1) and a guard word in a small per-device
  ring of int64 words. The check kernel stores the serial into the guard when an index is out of
  range; the op's gather/put kernel, next on the same stream, does nothing when its guard holds its
  serial. So a bad index never reads or writes out of bounds and an in-place target stays exactly as
  it was (the atomic rule, kept on the device). Serials are unique, so a reused guard word needs no
  clearing: a stale serial never matches.
- Every failure also counts in the device's sticky record, which keeps the first one since the host
  last looked (count, serial, index row, bad value). The host reads it at the next point where it waits anyway:
  `sync.host_wait` (synchronize, item, tolist, a copy to the host, Stream/Event.synchronize) calls
  `raise_pending` after its wait, which raises the exception the CPU backend raises for that value
  (IndexError/RuntimeError), with the op, the value, the bound and the file:line of the call that
  launched it, recorded when it launched. The record is cleared, and the device stays usable.
- `set_check_mode("eager")` (or `CUDA_LAUNCH_BLOCKING=1` in the environment) instead waits for the check
  at the failing call and raises there, as torch's blocking launches do: one named host_wait
  ("index bounds check") per checked op.

What the host keeps per device: the open checks by serial (the error to raise and the call site),
at most `_KEEP` of them; older ones are forgotten (their failure is still raised, without the call
site). Nothing is read from the device unless a check was launched since the host last looked."""
from __future__ import annotations

import collections
import os
import threading

import numpy as np

from ...device import Device
from ... import sync
from ...sync import _call_site, host_wait
from .active import driver
from .driver import Pointer

__all__ = ("Guard", "get_check_mode", "raise_pending", "set_check_mode", "start_check", "unchecked", "unread")

_RING = 256  # guard words per device (word 0 is never written: the guard of unchecked ops)
_STICKY = 4  # count of bad values, then the first one's serial, row and value
_KEEP = 4096  # open checks remembered per device
_MODES = ("deferred", "eager")
_mode = ["eager" if os.environ.get("CUDA_LAUNCH_BLOCKING", "0") not in ("", "0") else "deferred"]


class Guard:
    """What an op's writing kernel takes: its guard word and its serial."""

    __slots__ = ("pointer", "serial")

    def __init__(self, pointer, serial):
        self.pointer = pointer
        self.serial = serial

    @property
    def args(self):
        return (self.pointer, np.int64(self.serial))


class _DeviceState:
    def __init__(self, index):
        self.index = index
        # sticky record at word 0..3, then the guard ring; allocated outside the caching pool's
        # accounting of tensors (it lives as long as the process)
        self.buffer = driver.malloc(8 * (_STICKY + _RING), index, driver.current_stream(index))
        driver.memset(Pointer(self.buffer), 0, 8 * (_STICKY + _RING), driver.current_stream(index))
        self.serial = 0
        self.open = collections.OrderedDict()  # serial -> (fail(k, value) -> exception, op, file, line)
        self.launched = False  # a check ran since the host last read the sticky record
        self.lock = threading.Lock()

    def guard_word(self, serial):
        return Pointer(self.buffer, 8 * (_STICKY + 1 + (serial - 1) % (_RING - 1)))


_states = {}
_states_lock = threading.Lock()


def _state(index):
    st = _states.get(index)
    if st is None:
        with _states_lock:
            st = _states.get(index)
            if st is None:
                st = _states[index] = _DeviceState(index)
    return st


def set_check_mode(mode):
    """"deferred" (the default): device-side checks report at the next host wait; "eager": each
    checked op waits for its check and raises at the call (CUDA_LAUNCH_BLOCKING=1 selects it too)."""
    if mode not in _MODES:
        raise ValueError(f"set_check_mode(): mode must be one of {_MODES}, not {mode!r}")
    previous = _mode[0]
    _mode[0] = mode
    return previous


def get_check_mode():
    """The current device check mode: "deferred" or "eager"."""
    return _mode[0]


def unchecked(device):
    """The guard of an op whose indices are in range by construction (word 0, never written)."""
    return Guard(Pointer(_state(device).buffer, 8 * _STICKY), -1)


def start_check(device, op, fail, effect=None):
    """A new serial and guard word for one checked op on cuda:`device`; returns (guard, sticky
    pointer). `fail(k, value)` builds the exception for row k holding `value`."""
    st = _state(device)
    file, line, _ = _call_site()
    outer = sync.error_wrapper()
    if outer is not None:  # an op built over this one names itself (sync.reported_as)
        op, wrap = outer
        fail = (lambda inner, wrap: lambda k, value: wrap(inner(k, value), value))(fail, wrap)
    with st.lock:
        st.serial += 1
        serial = st.serial
        st.open[serial] = (fail, op, file, line, effect or f"{op} wrote nothing")
        if len(st.open) > _KEEP:
            st.open.popitem(last=False)
        st.launched = True
    return Guard(st.guard_word(serial), serial), Pointer(st.buffer)


def finish_check(device, guard, reason="index bounds check"):
    """After the check kernel is queued: in eager mode, wait for it and raise at the call."""
    if _mode[0] == "eager":
        host_wait(reason, Device("cuda", device))  # raises through raise_pending


def unread():
    """Whether a check ran on some device since the host last waited for all of that device's work."""
    return any(st.launched for st in list(_states.values()))


def raise_pending(device, complete=True):
    """Raise the first device-side check failure on `device` since the host last looked (called by
    sync.host_wait after every wait on a cuda device; `complete`: the wait covered the whole device,
    so every check launched so far has run)."""
    st = _states.get(device.index if device.index is not None else driver.current_device())
    if st is None or not st.launched:
        return
    with st.lock:
        if complete:
            st.launched = False
        got = np.zeros(_STICKY, np.int64)
        stream = driver.current_stream(st.index)
        driver.memcpy_dtoh(got, Pointer(st.buffer), 8 * _STICKY, stream, False)
        if not got[0]:
            return
        driver.memset(Pointer(st.buffer), 0, 8 * _STICKY, stream)
        entry = st.open.pop(int(got[1]), None)
        for s in [s for s in st.open if s <= int(got[1])]:
            del st.open[s]  # finished before the failure was read: nothing more to report for them
    k, value, more = int(got[2]), int(got[3]), int(got[0]) - 1
    also = f"; {more} more failed device-side check{'s' if more != 1 else ''} since" if more else ""
    if entry is None:
        raise IndexError(f"an index op on {device} read index {value} out of range (its launch site is no longer "
                         "known: more checks ran since than tensorlab remembers; set "
                         f"tl.cuda.set_check_mode('eager') to raise at the call{also})")
    fail, op, file, line, effect = entry
    err = fail(k, value)
    when = "raised at the call (eager check mode)" if _mode[0] == "eager" else "reported at this synchronization"
    err.args = (f"{err.args[0] if err.args else ''} (found on the device by {op}, launched at "
                f"{os.path.basename(file)}:{line} and {when}; {effect}{also}; the device stays "
                "usable)",)
    err.launch_site = (file, line)
    raise err


sync._after_wait.append(raise_pending)
