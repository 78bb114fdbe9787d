"""Pieces shared by the DataLoader's main process, its worker processes and its pinning thread
(laid out as torch.utils.data._utils): the liveness-poll interval, the interpreter-exit flag,
and ExceptionWrapper, which carries an exception raised elsewhere back to the caller."""
from __future__ import annotations

import atexit
import sys
import traceback

IS_WINDOWS = sys.platform == "win32"

MP_STATUS_CHECK_INTERVAL = 5.0
"""How long (seconds) either side waits on a queue before checking that the other side still runs.
Read at each wait, so it can be lowered at run time."""

python_exit_status = False
"""Set once the interpreter has begun to exit; iterators then leave their workers to the
daemon-process cleanup instead of joining them."""

try:
    import numpy  # noqa: F401
except ModuleNotFoundError:  # pragma: no cover
    HAS_NUMPY = False
else:
    HAS_NUMPY = True


def _set_python_exit_flag():
    global python_exit_status
    python_exit_status = True


atexit.register(_set_python_exit_flag)


def _poll_interval():
    """MP_STATUS_CHECK_INTERVAL as it is now (the module attribute, not an import-time copy)."""
    return MP_STATUS_CHECK_INTERVAL


class KeyErrorMessage(str):
    """A message for KeyError: KeyError shows repr(arg), which would escape the traceback's
    newlines, so this string is its own repr."""

    def __repr__(self):
        return self


class ExceptionWrapper:
    """An exception caught in a worker process or a helper thread, kept as its type and formatted
    traceback (both pickle), and raised again by reraise() in the thread that consumes results.

    `where` says where it was caught; the re-raised message reads
    "Caught <Type> <where>.\\nOriginal Traceback ...". exc_info defaults to the exception being
    handled."""

    def __init__(self, exc_info=None, where="in background"):
        kind, value, tb = sys.exc_info() if exc_info is None else exc_info
        self.exc_type = kind
        self.exc_msg = "".join(traceback.format_exception(kind, value, tb))
        self.where = where

    def reraise(self):
        text = f"Caught {self.exc_type.__name__} {self.where}.\nOriginal {self.exc_msg}"
        if self.exc_type is KeyError:
            text = KeyErrorMessage(text)
        elif getattr(self.exc_type, "message", None):
            # exception classes whose constructor takes the message by keyword only
            raise self.exc_type(message=text)
        try:
            rebuilt = self.exc_type(text)
        except Exception:
            # the original type cannot be built from a single message
            raise RuntimeError(text) from None
        raise rebuilt


from . import collate, fetch, pin_memory, worker  # noqa: E402,F401
