"""CUDA indexing primitives (the names of backends/cpu/indexing.py): advanced-index gather and
scatter, and boolean masks to index tensors; plus the machinery the index ops of shape.py share.

Every index op is one form (kernels/index.cu): an iteration shape walked by layouts for the
output/destination, the source and the index rows, and a table of the indexed dimensions (size and
stride). Index values are checked first, on the device and without a host wait (device_checks.py):
the check kernel marks the op's guard word, the gather/put kernel then does nothing, and the CPU
backend's exception is raised at the next host wait, with the launching call's file:line. Masks are counted and compacted by kernels/scan_select.cu."""
from __future__ import annotations

import numpy as np

from ... import dtypes
from ... import global_settings
from ...device import Device
from ...layout import Layout, coalesce, contiguous_strides
from ...sync import host_wait
from . import device_checks
from . import launch as K
from .active import driver
from .driver import Pointer
from .memory import byte_range, copy_kernel, temp, allocate, retire
from .reduction import cumulative

__all__ = ("check_flag", "index", "index_put", "mask_count", "nonzero_indices")

_INT64 = dtypes.int64
PUT_SET, PUT_ADD, PUT_MUL, PUT_MAX, PUT_MIN = 0, 1, 2, 3, 4


# -- operands ------------------------------------------------------------------------------------
def as_1d(op):
    """A 0-dim operand as one element of a 1-D one (the CPU backend's _at_least_1d)."""
    lay = op.layout
    if lay.shape:
        return op
    return K.Operand(op.buffer, Layout((1,), (1,), lay.offset), op.dtype)


def relayout(op, shape, stride, offset=None):
    return K.Operand(op.buffer, Layout(tuple(shape), tuple(stride), op.layout.offset if offset is None else offset),
                     op.dtype)


def overlaps(a, b):
    if a.buffer is not b.buffer:
        return False
    a0, a1 = byte_range(a)
    b0, b1 = byte_range(b)
    return a0 < b1 and b0 < a1


def staged(op, device):
    """A contiguous copy of op in a scratch buffer (the caller retires it)."""
    tmp = temp(op.layout.shape, op.dtype, device)
    copy_kernel(tmp, op)
    return tmp


def numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def rowmajor_layouts(ops, index, keep=0):
    """Layouts of operands sharing one shape, coalesced without reordering (row-major linear order
    is kept: nonzero, cat, triangle, sort rows), the last `keep` dims never merged."""
    shape = tuple(ops[0].layout.shape)
    cut = len(shape) - keep
    head, heads = coalesce(shape[:cut], *(tuple(o.layout.stride)[:cut] for o in ops))
    tail = shape[cut:]
    return [K.strided_layout(head + tail, st + tuple(o.layout.stride)[cut:], index) for o, st in zip(ops, heads)]


def dims_table(sizes, strides):
    """The `dims` argument of index.cu: per indexed dim, its size and element stride."""
    return K.strided_layout(tuple(sizes), tuple(strides), "long long")


def _row_index(p, n):
    """The index type of the bounds check over n = rows * row length elements."""
    return "long long" if p.index == "long long" or n + K.MAX_GRID_THREADS > K.INT_MAX else p.index


# -- index rows and their bounds check -----------------------------------------------------------
class Rows:
    """Index tensors of one shape as int64 rows: `op` (an Operand over that shape, row 0) and the
    element distance between rows. One int64 tensor is used in place; several, or int32 ones, or
    one inside the written buffer, are staged into one scratch buffer (retired by close())."""

    def __init__(self, tensors, device, avoid=None):
        ops = [K.operand(t) for t in tensors]
        self.tensors = tensors
        self.count = len(ops)
        self.scratch = None
        self.stride = 0
        if len(ops) == 1 and ops[0].dtype is _INT64 and not (avoid is not None and overlaps(ops[0], avoid)):
            self.op = as_1d(ops[0])
            return
        shape = tuple(as_1d(ops[0]).layout.shape)
        nb = numel(shape)
        self.scratch = allocate(max(1, len(ops) * nb) * 8, Device("cuda", device))
        strides = contiguous_strides(shape)
        for k, o in enumerate(ops):
            copy_kernel(K.Operand(self.scratch, Layout(shape, strides, k * nb), _INT64), as_1d(o))
        self.op = K.Operand(self.scratch, Layout(shape, strides, 0), _INT64)
        self.stride = nb

    def embedded(self, shape, positions):
        """Row 0 seen over an iteration `shape` whose dims `positions` are the index dims."""
        st = [0] * len(shape)
        for p, s in zip(positions, self.op.layout.stride):
            st[p] = s
        return relayout(self.op, shape, st)

    def close(self):
        if self.scratch is not None:
            retire(self.scratch)
            self.scratch = None


