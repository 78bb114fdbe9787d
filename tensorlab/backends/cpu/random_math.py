"""NumPy float32 twins of kernels/tensorlab/random_math.cuh: the same correctly rounded float32
operations in the same order (no fused multiply-add, no libm), so normal and exponential draws for
float32/float16/bfloat16 outputs equal the CUDA kernels' bit for bit. Inputs are Philox words
(uint32 arrays); see the header for the derivations and accuracy."""
from __future__ import annotations

import numpy as np

__all__ = ()  # helpers of random.py (the CUDA kernels' float32 formulas), not backend primitives

_F = np.float32


def _c(h):
    """A float32 coefficient written as the header writes it (a hex float literal)."""
    return _F(float.fromhex(h))


_LOG_R = tuple(_c(h) for h in ("0x1.c71c72p-3", "0x1.24924ap-2", "0x1.99999ap-2", "0x1.555556p-1"))
_LN2_HI, _LN2_LO = _c("0x1.62e4p-1"), _c("0x1.7f7d1cp-20")
_SIN = tuple(_c(h) for h in ("0x1.507834p-13", "-0x1.32d2ccp-8", "0x1.466bc6p-4", "-0x1.4abbcep-1"))
_SIN1 = _c("0x1.921fb6p+0")
_COS = tuple(_c(h) for h in ("-0x1.a6d1f2p-16", "0x1.e1f506p-11", "-0x1.55d3c8p-6", "0x1.03c1f0p-2",
                             "-0x1.3bd3ccp+0"))
_ONE, _TWO = _F(1), _F(2)


def log_pos(x):
    """log of positive normal float32 values (tl::rmath::log_pos)."""
    bits = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    e = (bits >> np.uint32(23)).astype(np.int32) - 127
    m = (bits & np.uint32(0x007FFFFF)) | np.uint32(0x3F800000)
    big = m > np.uint32(0x3FB504F3)
    m[big] -= np.uint32(0x00800000)
    e[big] += 1
    f = m.view(np.float32) - _ONE
    s = f / (_TWO + f)
    z = s * s
    r = z * _LOG_R[0]
    for c in _LOG_R[1:]:
        r = z * (c + r)
    logm = f - s * (f - r)
    ef = e.astype(np.float32)
    return ef * _LN2_HI + (ef * _LN2_LO + logm)


def sincos_turn(w):
    """(cos, sin) of 2 pi (w >> 8) / 2^24 for uint32 words w (tl::rmath::sincos_turn)."""
    k = np.asarray(w, dtype=np.uint32) >> np.uint32(8)
    quadrant = k >> np.uint32(22)
    ak = k & np.uint32(0x3FFFFF)
    swap = ak > np.uint32(0x200000)
    ak = np.where(swap, np.uint32(0x400000) - ak, ak)
    a = ak.astype(np.float32) * _F(2.0 ** -22)
    a2 = a * a
    ps = a2 * _SIN[0]
    for c in _SIN[1:]:
        ps = a2 * (c + ps)
    sa = a * (_SIN1 + ps)
    pc = a2 * _COS[0]
    for c in _COS[1:]:
        pc = a2 * (c + pc)
    ca = _ONE + pc
    sq, cq = np.where(swap, ca, sa), np.where(swap, sa, ca)
    c = np.select([quadrant == 0, quadrant == 1, quadrant == 2], [cq, -sq, -cq], sq)
    s = np.select([quadrant == 0, quadrant == 1, quadrant == 2], [sq, cq, -sq], -cq)
    return c, s


def box_muller(w0, w1):
    """(r cos t, r sin t) with r = sqrt(-2 log(1 - U0)), t = 2 pi U1 (tl::rmath::box_muller)."""
    v = (np.uint32(0x1000000) - (np.asarray(w0, dtype=np.uint32) >> np.uint32(8))).astype(np.float32)
    v *= _F(2.0 ** -24)
    r = np.sqrt(_F(-2) * log_pos(v))
    c, s = sincos_turn(w1)
    return r * c, r * s


def neg_log_uniform(w):
    """-log((2 (w >> 9) + 1) / 2^24) (tl::rmath::neg_log_uniform)."""
    n = ((np.asarray(w, dtype=np.uint32) >> np.uint32(9)) << np.uint32(1)) | np.uint32(1)
    return -log_pos(n.astype(np.float32) * _F(2.0 ** -24))
