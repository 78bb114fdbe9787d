"""CPU pooling primitives: max_pool2d (values and torch's indices) and its backward, for 4-D inputs
(1-D pools are 2-D ones over a height of 1)."""
from __future__ import annotations

import numpy as np

from ... import _faults
from . import parallel as _par
from .conv import windows
from .memory import array
from .reduction import HALF

__all__ = ("max_pool2d", "max_pool2d_backward", "adaptive_max_pool2d", "adaptive_max_pool2d_backward")


def _lowest(dt):
    return -np.inf if dt.kind == "f" or dt in HALF else np.iinfo(dt).min


def _arrays(*tensors):
    """The tensors' NumPy arrays, at the launch (where the fault injector may fail it)."""
    arrays = tuple(array(t) for t in tensors)
    _faults.hit("launch")
    return arrays


def _taps(n_out, n_in, k, s, p, d):
    """(k, n_out) input position of each kernel tap of each window, and whether it is inside."""
    pos = np.arange(n_out)[None, :] * s - p + np.arange(k)[:, None] * d
    return pos, (pos >= 0) & (pos < n_in)


def max_pool2d(out, indices, x, kernel, stride, padding, dilation):
    """torch's loop, vectorized: each window's first maximum (row-major), or its last NaN; a window
    whose inside elements all equal the dtype's lowest value gives its first inside element."""
    o, ix, a = _arrays(out, indices, x)
    taps = kernel[0] * kernel[1]
    _par.over_items(a.shape[0], o.size * taps * 4,  # ~4 passes a tap; the batch spread over the CPU pool
                    lambda b0, b1: _max_pool(o[b0:b1], ix[b0:b1], a[b0:b1], kernel, stride, padding, dilation))


