"""CUDA creation primitives (arange, linspace, eye): the kernels of kernels/creation.cu, with the
formulas of backends/cpu/creation.py so both devices produce the same values."""
from __future__ import annotations

import math

import numpy as np

from .. import range_params as RP
from . import launch as K

_FLOAT_PAIR = ("float", "__half", "__nv_bfloat16")  # creation.cu's arange_df / linspace_df

__all__ = ("arange", "linspace", "eye")


def _vector(out):
    """(plan, element stride) of a 1-D output; the kernels write out[i * stride]."""
    p = K.plan(out)
    return p, K.index_scalar(p.operands[0].layout.stride[0] if p.n > 1 else 1, p.index)


def _floats(x, e, step):
    """x * 2^-e as the three float32 kernel arguments whose sum it is; NaN when step is inf or NaN
    (the CPU twin's float64(i * step) is NaN or inf at i = 0, and every value NaN)."""
    if not math.isfinite(step):
        x = math.nan
    return tuple(np.float32(v) for v in RP.split3(math.ldexp(x, -e)))


def _significand(step, e):
    """(M, es, neg) of step * 2^-e as kernel arguments (uint64, int, int); 0 for a non-finite step
    (_floats makes the values NaN)."""
    m, es, neg = RP.significand(math.ldexp(step, -e)) if math.isfinite(step) else (0, 0, 0)
    return np.uint64(m), np.int32(es), np.int32(neg)


def arange(out, start, step):
    p, stride = _vector(out)
    if not p.n:
        return
    ct = p.operands[0].dtype.ctype
    if isinstance(start, int) and isinstance(step, int):
        K.launch("creation.cu", f"arange_int<{ct}, {p.index}>", p.device,
                 (p.ptrs[0], np.int64(start), np.int64(step), p.count, stride), n=p.n)
    elif ct in _FLOAT_PAIR:
        e = RP.scale_exponent(start, start + (p.n - 1) * step, step)
        K.launch("creation.cu", f"arange_df<{ct}, {p.index}>", p.device,
                 (p.ptrs[0], *_floats(start, e, step), *_significand(step, e), np.int32(e), p.count, stride), n=p.n)
    else:
        K.launch("creation.cu", f"arange_float<{ct}, {p.index}>", p.device,
                 (p.ptrs[0], np.float64(start), np.float64(step), p.count, stride), n=p.n)


def linspace(out, start, end):
    """torch's symmetric formula; step is computed here exactly as the CPU backend computes it."""
    p, stride = _vector(out)
    n = p.n
    if not n:
        return
    if n == 1:
        end, step = start, 0.0  # the kernel's second half is end - step * 0
    else:
        step = (end - start) / (n - 1)
    ct = p.operands[0].dtype.ctype
    if ct in _FLOAT_PAIR:
        e = RP.scale_exponent(start, end, step)
        K.launch("creation.cu", f"linspace_df<{ct}, {p.index}>", p.device,
                 (p.ptrs[0], *_floats(start, e, step), *_floats(end, e, step), *_significand(step, e), np.int32(e),
                  p.count, stride), n=n)
        return
    K.launch("creation.cu", f"linspace<{ct}, {p.index}>", p.device,
             (p.ptrs[0], np.float64(start), np.float64(end), np.float64(step), p.count, stride), n=n)


def eye(out):
    p = K.plan(out)
    if not p.n:
        return
    lay = p.operands[0].layout
    rows, cols = lay.shape
    ix = p.index
    K.launch("creation.cu", f"eye<{p.operands[0].dtype.ctype}, {ix}>", p.device,
             (p.ptrs[0], K.divisor(cols, ix), p.count, K.index_scalar(lay.stride[0], ix),
              K.index_scalar(lay.stride[1], ix)), n=p.n)
