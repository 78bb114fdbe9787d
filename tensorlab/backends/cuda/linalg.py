"""CUDA linear-algebra primitive (the name of backends/cpu/linalg.py): the batched matrix product
of kernels/matmul.cu over operands of any strides, batch dims coalesced into one grid index."""
from __future__ import annotations

import numpy as np

from ... import global_settings
from ... import layout as L
from ...layout import Layout, coalesce
from . import launch as K
from .driver import GEMM_EPILOGUE_DTYPES, Pointer
from .memory import byte_range, temp, copy, fill, retire

__all__ = ("matmul", "matmul_bias", "matmul_bias_grad", "lapack")

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


# cuBLASLt's epilogues (driver.gemm_epilogue): a bias added / ReLU or GELU applied while the product is
# written, a bias gradient reduced while the weight gradient is; False: every such call composes
# matmul with separate kernels (the tests compare the two). Switched off for the process when the
# library cannot be loaded (an OSError from the driver: no libcublasLt beside CuPy's CUDA).
LT_EPILOGUES = True
LT_CALLS = {}  # epilogue name -> calls sent to cuBLASLt (as GEMM_CALLS)


def _lt_gemm(c, a, b, vec, epilogue):
    """c = a @ b with cuBLASLt's `epilogue` over the vector `vec` (see matmul_bias / matmul_bias_grad), when
    c is one contiguous row-major matrix of a dtype cuBLASLt takes, a and b matrices it can read, vec one
    contiguous vector, nothing overlapping c; False otherwise (the caller composes). Row-major c is
    column-major c^T = b^T a^T: cuBLASLt's A is b, its B is a, so a per-column vector of c is per row of
    its D, and the sums over k of a's rows are over its B's columns (EPILOGUE_BGRADB)."""
    global LT_EPILOGUES
    if not (LT_EPILOGUES and VENDOR_GEMM) or c.dtype.name not in GEMM_EPILOGUE_DTYPES:
        return False
    if len(c.layout.shape) != 2 or a.dtype is not c.dtype or b.dtype is not c.dtype or vec.dtype is not c.dtype:
        return False
    (m, n), k = tuple(c.layout.shape), a.layout.shape[-1]
    lc = _ld(m, n, *_matrix_strides(c))
    la, lb = _ld(m, k, *_matrix_strides(a)), _ld(k, n, *_matrix_strides(b))
    vn = vec.layout.shape[0]
    if lc is None or lc[0] != "row" or la is None or lb is None or (vn > 1 and vec.layout.stride[0] != 1):
        return False
    if max(m, n, k, lc[1], la[1], lb[1]) > INT_MAX or any(_shares_bytes(c, x) for x in (a, b, vec)):
        return False
    isz = c.dtype.itemsize
    for op in (c, a, b, vec):
        K.check_bounds(op, sum((s - 1) * st for s, st in zip(op.layout.shape, op.layout.stride)))
    if K._fault_plans:
        K._faults.hit("launch")
    device = c.buffer.device
    stream = K.driver.current_stream(device)
    compute, reduced = global_settings.cuda_gemm_mode(c.dtype.name)
    try:
        K.driver.gemm_epilogue(lb[0] == "col", la[0] == "col", n, m, k,
                               Pointer(b.buffer, b.layout.offset * isz), lb[1],
                               Pointer(a.buffer, a.layout.offset * isz), la[1],
                               Pointer(c.buffer, c.layout.offset * isz), lc[1],
                               Pointer(vec.buffer, vec.layout.offset * isz), epilogue, c.dtype.name, stream,
                               compute=compute, reduced_reduction=reduced)
    except OSError:  # no cuBLASLt library in this process's CUDA: compose from now on
        LT_EPILOGUES = False
        return False
    if K._faults.observers:
        K._faults.launched(device, stream)
    LT_CALLS[epilogue] = LT_CALLS.get(epilogue, 0) + 1
    return True


_ACTIVATION_EPILOGUES = {None: "bias", "relu": "relu_bias"}


def matmul_bias(out, a, b, bias, activation=None):
    """out[n, m] = act(a[n, k] @ b[k, m] + bias[m]), act None or "relu": one cuBLASLt call with its BIAS /
    RELU_BIAS epilogue where it takes the operands (the bias added in the float32 accumulator, one rounding
    for 16-bit), else matmul and then the bias and ReLU as kernels, 16-bit ones in float32 with one
    rounding (the CPU primitive's arithmetic)."""
    from ... import dtypes
    from .elementwise import binary, unary
    o, x, y, v = K.operand(out), K.operand(a), K.operand(b), K.operand(bias)
    if 0 in tuple(o.layout.shape):
        return
    if 0 not in tuple(x.layout.shape) and _lt_gemm(o, x, y, v, _ACTIVATION_EPILOGUES[activation]):
        return
    n, m = tuple(o.layout.shape)
    row = K._operand_of(v.buffer, Layout((n, m), (0, v.layout.stride[0] if m > 1 else 0), v.layout.offset), v.dtype)
    half = o.dtype in (dtypes.float16, dtypes.bfloat16)
    if half:
        acc = temp((n, m), dtypes.float32, o.buffer.device)
        matmul(acc, x, y)
        binary(acc, "add", acc, row, dtypes.float32)
        dst = acc
    else:
        matmul(o, x, y)
        binary(o, "add", o, row, o.dtype)
        dst = o
    if activation == "relu":
        unary(dst, "relu", dst, dst.dtype)
    if half:
        copy(o, dst)
        retire(dst.buffer)


def matmul_bias_grad(out, a, b, grad_bias):
    """out[n, m] = a[n, k] @ b[k, m] and grad_bias[n] = a summed over k (a linear layer's weight gradient
    g^T x and bias gradient g.sum(0), a = g^T): one cuBLASLt call with EPILOGUE_BGRADB where it takes
    the operands, else matmul and a row-sum kernel."""
    from .reduction import reduce
    o, x, y, v = K.operand(out), K.operand(a), K.operand(b), K.operand(grad_bias)
    if 0 not in tuple(o.layout.shape) and 0 not in tuple(x.layout.shape) and _lt_gemm(o, x, y, v, "bgradb"):
        return
    matmul(out, a, b)
    reduce(grad_bias, a, "sum", (1,))


from .solver import lapack  # noqa: E402  (dense factorizations through cuSOLVER: their own file)
