"""CUDA shape and index primitives (the names of backends/cpu/shape.py). Index ops go through the
index rows machinery of indexing.py (bounds check first, then one gather/scatter kernel); flip is
the copy kernel over a view with negative strides; cat, roll and tril/triu are kernels/shape.cu;
nonzero and masked_select kernels/scan_select.cu; sort and topk kernels/sort.cu (topk sorts the
rows and keeps the first k: simple, stable, O(n log n) per row rather than a selection)."""
from __future__ import annotations

import numpy as np

from ... import dtypes, layout as L
from ...device import Device
from ...layout import coalesce, contiguous_strides
from ...errors import index_out_of_range
from . import launch as K
from .active import driver
from .driver import Pointer
from . import device_checks
from .indexing import (PUT_ADD, PUT_MAX, PUT_MIN, PUT_MUL, PUT_SET, Rows, Scan, as_1d, check_rows, dims_table, gather_rows, numel, overlaps,
                       put_rows, relayout, rowmajor_layouts, staged, write_coords)
from .memory import copy_kernel, temp, allocate, buffer_ptr, retire

__all__ = ("cat", "stack", "flip", "roll", "gather", "scatter", "index_select", "index_fill", "masked_select", "nonzero",
           "sort", "topk", "triangle")


def stack(out, tensors, dim):
    """cat along `dim` of the tensors (all of one shape) with a size-1 dim inserted there: the same
    one launch, over operands whose layouts gain that dim (one new layout per distinct input layout)."""
    unsqueezed = {}
    parts = []
    for t in tensors:
        if isinstance(t, K.Operand):  # a complex tensor's part view (complex.SPLIT runs stack per part)
            buf, lay, dt = t.buffer, t.layout, t.dtype
        else:
            storage, lay = t._meta
            buf, dt = storage._buf, t._dtype
        u = unsqueezed.get(lay)
        if u is None:
            u = unsqueezed[lay] = L.Layout(L.Size(lay.shape[:dim] + (1,) + lay.shape[dim:]),
                                           lay.stride[:dim] + (0,) + lay.stride[dim:], lay.offset)
        parts.append(K._operand_of(buf, u, dt))
    cat(out, parts, dim)


def _range_error(op, dim, size):
    return lambda k, bad: index_out_of_range(op, bad, dim, size)


def _cut(lay, dim, shape):
    """`lay`'s strides over `shape` with the stride of `dim` zeroed (that dim comes from an index)."""
    st = list(lay.stride)
    st[dim] = 0
    return shape, st


# -- cat, flip, roll, triangle -------------------------------------------------------------------
_PART = np.dtype([("ptr", np.int64), ("start", np.int64), ("stride", np.int64, (K.MAX_DIMS,))])


def cat(out, tensors, dim):
    """All parts in one launch (an out= target is never left half written): parts of another
    dtype, or inside out's bytes, are first staged in out's dtype; a table of the parts (address,
    start along dim, strides) goes to the device."""
    o = K.operand(out)
    dev = o.buffer.device
    dt = o.dtype
    parts, staged_bufs = [], []
    try:
        for t in tensors:
            op = K.operand(t)
            if op.layout.shape[dim] == 0:
                continue
            if op.dtype is not dt or overlaps(op, o):
                tmp = temp(op.layout.shape, dt, dev)
                staged_bufs.append(tmp.buffer)
                copy_kernel(tmp, op)
                op = tmp
            parts.append(op)
        shape = tuple(o.layout.shape)
        before, bst = coalesce(shape[:dim], o.layout.stride[:dim], *(p.layout.stride[:dim] for p in parts))
        after, ast = coalesce(shape[dim + 1:], o.layout.stride[dim + 1:], *(p.layout.stride[dim + 1:] for p in parts))
        table = np.zeros(len(parts), _PART)
        start = 0
        nd = len(before) + 1 + len(after)
        for k, p in enumerate(parts):
            if nd > K.MAX_DIMS:
                break  # strided_layout below refuses it with the message
            table["ptr"][k] = buffer_ptr(p.buffer) + p.layout.offset * dt.itemsize
            table["start"][k] = start
            table["stride"][k, :nd] = bst[k + 1] + (p.layout.stride[dim],) + ast[k + 1]
            start += p.layout.shape[dim]
        plan = K.Plan((o,))
        layout = K.strided_layout(before + (shape[dim],) + after, bst[0] + (o.layout.stride[dim],) + ast[0],
                                  plan.index)
        buf = allocate(table.nbytes, Device("cuda", dev))
        staged_bufs.append(buf)
        driver.memcpy_htod(Pointer(buf), table, table.nbytes, driver.current_stream(dev), False)
        K.launch("shape.cu", f"cat<{dt.ctype}, {plan.index}>", dev,
                 (plan.ptrs[0], plan.count, layout, np.int32(len(before)), Pointer(buf), np.int32(len(parts))),
                 n=plan.n)
    finally:
        for b in staged_bufs:
            retire(b)


