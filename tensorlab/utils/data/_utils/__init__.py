"""Helpers shared by the DataLoader and its worker processes (torch.utils.data._utils)."""
from __future__ import annotations

import atexit
import sys
import traceback

IS_WINDOWS = sys.platform == "win32"

MP_STATUS_CHECK_INTERVAL = 5.0
"""Seconds between checks of the other side's liveness while waiting on a queue (worker <-> main)."""

python_exit_status = False
"""True once the interpreter is shutting down: workers are then left to the daemon cleanup."""

try:
    import numpy  # noqa: F401
    HAS_NUMPY = True
except ModuleNotFoundError:  # pragma: no cover
    HAS_NUMPY = False


def _set_python_exit_flag():
    global python_exit_status
    python_exit_status = True


atexit.register(_set_python_exit_flag)


class KeyErrorMessage(str):
    """str subclass that returns itself in repr (a KeyError's message keeps its newlines)."""

    def __repr__(self):
        return self


class ExceptionWrapper:
    """An exception raised in a worker process (or the pin-memory thread), with its traceback,
    re-raised in the main process as torch._utils.ExceptionWrapper does."""

    def __init__(self, exc_info=None, where="in background"):
        if exc_info is None:
            exc_info = sys.exc_info()
        self.exc_type = exc_info[0]
        self.exc_msg = "".join(traceback.format_exception(*exc_info))
        self.where = where

    def reraise(self):
        msg = f"Caught {self.exc_type.__name__} {self.where}.\nOriginal {self.exc_msg}"
        if self.exc_type is KeyError:
            msg = KeyErrorMessage(msg)
        elif getattr(self.exc_type, "message", None):
            raise self.exc_type(message=msg)
        try:
            exception = self.exc_type(msg)
        except Exception:
            raise RuntimeError(msg) from None
        raise exception


from . import collate, fetch, pin_memory, worker  # noqa: E402,F401
