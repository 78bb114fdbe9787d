"""CUDA linear-algebra primitive (the name of backends/cpu/linalg.py): the batched matrix product
of kernels/matmul.cu over operands of any strides, batch dims coalesced into one grid index."""
from __future__ import annotations

import numpy as np

from ...layout import coalesce
from . import launch as K
from .driver import Pointer
from .memory import byte_range, temp, copy, fill, retire

__all__ = ("matmul", "lapack")

INT_MAX = 2 ** 31 - 1
_GRID_MAX = INT_MAX  # gridDim.x; the kernels loop over the tiles beyond it
# (rows/cols of the register-blocked tile, rows/cols of the small tile) by the kernel's accumulator:
# float accumulators use 128x128 tiles, 8-byte ones (double, integers) 64x64 (kernels/matmul.cu Tile)
_BIG = {"float": 128, "__half": 128, "__nv_bfloat16": 128}
_BIG_OTHER = 64
_SMALL = 16
_AHEAD = 128  # kernels form (never read) offsets up to a tile's width past a matrix's last row/col


def _matrix_strides(op):
    """(rows, cols) strides of the operand's last two dims; a size-1 dim's stride is never
    stepped, so it is 0 (any stride is legal there and must not count towards the index width)."""
    lay = op.layout
    (r, c), (sr, sc) = lay.shape[-2:], lay.stride[-2:]
    return (sr if r > 1 else 0), (sc if c > 1 else 0)


def _k_fastest(s_k, s_other, n_k, n_other):
    """Whether threads should walk the operand's k dim fastest: the dim with the smaller stride
    (a size-1 dim is never walked)."""
    ek = s_k if n_k > 1 else np.inf
    eo = s_other if n_other > 1 else np.inf
    return ek < eo or (ek == eo and n_k >= n_other)


def _shares_bytes(x, y):
    """Whether two operands touch common bytes (a product reads all of a row and column of its
    inputs before writing, so even identical views conflict)."""
    if x.buffer is not y.buffer:
        return False
    x0, x1 = byte_range(x)
    y0, y1 = byte_range(y)
    return x0 < y1 and y0 < x1


def _index_type(ops, strides, dims, tiles):
    # the kernels count tiles up to twice their number (a grid-stride loop's last step)
    if K.wide_forced() or max(dims) + _AHEAD > INT_MAX or 2 * tiles > INT_MAX:
        return "long long"
    for op, (sr, sc) in zip(ops, strides):
        lay = op.layout
        reach = sum((n - 1) * s for n, s in zip(lay.shape, lay.stride))
        if reach + _AHEAD * (sr + sc) > INT_MAX:
            return "long long"
    return "int"


def _gemm(c, a, b):
    shape = tuple(c.layout.shape)
    batch, (m, n), k = shape[:-2], shape[-2:], a.layout.shape[-1]
    ops = (c, a, b)
    strides = [_matrix_strides(op) for op in ops]
    for op in ops:
        K.check_bounds(op, sum((s - 1) * st for s, st in zip(op.layout.shape, op.layout.stride)))
    bshape, bstrides = coalesce(batch, *(tuple(op.layout.stride[:-2]) for op in ops))
    nb = 1
    for s in batch:
        nb *= s
    ct = a.dtype.ctype
    big = _BIG.get(ct, _BIG_OTHER)
    kernel, tile = ("gemm_tiled", big) if m >= big // 2 and n >= big // 2 else ("gemm_small", _SMALL)
    tiles = nb * -(-m // tile) * -(-n // tile)  # one block per output tile (kernels/matmul.cu)
    index = _index_type(ops, strides, (m, n, k, nb), tiles)
    name = f"{kernel}<{ct}, {index}>"
    (scm, scn), (sam, sak), (sbk, sbn) = strides
    ix = K.index_scalar
    grid = (min(tiles, _GRID_MAX),)
    args = (Pointer(c.buffer, c.layout.offset * c.dtype.itemsize), Pointer(a.buffer, a.layout.offset * a.dtype.itemsize),
            Pointer(b.buffer, b.layout.offset * b.dtype.itemsize),
            ix(m, index), ix(n, index), ix(k, index), ix(sam, index), ix(sak, index), ix(sbk, index), ix(sbn, index),
            ix(scm, index), ix(scn, index), ix(nb, index),
            *(K.strided_layout(bshape, st, index) for st in (bstrides[1], bstrides[2], bstrides[0])),
            np.int32(_k_fastest(sak, sam, k, m)), np.int32(_k_fastest(sbk, sbn, k, n)))
    K.launch("matmul.cu", name, c.buffer.device, args, grid=grid, block=K.BLOCK)


def matmul(out, a, b):
    """out[..., n, m] = a[..., n, k] @ b[..., k, m]; the batch dims of out, a and b are equal
    (broadcast ones have stride 0). A result of another dtype (an out= of a wider type) or one
    overlapping an operand is computed into a scratch matrix first, then copied."""
    o, x, y = K.operand(out), K.operand(a), K.operand(b)
    for op in (x, y):
        if op.buffer.device != o.buffer.device:
            raise RuntimeError(f"Expected all tensors to be on the same device, but found at least two devices, "
                               f"cuda:{o.buffer.device} and cuda:{op.buffer.device}!")
    if 0 in tuple(o.layout.shape):
        return
    if 0 in tuple(x.layout.shape):  # k == 0: an empty sum
        fill(o, 0)
        return
    if o.dtype is not x.dtype or _shares_bytes(o, x) or _shares_bytes(o, y):
        tmp = temp(o.layout.shape, x.dtype, o.buffer.device)
        _gemm(tmp, x, y)
        copy(o, tmp)
        retire(tmp.buffer)
        return
    _gemm(o, x, y)


from .lapack import lapack  # noqa: E402  (dense factorizations: their own file)
