"""Kernel selection, launch geometry and argument packing: how every CUDA primitive runs a kernel.

The pattern (backends/cuda/memory.py's `fill` is the shortest complete example)::

    from . import launch as K

    def fill(dst, value):
        p = K.plan(dst)                                    # 1. plan the operands
        if not p.n:
            return
        ct, v = dst._dtype.ctype, K.scalar(value, dst._dtype)
        if p.contiguous:                                   # 2. pick the instantiation
            K.launch("fill.cu", f"fill_contiguous<{ct}, {p.index}>", p.device,   # 3. launch
                     (p.ptrs[0], v, p.count), n=p.n)
        else:
            K.launch("fill.cu", f"fill_strided<{ct}, {p.index}>", p.device,
                     (p.ptrs[0], v, p.count, p.layouts[0]), n=p.n)

1. ``plan(out, *inputs)`` takes tensors of one shape (broadcast inputs to the output's shape first:
   their broadcast dims get stride 0). It reads each tensor's metadata once, checks every operand
   lies inside its buffer and on one device, orders the dimensions by the output's strides and
   coalesces them (layout.coalesce), and chooses 32-bit indexing (``index == "int"``) when every
   offset and the grid-stride loop fit in int32, else ``"long long"``. ``contiguous`` is true when
   all operands are dense in one order, so element i of each is at pointer + i: use the fast kernel.
2. The name expression is the kernel template with C types: ``dtype.ctype`` for elements,
   ``plan.index`` for the index type. It must be listed in tensorlab/kernel_table.py's row of its
   source (``KERNELS["fill.cu"]``): that table is what NVRTC compiles, what the emulation compiles,
   and what the coverage test checks was launched.
3. Arguments are packed with the parameter's exact C type: ``plan.ptrs[k]`` (a driver.Pointer to the
   operand's first element) for ``T*``, ``scalar(value, dtype)`` for an element value,
   ``plan.count`` / ``index_scalar(x, plan.index)`` for Index values, ``plan.layouts[k]`` (an aligned
   NumPy structured scalar laid out as tl::StridedLayout<Index>, with each size's division magic) for
   the strided path, ``divisor(d, plan.index)`` (tl::Divisor<Index>) for an invariant divisor a kernel
   splits an index by (no integer division on the device: kernels/tensorlab/common.cuh), and
   np.float64 / np.int64 ... for double / long long parameters. The emulation driver checks each
   argument's kind and size against the kernel's real parameter list and raises TypeError on a
   mismatch, so a packing mistake fails CI instead of reading garbage on a GPU.
4. ``launch(source, expr, device, args, n=...)`` calls ``_faults.hit(fault)`` before anything runs
   (pass ``fault="copy"`` for copy kernels), compiles the source on first use (modules.py), runs a
   1-D grid-stride geometry (BLOCK threads per block, at most 8 blocks per SM and 65535 blocks) on
   the device's current stream, and counts the launch per entry point (LAUNCHES).

The host-side work is cached on immutable values, never on tensors: a Plan's geometry (order,
coalesced dims, reaches, index type, contiguity, count) by the operands' (shape, stride) and the
wide_indexing() flag; packed layouts by (shape, stride, index type), as read-only structs shared
by every launch; scalars of Python ints by (type, value, dtype). Buffers, offsets, devices and
bounds are read from each operand's one metadata snapshot and checked on every call.

A new kernel source needs nothing else: the emulation driver compiles every row of kernel_table
with the host compiler on first use (caching the library), so the device-parametrized tests run it
on the CPU under TENSORLAB_CUDA_EMULATION=1, and tests/test_kernel_coverage.py then fails until
some test launches each new entry point (use ``wide_indexing()`` to reach the long long ones).
"""
from __future__ import annotations

import contextlib

import numpy as np

from ... import _faults, dtypes
from ...layout import coalesce
from ...memo import memoized
from . import modules
from .active import driver
from .driver import Pointer

BLOCK = 256
MAX_DIMS = 8  # tl::kMaxDims in kernels/tensorlab/common.cuh
INT_MAX = 2 ** 31 - 1
MAX_GRID_THREADS = 65535 * BLOCK  # the most a grid-stride loop adds to an index in one step

LAUNCHES = {}  # (source, name expression) -> successful launches in this process
_fault_plans = _faults._plans
_functions = modules._functions  # modules.function's cache, read here without the call


_UNSIGNED_NP = {np.int32: np.uint32, np.int64: np.uint64}


def _layout_dtype(np_index):
    return np.dtype({"names": ["shape", "stride", "magic", "shift", "ndim"],
                     "formats": [(np_index, (MAX_DIMS,)), (np_index, (MAX_DIMS,)),
                                 (_UNSIGNED_NP[np_index], (MAX_DIMS,)), (np.int32, (MAX_DIMS,)), np.int32]},
                    align=True)


