"""torch.backends.nnpack: tensorlab does not use NNPACK."""
import contextlib as _contextlib

enabled = False


def is_available():
    return False


def set_flags(_enabled):
    global enabled
    prev = (enabled,)
    enabled = bool(_enabled)
    return prev


@_contextlib.contextmanager
def flags(enabled=False):
    prev = set_flags(enabled)
    try:
        yield
    finally:
        set_flags(prev[0])