def flip(out, x, dims):
    """A copy from x seen with negated strides along dims (starting at their last element)."""
    a = K.operand(x)
    lay = a.layout
    st, off = list(lay.stride), lay.offset
    for d in set(dims):
        if lay.shape[d]:
            off += (lay.shape[d] - 1) * st[d]
        st[d] = -st[d]
    copy_kernel(K.operand(out), relayout(a, lay.shape, st, off))


def roll(out, x, shifts, dims):
    o, a = K.operand(out), K.operand(x)
    dev = o.buffer.device
    staged_op = None
    if dims is None:  # the flattened tensor: a contiguous copy viewed as 1-D
        n = numel(a.layout.shape)
        if tuple(a.layout.stride) != contiguous_strides(a.layout.shape):
            a = staged_op = staged(a, dev)
        a = relayout(a, (n,), (1,))
        o = relayout(o, (n,), (1,))  # the front end's fresh, contiguous result
        dims, shifts = [0], [shifts[0]]
    try:
        shape = tuple(o.layout.shape)
        shift = [0] * len(shape)
        for s, d in zip(shifts, dims):
            shift[d] += s
        shift = [s % n if n else 0 for s, n in zip(shift, shape)]
        # marker strides keep rolled dims from merging with any other; unrolled ones may merge
        marker = [-1 - d if shift[d] else s for d, s in enumerate(contiguous_strides(shape))]
        cshape, (ost, ast, _, csh) = coalesce(shape, o.layout.stride, a.layout.stride, marker, shift)
        p = K.Plan((o, a))
        ix = p.index
        K.launch("shape.cu", f"roll<{o.dtype.ctype}, {ix}>", dev,
                 (p.ptrs[0], p.ptrs[1], p.count, K.strided_layout(cshape, ost, ix), K.strided_layout(cshape, ast, ix),
                  K.strided_layout(csh, [0] * len(csh), ix)), n=p.n)
    finally:
        if staged_op is not None:
            retire(staged_op.buffer)


def triangle(out, x, diagonal, upper):
    o, a = K.operand(out), K.operand(x)
    p = K.Plan((o, a))
    if not p.n:
        return
    lo, la = rowmajor_layouts([o, a], p.index, keep=2)
    K.launch("shape.cu", f"triangle<{o.dtype.ctype}, {p.index}>", p.device,
             (p.ptrs[0], p.ptrs[1], p.count, lo, la, np.int64(diagonal), np.bool_(upper)), n=p.n)


# -- gather, scatter, index_select, index_fill ---------------------------------------------------
def gather(out, x, dim, index):
    """out[i][j] = x[index[i][j]][j] (for dim 0), and likewise along any dim."""
    o, a = as_1d(K.operand(out)), as_1d(K.operand(x))
    dev = a.buffer.device
    rows = Rows([index], dev)
    try:
        size = a.layout.shape[dim]
        guard = check_rows(rows, [size], False, dev, _range_error("gather", dim, size), "gather")
        if not size:
            return  # nothing is in range of an empty dim: the check reports it
        shape = tuple(rows.op.layout.shape)
        gather_rows(o, relayout(a, *_cut(a.layout, dim, shape)), rows.op, rows,
                    dims_table([size], [a.layout.stride[dim]]), guard)
    finally:
        rows.close()


