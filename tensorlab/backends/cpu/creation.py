"""CPU creation primitives (arange, linspace, eye), written in the output tensor in place.
float32/float16/bfloat16 ranges follow backends/range_params.py (float pairs, kernels/creation.cu's
arange_df/linspace_df); float64 and integer ones the double formula (creation.cu's double kernels)."""
from __future__ import annotations

import ml_dtypes
import numpy as np

from ... import _faults
from .. import range_params as RP
from .memory import array

_FLOAT_PAIR = (np.dtype(np.float32), np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16))


__all__ = ("arange", "linspace", "eye")


def arange(out, start, step):
    _faults.hit("launch")
    n = out.shape[0]
    o = array(out)
    if isinstance(start, int) and isinstance(step, int):
        vals = np.arange(n, dtype=np.int64) * step + start
    elif o.dtype in _FLOAT_PAIR:
        e = RP.scale_exponent(start, start + (n - 1) * step if n else start, step)
        vals = RP.affine_values(np.arange(n, dtype=np.int64), start, step, e)
    else:
        vals = np.arange(n, dtype=np.float64) * step + start
    with np.errstate(invalid="ignore", over="ignore"):
        np.copyto(o, vals, casting="unsafe")


def linspace(out, start, end):
    """torch's symmetric formula: the first half counts up from start, the second down from end."""
    _faults.hit("launch")
    n = out.shape[0]
    if n == 0:
        return
    o = array(out)
    if o.dtype in _FLOAT_PAIR:
        step = 0.0 if n == 1 else (end - start) / (n - 1)
        e = RP.scale_exponent(start, end, step)
        half = n // 2
        j = np.arange(n, dtype=np.int64)
        vals = np.where(j < half, RP.affine_values(j, start, step, e),
                        RP.affine_values(n - 1 - j, end if n > 1 else start, -step, e))
    elif n == 1:
        vals = np.array([start], dtype=np.float64)
    else:
        i = np.arange(n, dtype=np.float64)
        step = (end - start) / (n - 1)
        vals = np.where(i < n // 2, start + step * i, end - step * (n - 1 - i))
    with np.errstate(invalid="ignore", over="ignore"):
        np.copyto(o, vals, casting="unsafe")


def eye(out):
    _faults.hit("launch")
    a = array(out)
    a[...] = 0
    k = min(a.shape)
    a[np.arange(k), np.arange(k)] = 1