def _divisor_dtype(np_index):
    return np.dtype({"names": ["d", "magic", "shift"], "formats": [np_index, _UNSIGNED_NP[np_index], np.int32]},
                    align=True)


# tl::StridedLayout<Index> as NumPy sees it: {Index shape[8]; Index stride[8]; UIndex magic[8]; int shift[8];
# int ndim;} with C alignment; tl::Divisor<Index>: {Index d; UIndex magic; int shift;}
LAYOUT_DTYPES = {"int": _layout_dtype(np.int32), "long long": _layout_dtype(np.int64)}
# tl::PlainLayout<Index>: {Index shape[8]; Index stride[8]; int ndim;} (no division magic)
PLAIN_LAYOUT_DTYPES = {ix: np.dtype({"names": ["shape", "stride", "ndim"],
                                     "formats": [(t, (MAX_DIMS,)), (t, (MAX_DIMS,)), np.int32]}, align=True)
                       for ix, t in (("int", np.int32), ("long long", np.int64))}
DIVISOR_DTYPES = {"int": _divisor_dtype(np.int32), "long long": _divisor_dtype(np.int64)}
_INDEX_BITS = {"int": 32, "long long": 64}
_INDEX_NP = {"int": np.int32, "long long": np.int64}
_wide = [False]


@contextlib.contextmanager
def wide_indexing():
    """Use the long long instantiations even where int would do (tests reach them without
    tensors of 2**31 elements)."""
    prev = _wide[0]
    _wide[0] = True
    try:
        yield
    finally:
        _wide[0] = prev


def wide_forced():
    """True inside wide_indexing(): every launch uses the long long instantiations."""
    return _wide[0]


def scalar(value, dtype):
    """A Python (or NumPy) value as a NumPy scalar of `dtype`'s C type, converted exactly as the
    CPU backend stores it into an array of that dtype."""
    t = type(value)
    if t is int or t is bool:  # exact keys (floats are not memoized: -0.0 == 0.0, nan != nan)
        return _exact_scalar(t, value, dtype)
    return _scalar(value, dtype)


@memoized
def _exact_scalar(kind, value, dtype):
    """scalar() of a Python int or bool (`kind` keeps True and 1 apart): fill values recur."""
    return _scalar(value, dtype)


try:  # np.errstate(invalid="ignore", over="ignore") without its Python object and frames (~1 us)
    from numpy._core._ufunc_config import _extobj_contextvar, _make_extobj

    def _scalar(value, dtype):
        a = np.empty((), dtype.np)
        token = _extobj_contextvar.set(_make_extobj(all=None, divide=None, over="ignore", under=None,
                                                    invalid="ignore"))
        try:
            a[...] = value
        finally:
            _extobj_contextvar.reset(token)
        return a[()]
except ImportError:  # pragma: no cover - other NumPy versions
    def _scalar(value, dtype):
        a = np.empty((), dtype.np)
        with np.errstate(invalid="ignore", over="ignore"):
            a[...] = value
        return a[()]


def index_scalar(value, index):
    return _int_index_scalar(value, index) if type(value) is int else _INDEX_NP[index](value)


@memoized
def _int_index_scalar(value, index):  # sizes and counts recur
    return _INDEX_NP[index](value)


def divisor_magic(d, bits):
    """(magic, shift) such that a // d == (mul_high(a, magic) + a) >> shift for every 0 <= a < 2**(bits-1),
    where mul_high(a, m) = (a * m) >> bits in `bits`-bit unsigned arithmetic (tl::magic_quotient in
    kernels/tensorlab/common.cuh). With l = ceil(log2 d) and M = floor(2**(bits+l) / d) + 1 (a bits+1-bit
    multiplier, magic = M - 2**bits < 2**bits), M*d = 2**(bits+l) + e with 0 < e <= d, so
    a*M / 2**(bits+l) = a/d + a*e / (d * 2**(bits+l)) and the error term is < 2**-l <= 1/d for a < 2**bits:
    the floor is a // d (division by invariant integers using multiplication, Granlund & Montgomery).
    d <= 0 (a table entry nobody divides by) gets (0, 0)."""
    if d <= 0:
        return 0, 0
    shift = (d - 1).bit_length()
    return (1 << (bits + shift)) // d + 1 - (1 << bits), shift


@memoized
def divisor(d, index):
    """A tl::Divisor<index> argument: the invariant divisor d > 0 with its magic numbers."""
    d = int(d)
    rec = np.zeros((), DIVISOR_DTYPES[index])
    rec["d"] = d
    rec["magic"], rec["shift"] = divisor_magic(d, _INDEX_BITS[index])
    rec.setflags(write=False)
    return rec[()]


