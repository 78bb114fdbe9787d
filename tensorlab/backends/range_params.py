"""arange/linspace values for float32/float16/bfloat16 outputs without float64 arithmetic on the device,
shared by both backends so they give the same bits (kernels/creation.cu's `affine_value`; the CPU
twin `affine_values` here).

A value is base + j * step for integers j >= 0 (arange: base = start; linspace: start counting up,
end counting down), base and step Python floats (doubles), both first scaled by 2^-e (exact) where
e = 0 unless the range's largest magnitude M lies outside [2^-60, 2^60] (then M's exponent), so
that every float below stays normal. The double formula float32(float64(float64(j * step) + base))
is reproduced in two steps:
  1. the product float64(j * step), rounded to 53 bits exactly as a double multiplication: on the
     device in 64-bit integers (j times step's 53-bit significand, a 128-bit product rounded to
     nearest even), here by float64 itself;
  2. that product and base, each split exactly into three floats (hi = float32(x), mid =
     float32(x - hi), lo = x - hi - mid), summed with exact two-sums and rounded once to float32.
Step 2 is the exact sum of the two doubles rounded to float32 unless that sum lies within about
2^-46 of the terms' magnitude of a float32 rounding boundary, and the double formula rounds the sum
to 53 bits first: the two can differ by one float32 ulp where the exact sum lies that close to a
float32 midpoint (about 1 in 10^5 values over random ranges; none of the decimal-step ranges and
zero crossings in tests/test_creation_float_pairs.py). Cancellation (arange(-1, 1, 0.1)[10]) is
exact, as in double: 0.0. float16/bfloat16 round the float32 value again (as the CUDA cast of the
double formula did; the CPU had cast float64 to them directly). A non-finite bound or step (linspace
of inf) gives NaN everywhere (the double formula gave inf at some positions)."""
from __future__ import annotations

import math

import numpy as np

_F32 = np.float32
SCALE_FREE = 2.0 ** 60  # magnitudes in [2^-60, 2^60] need no scale


def split3(x):
    """A double (float or float64 array) as three float32 arrays whose exact sum is x."""
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        hi = x.astype(_F32)
        r = x - hi.astype(np.float64)
        mid = r.astype(_F32)
        lo = (r - mid.astype(np.float64)).astype(_F32)
    return hi, mid, lo


def scale_exponent(*magnitudes):
    """e such that the largest magnitude times 2^-e lies in [2^-60, 2^60] (0 when it already does)."""
    m = max(abs(float(v)) for v in magnitudes)
    if m == 0 or not math.isfinite(m) or 1.0 / SCALE_FREE <= m <= SCALE_FREE:
        return 0
    return math.frexp(m)[1]


def significand(step):
    """(M, Es, negative): |step| = M * 2^Es with M a 53-bit integer (the device's integer product)."""
    f, x = math.frexp(abs(step))
    return int(f * 2.0 ** 53), x - 53, int(step < 0)


def pow2_steps(e):
    """The three float32 powers of two (each within 2^+-100) applied one after another to scale by 2^e,
    e clamped to [-300, 300] (beyond, every nonzero float32 overflows or underflows), as the device."""
    e = min(max(e, -300), 300)
    e1 = int(e / 3)  # C's truncating division
    e2 = int((e - e1) / 2)
    return [_F32(2.0 ** k) for k in (e1, e2, e - e1 - e2)]


def affine_values(j, base, step, e):
    """float32 values of base + j * step (base, step scaled by 2^-e here) for an int64 array j, as
    the device computes them."""
    b, s = math.ldexp(base, -e), math.ldexp(step, -e)
    with np.errstate(over="ignore", invalid="ignore"):
        p = j.astype(np.float64) * s  # float64(j * step): the device's rounded integer product
    p0, p1, p2 = split3(p)
    s0, s1, s2 = split3(b)
    with np.errstate(over="ignore", invalid="ignore"):
        a, ea = _two_sum(p0, s0)
        c, ec = _two_sum(p1, s1)
        t, et = _two_sum(a, c)
        r = t + (((ea + ec) + et) + (p2 + s2))
        for f in pow2_steps(e):
            r = r * f
    return r


def _two_sum(a, b):
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)
