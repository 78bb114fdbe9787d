"""CUDA reduction primitives (the names of backends/cpu/reduction.py): `reduce` and `arg_reduce`
run kernels/reduce.cu, `cumulative` kernels/scan.cu, `softmax` kernels/softmax.cu.

The host splits the input's dims into outer dims (one output element each) and reduced dims,
orders each group by stride and coalesces it, then picks the kernel geometry (reduce.cu's header
explains inner / outer / split). Dtype pairs without an instantiation (kernel_table's
_reduction_pairs) are converted on the device first, as the CPU backend converts them: the input
to the result's dtype (sum(x, dtype=int64) truncates first), and narrower integral results are
reduced in int64 and wrapped on the store."""
from __future__ import annotations

import numpy as np

from ... import dtypes
from ... import layout as L
from ...kernel_table import KERNELS
from ...layout import coalesce
from . import launch as K
from .driver import Pointer
from .memory import temp, copy, retire

__all__ = ("reduce", "foreach_norm", "arg_reduce", "cumulative", "softmax")

_REDUCE = frozenset(KERNELS["reduce.cu"])
_SCAN = frozenset(KERNELS["scan.cu"])
_OPS = {"sum": "Sum", "prod": "Prod", "mean": "Mean", "amax": "ArgMax", "amin": "ArgMin", "all": "All", "any": "Any",
        "count_nonzero": "CountNonzero", "norm": "Norm", "var": "Var", "std": "Std", "logsumexp": "LogSumExp"}
_WRITE_VALUES, _WRITE_INDEX, _WRITE_PARTIAL, _READ_PARTIAL = 1, 2, 4, 8
_STATE_BYTES = 32  # >= sizeof every op's State (reduce.cuh)
_MIN_PER_THREAD = 64  # elements a thread should reduce before a reduction is split across blocks


def _numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def _max_blocks(device):
    """Blocks that fill the device (8 of 256 threads per SM)."""
    return K.grid_for(1 << 40, device)


def _index(*operands):
    """The Index type: int when every operand's plan allows it (plans also bounds-check them)."""
    return "long long" if any(K.plan(op).index == "long long" for op in operands) else "int"


def _ptr(op):
    """A T* argument at the operand's first element (its buffer's start when it has none)."""
    return Pointer(op.buffer, op.layout.offset * op.dtype.itemsize if _numel(op.layout.shape) else 0)


def _split_outer(shape, in_stride, dims, others):
    """Outer dims of the input (not in `dims`) as (size, in stride, stride in each of `others`),
    where each other operand has the input's rank (keepdim) or drops the reduced dims."""
    dimset = set(dims)
    nd = len(shape)
    cols = []
    for o in others:
        st = o.layout.stride
        cols.append(st if len(st) == nd else [None if d in dimset else st[d - sum(1 for e in dims if e < d)]
                                              for d in range(nd)])
    return [(shape[d], in_stride[d], *(c[d] for c in cols)) for d in range(nd) if d not in dimset and shape[d] != 1]


def _coalesce(rows, nstrides):
    """(shape, [strides per column]) of dims given as (size, stride, stride, ...) rows, coalesced."""
    if not rows:
        return (), [() for _ in range(nstrides)]
    return coalesce(tuple(r[0] for r in rows), *(tuple(r[1 + k] for r in rows) for k in range(nstrides)))


def _coalesced(rows, nstrides):
    """_coalesce after ordering the dims by their first stride, largest first."""
    return _coalesce(sorted(rows, key=lambda r: -r[1]), nstrides)


_KERNEL_DTYPES = {}


def _kernel_dtypes(name, src, dst):
    """(dtype to convert the input to or None, dtype to reduce into when not dst, or None)."""
    key = (name, src, dst)
    r = _KERNEL_DTYPES.get(key)
    if r is None:
        r = _KERNEL_DTYPES[key] = _kernel_dtypes_of(name, src, dst)  # a pure function of the three
    return r


def _kernel_dtypes_of(name, src, dst):
    def have(i, o):
        return f"reduce_kernel<tl::{name}, {i.ctype}, {o.ctype}, int>" in _REDUCE
    if have(src, dst):
        return None, None
    if name in ("All", "Any") and have(src, dtypes.bool_):
        return None, dtypes.bool_
    if src is dtypes.float32 and dst in (dtypes.float16, dtypes.bfloat16) and have(src, src):
        return None, src  # float32 is a half's accumulation type: reduce unrounded, round the result (the CPU's way)
    conv = None if src is dst else dst
    if have(dst, dst):
        return conv, None
    if have(dst, dtypes.int64):
        return conv, dtypes.int64
    raise RuntimeError(f"reduce: no CUDA kernel for {name} from {src.name} to {dst.name}")


