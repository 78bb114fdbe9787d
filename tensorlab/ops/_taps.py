"""Separable resampling by taps (interpolate's linear/bicubic modes, adaptive average pooling):
each output element along a dim is a short weighted sum of input elements (torch's kernels read
exactly these taps), computed as one gather of (n_out, taps) input elements, a weight product and
a sum over the taps. Unlike a dense (n_out, n_in) weight matrix, an inf/NaN input reaches only the
outputs whose taps read it (as in torch), and the geometry costs O(n_out * taps), built with NumPy
after the sizes passed ops/_bounds.py's checks."""
from __future__ import annotations

import numpy as np

from . import _bounds


def _f32(a):
    return np.asarray(a, dtype=np.float64).astype(np.float32).astype(np.float64)


def linear_taps(n_in, n_out, s, align_corners, single):
    """torch's linear source indices and lambdas (area_pixel_compute_source_index, the h1p step at
    the last element): (idx (n_out, 2), weights (n_out, 2))."""
    o = np.arange(n_out, dtype=np.float64)
    src = s * o if align_corners else np.maximum(s * (o + 0.5) - 0.5, 0.0)
    if single:
        src = _f32(src)
    i0 = np.minimum(np.floor(src).astype(np.int64), n_in - 1)
    i1 = i0 + (i0 < n_in - 1)
    lam = src - i0
    if single:
        lam = _f32(lam)
    return np.stack([i0, i1], 1), np.stack([1.0 - lam, lam], 1)


def cubic_taps(n_in, n_out, s, align_corners, a=-0.75):
    """torch's bicubic taps: four clamped source indices and the cubic convolution weights."""
    o = np.arange(n_out, dtype=np.float64)
    src = s * o if align_corners else s * (o + 0.5) - 0.5
    i = np.floor(src)
    t = src - i

    def c1(x):
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def c2(x):
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    w = np.stack([c2(t + 1), c1(t), c1(1 - t), c2(2 - t)], 1)
    idx = np.clip(i.astype(np.int64)[:, None] + np.arange(-1, 3)[None, :], 0, n_in - 1)
    return idx, w


def adaptive_taps(n_in, n_out):
    """torch's adaptive windows [floor(i n_in / n_out), ceil((i + 1) n_in / n_out)) as taps: indices
    clamped into the window, a validity mask and each window's length."""
    o = np.arange(n_out, dtype=np.int64)
    lo = (o * n_in) // n_out
    hi = -(-((o + 1) * n_in) // n_out)
    k = int((hi - lo).max()) if n_out else 1
    idx = np.minimum(lo[:, None] + np.arange(k)[None, :], (hi - 1)[:, None])
    valid = np.arange(k)[None, :] < (hi - lo)[:, None]
    return idx, valid, (hi - lo).astype(np.float64)


def check_taps(x, d, n_out, taps, op):
    """The gather's size (every other dim of x times n_out * taps) must fit before it is built."""
    shape = list(x.shape)
    shape[d] = n_out * taps
    _bounds.check_shape_fits(shape, x._dtype.itemsize, x.device, op)
    _bounds.check_bytes_fit(n_out * taps * 8, None, op)  # the host-built geometry (int64 indices)


def apply(x, d, idx, weights=None, valid=None, divisor=None):
    """Along dim d of x: out[o] = sum_t weights[o, t] * x[idx[o, t]] (terms in tap order; invalid
    taps contribute exactly 0), then / divisor[o]. idx/weights/valid/divisor are tensors on
    x's device (geometry_tensor), weights/divisor in x's dtype."""
    from .conv import take_rows
    n_out, taps = idx.shape
    y = x.movedim(d, -1)
    g = take_rows(y, y.dim() - 1, idx.reshape(-1)).reshape(*y.shape[:-1], n_out, taps)
    if valid is not None:
        g = g.masked_fill(valid.logical_not(), 0)
    if weights is not None:
        g = g * weights
    if taps == 1:
        out = g.squeeze(-1)
    else:
        out = g[..., 0]
        for t in range(1, taps):  # left to right, as torch's kernels add the taps
            out = out + g[..., t]
    if divisor is not None:
        out = out / divisor
    return out.movedim(-1, d)


def as_tensors(key, arrays, dts, device):
    from .conv import geometry_tensor
    return [geometry_tensor(key + (i,), dt, device, lambda a=a: a) for i, (a, dt) in enumerate(zip(arrays, dts))]
