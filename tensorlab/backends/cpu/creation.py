"""CPU creation primitives (arange, linspace, eye), written in the output tensor in place."""
from __future__ import annotations

import numpy as np

from ... import _faults
from .memory import array


__all__ = ("arange", "linspace", "eye")


def arange(out, start, step):
    _faults.hit("launch")
    n = out.shape[0]
    if isinstance(start, int) and isinstance(step, int):
        vals = np.arange(n, dtype=np.int64) * step + start
    else:
        vals = np.arange(n, dtype=np.float64) * step + start
    with np.errstate(invalid="ignore", over="ignore"):
        np.copyto(array(out), vals, casting="unsafe")


def linspace(out, start, end):
    """torch's symmetric formula: the first half counts up from start, the second down from end."""
    _faults.hit("launch")
    n = out.shape[0]
    if n == 0:
        return
    if n == 1:
        vals = np.array([start], dtype=np.float64)
    else:
        i = np.arange(n, dtype=np.float64)
        step = (end - start) / (n - 1)
        vals = np.where(i < n // 2, start + step * i, end - step * (n - 1 - i))
    with np.errstate(invalid="ignore", over="ignore"):
        np.copyto(array(out), vals, casting="unsafe")


def eye(out):
    _faults.hit("launch")
    a = array(out)
    a[...] = 0
    k = min(a.shape)
    a[np.arange(k), np.arange(k)] = 1