def _run_reduce(name, out, index_out, x, dims, arg, keep_order, flags):
    """Launch reduce_kernel for `name` over the sorted `dims` of operand x into the operands out
    (values) and index_out (arg ops), which have x's rank or drop the reduced dims."""
    first = out if out is not None else index_out  # a valid pointer for an output the flags leave unwritten
    xl, fl = x.layout, first.layout
    il = None if index_out is None else index_out.layout
    try:  # the geometry is a function of the layouts' shapes and strides, the dtypes and the device
        key = (name, dims, keep_order, K._wide[0], x.buffer.device, xl.shape, xl.stride, x.dtype, fl.shape, fl.stride,
               first.dtype, out is None, None if il is None else (il.shape, il.stride))
        g = _GEOMETRY.get(key)
    except TypeError:  # a layout of lists
        key, g = None, None
    if g is None:
        g = _reduce_geometry(name, out, index_out, x, dims, keep_order)
        if key is not None:
            if len(_GEOMETRY) >= 4096:
                _GEOMETRY.clear()
            _GEOMETRY[key] = g
    if g is None:  # nothing to write
        return
    dev, expr, reaches, first_args, second_args = g
    # every call: each operand lies inside its buffer (a storage shrunk under a tensor) - K.plan's check
    for op, reach in zip((x, first, index_out), reaches):
        if reach is not None and (op.layout.offset + reach + 1) * op.dtype.itemsize > op.buffer.nbytes:
            K.check_bounds(op, reach)  # raises
    xp = _ptr(x)
    outp = _ptr(first)
    idxp = outp if index_out is None else _ptr(index_out)
    arg = _arg_bits(arg)
    if second_args is None:
        grid, rest = first_args
        K.launch("reduce.cu", expr, dev, (outp, idxp, xp, xp, *rest, np.int32(flags), arg), grid=grid)
        return
    (grid, rest), (grid2, rest2) = first_args, second_args
    n_out, splits = rest2[0], rest2[1]
    part = temp((int(n_out) * int(splits) * _STATE_BYTES,), dtypes.uint8, dev)
    try:
        pp = Pointer(part.buffer)
        K.launch("reduce.cu", expr, dev, (outp, idxp, xp, pp, *rest, _PARTIAL_FLAG, arg), grid=grid)
        K.launch("reduce.cu", expr, dev, (outp, idxp, xp, pp, *rest2, np.int32(flags | _READ_PARTIAL), arg),
                 grid=grid2)
    finally:
        retire(part.buffer)


_GEOMETRY = {}  # _run_reduce's key -> _reduce_geometry's answer (immutable)
_PARTIAL_FLAG = np.int32(_WRITE_PARTIAL)


def _reach(op):
    """The largest element offset the operand's layout reaches (None when it has no elements)."""
    lay = op.layout
    if not _numel(lay.shape):
        return None
    r = 0
    for n, st in zip(lay.shape, lay.stride):
        r += (n - 1) * st
    return r