def _max_pool(o, ix, a, kernel, stride, padding, dilation):
    N, C, H, W = a.shape
    OH, OW = o.shape[2:]
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = kernel, stride, padding, dilation
    low = _lowest(a.dtype)
    rows, rin = _taps(OH, H, kh, sh, ph, dh)
    cols, cin = _taps(OW, W, kw, sw, pw, dw)
    if rin.all() and cin.all() and a.dtype.kind in "fiu":  # no tap in the padding: a running max over the taps
        _max_over_taps(o, ix, a, rows, cols, kernel, dilation, padding, stride, W)
        return
    win = windows(a, kernel, dilation, padding, stride, (OH, OW), low).reshape(N, C, kh * kw, OH, OW)
    pick = win.argmax(axis=2)
    if (a.dtype.kind == "f" or a.dtype in HALF) and np.isnan(a).any():  # the input is the cheaper place to look
        nan = np.isnan(win)
        last = kh * kw - 1 - nan[:, :, ::-1].argmax(axis=2)
        pick = np.where(nan.any(axis=2), last, pick)
    if not (rin.all() and cin.all()):  # some taps fall in the padding: never pick one
        inside = (rin[:, None, :, None] & cin[None, :, None, :]).reshape(kh * kw, OH, OW)
        first_inside = inside.argmax(axis=0)
        picked_inside = np.take_along_axis(np.broadcast_to(inside, (N, C) + inside.shape), pick[:, :, None], 2)
        pick = np.where(picked_inside[:, :, 0], pick, first_inside)
    np.copyto(o, np.take_along_axis(win, pick[:, :, None], 2)[:, :, 0])
    r = rows[pick // kw, np.arange(OH)[:, None]]
    c = cols[pick % kw, np.arange(OW)[None, :]]
    np.copyto(ix, r * W + c)


def _max_over_taps(o, ix, a, rows, cols, kernel, dilation, padding, stride, W):
    """max_pool2d when every tap of every window lies inside the input: torch's loop turned inside
    out, one pass per kernel tap over all windows at once. A tap takes over a window when it is
    greater than the running maximum, or is NaN (so each window gets its first maximum, or its
    last NaN); the value is the running np.maximum (NaN propagates), the winning tap the last one
    that took over (the largest t with m_t), its index read from the tap's offset table."""
    kh, kw = kernel
    win = windows(a, kernel, dilation, padding, stride, o.shape[2:], _lowest(a.dtype))
    nan = a.dtype.kind == "f" and np.isnan(a.max())  # NaN propagates through max: one cheap look
    tap_t = np.uint8 if kh * kw < 256 else np.int64
    tap = np.zeros(o.shape, dtype=tap_t)
    m = np.empty(o.shape, dtype=bool)
    v = np.empty(o.shape, dtype=a.dtype)  # each tap copied contiguous first: NumPy's copy of the
    np.copyto(o, win[:, :, 0, 0])          # strided windows, then flat ufuncs (2x the ufuncs on them)
    for t in range(1, kh * kw):
        np.copyto(v, win[:, :, t // kw, t % kw])
        np.greater(v, o, out=m)
        if nan:
            m |= np.isnan(v)
        np.maximum(o, v, out=o)
        np.maximum(tap, np.multiply(m, tap_t(t), dtype=tap_t), out=tap)
    # tap t = (i, j) of window (y, x) reads rows[i, y] * W + cols[j, x] = the window's first
    # element's index + i * dh * W + j * dw
    (dh, dw) = dilation
    off = (np.arange(kh)[:, None] * (dh * W) + np.arange(kw)[None, :] * dw).reshape(-1)
    np.add(np.take(off, tap), rows[0][:, None] * W + cols[0][None, :], out=ix)


def _last_nan(win, pick, axis):
    """torch's NaN rule over window axis `axis`: the last NaN wins."""
    if win.dtype.kind == "f" or win.dtype in HALF:
        nan = np.isnan(win)
        if nan.any():
            n = win.shape[axis]
            last = n - 1 - np.flip(nan, axis).argmax(axis=axis)
            pick = np.where(nan.any(axis=axis), last, pick)
    return pick


def _adaptive_table(n_in, n_out):
    """(n_out, kmax) positions of each adaptive window, padded with its last element (a repeat never
    changes the first maximum or the last NaN's position)."""
    lo = np.arange(n_out) * n_in // n_out
    hi = -(-(np.arange(n_out) + 1) * n_in // n_out)
    k = int((hi - lo).max())
    return np.minimum(lo[:, None] + np.arange(k)[None, :], (hi - 1)[:, None]), k


def adaptive_max_pool2d(out, indices, x):
    o, ix, a = _arrays(out, indices, x)
    N, C, H, W = a.shape
    OH, OW = o.shape[2:]
    th, kh = _adaptive_table(H, OH)
    tw, kw = _adaptive_table(W, OW)
    win = a[:, :, th.reshape(-1)][:, :, :, tw.reshape(-1)].reshape(N, C, OH, kh, OW, kw)
    win = win.transpose(0, 1, 2, 4, 3, 5).reshape(N, C, OH, OW, kh * kw)
    pick = _last_nan(win, win.argmax(axis=4), 4)
    np.copyto(o, np.take_along_axis(win, pick[..., None], 4)[..., 0])
    r = th[np.arange(OH)[:, None], pick // kw]
    c = tw[np.arange(OW)[None, :], pick % kw]
    np.copyto(ix, r * W + c)


def adaptive_max_pool2d_backward(grad_input, grad_output, indices):
    _scatter_by_index(grad_input, grad_output, indices)


def max_pool2d_backward(grad_input, grad_output, indices, kernel, stride, padding, dilation):
    (kh, kw), (sh, sw), (dh, dw) = kernel, stride, dilation
    if sh >= (kh - 1) * dh + 1 and sw >= (kw - 1) * dw + 1:  # windows never share an element
        _put_by_index(grad_input, grad_output, indices)
    else:
        _scatter_by_index(grad_input, grad_output, indices)


def _put_by_index(grad_input, grad_output, indices):
    """_scatter_by_index when no two windows share an input element: each index is written at
    most once, so a plain store is the sum (nothing to accumulate, no rounding)."""
    gi, go, ix = _arrays(grad_input, grad_output, indices)
    _par.over_items(gi.shape[0], gi.size + 3 * go.size,  # the batch spread over the CPU pool
                    lambda b0, b1: _put(gi[b0:b1], go[b0:b1], ix[b0:b1]))


def _put(gi, go, ix):
    N, C, H, W = gi.shape
    L = ix.shape[2] * ix.shape[3]
    pos = ix.reshape(N * C, L) + np.arange(0, N * C * H * W, H * W, dtype=np.int64)[:, None]
    direct = gi.flags.c_contiguous
    flat = gi.reshape(-1) if direct else np.empty(gi.size, dtype=gi.dtype)
    flat.fill(0)
    flat[pos.reshape(-1)] = go.reshape(-1)
    if not direct:
        np.copyto(gi, flat.reshape(gi.shape))


def _scatter_by_index(grad_input, grad_output, indices):
    """grad_input[b, c, i] = the sum of grad_output[b, c, j] over the windows j whose index is i, in
    window order; float16/bfloat16 accumulate in float32."""
    gi, go, ix = _arrays(grad_input, grad_output, indices)
    N, C, H, W = gi.shape
    acc = np.zeros((N * C, H * W), dtype=np.float32 if gi.dtype in HALF else gi.dtype)
    planes = np.repeat(np.arange(N * C), ix.shape[2] * ix.shape[3])
    np.add.at(acc, (planes, ix.reshape(-1)), go.reshape(-1).astype(acc.dtype))
    np.copyto(gi, acc.reshape(gi.shape), casting="unsafe")
