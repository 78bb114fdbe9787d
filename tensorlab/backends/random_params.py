"""Scalar parameters of the random primitives in their compute type, shared by the CPU and CUDA
backends so both round them the same way (kernels/random.cu's tl_random::Param<T>: float64 for a
float64 output, float32 for float32/float16/bfloat16)."""
from __future__ import annotations

import numpy as np


def compute_type(dtype_name):
    return np.float64 if dtype_name == "float64" else np.float32


def uniform_params(low, high, ctype):
    """(low, range, high_bound) for uniform_: range = high - low (rounded once from float64) and
    high_bound the smallest ctype value >= high, so `value >= high_bound` in ctype is exactly
    `value >= high` for any value of ctype."""
    lo, rng = ctype(low), ctype(high - low)
    hb = ctype(high)
    if float(hb) < high:
        hb = np.nextafter(hb, ctype(np.inf))
    return lo, rng, hb