def check_rows(rows, sizes, allow_negative, device, fail, op="index"):
    """Queue the bounds check of the index rows (device_checks.py): returns the Guard the op's
    gather/put kernel takes. fail(k, bad_value) builds the error for index tensor k."""
    nb = numel(rows.op.layout.shape)
    if not nb or not rows.count:
        return device_checks.unchecked(device)
    p = K.Plan((rows.op,))
    n = rows.count * nb
    ix = _row_index(p, n)
    guard, sticky = device_checks.start_check(device, op, fail)
    row = K.strided_layout(p.shape, p.strides[0], ix)
    K.launch("index.cu", f"index_check<{ix}>", device,
             (p.ptrs[0], K.divisor(nb, ix), K.index_scalar(n, ix), row, np.int64(rows.stride),
              dims_table(sizes, [0] * len(sizes)), np.bool_(allow_negative)) + guard.args + (sticky,), n=n)
    device_checks.finish_check(device, guard)
    return guard


def check_flag(flag, op, fail):
    """Raise fail(0, 1) when the one-element bool tensor `flag` (computed on the device) is True: on
    CUDA without a host wait, at the next one (device_checks.py); returns the op's Guard."""
    f = K.operand(flag)
    return relay_flag(K.Plan((f,)).ptrs[0], f.buffer.device, op, fail)


def relay_flag(pointer, device, op, fail):
    """check_flag over a pointer to a bool (or the low byte of an int32 flag) another kernel wrote."""
    guard, sticky = device_checks.start_check(device, op, fail, f"the result of {op} is not valid")
    K.launch("index.cu", "check_flag", device, (pointer,) + guard.args + (sticky,), grid=(1,), block=1)
    device_checks.finish_check(device, guard, reason=f"{op} check")
    return guard


# -- the two kernels ---------------------------------------------------------------------------------
def gather_rows(out, src, rows_op, rows, dims, guard):
    """out[i] = src[s(i) + sum_k rows_k[b(i)] * stride_k] (index.cu index_gather); nothing when
    the guard's check failed."""
    p = K.Plan((out, src, rows_op))
    if not p.n:
        return
    lay = p.layouts
    K.launch("index.cu", f"index_gather<{out.dtype.ctype}, {p.index}>", p.device,
             (p.ptrs[0], p.ptrs[1], p.ptrs[2], p.count, np.int64(rows.stride), lay[0], lay[1], lay[2], dims)
             + guard.args, n=p.n)


def _accumulator(dt):
    if dt in (dtypes.float16, dtypes.bfloat16):
        return dtypes.float32
    return dtypes.int32 if dt.itemsize < 4 else dt


