"""CUDA pooling primitives (the names of backends/cpu/pool.py): max_pool2d and its backward of
kernels/pool.cu, one thread per output (forward) or input (backward) element."""
from __future__ import annotations

from . import launch as K
from .conv import _prepared, _ptr

__all__ = ("max_pool2d", "max_pool2d_backward", "adaptive_max_pool2d", "adaptive_max_pool2d_backward")


def _index(n, *ops):
    if K.wide_forced() or n + K.MAX_GRID_THREADS > K.INT_MAX:
        return "long long"
    for op in ops:
        lay = op.layout
        if sum((s - 1) * abs(st) for s, st in zip(lay.shape, lay.stride)) + 1 > K.INT_MAX:
            return "long long"
    return "int"


def max_pool2d(out, indices, x, kernel, stride, padding, dilation):
    o, a, n = _prepared(out, x)
    ix, _, _ = _prepared(indices, x)
    if not n:
        return
    it = _index(n, o, a, ix)
    i = K.index_scalar
    geo = tuple(o.layout.shape[2:]) + tuple(kernel) + tuple(stride) + tuple(padding) + tuple(dilation)
    K.launch("pool.cu", f"max_pool2d_fwd<{o.dtype.ctype}, {it}>", o.buffer.device,
             (_ptr(o), _ptr(ix), _ptr(a), i(n, it), K.strided_layout(tuple(a.layout.shape), tuple(a.layout.stride), it),
              *(i(v, it) for v in geo)), n=n)


def max_pool2d_backward(grad_input, grad_output, indices, kernel, stride, padding, dilation):
    gi, go, n = _prepared(grad_input, grad_output)
    _, ix, _ = _prepared(grad_input, indices)
    if not n:
        return
    it = _index(n, gi, go, ix)
    i = K.index_scalar
    geo = tuple(gi.layout.shape[2:]) + tuple(kernel) + tuple(stride) + tuple(padding) + tuple(dilation)
    K.launch("pool.cu", f"max_pool2d_bwd<{gi.dtype.ctype}, {it}>", gi.buffer.device,
             (_ptr(gi), _ptr(go), _ptr(ix), i(n, it),
              K.strided_layout(tuple(go.layout.shape), tuple(go.layout.stride), it),
              K.strided_layout(tuple(ix.layout.shape), tuple(ix.layout.stride), it), *(i(v, it) for v in geo)), n=n)


def adaptive_max_pool2d(out, indices, x):
    o, a, n = _prepared(out, x)
    ix, _, _ = _prepared(indices, x)
    if not n:
        return
    it = _index(n, o, a, ix)
    i = K.index_scalar
    OH, OW = o.layout.shape[2:]
    K.launch("pool.cu", f"adaptive_max_pool2d_fwd<{o.dtype.ctype}, {it}>", o.buffer.device,
             (_ptr(o), _ptr(ix), _ptr(a), i(n, it), K.strided_layout(tuple(a.layout.shape), tuple(a.layout.stride), it),
              i(OH, it), i(OW, it)), n=n)


def adaptive_max_pool2d_backward(grad_input, grad_output, indices):
    gi, go, n = _prepared(grad_input, grad_output)
    _, ix, _ = _prepared(grad_input, indices)
    if not n:
        return
    it = _index(n, gi, go, ix)
    i = K.index_scalar
    H, W = gi.layout.shape[2:]
    K.launch("pool.cu", f"adaptive_max_pool2d_bwd<{gi.dtype.ctype}, {it}>", gi.buffer.device,
             (_ptr(gi), _ptr(go), _ptr(ix), i(n, it),
              K.strided_layout(tuple(go.layout.shape), tuple(go.layout.stride), it),
              K.strided_layout(tuple(ix.layout.shape), tuple(ix.layout.stride), it), i(H, it), i(W, it)), n=n)
