"""grid_sample as two primitives over kernels/grid_sample.cu (backends/cpu/grid_sample.py has the
same names and results): one launch forward, one backward (plus the zero fill of the input's
gradient accumulator). Operands are contiguous; ND (2 or 3) is the grid's last dim."""
from __future__ import annotations

import numpy as np

from . import launch as K
from .conv import _ptr
from .memory import fill
from .norm import _index, _ops

__all__ = ("grid_sampler_fwd", "grid_sampler_bwd")


def _geometry(xo, go):
    nd = go.layout.shape[-1]
    N, C = xo.layout.shape[:2]
    sizes = tuple(xo.layout.shape[2:])[::-1] + (1,) * (3 - nd)  # W, H, D
    out_points = 1
    for s in go.layout.shape[1:-1]:
        out_points *= s
    in_points = 1
    for s in sizes:
        in_points *= s
    return nd, N, C, sizes, out_points, in_points


def grid_sampler_fwd(out, input, grid, mode, padding, align_corners):
    """out (N, C, *grid's spatial) = input sampled at grid (all contiguous, one dtype)."""
    (oo, xo, go), dev = _ops(out, input, grid)
    nd, N, C, (W, H, D), P, Q = _geometry(xo, go)
    if not N * P:
        return
    it = _index(N * P * max(nd, C), N * C * max(P, Q))
    i = K.index_scalar
    K.launch("grid_sample.cu", f"grid_sample_fwd<{xo.dtype.ctype}, {it}, {nd}>", dev,
             (_ptr(oo), _ptr(xo), _ptr(go), i(N, it), i(C, it), np.int64(W), np.int64(H), np.int64(D), i(P, it),
              np.int32(mode), np.int32(padding), np.int32(bool(align_corners))), n=N * P)


def grid_sampler_bwd(grad_input, grad_grid, grad_out, input, grid, mode, padding, align_corners):
    """grad_input (input's shape; float32 for a float16/bfloat16 input, else its dtype: atomic sums) and
    grad_grid (grid's shape and dtype); either may be None."""
    (gio, ggo, gout, xo, go), dev = _ops(grad_input, grad_grid, grad_out, input, grid)
    if grad_input is not None:
        fill(grad_input, 0)
    nd, N, C, (W, H, D), P, Q = _geometry(xo, go)
    if not N * P or (gio is None and ggo is None):
        return
    it = _index(N * P * max(nd, C), N * C * max(P, Q))
    i = K.index_scalar
    K.launch("grid_sample.cu", f"grid_sample_bwd<{xo.dtype.ctype}, {it}, {nd}>", dev,
             (_ptr(gio or xo), _ptr(ggo or go), _ptr(gout), _ptr(xo), _ptr(go), i(N, it), i(C, it), np.int64(W),
              np.int64(H), np.int64(D), i(P, it), np.int32(mode), np.int32(padding), np.int32(bool(align_corners)),
              np.int32(gio is not None), np.int32(ggo is not None)), n=N * P)
