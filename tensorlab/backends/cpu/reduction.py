"""CPU reduction primitives. `reduce` covers every full/partial reduction (one op name per
functor of the CUDA reduce kernel). Outputs arrive with the reduced dims either kept (size 1)
or dropped; the primitive sees them with the input's rank either way.

Accumulation: the output's dtype, except float16/bfloat16 which accumulate in float32 and
round once when the result is stored. Inputs are converted to the output's dtype first, as
torch does for dtype= (sum(x, dtype=int64) truncates floats before adding)."""
from __future__ import annotations

import ml_dtypes
import numpy as np

from ... import _faults
from . import parallel as _par
from .elementwise import _fault_plans, _quiet_off, _quiet_on, row_buffered
from .memory import array

__all__ = ("reduce", "foreach_norm", "arg_reduce", "cumulative", "softmax")

_F32 = np.dtype(np.float32)
HALF = (np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16))


def _acc(dt):
    return _F32 if dt in HALF else dt


def _convert(a, dt):
    """`a` as the op's dtype `dt`, computed in its accumulation type. Returns (array, dtype= to
    pass to a NumPy reduction): safe casts happen inside the reduction, without a copy."""
    acc = _acc(dt)
    if a.dtype == acc:
        return a, None
    if a.dtype != dt and dt != acc:
        a = a.astype(dt)  # round to float16/bfloat16 first, like torch's cast to dtype=
    if np.can_cast(a.dtype, acc, "same_kind"):
        return a, acc
    return a.astype(acc), None


def _floating(a, dt):
    return a.astype(_acc(dt), copy=False) if a.dtype == dt else a.astype(dt).astype(_acc(dt), copy=False)


def _wide(a, dt):
    """norm/var/std operands: float32 (and float16/bfloat16) are accumulated in float64, as torch's CPU
    var/std do, so a square or squared deviation past float32's range does not overflow a finite
    result (tensor([1e30, 1., 2., 3.]).std() is 5e29, tensor([3e20]).norm() is 3e20). The CUDA kernels
    reach the same finite answers in float, scaled by exact powers of two (kernels/tensorlab/reduce.cuh);
    the two agree within float32 accuracy (tests/test_scaled_norm_moments.py states the tolerances)."""
    b = _floating(a, dt)
    return b.astype(np.float64) if b.dtype == np.float32 else b


def _count(a, dims):
    n = 1
    for d in dims:
        n *= a.shape[d]
    return n


def _ufunc_reduce(ufunc, a, dims, o):
    """Written straight into `o` when it has the accumulation dtype, else returned to be cast."""
    a, acc = _convert(a, o.dtype)
    if (a.dtype if acc is None else acc) == o.dtype:
        return ufunc.reduce(a, axis=dims, dtype=acc, out=o, keepdims=True)
    return ufunc.reduce(a, axis=dims, dtype=acc, keepdims=True)


