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
   NumPy structured scalar laid out as tl::StridedLayout<Index>) for the strided path, and
   np.float64 / np.int64 ... for double / long long parameters. The emulation driver checks each
   argument's kind and size against the kernel's real parameter list and raises TypeError on a
   mismatch, so a packing mistake fails CI instead of reading garbage on a GPU.
4. ``launch(source, expr, device, args, n=...)`` calls ``_faults.hit(fault)`` before anything runs
   (pass ``fault="copy"`` for copy kernels), compiles the source on first use (modules.py), runs a
   1-D grid-stride geometry (BLOCK threads per block, at most 8 blocks per SM and 65535 blocks) on
   the device's current stream, and counts the launch per entry point (LAUNCHES).

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
from . import modules
from .active import driver
from .driver import Pointer

BLOCK = 256
MAX_DIMS = 8  # tl::kMaxDims in kernels/tensorlab/common.cuh
INT_MAX = 2 ** 31 - 1
MAX_GRID_THREADS = 65535 * BLOCK  # the most a grid-stride loop adds to an index in one step

LAUNCHES = {}  # (source, name expression) -> successful launches in this process


def _layout_dtype(np_index):
    return np.dtype({"names": ["shape", "stride", "ndim"],
                     "formats": [(np_index, (MAX_DIMS,)), (np_index, (MAX_DIMS,)), np.int32]}, align=True)


# tl::StridedLayout<Index> as NumPy sees it: {Index shape[8]; Index stride[8]; int ndim;} with C alignment
LAYOUT_DTYPES = {"int": _layout_dtype(np.int32), "long long": _layout_dtype(np.int64)}
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
    a = np.empty((), dtype.np)
    with np.errstate(invalid="ignore", over="ignore"):
        a[...] = value
    return a[()]


def index_scalar(value, index):
    return _INDEX_NP[index](value)


def strided_layout(shape, stride, index):
    """A tl::StridedLayout<index> argument for (coalesced) `shape` and `stride` in elements."""
    nd = len(shape)
    if nd > MAX_DIMS:
        raise RuntimeError(f"CUDA kernels index at most {MAX_DIMS} dimensions after merging contiguous ones; this "
                           f"operand has {nd} (shape {list(shape)}, strides {list(stride)}). Call .contiguous() "
                           "on it first.")
    rec = np.zeros((), LAYOUT_DTYPES[index])
    rec["shape"][:nd] = shape
    rec["stride"][:nd] = stride
    rec["ndim"] = nd
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
    return Operand(storage._buf, lay, t._dtype)


def check_bounds(op, reach):
    """Refuse an operand reaching past its buffer (a storage shrunk under a tensor)."""
    lay = op.layout
    need = (lay.offset + reach + 1) * op.dtype.itemsize
    if need > op.buffer.nbytes:
        raise RuntimeError(
            f"tensor of shape {list(lay.shape)} with strides {list(lay.stride)} and storage offset {lay.offset} needs "
            f"{need} bytes but its storage holds only {op.buffer.nbytes}; the storage was shrunk by "
            "UntypedStorage.resize_ after this tensor was made. Call resize_ or set_ on the tensor to fix it.")


class Plan:
    """Operands of one elementwise-shaped kernel: see the module docstring."""

    __slots__ = ("operands", "n", "device", "shape", "strides", "index", "contiguous", "ptrs", "_layouts")

    def __init__(self, operands):
        self.operands = ops = [operand(t) for t in operands]
        out = ops[0]
        shape = tuple(out.layout.shape)
        n = 1
        for s in shape:
            n *= s
        self.n = n
        self.device = out.buffer.device
        self._layouts = None
        ptrs = []
        for op in ops:
            if tuple(op.layout.shape) != shape:
                raise ValueError(f"kernel operands must share the output's shape {list(shape)}, got "
                                 f"{list(op.layout.shape)} (broadcast inputs to the output's shape first)")
            if op.buffer.device != self.device:
                raise RuntimeError(f"Expected all tensors to be on the same device, but found at least two devices, "
                                   f"cuda:{self.device} and cuda:{op.buffer.device}!")
            ptrs.append(Pointer(op.buffer, op.layout.offset * op.dtype.itemsize))
        self.ptrs = ptrs
        if n == 0:
            self.shape, self.strides, self.index, self.contiguous = (), [() for _ in ops], "int", True
            return
        # dims ordered by the output's strides (largest first) so that operands sharing a dense
        # order that is not row-major (channels-last, transposed) still coalesce to one dim
        strides = [tuple(op.layout.stride) for op in ops]
        order = sorted(range(len(shape)), key=lambda d: -strides[0][d])
        if order != list(range(len(shape))):
            shape = tuple(shape[d] for d in order)
            strides = [tuple(s[d] for d in order) for s in strides]
        cshape, cstrides = coalesce(shape, *strides)
        self.shape, self.strides = cshape, cstrides
        wide = _wide[0] or n + MAX_GRID_THREADS > INT_MAX
        for op, st in zip(ops, cstrides):
            reach = sum((k - 1) * s for k, s in zip(cshape, st))
            check_bounds(op, reach)
            wide = wide or reach > INT_MAX
        self.index = "long long" if wide else "int"
        self.contiguous = n == 1 or (len(cshape) == 1 and all(st[0] == 1 for st in cstrides))

    @property
    def count(self):
        """n as the kernel's Index type."""
        return _INDEX_NP[self.index](self.n)

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
    _faults.hit(fault)
    fn = modules.function(source, name_expression, device)
    if grid is None:
        grid = (grid_for(n, device, block if isinstance(block, int) else block[0]),)
    driver.launch(fn, grid, (block,) if isinstance(block, int) else block, args, shared_mem,
                  driver.current_stream(device))
    key = (source, name_expression)
    LAUNCHES[key] = LAUNCHES.get(key, 0) + 1


def ctype(dtype):
    """The kernel C type of a tensorlab dtype (for name expressions)."""
    return dtypes.as_dtype(dtype).ctype
