"""Exceptions of tl.cuda (torch.cuda's names)."""
from __future__ import annotations


def _fmt_bytes(n):
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.2f} {unit}"
    return f"{n} bytes"


class OutOfMemoryError(RuntimeError):
    """A CUDA allocation failed: the device has not enough free memory (torch.cuda.OutOfMemoryError).
    `nbytes` is what was asked for, `free` what the device had free (None when unknown)."""

    def __init__(self, nbytes, free=None, device=0):
        self.nbytes = nbytes
        self.free = free
        self.device = device
        have = "" if free is None else f" of which {_fmt_bytes(free)} ({free} bytes) is free"
        super().__init__(
            f"CUDA out of memory. Tried to allocate {_fmt_bytes(nbytes)} ({nbytes} bytes) on GPU {device}{have}. "
            "Free tensors you no longer need (del them), call tl.cuda.empty_cache() to return cached blocks, "
            "or use smaller tensors / batches.")