def put_rows(target, dst_view, src, value, rows, rows_view, mode, guard):
    """dst[d(i) + sum_k rows_k[b(i)] * stride_k] (=, +=, *=) src[s(i)] (or `value` when src is None).
    `target` is the written tensor's operand; dst_view(op) gives, for an operand laid out as target
    or as a contiguous scratch copy of it, (its iteration view, the dims table).
    Add/multiply into a dtype without 32/64-bit atomics goes through a float or int32 scratch copy
    of target (one rounding or wrap when copied back, as the CPU backend's float32 accumulation)."""
    dt = target.dtype
    dev = target.buffer.device
    if src is not None and overlaps(src, target):
        src = staged(src, dev)
        try:
            return put_rows(target, dst_view, src, value, rows, rows_view, mode, guard)
        finally:
            retire(src.buffer)
    if mode in (PUT_ADD, PUT_MUL) and dt.is_floating_point:  # float atomics: the rounding depends on arrival order
        global_settings.alert_not_deterministic(
            "index_put_(accumulate=True)/scatter_add_/scatter_(reduce=) on CUDA float tensors")
    acc = dt if mode == PUT_SET else _accumulator(dt)
    scratch = None
    dst = target
    if acc is not dt:
        scratch = temp(target.layout.shape, acc, dev)
        copy_kernel(scratch, target)
        dst = scratch
    try:
        d, dims = dst_view(dst)
        s = src if src is not None else relayout(target, d.layout.shape, [0] * len(d.layout.shape))
        p = K.Plan((d, s, rows_view))
        if p.n:
            lay = p.layouts
            v = K.scalar(0 if value is None else value, dt)
            K.launch("index.cu", f"index_put<{dt.ctype}, {acc.ctype}, {p.index}, {mode}>", p.device,
                     (p.ptrs[0], p.ptrs[1], v, np.bool_(src is not None), p.ptrs[2], p.count, np.int64(rows.stride),
                      lay[0], lay[1], lay[2], dims) + guard.args, n=p.n)
        if scratch is not None:
            copy_kernel(target, scratch)
    finally:
        if scratch is not None:
            retire(scratch.buffer)


# -- advanced indexing ---------------------------------------------------------------------------
def _geometry(base, indices, result_shape):
    """For x[indices] over `base` (the indexed operand): (iteration view of base with 0 strides on
    the indexed dims, positions of the index dims in the result, index dim sizes and strides)."""
    lay = base.layout
    dims = [d for d, t in enumerate(indices) if t is not None]
    bnd = len(result_shape) - (len(lay.shape) - len(dims))
    first, k = (dims[0], len(dims)) if dims else (0, 0)
    adjacent = dims == list(range(first, first + k))
    start = first if adjacent else 0
    positions = list(range(start, start + bnd))
    rest = [d for d in range(len(lay.shape)) if d not in dims]
    others = [p for p in range(len(result_shape)) if p not in positions]
    st = [0] * len(result_shape)
    for p, d in zip(others, rest):
        st[p] = lay.stride[d]
    view = relayout(base, result_shape, st)
    return view, positions, [lay.shape[d] for d in dims], [lay.stride[d] for d in dims]


def _index_error(sizes, indices):
    dims = [d for d, t in enumerate(indices) if t is not None]
    return lambda k, bad: IndexError(f"index {bad} is out of bounds for dimension {dims[k]} with size {sizes[k]}")


def index(out, src, indices, in_range=False):
    """out[...] = src[indices]. With `in_range` (indices from a mask) the bounds check, and its
    host sync, is skipped."""
    o, s = K.operand(out), K.operand(src)
    dev = s.buffer.device
    shape = tuple(o.layout.shape)
    view, positions, sizes, strides = _geometry(s, indices, shape)
    rows = Rows([t for t in indices if t is not None], dev)
    try:
        guard = device_checks.unchecked(dev) if in_range else check_rows(
            rows, sizes, True, dev, _index_error(sizes, indices), "index (x[idx])")
        if 0 in sizes:
            return  # no index is in range of an empty dim: the check reports it (nothing to read)
        gather_rows(o, view, rows.embedded(shape, positions), rows, dims_table(sizes, strides), guard)
    finally:
        rows.close()


def index_put(dst, indices, values, accumulate, in_range=False):
    """dst[indices] = values (broadcast to the indexing result, dst's dtype); with accumulate,
    duplicate indices add up (atomics). `in_range` as for index()."""
    d, v = K.operand(dst), K.operand(values)
    dev = d.buffer.device
    shape = tuple(v.layout.shape)
    tensors = [t for t in indices if t is not None]
    _, positions, sizes, strides = _geometry(d, indices, shape)
    rows = Rows(tensors, dev, avoid=d) if tensors else _NoRows(d, shape)
    try:
        guard = device_checks.unchecked(dev) if in_range else check_rows(
            rows, sizes, True, dev, _index_error(sizes, indices), "index_put_ (x[idx] = v)")
        if 0 in sizes and tensors:
            return  # no index is in range of an empty dim: the check reports it (nothing to write)
        put_rows(d, lambda t: _put_view(t, indices, shape), v, None, rows, rows.embedded(shape, positions),
                 PUT_ADD if accumulate else PUT_SET, guard)
    finally:
        rows.close()


