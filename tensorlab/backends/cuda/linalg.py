"""CUDA linear-algebra primitive (the name of backends/cpu/linalg.py): the batched matrix product
of kernels/matmul.cu over operands of any strides, batch dims coalesced into one grid index."""
from __future__ import annotations

import numpy as np

from ... import global_settings
from ... import layout as L
from ...layout import Layout, coalesce
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


# dtypes whose products go to the vendor library (cuBLAS through CuPy; float16/bfloat16 on tensor
# cores with float32 accumulation); integer and bool products stay on kernels/matmul.cu. False: every
# product on our kernels (the tests of kernels/matmul.cu set it).
VENDOR_GEMM = True
_VENDOR_DTYPES = frozenset(("float16", "bfloat16", "float32", "float64", "complex64", "complex128"))


def _ld(rows, cols, sr, sc):
    """How cuBLAS can read a rows x cols operand with strides (sr, sc): ("row", ld) when each row is
    contiguous (column-major, that memory is the transpose, leading dim ld), ("col", ld) when each
    column is, or None. Size-1 dims have stride 0 here (_matrix_strides): any ld >= the other size does."""
    if sc == 1 or cols <= 1:
        ld = sr if rows > 1 else max(cols, 1)
        if ld >= max(cols, 1):
            return "row", ld
    if sr == 1 or rows <= 1:
        ld = sc if cols > 1 else max(rows, 1)
        if ld >= max(rows, 1):
            return "col", ld
    return None


def _vendor_gemm(c, a, b, strides, beta=0.0):
    """C = A @ B through driver.gemm (cuBLAS's column-major strided batched GEMM) when every operand
    is a (batch of) matrix with one unit stride and the batch dims merge into one; False otherwise
    (the caller launches our kernel). Row-major C is column-major C^T = B^T A^T: cuBLAS's first
    operand is B, its second A. The compute type and math mode follow torch's matmul switches
    (global_settings.cuda_gemm_mode); beta 1 adds C's values before the one rounding."""
    if not VENDOR_GEMM or c.dtype.name not in _VENDOR_DTYPES:
        return False
    shape = tuple(c.layout.shape)
    batch, (m, n), k = shape[:-2], shape[-2:], a.layout.shape[-1]
    (scm, scn), (sam, sak), (sbk, sbn) = strides
    lc, la, lb = _ld(m, n, scm, scn), _ld(m, k, sam, sak), _ld(k, n, sbk, sbn)
    if lc is None or lc[0] != "row" or la is None or lb is None:
        return False
    bshape, bstrides = coalesce(batch, *(tuple(op.layout.stride[:-2]) for op in (c, a, b)))
    if len(bshape) > 1:
        return False
    nb = bshape[0] if bshape else 1
    sc_, sa_, sb_ = (st[0] if bshape else 0 for st in bstrides)
    if max(m, n, k, nb, lc[1], la[1], lb[1], sc_, sa_, sb_) > INT_MAX:
        return False
    isz = c.dtype.itemsize
    if K._fault_plans:  # a library call fails where a launch can (tests/test_fault_injection.py)
        K._faults.hit("launch")
    device = c.buffer.device
    stream = K.driver.current_stream(device)
    compute, reduced = global_settings.cuda_gemm_mode(c.dtype.name)
    K.driver.gemm(lb[0] == "col", la[0] == "col", n, m, k,
                  Pointer(b.buffer, b.layout.offset * isz), lb[1], sb_,
                  Pointer(a.buffer, a.layout.offset * isz), la[1], sa_,
                  Pointer(c.buffer, c.layout.offset * isz), lc[1], sc_, nb, c.dtype.name, stream,
                  compute=compute, reduced_reduction=reduced, beta=beta)
    if K._faults.observers:  # tl.benchmark.Timer's warm-up: which streams got work
        K._faults.launched(device, stream)
    GEMM_CALLS[c.dtype.name] = GEMM_CALLS.get(c.dtype.name, 0) + 1
    return True


GEMM_CALLS = {}  # dtype name -> products sent to the library (as launch.LAUNCHES counts kernels)


