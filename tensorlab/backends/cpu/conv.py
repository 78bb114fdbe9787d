"""CPU convolution primitives: im2col (the sliding windows of a 4-D input laid out as columns, the
GEMM operand of a convolution) and col2im (its adjoint: the columns summed back into the image).
Both see a 1-D convolution as a 2-D one of height 1."""
from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ... import _faults
from . import parallel as _par
from .memory import array
from .reduction import HALF

__all__ = ("im2col", "col2im")  # windows: also the pools' (backends/cpu/pool.py)


def im2col(out, x, kernel, dilation, padding, stride, pad_value):
    """out[b, c, i, j, y, z] = x[b, c, y*sh - ph + i*dh, z*sw - pw + j*dw], pad_value where that
    position lies outside x. out is (B, C, kh, kw, oh, ow); oh, ow come from out's shape."""
    o = array(out)
    a = array(x)
    _faults.hit("launch")

    def part(b0, b1):  # samples b0..b1-1 (the batch spread over the CPU pool)
        np.copyto(o[b0:b1], windows(a[b0:b1], o.shape[2:4], dilation, padding, stride, o.shape[4:], pad_value))
    _par.over_items(o.shape[0], o.size, part)


def _reach(n_out, k, s, d):
    """How far into the padded input a dim's last window's last element lies, plus one."""
    return (n_out - 1) * s + (k - 1) * d + 1


def windows(a, kernel, dilation, padding, stride, out_hw, pad_value):
    """The read-only (B, C, kh, kw, oh, ow) view of the 4-D array `a`'s sliding windows:
    [b, c, i, j, y, z] = a[b, c, y*sh - ph + i*dh, z*sw - pw + j*dw], pad_value outside a."""
    B, C, H, W = a.shape
    (kh, kw), (oh, ow) = kernel, out_hw
    (dh, dw), (ph, pw), (sh, sw) = dilation, padding, stride
    # the padded input must reach the last window's last element
    ph_hi, pw_hi = max(0, _reach(oh, kh, sh, dh) - ph - H), max(0, _reach(ow, kw, sw, dw) - pw - W)
    if ph or pw or ph_hi or pw_hi:
        padded = np.full((B, C, H + ph + ph_hi, W + pw + pw_hi), pad_value, dtype=a.dtype)
        padded[:, :, ph:ph + H, pw:pw + W] = a
    else:
        padded = a
    s = padded.strides
    return as_strided(padded, (B, C, kh, kw, oh, ow), (s[0], s[1], dh * s[2], dw * s[3], sh * s[2], sw * s[3]),
                      writeable=False)


def col2im(out, cols, kernel, dilation, padding, stride):
    """The adjoint of im2col: out[b, c, h, w] = the sum of cols[b, c, i, j, y, z] over the window
    positions (i, j, y, z) that read (h, w), in (i, j) order; float16/bfloat16 accumulate in
    float32 and round once."""
    o = array(out)
    c = array(cols)
    _faults.hit("launch")
    B, C, H, W = o.shape
    kh, kw, oh, ow = c.shape[2:]
    (dh, dw), (ph, pw), (sh, sw) = dilation, padding, stride
    acc_t = np.float32 if o.dtype in HALF else o.dtype
    if not (kh and kw and oh and ow):  # no window reads anything
        o[...] = 0
        return
    hp, wp = max(_reach(oh, kh, sh, dh), ph + H), max(_reach(ow, kw, sw, dw), pw + W)

    # stride 1: each tap's add runs over (oh, ow) blocks of rows; NumPy copies such blocks through
    # its ufunc buffer, and a buffer of one block keeps that copy in L1 (measured 12-40% faster
    # than NumPy's 8192 elements: (32, 8, 3, 3, 24, 24) 815 -> 599 us; (8, 16, 3, 3, 56, 56) 2238 ->
    # 1300 us). The sums are elementwise adds in tap order either way: the same bits.
    state = _par.buffer_state(oh * ow) if sw == 1 else None

    def taps(acc, cb):
        for i in range(kh):
            for j in range(kw):
                acc[:, :, i * dh:i * dh + (oh - 1) * sh + 1:sh, j * dw:j * dw + (ow - 1) * sw + 1:sw] += cb[:, :, i, j]

    def part(b0, b1):  # samples b0..b1-1 (the batch spread over the CPU pool)
        acc = np.zeros((b1 - b0, C, hp, wp), dtype=acc_t)
        _par.buffered(state or _par.QUIET, taps, acc, c[b0:b1])
        np.copyto(o[b0:b1], acc[:, :, ph:ph + H, pw:pw + W], casting="unsafe")
    with np.errstate(all="ignore"):
        _par.over_items(B, c.size, part)
