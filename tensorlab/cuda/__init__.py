"""tl.cuda: device queries. `is_available()` never raises; CuPy is imported only when asked."""
from __future__ import annotations


def is_available():
    from .. import backends
    try:
        return backends.cuda_unavailable_reason() is None
    except Exception:
        return False


def device_count():
    if not is_available():
        return 0
    import cupy
    return cupy.cuda.runtime.getDeviceCount()
