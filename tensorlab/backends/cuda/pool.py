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


def _layout(t, it):
    return K.strided_layout(tuple(t.layout.shape), tuple(t.layout.stride), it)


def _forward(kernel_name, out, indices, x, geometry=()):
    """A forward pool kernel: (out, indices, x, n, x's and out's layouts, *geometry), a thread an output."""
    o, a, n = _prepared(out, x)
    ix, _, _ = _prepared(indices, x)
    if not n:
        return
    it = _index(n, o, a, ix)
    i = K.index_scalar
    K.launch("pool.cu", f"{kernel_name}<{o.dtype.ctype}, {it}>", o.buffer.device,
             (_ptr(o), _ptr(ix), _ptr(a), i(n, it), _layout(a, it), _layout(o, it), *(i(v, it) for v in geometry)),
             n=n)


def _backward(kernel_name, grad_input, grad_output, indices, geometry=()):
    """A backward pool kernel: (gi, go, indices, n, go's, indices' and gi's layouts, *geometry), a thread
    an input element."""
    gi, go, n = _prepared(grad_input, grad_output)
    _, ix, _ = _prepared(grad_input, indices)
    if not n:
        return
    it = _index(n, gi, go, ix)
    i = K.index_scalar
    if geometry:  # max_pool2d: (kh, kw, sh, sw, ph, pw, dh, dw), the strides as divisors
        kh, kw, sh, sw = geometry[:4]
        geometry = (i(kh, it), i(kw, it), K.divisor(sh, it), K.divisor(sw, it), *(i(v, it) for v in geometry[4:]))
    K.launch("pool.cu", f"{kernel_name}<{gi.dtype.ctype}, {it}>", gi.buffer.device,
             (_ptr(gi), _ptr(go), _ptr(ix), i(n, it), _layout(go, it), _layout(ix, it), _layout(gi, it), *geometry),
             n=n)


def max_pool2d(out, indices, x, kernel, stride, padding, dilation):
    _forward("max_pool2d_fwd", out, indices, x, tuple(kernel) + tuple(stride) + tuple(padding) + tuple(dilation))


def max_pool2d_backward(grad_input, grad_output, indices, kernel, stride, padding, dilation):
    _backward("max_pool2d_bwd", grad_input, grad_output, indices,
              tuple(kernel) + tuple(stride) + tuple(padding) + tuple(dilation))


def adaptive_max_pool2d(out, indices, x):
    _forward("adaptive_max_pool2d_fwd", out, indices, x)


def adaptive_max_pool2d_backward(grad_input, grad_output, indices):
    _backward("adaptive_max_pool2d_bwd", grad_input, grad_output, indices)