def scatter(out, dim, index, src, reduce=None, in_range=False):
    """out[index[i][j]][j] = src[i][j] (dim 0; any dim likewise), src a tensor or a number;
    reduce="add"/"multiply"/"amax"/"amin" combines with the existing value, duplicates included (atomics).
    `in_range`: the caller already checked this index against this dim (no second check, no host wait)."""
    o = as_1d(K.operand(out))
    dev = o.buffer.device
    rows = Rows([index], dev, avoid=o)
    try:
        size = o.layout.shape[dim]
        guard = device_checks.unchecked(dev) if in_range else check_rows(
            rows, [size], False, dev, _range_error("scatter", dim, size), "scatter")
        if not size:
            return
        shape = tuple(rows.op.layout.shape)
        s, value = None, src
        if hasattr(src, "_meta") or isinstance(src, K.Operand):
            s = as_1d(K.operand(src))
            s = relayout(s, shape, s.layout.stride)
            value = None

        def view(t):
            return relayout(t, *_cut(t.layout, dim, shape)), dims_table([size], [t.layout.stride[dim]])

        mode = {None: PUT_SET, "add": PUT_ADD, "multiply": PUT_MUL, "amax": PUT_MAX, "amin": PUT_MIN}[reduce]
        put_rows(o, view, s, value, rows, rows.op, mode, guard)
    finally:
        rows.close()


def _along(lay, dim, n):
    shape = list(lay.shape)
    shape[dim] = n
    return tuple(shape)


def index_select(out, x, dim, index):
    o, a = K.operand(out), as_1d(K.operand(x))
    dev = a.buffer.device
    rows = Rows([index], dev)
    try:
        size = a.layout.shape[dim]
        guard = check_rows(rows, [size], False, dev, _range_error("index_select", dim, size), "index_select")
        if not size:
            return
        n = numel(rows.op.layout.shape)
        shape = _along(a.layout, dim, n)
        o = relayout(o, shape, o.layout.stride if o.layout.shape else (1,))
        b = rows.embedded(shape, [dim])
        gather_rows(o, relayout(a, *_cut(a.layout, dim, shape)), b, rows, dims_table([size], [a.layout.stride[dim]]),
                    guard)
    finally:
        rows.close()


def index_fill(out, dim, index, value):
    o = as_1d(K.operand(out))
    dev = o.buffer.device
    rows = Rows([index], dev, avoid=o)
    try:
        size = o.layout.shape[dim]
        guard = check_rows(rows, [size], True, dev, _range_error("index_fill", dim, size), "index_fill")
        if not size:
            return
        shape = _along(o.layout, dim, numel(rows.op.layout.shape))

        def view(t):
            return relayout(t, *_cut(t.layout, dim, shape)), dims_table([size], [t.layout.stride[dim]])

        put_rows(o, view, None, value, rows, rows.embedded(shape, [dim]), PUT_SET, guard)
    finally:
        rows.close()


# -- data-dependent sizes ------------------------------------------------------------------------
def masked_select(out, x, mask):
    """The elements of x where mask (same shape) is true, in row-major order."""
    o, a, m = K.operand(out), K.operand(x), K.operand(mask)
    if not numel(a.layout.shape):
        return
    sc = Scan([a, m])
    try:
        po = K.Plan((o,))
        K.launch("scan_select.cu", f"compact_values<{a.dtype.ctype}, {sc.plan.index}>", sc.plan.device,
                 (sc.plan.ptrs[0], sc.plan.ptrs[1], sc.plan.count, sc.layouts[0], sc.layouts[1], Pointer(sc.offsets),
                  po.ptrs[0], np.int64(o.layout.stride[0] if o.layout.shape else 1)),
                 grid=(sc.grid,), block=256)
    finally:
        sc.close()


def nonzero(out, x):
    """Row-major indices (n, ndim) of the nonzero elements; the front end sized out by counting."""
    o = K.operand(out)
    if not numel(o.layout.shape):
        return
    p = K.Plan((o,))
    write_coords(p.ptrs[0], o.layout.stride[0], o.layout.stride[1], x)


# -- sort, topk ----------------------------------------------------------------------------------
SEGMENT = 2048  # rows up to this length sort in shared memory in one block


def _rows(op, dim, index):
    """(layout over the dims other than `dim`, element stride along dim) of a 1-D-or-more operand."""
    lay = op.layout
    shape = lay.shape[:dim] + lay.shape[dim + 1:]
    stride = lay.stride[:dim] + lay.stride[dim + 1:]
    cshape, (cst,) = coalesce(tuple(shape), tuple(stride))
    return K.strided_layout(cshape, cst, index), K.index_scalar(lay.stride[dim], index)