@memoized
def strided_layout(shape, stride, index):
    """A tl::StridedLayout<index> argument for (coalesced) `shape` and `stride` in elements, with each
    size's division magic: an immutable value, shared by every launch with this layout."""
    nd = len(shape)
    if nd > MAX_DIMS:
        raise RuntimeError(f"CUDA kernels index at most {MAX_DIMS} dimensions after merging contiguous ones; this "
                           f"operand has {nd} (shape {list(shape)}, strides {list(stride)}). Call .contiguous() "
                           "on it first.")
    rec = np.zeros((), LAYOUT_DTYPES[index])
    rec["shape"][:nd] = shape
    rec["stride"][:nd] = stride
    bits = _INDEX_BITS[index]
    for k in range(nd):
        rec["magic"][k], rec["shift"][k] = divisor_magic(int(shape[k]), bits)
    rec["ndim"] = nd
    rec.setflags(write=False)  # shared by every launch with this layout: nobody may change it
    return rec[()]


@memoized
def plain_layout(shape, stride, index):
    """A tl::PlainLayout<index> argument (strided_layout without the division magic)."""
    full = strided_layout(shape, stride, index)  # checks the dims
    rec = np.zeros((), PLAIN_LAYOUT_DTYPES[index])
    for f in ("shape", "stride", "ndim"):
        rec[f] = full[f]
    rec.setflags(write=False)
    return rec[()]


class Operand:
    """What a kernel needs of a tensor: its buffer, layout (shape, stride, offset) and dtype, read
    from one snapshot of its metadata."""

    __slots__ = ("buffer", "layout", "dtype")

    def __init__(self, buffer, layout, dtype):
        self.buffer = buffer
        self.layout = layout
        self.dtype = dtype


def operand(t):
    if isinstance(t, Operand):
        return t
    storage, lay = t._meta
    return _operand_of(storage._buf, lay, t._dtype)


def _operand_of(buffer, layout, dtype):
    op = _object_new(Operand)  # Operand(buffer, layout, dtype) without the __init__ frame
    op.buffer = buffer
    op.layout = layout
    op.dtype = dtype
    return op


_object_new = object.__new__
_tuple_new = tuple.__new__


def check_bounds(op, reach):
    """Refuse an operand reaching past its buffer (a storage shrunk under a tensor)."""
    lay = op.layout
    need = (lay.offset + reach + 1) * op.dtype.itemsize
    if need > op.buffer.nbytes:
        raise RuntimeError(
            f"tensor of shape {list(lay.shape)} with strides {list(lay.stride)} and storage offset {lay.offset} needs "
            f"{need} bytes but its storage holds only {op.buffer.nbytes}; the storage was shrunk by "
            "UntypedStorage.resize_ after this tensor was made. Call resize_ or set_ on the tensor to fix it.")


# What a Plan computes from the operands' shapes and strides alone (no buffers, offsets or dtypes),
# keyed on those immutable values and the wide_indexing() flag:
# (n, coalesced shape, coalesced strides per operand, reach per operand, index type, contiguous, count)
_GEOMETRY = {}


def _geometry(key, shape, strides):
    g = _GEOMETRY.get(key)
    if g is not None:
        return g
    n = 1
    for s in shape:
        n *= s
    if n == 0:
        g = (0, (), tuple(() for _ in strides), None, "int", True, _INDEX_NP["int"](0))
    else:
        # dims ordered by the output's strides (largest first) so that operands sharing a dense
        # order that is not row-major (channels-last, transposed) still coalesce to one dim
        order = sorted(range(len(shape)), key=lambda d: -strides[0][d])
        if order != list(range(len(shape))):
            shape = tuple(shape[d] for d in order)
            strides = [tuple(s[d] for d in order) for s in strides]
        cshape, cstrides = coalesce(tuple(shape), *strides)
        wide = key[0] or n + MAX_GRID_THREADS > INT_MAX
        reaches = []
        for st in cstrides:
            reach = 0
            for k, s in zip(cshape, st):
                reach += (k - 1) * s
            reaches.append(reach)
            wide = wide or reach > INT_MAX
        index = "long long" if wide else "int"
        contiguous = n == 1 or (len(cshape) == 1 and all(st[0] == 1 for st in cstrides))
        g = (n, cshape, tuple(cstrides), tuple(reaches), index, contiguous, _INDEX_NP[index](n))
    if len(_GEOMETRY) >= 4096:
        _GEOMETRY.clear()
    _GEOMETRY[key] = g
    return g