def _put_view(t, indices, shape):
    view, _, sizes, strides = _geometry(t, indices, shape)
    return view, dims_table(sizes, strides)


class _NoRows:
    """No index tensor (index_put with only None entries and accumulate): the kernels never read
    the rows, which point anywhere valid."""

    count = 0
    stride = 0

    def __init__(self, op, shape):
        self.op = relayout(op, shape, [0] * len(shape))

    def embedded(self, shape, positions):
        return self.op

    def close(self):
        pass


# -- boolean masks -----------------------------------------------------------------------------------
_BLOCK = 256
_TILE = _BLOCK * 8  # kTile of kernels/scan_select.cu


class Scan:
    """Per-tile exclusive offsets of the nonzero elements of the operands' first one (row-major),
    the total last: the input of the compaction kernels. `layouts` are the operands' row-major
    layouts."""

    def __init__(self, ops):
        p = K.Plan(ops)
        self.plan = p
        self.n = p.n
        self.tiles = -(-p.n // _TILE)
        self.layouts = rowmajor_layouts(ops, p.index)
        dev = p.device
        self.offsets = allocate(8 * (self.tiles + 1), Device("cuda", dev))
        try:
            m = ops[0] if len(ops) == 1 else ops[1]
            ml = self.layouts[0] if len(ops) == 1 else self.layouts[1]
            K.launch("scan_select.cu", f"tile_counts<{m.dtype.ctype}, {p.index}>", dev,
                     (p.ptrs[0] if len(ops) == 1 else p.ptrs[1], p.count, ml, Pointer(self.offsets)),
                     grid=(self.grid,), block=_BLOCK)
            counts = K.Operand(self.offsets, Layout((self.tiles + 1,), (1,), 0), dtypes.int64)
            cumulative(counts, counts, "sum", 0)  # exclusive tile offsets (tile_counts shifted them by one)
        except BaseException:
            retire(self.offsets)
            raise

    @property
    def grid(self):
        return K.grid_for(self.tiles * _BLOCK, self.plan.device)

    def total(self, reason):
        dev = self.plan.device
        host_wait(reason, Device("cuda", dev))
        got = np.empty(1, np.int64)
        driver.memcpy_dtoh(got, Pointer(self.offsets, 8 * self.tiles), 8, driver.current_stream(dev), False)
        return int(got[0])

    def close(self):
        retire(self.offsets)


def mask_count(mask):
    """Number of nonzero elements (a host sync: the host sizes the indices of a boolean mask)."""
    m = K.operand(mask)
    if not numel(m.layout.shape):
        return 0
    sc = Scan([m])
    try:
        return sc.total("boolean mask indexing")
    finally:
        sc.close()


def write_coords(out_ptr, stride_j, stride_d, x):
    """Row-major coordinates of x's nonzero elements: coordinate d of the j-th one at
    out[j * stride_j + d * stride_d]."""
    x = K.operand(x)
    shape = tuple(x.layout.shape)
    if not numel(shape):
        return
    sc = Scan([x])
    try:
        K.launch("scan_select.cu", f"compact_coords<{x.dtype.ctype}, {sc.plan.index}>", sc.plan.device,
                 (sc.plan.ptrs[0], sc.plan.count, sc.layouts[0], dims_table(shape, [0] * len(shape)),
                  Pointer(sc.offsets), out_ptr, np.int64(stride_j), np.int64(stride_d)),
                 grid=(sc.grid,), block=_BLOCK)
    finally:
        sc.close()


def nonzero_indices(out, mask):
    """out[j] = the j-th coordinate of every nonzero element of mask, in row-major order; out has
    shape (mask.dim(), count) and dtype int64."""
    o = K.operand(out)
    lay = o.layout
    if not numel(lay.shape):
        return
    p = K.Plan((o,))
    write_coords(p.ptrs[0], lay.stride[1], lay.stride[0], mask)