def _gemm(c, a, b):
    shape = tuple(c.layout.shape)
    batch, (m, n), k = shape[:-2], shape[-2:], a.layout.shape[-1]
    ops = (c, a, b)
    strides = [_matrix_strides(op) for op in ops]
    for op in ops:
        K.check_bounds(op, sum((s - 1) * st for s, st in zip(op.layout.shape, op.layout.stride)))
    if _vendor_gemm(c, a, b, strides):
        return
    if c.dtype.category == 3:  # complex: cuBLAS only (no matmul.cu instantiation), over contiguous copies
        _complex_gemm_contiguous(c, a, b)
        return
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
            *(K.plain_layout(bshape, st, index) for st in (bstrides[1], bstrides[2], bstrides[0])),
            np.int32(_k_fastest(sak, sam, k, m)), np.int32(_k_fastest(sbk, sbn, k, n)))
    K.launch("matmul.cu", name, c.buffer.device, args, grid=grid, block=K.BLOCK)


def _complex_gemm_contiguous(c, a, b):
    """C = A @ B for complex operands cuBLAS cannot read as they are (several batch dims, no unit
    stride): contiguous copies with one flattened batch dim, then back into C."""
    if not VENDOR_GEMM:
        raise RuntimeError("matmul: complex products on CUDA run on cuBLAS only (tensorlab's matmul.cu has no "
                           "complex kernel); VENDOR_GEMM is off")
    dev = c.buffer.device
    shape = tuple(c.layout.shape)
    batch, (m, n), k = shape[:-2], shape[-2:], a.layout.shape[-1]
    nb = 1
    for s in batch:
        nb *= s
    temps = []
    try:
        ops = []
        for op, (r, q) in ((a, (m, k)), (b, (k, n))):
            t = temp(tuple(batch) + (r, q), op.dtype, dev)
            temps.append(t)
            copy(t, op)
            ops.append(K._operand_of(t.buffer, Layout((nb, r, q), (r * q, q, 1), 0), op.dtype))
        tc = temp((nb, m, n), c.dtype, dev)
        temps.append(tc)
        if not _vendor_gemm(tc, ops[0], ops[1], [_matrix_strides(op) for op in (tc, ops[0], ops[1])]):
            raise RuntimeError(f"matmul: cuBLAS cannot take complex operands of shapes {list(shape)}")
        copy(c, K._operand_of(tc.buffer, Layout(shape, tuple(L.contiguous_strides(shape)), 0), c.dtype))
    finally:
        for t in temps:
            retire(t.buffer)


def matmul(out, a, b, accumulate=False):
    """out[..., n, m] = a[..., n, k] @ b[..., k, m]; with `accumulate`, out += a @ b (cuBLAS's beta 1:
    one rounding after the addition; on our kernels the product is rounded, then added). The batch
    dims of out, a and b are equal (broadcast ones have stride 0). A result of another dtype (an out=
    of a wider type) or one overlapping an operand is computed into a scratch matrix first, then
    copied."""
    o, x, y = K.operand(out), K.operand(a), K.operand(b)
    for op in (x, y):
        if op.buffer.device != o.buffer.device:
            raise RuntimeError(f"Expected all tensors to be on the same device, but found at least two devices, "
                               f"cuda:{o.buffer.device} and cuda:{op.buffer.device}!")
    if 0 in tuple(o.layout.shape):
        return
    if 0 in tuple(x.layout.shape):  # k == 0: an empty sum
        if not accumulate:
            fill(o, 0)
        return
    if accumulate and o.dtype is x.dtype and not (_shares_bytes(o, x) or _shares_bytes(o, y)):
        ops = (o, x, y)
        strides = [_matrix_strides(op) for op in ops]
        for op in ops:
            K.check_bounds(op, sum((s - 1) * st for s, st in zip(op.layout.shape, op.layout.stride)))
        if _vendor_gemm(o, x, y, strides, beta=1.0):
            return
    if accumulate or o.dtype is not x.dtype or _shares_bytes(o, x) or _shares_bytes(o, y):
        tmp = temp(o.layout.shape, x.dtype, o.buffer.device)
        _gemm(tmp, x, y)
        if accumulate:
            from ... import dtypes
            from .elementwise import binary
            half = o.dtype in (dtypes.float16, dtypes.bfloat16)
            binary(o, "add", o, tmp, dtypes.float32 if half else o.dtype)
        else:
            copy(o, tmp)
        retire(tmp.buffer)
        return
    _gemm(o, x, y)


from .solver import lapack  # noqa: E402  (dense factorizations through cuSOLVER: their own file)