class Plan:
    """Operands of one elementwise-shaped kernel: see the module docstring."""

    __slots__ = ("operands", "n", "device", "shape", "strides", "index", "contiguous", "ptrs", "_layouts",
                 "_count")

    def __init__(self, operands):
        ops = []
        key = [_wide[0]]
        for t in operands:
            if type(t) is not Operand:
                t = operand(t)
            ops.append(t)
            lay = t.layout
            key.append(lay.shape)
            key.append(lay.stride)
        self.operands = ops
        key = tuple(key)
        try:
            g = _GEOMETRY.get(key)
        except TypeError:  # a layout of lists: key on tuples
            key = tuple(tuple(k) if isinstance(k, list) else k for k in key)
            g = _GEOMETRY.get(key)
        if g is None:  # first time for these layouts: check the shapes, then compute and remember
            shape = tuple(ops[0].layout.shape)
            for op in ops:
                if tuple(op.layout.shape) != shape:
                    raise ValueError(f"kernel operands must share the output's shape {list(shape)}, got "
                                     f"{list(op.layout.shape)} (broadcast inputs to the output's shape first)")
            g = _geometry(key, shape, [tuple(op.layout.stride) for op in ops])
        n, self.shape, strides, reaches, self.index, self.contiguous, self._count = g
        self.n = n
        self.device = device = ops[0].buffer.device
        self.strides = strides  # a tuple (shared by every plan of these layouts: immutable)
        self._layouts = None
        ptrs = []
        k = 0
        for op in ops:
            buf = op.buffer
            if buf.device != device:
                raise RuntimeError(f"Expected all tensors to be on the same device, but found at least two devices, "
                                   f"cuda:{device} and cuda:{buf.device}!")
            offset = op.layout.offset
            isz = op.dtype.itemsize
            if n and (offset + reaches[k] + 1) * isz > buf.nbytes:
                check_bounds(op, reaches[k])  # raises
            ptrs.append(_tuple_new(Pointer, (buf, offset * isz)))
            k += 1
        self.ptrs = ptrs

    @property
    def count(self):
        """n as the kernel's Index type."""
        return self._count

    @property
    def layouts(self):
        """One packed tl::StridedLayout<Index> per operand, over the coalesced dims."""
        if self._layouts is None:
            self._layouts = [strided_layout(self.shape, st, self.index) for st in self.strides]
        return self._layouts


def plan(*tensors):
    return Plan(tensors)


_grid_caps = {}


def grid_for(n, device, block=BLOCK):
    """Blocks for a grid-stride loop over n elements: enough to cover n, at most 8 blocks of 256
    threads per SM (a full SM's 2048 threads), and within the 65535 that every launch may use."""
    cap = _grid_caps.get(device)
    if cap is None:
        sms = driver.device_properties(device)["multi_processor_count"]
        cap = _grid_caps[device] = max(1, min(65535, sms * (2048 // BLOCK)))
    return max(1, min(cap, -(-n // block)))


def launch(source, name_expression, device, args, *, n=None, grid=None, block=BLOCK, shared_mem=0, fault="launch"):
    """Run one kernel on the current stream of `device` (an index); `grid` defaults to grid_for(n)."""
    if _fault_plans:  # _faults.hit's "is any plan installed" test, without the call
        _faults.hit(fault)
    fn = _functions.get((source, name_expression, device)) or modules.function(source, name_expression, device)
    if isinstance(block, int):
        if grid is None:
            cap = _grid_caps.get(device)  # grid_for, inlined
            grid = (max(1, min(grid_for(n, device, block) if cap is None else cap, -(-n // block))),)
        block = (block,)
    elif grid is None:
        grid = (grid_for(n, device, block[0]),)
    stream = driver.current_stream(device)
    driver.launch(fn, grid, block, args, shared_mem, stream)
    if _faults.observers:  # tl.benchmark.Timer's warm-up: which streams got work
        _faults.launched(device, stream)
    key = (source, name_expression)
    LAUNCHES[key] = LAUNCHES.get(key, 0) + 1


def launch_function(fn, key, device, grid, block, args):
    """launch() for a caller that memoized the driver function (function(source, name_expression,
    device)), its (source, name_expression) key and the launch geometry (3-tuples or shorter)."""
    if _fault_plans:
        _faults.hit("launch")
    stream = driver.current_stream(device)
    driver.launch(fn, grid, block, args, 0, stream)
    if _faults.observers:
        _faults.launched(device, stream)
    LAUNCHES[key] = LAUNCHES.get(key, 0) + 1


def function(source, name_expression, device):
    """The driver function of a kernel instantiation on `device` (compiled and loaded on first use)."""
    return _functions.get((source, name_expression, device)) or modules.function(source, name_expression, device)


def ctype(dtype):
    """The kernel C type of a tensorlab dtype (for name expressions)."""
    return dtypes.as_dtype(dtype).ctype
