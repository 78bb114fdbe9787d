"""CUDA convolution primitives (the names of backends/cpu/conv.py): im2col and col2im of
kernels/conv.cu, one thread per output element, the strided operand read through its
uncoalesced (B, C, H, W) or (B, C, kh, kw, oh, ow) layout."""
from __future__ import annotations

from . import launch as K

__all__ = ("im2col", "col2im")


def _index(o, a, n):
    """int unless an offset of either operand or the grid-stride loop needs 64 bits."""
    if K.wide_forced() or n + K.MAX_GRID_THREADS > K.INT_MAX:
        return "long long"
    for op in (o, a):
        lay = op.layout
        if sum((s - 1) * abs(st) for s, st in zip(lay.shape, lay.stride)) > K.INT_MAX:
            return "long long"
    return "int"


def _prepared(out, x):
    o, a = K.operand(out), K.operand(x)
    if a.buffer.device != o.buffer.device:
        raise RuntimeError(f"Expected all tensors to be on the same device, but found at least two devices, "
                           f"cuda:{o.buffer.device} and cuda:{a.buffer.device}!")
    n = 1
    for s in o.layout.shape:
        n *= s
    for op in (o, a):
        K.check_bounds(op, sum((s - 1) * st for s, st in zip(op.layout.shape, op.layout.stride)))
    return o, a, n


def _ptr(op):
    from .driver import Pointer
    return Pointer(op.buffer, op.layout.offset * op.dtype.itemsize)


def im2col(out, x, kernel, dilation, padding, stride, pad_value):
    o, a, n = _prepared(out, x)
    if not n:
        return
    ix = _index(o, a, n)
    i = K.index_scalar
    geo = tuple(dilation) + tuple(padding) + tuple(stride)
    K.launch("conv.cu", f"im2col<{o.dtype.ctype}, {ix}>", o.buffer.device,
             (_ptr(o), _ptr(a), i(n, ix), _layout(a, ix), _layout(o, ix), *(i(v, ix) for v in geo),
              K.scalar(pad_value, o.dtype)), n=n)


def _layout(op, ix):
    """op's (uncoalesced) shape and strides, with the division magic of its sizes."""
    return K.strided_layout(tuple(op.layout.shape), tuple(op.layout.stride), ix)


def col2im(out, cols, kernel, dilation, padding, stride):
    o, c, n = _prepared(out, cols)
    if not n:
        return
    ix = _index(o, c, n)
    i = K.index_scalar
    geo = tuple(dilation) + tuple(padding)
    K.launch("conv.cu", f"col2im<{o.dtype.ctype}, {ix}>", o.buffer.device,
             (_ptr(o), _ptr(c), i(n, ix), _layout(c, ix), _layout(o, ix), *(i(v, ix) for v in geo),
              *(K.divisor(v, ix) for v in stride)), n=n)