def _sorted_rows(values, indices, x, dim, descending, limit):
    """values/indices along dim = the first `limit` of x's rows in stable (descending) order."""
    a = as_1d(K.operand(x))
    io = as_1d(K.operand(indices))
    vo = as_1d(K.operand(values)) if values is not None else None
    dev = a.buffer.device
    length = a.layout.shape[dim]
    nrows = numel(a.layout.shape) // length if length else 0
    if not nrows:
        return
    ops = (a, io) if vo is None else (a, io, vo)
    ix = "long long" if any(K.Plan((t,)).index == "long long" for t in ops) else K.Plan((a,)).index
    ix = "long long" if ix == "long long" or numel(a.layout.shape) + K.MAX_GRID_THREADS > K.INT_MAX else ix
    ct = a.dtype.ctype
    xl, xs = _rows(a, dim, ix)
    il, is_ = _rows(io, dim, ix)
    vl, vs = _rows(vo, dim, ix) if vo is not None else (il, is_)
    vptr = Pointer(vo.buffer, vo.layout.offset * vo.dtype.itemsize) if vo is not None else _ptr(a)
    has_values = np.bool_(vo is not None)
    down = np.bool_(descending)
    if length <= SEGMENT:
        padded = 1 << max(0, (length - 1).bit_length())
        block = max(32, min(256, padded // 2))
        K.launch("sort.cu", f"sort_segments<{ct}, {ix}>", dev,
                 (_ptr(a), vptr, _ptr(io), has_values, K.index_scalar(nrows, ix), K.index_scalar(length, ix),
                  np.int32(length), np.int32(padded), K.index_scalar(limit, ix), down, xl, xs, vl, vs, il, is_),
                 grid=(K.grid_for(nrows * block, dev, block),), block=block, shared_mem=padded * (8 + a.dtype.itemsize))
        return
    # longer rows: sorted segments into a contiguous scratch, merge passes, the last into the outputs
    n = nrows * length
    bufs = [temp((n,), a.dtype, dev), temp((n,), dtypes.int64, dev), temp((n,), a.dtype, dev),
            temp((n,), dtypes.int64, dev)]
    try:
        sl = K.strided_layout((nrows,), (length,), ix)
        one = K.index_scalar(1, ix)
        segs = nrows * (-(-length // SEGMENT))
        K.launch("sort.cu", f"sort_segments<{ct}, {ix}>", dev,
                 (_ptr(a), _ptr(bufs[0]), _ptr(bufs[1]), np.bool_(True), K.index_scalar(nrows, ix),
                  K.index_scalar(length, ix), np.int32(SEGMENT), np.int32(SEGMENT), K.index_scalar(length, ix), down,
                  xl, xs, sl, one, sl, one),
                 grid=(K.grid_for(segs * 256, dev),), block=256, shared_mem=SEGMENT * (8 + a.dtype.itemsize))
        width = SEGMENT
        src, dst = (bufs[0], bufs[1]), (bufs[2], bufs[3])
        while True:
            last = 2 * width >= length
            if last:
                args = (vptr, _ptr(io), has_values, K.index_scalar(nrows, ix), K.divisor(length, ix),
                        K.divisor(width, ix), K.index_scalar(limit, ix), down, vl, vs, il, is_)
            else:
                args = (_ptr(dst[0]), _ptr(dst[1]), np.bool_(True), K.index_scalar(nrows, ix),
                        K.divisor(length, ix), K.divisor(width, ix), K.index_scalar(length, ix), down,
                        sl, one, sl, one)
            K.launch("sort.cu", f"sort_merge<{ct}, {ix}>", dev, (_ptr(src[0]), _ptr(src[1])) + args, n=n)
            if last:
                break
            src, dst = dst, src
            width *= 2
    finally:
        for b in bufs:
            retire(b.buffer)


def _ptr(op):
    return Pointer(op.buffer, op.layout.offset * op.dtype.itemsize)


def sort(values, indices, x, dim, descending, stable):
    """Sorted values (when `values` is given) and their source indices along `dim`; always stable
    (equal keys keep their order, NaN above every number), which satisfies stable=False too."""
    length = K.operand(x).layout.shape[dim] if K.operand(x).layout.shape else 1
    _sorted_rows(values, indices, x, dim, descending, length)


def topk(values, indices, x, k, dim, largest):
    """The k largest (or smallest) along dim, sorted, ties in index order: the first k of the
    stable sort, written directly by the sort's last kernel."""
    if k:
        _sorted_rows(values, indices, x, dim, largest, k)
