"""glibc malloc settings for the CPU backend's buffers (applied once, at import).

Every op's result and NumPy's temporaries are fresh heap blocks of up to a few MiB. With glibc's
defaults a block above the mmap threshold (128 KiB, raised only as mmapped blocks are freed) is
mapped and unmapped on every use, and the top of the heap is returned to the kernel as soon as
128 KiB lie free there; either way the next op's buffer is new memory and every 4 KiB page of it
faults on first touch. A training step allocates and frees the same sizes over and over, so it
paid those faults on every step: a 32x16x24x24 float32 where() took 1.3 ms instead of 0.12 ms.

tune() keeps blocks up to 32 MiB (glibc's largest mmap threshold) on the heap and trims the heap
top only past 256 MiB free: freed buffers are reused, already mapped. Larger blocks are still
mmapped (their own work dwarfs the faults). Nothing changes where the process already chose
malloc settings (MALLOC_*_ environment variables, GLIBC_TUNABLES), where the C library is not
glibc, or with TENSORLAB_KEEP_MALLOC=1."""
from __future__ import annotations

import ctypes
import os
import sys

__all__ = ()

_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 32 << 20
TRIM_THRESHOLD = 256 << 20
_ENV = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_", "MALLOC_MMAP_MAX_",
        "TENSORLAB_KEEP_MALLOC")

tuned = False  # whether tune() changed the settings


def tune():
    """Apply the settings above (idempotent); True when they are in effect."""
    global tuned
    if tuned:
        return True
    if not sys.platform.startswith("linux") or any(os.environ.get(k) for k in _ENV) \
            or "malloc" in os.environ.get("GLIBC_TUNABLES", ""):
        return False
    try:
        libc = ctypes.CDLL(None)
        mallopt = libc.mallopt
        libc.gnu_get_libc_version  # noqa: B018  (glibc's: other C libraries' mallopt differ)
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    tuned = bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD))
    return tuned


tune()
