"""Page-locking batches (the module torch.utils.data._utils.pin_memory): pin_memory(data) pins
every tensor of a nested batch, and _pin_memory_loop is the thread that does it for the results
of worker processes before the main thread sees them."""
from __future__ import annotations

import collections.abc
import queue

from . import ExceptionWrapper, _poll_interval
from . import worker as _worker
from .collate import _is_namedtuple, _is_text, _rebuild_mapping, _rebuild_sequence


def pin_memory(data, device=None):
    """`data` with every tensor in it (and every object that has a pin_memory() method) replaced
    by its pinned copy, through mappings, tuples (named or not, which keep their type) and other
    sequences; anything else unchanged. `device` is accepted for torch's signature."""
    if hasattr(data, "pin_memory"):  # tensors, and user types that know how to pin themselves
        return data.pin_memory()
    if _is_text(data):
        return data
    if isinstance(data, collections.abc.Mapping):
        return _rebuild_mapping(data, {key: pin_memory(value, device) for key, value in data.items()})
    if _is_namedtuple(data):
        return type(data)(*(pin_memory(item, device) for item in data))
    if isinstance(data, tuple):
        return type(data)(pin_memory(item, device) for item in data)
    if isinstance(data, collections.abc.Sequence):
        return _rebuild_sequence(data, [pin_memory(item, device) for item in data])
    return data


def _pin_memory_loop(in_queue, out_queue, device_id, done_event, device, pin=True):
    """Body of the pinning thread: move each worker reply from `in_queue` to `out_queue`, pinning
    the batch of every successful fetch when `pin` (a failure to pin is sent on as the batch's
    error), until `done_event` is set. Polls so that the event is noticed while the workers are
    quiet. A reply that cannot be read (a worker died while writing it) is skipped: the main
    thread's watchdog reports the dead worker."""
    while not done_event.is_set():
        try:
            reply = in_queue.get(timeout=_poll_interval())
        except queue.Empty:
            continue
        except Exception:
            if done_event.is_set():
                break
            continue
        if done_event.is_set():
            break
        seq, status, payload = reply
        if isinstance(payload, _worker._Packed):  # unpickled here, so that the batch can be pinned
            status, payload = _worker._unpack("?", "?", seq, status, payload)
            reply = (seq, status, payload)
        if pin and status == _worker._FETCHED:
            try:
                reply = (seq, status, pin_memory(payload, device))
            except Exception:
                reply = (seq, _worker._FAILED,
                         ExceptionWrapper(where=f"in pin memory thread for device {device_id}"))
        out_queue.put(reply)  # an unbounded queue.Queue: never blocks