def _reduce_geometry(name, out, index_out, x, dims, keep_order):
    """Everything _run_reduce launches with but the pointers and the flags: (device, name
    expression, reach per operand (x, first output, index output), (grid, arguments) of the
    first launch and of the second (None unless the reduction is split across blocks)), or
    None when there is no output element. Checks the operands' bounds (K.plan) on the way."""
    shape, stride = tuple(x.layout.shape), tuple(x.layout.stride)
    dev = x.buffer.device
    targets = [t for t in (out, index_out) if t is not None]
    n_out = _numel(targets[0].layout.shape)
    if n_out == 0:
        return None
    outer = _split_outer(shape, stride, dims, [out or index_out, index_out or out])
    oshape, (o_in, o_out, o_idx) = _coalesced(outer, 3)
    red = [(shape[d], stride[d]) for d in dims]
    if keep_order:  # arg ops report row-major positions: keep the dims in order
        rshape, (r_in,) = _coalesce([r for r in red if r[0] != 1], 1)
    else:
        rshape, (r_in,) = _coalesced([r for r in red if r[0] != 1], 1)
    R = _numel(rshape)
    ix = _index(x, *targets)
    cap = _max_blocks(dev)
    inner = n_out == 1 or (R > 1 and min(r_in) <= min(o_in))
    if inner:
        lanes, red_fast = (32 if R <= 512 else 256), 1
    else:
        lanes, red_fast = (1 if R < 8 or n_out >= cap * K.BLOCK else 8), 0
    opb = K.BLOCK // lanes
    gx = min(-(-n_out // opb), 65535)
    splits = 1
    if gx < cap and R >= lanes * _MIN_PER_THREAD:
        splits = min(cap // gx, R // (lanes * _MIN_PER_THREAD), 65535)
    split_len = -(-R // splits) if R else 1
    splits = -(-R // split_len) if R else 1
    expr = f"reduce_kernel<tl::{name}, {x.dtype.ctype}, {(out or x).dtype.ctype}, {ix}>"
    i_ = lambda v: K.index_scalar(v, ix)  # noqa: E731
    lays = tuple(K.strided_layout(sh, st, ix) for sh, st in
                 ((oshape, o_in), (oshape, o_out), (oshape, o_idx), (rshape, r_in)))
    reaches = (_reach(x), _reach(targets[0]), None if index_out is None else _reach(index_out))
    if splits == 1:
        return dev, expr, reaches, ((gx,), (i_(n_out), i_(R), i_(max(R, 1)), np.int64(R), *lays, np.int32(lanes),
                                            np.int32(red_fast))), None
    lanes2 = 32 if splits <= 512 else 256
    gx2 = min(-(-n_out // (K.BLOCK // lanes2)), 65535)
    return dev, expr, reaches, ((gx, splits), (i_(n_out), i_(R), i_(split_len), np.int64(R), *lays, np.int32(lanes),
                                               np.int32(red_fast))), \
        ((gx2,), (i_(n_out), i_(splits), i_(splits), np.int64(R), *lays, np.int32(lanes2), np.int32(1)))


def _converted(op, dtype, temps):
    """op's values as a contiguous device temporary of `dtype` (freed by the caller via temps)."""
    tmp = temp(tuple(op.layout.shape), dtype, op.buffer.device)
    temps.append(tmp)
    copy(tmp, op)
    return tmp


def reduce(out, x, op, dims, arg=None):
    """out = op over the sorted `dims` of x. `arg`: p for norm, correction for var/std."""
    if _reduce1(out, x, op, dims, arg):
        return
    xo, oo = K.operand(x), K.operand(out)
    if _numel(oo.layout.shape) == 0:
        return
    if xo.dtype.category == 3 and op in ("sum", "mean"):  # linear: the real kernel over the (..., 2) parts
        from .complex import parts
        reduce(parts(oo), parts(xo), op, dims, arg)
        return
    if xo.dtype.category == 3 and op in ("count_nonzero", "all", "any"):  # over x != 0
        from .complex import nonzero_mask
        b = nonzero_mask(xo)
        try:
            reduce(oo, b, op, dims, arg)
        finally:
            retire(b.buffer)
        return
    name = _OPS[op]
    conv, via = _kernel_dtypes(name, xo.dtype, oo.dtype)
    if conv is None and via is None:  # the common case: a kernel for this dtype pair, no temporaries
        _run_reduce(name, oo, None, xo, tuple(dims), 0.0 if arg is None else arg, False, _WRITE_VALUES)
        return
    temps = []
    try:
        src = xo if conv is None else _converted(xo, conv, temps)
        dst = oo if via is None else temp(tuple(oo.layout.shape), via, oo.buffer.device)
        if via is not None:
            temps.append(dst)
        _run_reduce(name, dst, None, src, tuple(dims), 0.0 if arg is None else arg, False, _WRITE_VALUES)
        if via is not None:
            copy(oo, dst)
    finally:
        for t in temps:
            retire(t.buffer)


def _reduce1(out, x, op, dims, arg):
    """reduce's commonest call, tensors of a dtype pair with a kernel whose reduction is one launch,
    from a launch record found by the operands' Layout records' identity (_record1: the
    instantiation, driver function, grid and every argument but the pointers and `arg`, worked
    out once per kernel and layout class), so a repeated call only checks each operand's bounds
    and device, makes the pointers and calls the driver once. False (nothing done) where the record
    does not apply: reduce's general path runs, and raises what must be raised."""
    try:
        mo = out._meta
        mx = x._meta
    except AttributeError:  # launch Operands
        return False
    lo, lx = mo[1], mx[1]
    ob, xb = mo[0]._buf, mx[0]._buf
    dev = ob.device
    key = (op, dims, K._wide[0], dev, id(lo), out._dtype, id(lx), x._dtype)
    try:
        rec = _REC1.get(key)
    except TypeError:  # dims as a list
        return False
    if rec is None:
        rec = _record1(out, x, op, dims, key)
        if rec is None:
            return False
    fn, lkey, grid, block, need_o, need_x, isz_o, isz_x, rest, _ = rec
    o_off = lo.offset * isz_o
    x_off = lx.offset * isz_x if need_x else 0  # an operand without elements: its buffer's start (_ptr)
    if xb.device != dev or o_off + need_o > ob.nbytes or x_off + need_x > xb.nbytes:
        return False
    outp = _tuple_new(Pointer, (ob, o_off))
    xp = _tuple_new(Pointer, (xb, x_off))
    args = (outp, outp, xp, xp, *rest, _ARG0 if arg is None else _arg_bits(arg))
    if K._fault_plans:  # K.launch, with the record's function and geometry
        K._faults.hit("launch")
    stream = K.driver.current_stream(dev)
    K.driver.launch(fn, grid, block, args, 0, stream)
    if K._faults.observers:
        K._faults.launched(dev, stream)
    K.LAUNCHES[lkey] = K.LAUNCHES.get(lkey, 0) + 1
    return True


def _record1(out, x, op, dims, key):
    """_reduce1's launch record (remembered under `key`), or None where it does not apply."""
    xo, oo = K.operand(x), K.operand(out)
    if xo.buffer.device != oo.buffer.device or not _numel(oo.layout.shape) or xo.dtype.category == 3:
        return None
    name = _OPS[op]
    if _kernel_dtypes(name, xo.dtype, oo.dtype) != (None, None):
        return None
    g = _reduce_geometry(name, oo, None, xo, tuple(dims), False)  # checks the bounds (K.plan)
    if g is None or g[4] is not None:  # nothing to write, or two launches (split across blocks)
        return None
    dev, expr, reaches, (grid, rest), _ = g
    isz_x, isz_o = xo.dtype.itemsize, oo.dtype.itemsize
    rec = (K.function("reduce.cu", expr, dev), ("reduce.cu", expr), grid, (K.BLOCK,),
           (reaches[1] + 1) * isz_o, 0 if reaches[0] is None else (reaches[0] + 1) * isz_x, isz_o, isz_x,
           (*rest, np.int32(_WRITE_VALUES)), (oo.layout, xo.layout))  # the records whose ids are the key
    if len(_REC1) >= 4096:
        _REC1.clear()
    _REC1[key] = rec
    return rec


_REC1 = {}  # _reduce1's key -> launch record
_ARG0 = np.uint64(0)  # 0.0's bits
_tuple_new = tuple.__new__


def _arg_bits(arg):
    """reduce_kernel's double argument (norm's p, var/std's correction) as its bits: the kernel takes an
    unsigned long long, so its float instantiations read it without an FP64 instruction."""
    return np.float64(arg).view(np.uint64)


def foreach_norm(out, tensors, p):
    """out[i] = the p-norm of all of tensors[i] (torch._foreach_norm): one reduce launch each,
    straight into out's element i."""
    oo = K.operand(out)
    lay = oo.layout
    step = lay.stride[0] if lay.shape else 0
    for i, t in enumerate(tensors):
        xo = K.operand(t)
        elem = K.Operand(oo.buffer, L.make((), (), lay.offset + i * step), oo.dtype)
        reduce(elem, xo, "norm", tuple(range(len(xo.layout.shape))), p)


def arg_reduce(values, indices, x, op, dim):
    """Index of the first max/min along `dim` (NaN the extreme) and, when `values` is given, the
    value there; dim=None: the flat row-major index over the whole tensor."""
    xo = K.operand(x)
    nd = len(xo.layout.shape)
    dims = tuple(range(nd)) if dim is None else ((dim,) if nd else ())
    vo = None if values is None else K.operand(values)
    flags = _WRITE_INDEX | (0 if vo is None else _WRITE_VALUES)
    _run_reduce("ArgMax" if op == "max" else "ArgMin", vo, K.operand(indices), xo, dims, 0.0, True, flags)


def _rows(x, o, dim):
    """(row shape, [in strides, out strides], length along dim, in stride, out stride) for a kernel
    walking `dim` of every row; a 0-dim tensor is one row of one element."""
    shape = tuple(x.layout.shape)
    if not shape:
        return (), [(), ()], 1, 0, 0
    rows = [(shape[d], x.layout.stride[d], o.layout.stride[d]) for d in range(len(shape)) if d != dim and shape[d] != 1]
    rshape, strides = _coalesced(rows, 2)
    return rshape, strides, shape[dim], x.layout.stride[dim], o.layout.stride[dim]


def _along_fastest(in_stride, row_strides, length):
    """Whether the dim walked is the input's fastest varying (or the only one with work)."""
    return length > 1 and (not row_strides or in_stride <= min(row_strides))


def cumulative(out, x, op, dim):
    """Running sum/prod along `dim` in the output's dtype (float32 for float16/bfloat16); op "argmax" /
    "argmin": the int64 position of the running maximum / minimum (cummax / cummin's indices)."""
    if op in ("argmax", "argmin"):
        return _cumulative_arg(K.operand(out), K.operand(x), op, dim)
    if K.operand(x).dtype.category == 3 and op == "sum":  # linear: over the (..., 2) parts
        from .complex import parts
        if not K.operand(x).layout.shape:  # a 0-dim running sum is the value itself
            return copy(out, x)
        return cumulative(parts(out), parts(x), op, dim)
    xo, oo = K.operand(x), K.operand(out)
    n = _numel(oo.layout.shape)
    if n == 0:
        return
    temps = []
    try:
        if f"scan_seq<{xo.dtype.ctype}, {oo.dtype.ctype}, int>" not in _SCAN:
            xo = _converted(xo, oo.dtype, temps)
        rshape, (s_in, s_out), length, st_in, st_out = _rows(xo, oo, dim)
        n_rows = _numel(rshape)
        ix = _index(xo, oo)
        i_ = lambda v: K.index_scalar(v, ix)  # noqa: E731
        names = f"{xo.dtype.ctype}, {oo.dtype.ctype}, {ix}"
        args = (_ptr(oo), _ptr(xo), i_(n_rows), i_(length),
                K.strided_layout(rshape, s_in, ix), K.strided_layout(rshape, s_out, ix), i_(st_in), i_(st_out),
                np.int32(op == "prod"))
        dev = oo.buffer.device
        if length >= 2 * SCAN_CHUNK and 2 * n_rows <= _max_blocks(dev):
            _scan_chunked(oo, xo, names, n_rows, length, rshape, s_in, s_out, st_in, st_out, op, ix, temps)
        elif length >= 64 and (_along_fastest(st_in, s_in, length) or n_rows < _max_blocks(dev)):
            K.launch("scan.cu", f"scan_rows<{names}>", oo.buffer.device, args, grid=(min(n_rows, 65535),))
        else:
            K.launch("scan.cu", f"scan_seq<{names}>", oo.buffer.device, args, n=n_rows)
    finally:
        for t in temps:
            retire(t.buffer)


SCAN_CHUNK = 4096  # elements of a row one block scans in the multi-block scan (16 tiles of 256)
# the accumulator dtype of a scan's output dtype (tl::AccOf in kernels/tensorlab/reduce.cuh)
_SCAN_ACC = {"__half": dtypes.float32, "__nv_bfloat16": dtypes.float32, "float": dtypes.float32,
             "double": dtypes.float64}


def _scan_chunked(oo, xo, names, n_rows, length, rshape, s_in, s_out, st_in, st_out, op, ix, temps, arg=False):
    """Few long rows: one block per chunk of SCAN_CHUNK elements instead of one per row (scan.cu's
    reduce-then-scan: chunk totals, their running prefix per row, each chunk scanned from its prefix).
    arg: the index scans (scan_arg_*), whose totals are 16-byte (key, position) records."""
    dev = oo.buffer.device
    chunks = -(-length // SCAN_CHUNK)
    items = n_rows * chunks
    if arg:
        totals = temp((n_rows, chunks, 2), dtypes.int64, dev)  # ArgState<K>: K then a long long, 16 bytes
        key = _SCAN_ACC.get(xo.dtype.ctype, dtypes.int64).ctype
        kind, flag = "scan_arg", np.int32(op == "argmax")
    else:
        acc = _SCAN_ACC.get(oo.dtype.ctype, dtypes.int64)
        totals = temp((n_rows, chunks), acc, dev)
        kind, flag = "scan", np.int32(op == "prod")
    temps.append(totals)
    i_ = lambda v: K.index_scalar(v, ix)  # noqa: E731
    grid = (min(items, 65535),)
    lay_in = K.strided_layout(rshape, s_in, ix)
    common = (i_(items), K.divisor(chunks, ix), i_(length), i_(SCAN_CHUNK))
    K.launch("scan.cu", f"{kind}_chunk_totals<{names}>", dev,
             (_ptr(totals), _ptr(xo)) + common + (lay_in, i_(st_in), flag), grid=grid)
    per_row = K.strided_layout((n_rows,), (chunks,), ix)
    if arg:
        K.launch("scan.cu", f"scan_arg_totals<{key}, {ix}>", dev,
                 (_ptr(totals), i_(n_rows), i_(chunks), per_row, flag), grid=(min(n_rows, 65535),))
    else:
        acc_names = f"{acc.ctype}, {acc.ctype}, {ix}"
        K.launch("scan.cu", f"scan_rows<{acc_names}>", dev,
                 (_ptr(totals), _ptr(totals), i_(n_rows), i_(chunks), per_row, per_row, i_(1), i_(1), flag),
                 grid=(min(n_rows, 65535),))
    K.launch("scan.cu", f"{kind}_chunk_apply<{names}>", dev,
             (_ptr(oo), _ptr(xo), _ptr(totals)) + common + (lay_in, K.strided_layout(rshape, s_out, ix), i_(st_in),
                                                            i_(st_out), flag), grid=grid)


def _cumulative_arg(oo, xo, op, dim):
    """cummax / cummin's indices into the int64 `oo`: the launch choice of cumulative (several blocks per row
    for few long rows, a block per row, or a thread per row), with scan.cu's scan_arg_* kernels."""
    if _numel(oo.layout.shape) == 0:
        return
    temps = []
    try:
        if f"scan_arg_seq<{xo.dtype.ctype}, int>" not in _SCAN:  # bool and the narrow integers: as int64
            xo = _converted(xo, dtypes.int64, temps)
        rshape, (s_in, s_out), length, st_in, st_out = _rows(xo, oo, dim)
        n_rows = _numel(rshape)
        ix = _index(xo, oo)
        i_ = lambda v: K.index_scalar(v, ix)  # noqa: E731
        names = f"{xo.dtype.ctype}, {ix}"
        args = (_ptr(oo), _ptr(xo), i_(n_rows), i_(length), K.strided_layout(rshape, s_in, ix),
                K.strided_layout(rshape, s_out, ix), i_(st_in), i_(st_out), np.int32(op == "argmax"))
        dev = oo.buffer.device
        if length >= 2 * SCAN_CHUNK and 2 * n_rows <= _max_blocks(dev):
            _scan_chunked(oo, xo, names, n_rows, length, rshape, s_in, s_out, st_in, st_out, op, ix, temps, arg=True)
        elif length >= 64 and (_along_fastest(st_in, s_in, length) or n_rows < _max_blocks(dev)):
            K.launch("scan.cu", f"scan_arg_rows<{names}>", dev, args, grid=(min(n_rows, 65535),))
        else:
            K.launch("scan.cu", f"scan_arg_seq<{names}>", dev, args, n=n_rows)
    finally:
        for t in temps:
            retire(t.buffer)


def softmax(out, x, dim, log):
    """exp(x - max) / sum(exp(x - max)) along `dim` (or its log), fused in one kernel, computed in
    float for float16/bfloat16 inputs."""
    xo, oo = K.operand(x), K.operand(out)
    if _numel(oo.layout.shape) == 0:
        return
    temps = []
    try:
        if xo.dtype is not oo.dtype:
            xo = _converted(xo, oo.dtype, temps)
        rshape, (s_in, s_out), length, st_in, st_out = _rows(xo, oo, dim)
        n_rows = _numel(rshape)
        ix = _index(xo, oo)
        i_ = lambda v: K.index_scalar(v, ix)  # noqa: E731
        dev = oo.buffer.device
        head = (_ptr(oo), _ptr(xo), i_(n_rows), i_(length),
                K.strided_layout(rshape, s_in, ix), K.strided_layout(rshape, s_out, ix), i_(st_in), i_(st_out))
        ct = f"{oo.dtype.ctype}, {ix}"
        if _along_fastest(st_in, s_in, length) or n_rows < 32:
            lanes = 32 if length <= 1024 else 256
            grid = min(-(-n_rows // (K.BLOCK // lanes)), 65535)
            K.launch("softmax.cu", f"softmax_rows<{ct}>", dev, head + (np.int32(lanes), np.int32(log)), grid=(grid,))
        else:
            K.launch("softmax.cu", f"softmax_cols<{ct}>", dev, head + (np.int32(log),), n=n_rows)
    finally:
        for t in temps:
            retire(t.buffer)