def _leading_sums(a, dims, dt):
    """A sum over the leading dims of a C-contiguous float32/float64 array (a bias gradient's
    g.sum(0)) as one BLAS vector-matrix product with ones: NumPy's add.reduce over an outer axis
    adds row by row with short inner loops (5x slower, and less accurate than BLAS's grouped
    rows). None where that does not apply."""
    k = len(dims)
    if not (0 < k < a.ndim and dims == _LEADING[k] and a.dtype == dt and dt in _BLAS_FLOATS
            and a.flags.c_contiguous and a.size):
        return None
    lead = 1
    for n in a.shape[:k]:
        lead *= n
    return _par.col_sums(a.reshape(lead, a.size // lead)).reshape((1,) * k + a.shape[k:])


_LEADING = tuple(tuple(range(k)) for k in range(33))


def _last_sums(a, dims, dt):
    """A sum along the last dim of a C-contiguous float32/float64 array (softmax's backward) as
    BLAS row sums: NumPy's add.reduce along many short rows is several times slower."""
    if not (len(dims) == 1 and a.ndim >= 2 and dims[0] == a.ndim - 1 and a.dtype == dt and dt in _BLAS_FLOATS
            and a.flags.c_contiguous and a.size):
        return None
    n = a.shape[-1]
    return _par.row_sums(a.reshape(a.size // n, n)).reshape(a.shape[:-1] + (1,))


def _sum(a, dims, o, arg):
    r = _leading_sums(a, dims, o.dtype)
    if r is None:
        r = _last_sums(a, dims, o.dtype)
    return _ufunc_reduce(np.add, a, dims, o) if r is None else r


def _prod(a, dims, o, arg):
    return _ufunc_reduce(np.multiply, a, dims, o)


def _mean(a, dims, o, arg):
    s = _leading_sums(a, dims, o.dtype)
    if s is None:
        a, acc = _convert(a, o.dtype)
        s = np.add.reduce(a, axis=dims, dtype=acc, keepdims=True)
    return s / s.dtype.type(_count(a, dims))


def _amax(a, dims, o, arg):
    return np.max(a, axis=dims, keepdims=True)


def _amin(a, dims, o, arg):
    return np.min(a, axis=dims, keepdims=True)


def _all(a, dims, o, arg):
    return np.all(a, axis=dims, keepdims=True)


def _any(a, dims, o, arg):
    return np.any(a, axis=dims, keepdims=True)


def _count_nonzero(a, dims, o, arg):
    return np.count_nonzero(a, axis=dims, keepdims=True)


def _norm(a, dims, o, p):
    if p == 2:  # x * x is |x| * |x|, bit for bit: no abs pass
        w = _wide(a, o.dtype)
        return np.sqrt(np.add.reduce(np.square(w), axis=dims, keepdims=True))
    b = np.abs(_wide(a, o.dtype))
    if p == 0:
        return np.count_nonzero(b, axis=dims, keepdims=True).astype(b.dtype)
    if p == float("inf"):
        return np.max(b, axis=dims, keepdims=True)
    if p == float("-inf"):
        return np.min(b, axis=dims, keepdims=True)
    if p == 1:
        return np.sum(b, axis=dims, keepdims=True)
    return np.sum(b ** b.dtype.type(p), axis=dims, keepdims=True) ** b.dtype.type(1.0 / p)


def _var(a, dims, o, correction):
    b = _wide(a, o.dtype)
    n = _count(a, dims)
    d = b - np.sum(b, axis=dims, keepdims=True) / b.dtype.type(n)
    return np.sum(d * d, axis=dims, keepdims=True) / b.dtype.type(max(n - correction, 0))


def _std(a, dims, o, correction):
    return np.sqrt(_var(a, dims, o, correction))


def _logsumexp(a, dims, o, arg):
    b = _floating(a, o.dtype)
    if _count(a, dims) == 0:
        return np.float64(-np.inf)
    m = np.max(b, axis=dims, keepdims=True)
    m = np.where(np.isinf(m), b.dtype.type(0), m)  # an all -inf (or +inf) slice gives -inf (+inf), not nan
    return np.log(np.sum(np.exp(b - m), axis=dims, keepdims=True)) + m


_REDUCERS = {"sum": _sum, "prod": _prod, "mean": _mean, "amax": _amax, "amin": _amin, "all": _all, "any": _any,
             "count_nonzero": _count_nonzero, "norm": _norm, "var": _var, "std": _std, "logsumexp": _logsumexp}


def _kept(o, a, dims):
    """The output with the input's rank (reduced dims of size 1): a view, never a copy (setting
    .shape raises rather than copy)."""
    if o.ndim == a.ndim:
        return o
    if not o.ndim:  # a full reduction's 0-dim output: all ones, which reshape always views
        return o.reshape((1,) * a.ndim)
    shape = tuple(1 if i in dims else n for i, n in enumerate(a.shape))
    if _RESHAPE_NO_COPY:
        return o.reshape(shape, copy=False)
    v = o.view()
    v.shape = shape  # NumPy < 2.1 (2.5 deprecates setting .shape)
    return v


try:
    np.empty(0).reshape((0,), copy=False)
    _RESHAPE_NO_COPY = True
except TypeError:  # NumPy < 2.1: reshape has no copy= yet
    _RESHAPE_NO_COPY = False


def reduce(out, x, op, dims, arg=None):
    """out = op over the sorted `dims` of x. `arg`: p for norm, correction for var/std."""
    a = array(x)
    o = array(out)
    if _fault_plans:
        _faults.hit("launch")
    if op == "sum" and len(dims) == a.ndim and a.dtype is o.dtype and a.dtype in _BLAS_FLOATS and a.size < BLOCKED_MIN:
        # a small full float32/float64 sum (x.sum()): the one ufunc call the general path ends in
        # (over every axis: axis=None the same reduction; a 0-d output needs no kept-dims view)
        token = _quiet_on()
        try:
            if o.ndim:
                np.add.reduce(a, axis=tuple(dims), out=_kept(o, a, dims), keepdims=True)
            else:
                np.add.reduce(a, None, None, o)
        finally:
            _quiet_off(token)
        return
    dims = tuple(dims)
    _reduce_into(_kept(o, a, dims), a, op, dims, arg)


def foreach_norm(out, tensors, p):
    """out[i] = the p-norm of all of tensors[i] (torch._foreach_norm), each exactly as
    reduce(out[i], tensors[i], "norm", every dim, p) computes it."""
    o = array(out)
    arrays = [array(t) for t in tensors]
    _faults.hit("launch")
    for i, a in enumerate(arrays):
        if a.ndim == 0:
            a = a.reshape(1)
        _reduce_into(o[i:i + 1].reshape((1,) * a.ndim), a, "norm", tuple(range(a.ndim)), p)


def _reduce_into(o, a, op, dims, arg):
    fn = _REDUCERS[op]
    token = _quiet_on()  # np.errstate(all="ignore") without its ~1.5 us of Python
    try:
        if a.size >= BLOCKED_MIN and dims:
            _blocked_reduce(op, fn, a, dims, o, arg)
            return
        r = fn(a, dims, o, arg)
        if r is not o:
            np.copyto(o, r, casting="unsafe")
    finally:
        _quiet_off(token)


# -- large reductions: a fixed blocking, computed on the CPU pool -------------------------------------
# From BLOCKED_MIN input elements on, a reduction is cut into blocks whose size depends on the
# input's shape only, never on the thread count, and block results are combined in block order:
# the same input gives the same bits with 1, 2 or 64 threads. Many outputs: blocks of whole
# output slices (each output element is one task's plain NumPy reduction). Few outputs (a full
# reduction): blocks along a reduced axis give partial results, reduced again in order.
BLOCKED_MIN = 1 << 19
RED_BLOCK = 1 << 18  # input elements per block


def _blocked_reduce(op, fn, a, dims, o, arg):
    kept = [d for d in range(a.ndim) if d not in dims and a.shape[d] > 1]
    red = [d for d in dims if a.shape[d] > 1]
    outer_k = max(kept, key=lambda d: abs(a.strides[d])) if kept else None
    outer_r = max(red, key=lambda d: abs(a.strides[d])) if red else None
    if outer_k is not None and o.size >= 16 and (outer_r is None or abs(a.strides[outer_k]) > abs(a.strides[outer_r])):
        # the outputs' axis is outside the reduced ones (x.sum(-1)): slabs of whole outputs,
        # each the plain reduction of its slice
        ax = outer_k
        pieces = _par.split_ranges(a.shape[ax], max(1, RED_BLOCK // (a.size // a.shape[ax])))

        def task(i):
            idx = [slice(None)] * a.ndim
            idx[ax] = slice(*pieces[i])
            sl = tuple(idx)
            ob = o[sl]
            r = fn(a[sl], dims, ob, arg)
            if r is not ob:
                np.copyto(ob, r, casting="unsafe")
        _par.run(len(pieces), task)
        return
    # a full reduction, or the reduced axis outside (x.sum(0)): blocks along the outermost
    # reduced axis give partial results, reduced again in block order
    if len(dims) == a.ndim and a.flags.c_contiguous:
        a = a.reshape(-1)
        dims = (0,)
        d = 0
    else:
        d = outer_r
    if op in ("sum", "mean") and a.ndim == 1 and a.dtype == o.dtype and a.dtype in _BLAS_FLOATS:
        if _par.blas_threads() is not None:
            r = _dot_sum(a)
            np.copyto(o, np.reshape(r if op == "sum" else r / r.dtype.type(a.size), o.shape))
            return
    per = max(1, RED_BLOCK // (a.size // a.shape[d]))
    pieces = _par.split_ranges(a.shape[d], per)

    def blocks(partial):
        """partial(block) for every block along d (keepdims results), concatenated along d."""
        out = [None] * len(pieces)

        def task(i):
            idx = [slice(None)] * a.ndim
            idx[d] = slice(*pieces[i])
            out[i] = partial(a[tuple(idx)])
        _par.run(len(pieces), task)
        return np.concatenate(out, axis=d)

    r = _COMBINED[op](blocks, a, dims, o.dtype, arg)
    np.copyto(o, np.reshape(r, o.shape), casting="unsafe")


DOT_ROW = 4096  # a float32/float64 full sum: rows of this many elements, each one BLAS dot product
DOT_BLOCK = 512  # rows a task: 2Mi elements, well past the pool call's cost (a multiple of 4)


def _dot_sum(b):
    """Sum of a contiguous 1-D float32/float64 array as [1]: its whole rows of DOT_ROW elements
    summed by BLAS matrix-vector products with a vector of ones (each row a SIMD dot product with
    many accumulators: as accurate as NumPy's pairwise sum, and it streams memory at the
    machine's rate), blocks of DOT_BLOCK rows spread over the CPU pool, BLAS on one thread in each
    (parallel.blas_serial), then the row sums and the tail added pairwise.

    Same bits whatever the thread count: OpenBLAS computes a product's rows in groups of 4 from
    its first row (a row's bits differ in a group and alone), every block starts at a multiple of
    4 rows, and the blocks depend on the length only. Measured, 16Mi float32 on a 2-core VM: one
    thread 2.7 ms (np.add.reduce 2.6), two threads 1.45-1.6 ms (OpenBLAS's own two threads on the
    whole product: 1.6-1.75 ms, its threads then spinning against the pool's)."""
    rows = b.size // DOT_ROW
    m = b[:rows * DOT_ROW].reshape(rows, DOT_ROW)
    ones = _DOT_ONES.get(b.dtype)
    if ones is None:
        ones = _DOT_ONES[b.dtype] = np.ones(DOT_ROW, b.dtype)
        ones.flags.writeable = False
    pieces = _par.split_ranges(rows, DOT_BLOCK)
    parts = [None] * len(pieces)

    def task(i):
        parts[i] = m[slice(*pieces[i])] @ ones
    if len(pieces) > 1 and _par.get_num_threads() > 1:
        _par.run(len(pieces), task)  # BLAS held at one thread meanwhile
    else:
        _par.blas_serial(lambda: [task(i) for i in range(len(pieces))])
    if rows * DOT_ROW < b.size:
        parts.append(np.add.reduce(b[rows * DOT_ROW:], keepdims=True))
    return np.add.reduce(parts[0] if len(parts) == 1 else np.concatenate(parts), keepdims=True)


_DOT_ONES = {}  # dtype -> a read-only row of DOT_ROW ones (_dot_sum's vector)


def _ufunc_blocks(ufunc):
    def k(blocks, a, dims, dt, arg):
        def part(b):
            b, acc = _convert(b, dt)
            return ufunc.reduce(b, axis=dims, dtype=acc, keepdims=True)
        p = blocks(part)
        return ufunc.reduce(p, axis=dims, keepdims=True)
    return k


def _mean_blocks(blocks, a, dims, dt, arg):
    s = _ufunc_blocks(np.add)(blocks, a, dims, dt, arg)
    return s / s.dtype.type(_count(a, dims))


def _same_blocks(f):
    """Reductions whose partials combine with the same function (max, min, all, any)."""
    def k(blocks, a, dims, dt, arg):
        return f(blocks(lambda b: f(b, axis=dims, keepdims=True)), axis=dims, keepdims=True)
    return k


def _count_blocks(blocks, a, dims, dt, arg):
    p = blocks(lambda b: np.count_nonzero(b, axis=dims, keepdims=True).astype(np.int64))
    return np.sum(p, axis=dims, keepdims=True)


def _norm_blocks(blocks, a, dims, dt, p):
    inf = float("inf")
    if p == 0:
        return np.sum(blocks(lambda b: np.count_nonzero(b, axis=dims, keepdims=True).astype(np.int64)),
                      axis=dims, keepdims=True).astype(_wide(a[:0], dt).dtype)
    if p == inf or p == -inf:
        f = np.max if p == inf else np.min
        return f(blocks(lambda b: f(np.abs(_wide(b, dt)), axis=dims, keepdims=True)), axis=dims, keepdims=True)
    if p == 1:
        return np.sum(blocks(lambda b: np.sum(np.abs(_wide(b, dt)), axis=dims, keepdims=True)), axis=dims,
                      keepdims=True)
    if p == 2:
        def sq(b):
            w = _wide(b, dt)
            return np.sum(w * w, axis=dims, keepdims=True)
        return np.sqrt(np.sum(blocks(sq), axis=dims, keepdims=True))

    def pw(b):
        w = np.abs(_wide(b, dt))
        return np.sum(w ** w.dtype.type(p), axis=dims, keepdims=True)
    s = np.sum(blocks(pw), axis=dims, keepdims=True)
    return s ** s.dtype.type(1.0 / p)


def _var_blocks(blocks, a, dims, dt, correction):
    n = _count(a, dims)
    s = np.sum(blocks(lambda b: np.sum(_wide(b, dt), axis=dims, keepdims=True)), axis=dims, keepdims=True)
    mean = s / s.dtype.type(n)

    def dev(b):
        w = _wide(b, dt) - mean
        return np.sum(w * w, axis=dims, keepdims=True)
    return np.sum(blocks(dev), axis=dims, keepdims=True) / s.dtype.type(max(n - correction, 0))


def _std_blocks(blocks, a, dims, dt, correction):
    return np.sqrt(_var_blocks(blocks, a, dims, dt, correction))


def _logsumexp_blocks(blocks, a, dims, dt, arg):
    m = np.max(blocks(lambda b: np.max(_floating(b, dt), axis=dims, keepdims=True)), axis=dims, keepdims=True)
    m = np.where(np.isinf(m), m.dtype.type(0), m)
    s = np.sum(blocks(lambda b: np.sum(np.exp(_floating(b, dt) - m), axis=dims, keepdims=True)), axis=dims,
               keepdims=True)
    return np.log(s) + m


_COMBINED = {"sum": _ufunc_blocks(np.add), "prod": _ufunc_blocks(np.multiply), "mean": _mean_blocks,
             "amax": _same_blocks(np.max), "amin": _same_blocks(np.min), "all": _same_blocks(np.all),
             "any": _same_blocks(np.any), "count_nonzero": _count_blocks, "norm": _norm_blocks,
             "var": _var_blocks, "std": _std_blocks, "logsumexp": _logsumexp_blocks}


def arg_reduce(values, indices, x, op, dim):
    """Index of the first max/min along `dim` (NaN counts as the extreme, as in torch), and its
    value when `values` is given; outputs keep or drop dim. dim=None: flat row-major index over
    the whole tensor."""
    a = array(x)
    idx_out = array(indices)
    _faults.hit("launch")
    find = np.argmax if op == "max" else np.argmin
    if dim is None:
        idx_out[...] = find(a.reshape(-1))
        return
    if a.ndim == 0:
        idx = np.zeros((), dtype=np.int64)
    else:
        idx = find(a, axis=dim, keepdims=True)
    dims = () if a.ndim == 0 else (dim,)
    _kept(idx_out, a, dims)[...] = idx
    if values is not None:  # the extreme itself (NaN when a NaN was found, like the index)
        v = a if a.ndim == 0 else (np.max if op == "max" else np.min)(a, axis=dim, keepdims=True)
        np.copyto(_kept(array(values), a, dims), v, casting="unsafe")


def cumulative(out, x, op, dim):
    """Running sum/prod along `dim` in the output's dtype (float32 for float16/bfloat16); op "argmax" /
    "argmin": the int64 position of the running maximum / minimum (cummax / cummin's indices)."""
    o = array(out)
    a = array(x)
    _faults.hit("launch")
    if op in ("argmax", "argmin"):
        if o.size:
            np.copyto(o, _running_arg(a.reshape(1) if a.ndim == 0 else a, 0 if a.ndim == 0 else dim,
                                      op == "argmax").reshape(o.shape))
        return
    if a.ndim == 0:
        np.copyto(o, a, casting="unsafe")
        return
    a, acc = _convert(a, o.dtype)
    fn = np.cumsum if op == "sum" else np.cumprod
    with np.errstate(all="ignore"):
        np.copyto(o, fn(a, axis=dim, dtype=acc), casting="unsafe")


def _running_arg(a, dim, is_max):
    """torch's cummax/cummin positions: the latest position holding the running extreme; a NaN beats every
    number and the latest NaN so far wins. Position i is a candidate when x[i] equals the running extreme
    of the numbers so far (no NaN seen yet) or is a NaN; the answer is the running maximum of candidates."""
    if a.dtype.kind not in "fiub":  # bfloat16 (ml_dtypes): exact in float32
        a = a.astype(np.float32)
    pos = np.arange(a.shape[dim], dtype=np.int64).reshape([-1 if d == dim else 1 for d in range(a.ndim)])
    if a.dtype.kind == "f":
        nan = np.isnan(a)
        num = np.where(nan, -np.inf if is_max else np.inf, a)
        run = (np.maximum if is_max else np.minimum).accumulate(num, axis=dim)
        cand = nan | (~np.logical_or.accumulate(nan, axis=dim) & (num == run))
    else:
        cand = a == (np.maximum if is_max else np.minimum).accumulate(a, axis=dim)
    return np.maximum.accumulate(np.where(cand, pos, -1), axis=dim)


def softmax(out, x, dim, log):
    """exp(x - max) / sum(exp(x - max)) along `dim` (or its log), computed in the output's
    dtype (float32 for float16/bfloat16): subtracting the max keeps exp from overflowing.
    A large input goes through in blocks of whole slices along `dim` (about BLOCK_BYTES each,
    a fixed function of the shape), each block's max, exp, sum and division done while it is
    in cache, the blocks spread over the CPU pool; every slice is computed exactly as alone."""
    o = array(out)
    a = array(x)
    _faults.hit("launch")
    if o.size == 0:
        return
    if a.ndim == 0:
        a = a.reshape(1)
        o = o.reshape(1)
        dim = 0
    if a.size >= _par.elem_min and a.ndim > 1:
        ax = max((d for d in range(a.ndim) if d != dim), key=lambda d: (a.shape[d] > 1, abs(a.strides[d])))
        unit = a.size // a.shape[ax] * max(a.itemsize, 4)
        pieces = _par.row_blocks(a.shape[ax], unit)

        def task(i):
            idx = [slice(None)] * a.ndim
            idx[ax] = slice(*pieces[i])
            sl = tuple(idx)
            _softmax_block(o[sl], a[sl], dim, log)
        with np.errstate(all="ignore"):
            _par.run(len(pieces), task)
        return
    token = _quiet_on()  # np.errstate(all="ignore") without its ~1.5 us of Python
    try:
        _softmax_block(o, a, dim, log)
    finally:
        _quiet_off(token)


def _softmax_block(o, a, dim, log):
    b = _floating(a, o.dtype)
    if dim == b.ndim - 1 and b.ndim and b.flags.c_contiguous and b.dtype in _BLAS_FLOATS and b.shape[-1] >= 2:
        _softmax_rows(o, b, log)
        return
    m = np.max(b, axis=dim, keepdims=True)
    direct = o.dtype == b.dtype and not np.may_share_memory(o, b)
    shifted = np.subtract(b, m, out=o) if direct else b - m  # the result's own memory when it can be
    if log:
        shifted -= np.log(np.sum(np.exp(shifted), axis=dim, keepdims=True))
    else:
        np.exp(shifted, out=shifted)
        shifted /= np.sum(shifted, axis=dim, keepdims=True)
    if not direct:
        np.copyto(o, shifted, casting="unsafe")


_BLAS_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
_SHORT_ROW = 64  # rows up to this long take their max through a transposed copy (NumPy's max along them is slow)


def _row_max(x):
    """max of each row of a 2-D array as [rows, 1], for short rows: the rows transposed into a
    contiguous [cols, rows] copy and reduced along its first axis (np.maximum of whole contiguous
    rows, SIMD; NumPy's max along many short rows is 2-9x slower); NaN propagates."""
    return np.maximum.reduce(np.ascontiguousarray(x.T), axis=0)[:, None]


# A row whose sum of exp(x) lies in [1, _EXP_SUM_MAX] needs no shift by its max: nothing
# overflowed, the reciprocal of the sum is a normal number, and a term that underflowed was below
# the smallest normal number relative to a sum of at least 1 (so was the exact result).
_EXP_SUM_MAX = {np.dtype(np.float32): 2.0 ** 100, np.dtype(np.float64): 2.0 ** 900}


def _softmax_rows(o, b, log):
    """softmax / log_softmax along the last dim of a C-contiguous float32/float64 array, rows at a
    time, the row sums as one BLAS matrix-vector product.

    softmax in three passes: exp(x), its row sums, the multiplication by the sum's reciprocal (as
    torch's CPU kernel). exp(x - max) / sum equals exp(x) / sum(exp(x)) in real numbers, and both
    round to within a few ulps; the shift by the max is what keeps exp from overflowing, needed
    only for the rows whose sum of exp(x) says so (past _EXP_SUM_MAX, under 1, inf or NaN): those
    rows alone are computed again with their max subtracted, so each row's result depends on that
    row only (and on its position among 4-row groups of the block, for the sum's last bit).

    float32 log_softmax takes the same unshifted sums, in four passes: exp(x), the row sums, then
    x - c - r, where L = log(sum) is taken in float64 and split into c = float32(L) and the float32
    remainder r = float32(L - c). The result near 0 (the likely classes) keeps its bits: x - c is
    exact when x is near c (Sterbenz) and r carries what rounding L to float32 lost (plain
    x - float32(L) would be off by up to half an ulp of L: 4e-6 at L = 69). Rows whose sums fail
    the range test, and float64, take the max-shifted path: (x - max) - log(sum(exp(x - max)))."""
    n = b.shape[-1]
    x = b.reshape(-1, n)
    direct = o.dtype == b.dtype and o.flags.c_contiguous and not np.may_share_memory(o, b)
    out = o.reshape(-1, n) if direct else np.empty(x.shape, b.dtype)
    row_buffered(out, _softmax_rows_into, out, x, log)  # per-row broadcasts: 2-3x at 1024 wide
    if not direct:
        np.copyto(o, out.reshape(b.shape), casting="unsafe")


def _softmax_rows_into(out, x, log):
    dt = x.dtype
    if log and dt != _F32:
        _softmax_shifted(x, True, out)
        return
    np.exp(x, out=out)
    s = _par.row_sums(out)
    ok = (s >= 1) & (s <= _EXP_SUM_MAX[dt])  # NaN fails both
    if log:
        lse = np.log(s.astype(np.float64))
        c = lse.astype(_F32)
        np.subtract(x, c[:, None], out=out)
        out -= (lse - c).astype(_F32)[:, None]
        # exp(x) rounded in float32 can make the sum's log fall a few ulps below the largest x: a
        # log-probability above 0 ([30, 0, -1e9] gave +3.3e-8, so NLL went negative). It is <= 0.
        np.minimum(out, _F32.type(0), out=out)
    else:
        np.divide(dt.type(1), s, out=s)
        out *= s[:, None]
    if not ok.all():
        bad = np.flatnonzero(~ok)
        out[bad] = _softmax_shifted(x[bad], log, np.empty((len(bad), x.shape[1]), dt))


def _softmax_shifted(x, log, out):
    """softmax / log_softmax of the rows of a 2-D float32/float64 array into `out`, each row's max
    subtracted first."""
    n = x.shape[1]
    np.subtract(x, _row_max(x) if n <= _SHORT_ROW else np.max(x, axis=1, keepdims=True), out=out)
    if log:
        s = _par.row_sums(np.exp(out))
        np.log(s, out=s)
        out -= s[:, None]
    else:
        np.exp(out, out=out)
        s = _par.row_sums(out)
        np.divide(x.dtype.type(1), s, out=s)
        out *= s[:, None]
    return out
