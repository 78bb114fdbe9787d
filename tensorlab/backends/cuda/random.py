"""CUDA random primitives (the names of backends/cpu/random.py): the kernels of kernels/random.cu,
which implement the Philox4x32-10 word stream and value mappings specified in tensorlab/ops/random.py,
so a (seed, offset) gives the CPU backend's values on the GPU (bit for bit for the float32/16-bit
outputs; float64 normal and exponential up to the last bit of libm's log/sin/cos).

Values go to the output's elements in logical (row-major) order whatever its strides: the dims are
coalesced in that order only (launch.plan also sorts them by stride, which would change the order).
randperm sorts (key, index) pairs with a bitonic sort in a scratch buffer (tiles of 512 in shared
memory, the longer merge steps over global memory): a stable sort by key, as the CPU's argsort."""
from __future__ import annotations

import math

import numpy as np

from ... import dtypes
from ...device import Device
from ...layout import Layout, coalesce, contiguous_strides
from . import graphs
from . import launch as K
from .active import driver
from .driver import Pointer
from ..random_params import compute_type, uniform_params
from .memory import allocate, copy, retire

__all__ = ("philox_uniform", "philox_normal", "philox_randint", "philox_bernoulli", "philox_exponential",
           "philox_randperm")

_SRC = "random.cu"
_TILE = 512  # tl_random::kTile in kernels/random.cu; the sort kernels run kTile / 2 threads per block
_NO_LAYOUT = {ix: K.strided_layout((), (), ix) for ix in K.LAYOUT_DTYPES}  # the contiguous kernels ignore it


class _Target:
    """The output's plan (bounds, device, pointer, index type), whether it is contiguous in logical
    order, and its layout over dims coalesced in that order."""

    __slots__ = ("plan", "contiguous", "layout")

    def __init__(self, out):
        self.plan = p = K.plan(out)
        if graphs._active and graphs.capturing(p.device) is not None:
            raise RuntimeError("a random op inside a CUDA graph capture: tensorlab's generators pass (seed, offset) "
                               "to the kernel by value, so every replay would repeat the captured draws (torch "
                               "advances them per replay); draw the random numbers outside the captured region "
                               "(e.g. pass a dropout mask in as a static input)")
        lay = p.operands[0].layout
        shape, (stride,) = coalesce(tuple(lay.shape), tuple(lay.stride))
        self.contiguous = p.n == 1 or (len(shape) == 1 and stride[0] == 1)
        self.layout = _NO_LAYOUT[p.index] if self.contiguous else K.strided_layout(shape, stride, p.index)

    def template(self):
        """'T, Index, Contiguous' of the kernel instantiation."""
        p = self.plan
        return f"{p.operands[0].dtype.ctype}, {p.index}, {'true' if self.contiguous else 'false'}"

    def head(self, seed, offset):
        """The leading kernel arguments: out, n, layout, seed, offset."""
        p = self.plan
        return (p.ptrs[0], p.count, self.layout, np.uint64(seed), np.uint64(offset))


def _fill(kernel, out, seed, offset, *params, extra=""):
    t = _Target(out)
    if t.plan.n:
        K.launch(_SRC, f"{kernel}<{t.template()}{extra}>", t.plan.device, (*t.head(seed, offset), *params),
                 n=t.plan.n)


def _param(out):
    return compute_type(out.dtype.name)


def philox_uniform(out, seed, offset, low, high):
    """out[i] = U_i * (high - low) + low rounded to out's dtype; a value rounded up to high becomes low."""
    _fill("philox_uniform", out, seed, offset, *uniform_params(float(low), float(high), _param(out)))


def philox_normal(out, seed, offset, mean, std):
    p = _param(out)
    _fill("philox_normal", out, seed, offset, p(mean), p(std))


def philox_exponential(out, seed, offset, lambd):
    _fill("philox_exponential", out, seed, offset, _param(out)(lambd))


def philox_randint(out, seed, offset, low, high):
    """low + X_i % (high - low): X_i one word when the range is below 2^32, else a word pair."""
    rng = high - low
    low64 = np.uint64(low & 0xFFFFFFFFFFFFFFFF).view(np.int64)
    r = rng & 0xFFFFFFFFFFFFFFFF  # 0: 2**64, the whole pair
    magic, shift = K.divisor_magic(r, 32 if rng < 2 ** 32 else 64)  # the remainder by multiply-high
    _fill("philox_randint", out, seed, offset, np.uint64(r), low64, np.uint64(magic), np.int32(shift),
          extra=", 1" if rng < 2 ** 32 else ", 2")


def philox_bernoulli(out, seed, offset, p):
    """1 where the 53-bit U_i < p_i. A tensor p (out's shape, any strides) is checked for [0, 1]
    before out is written: the kernel draws into a scratch mask and flags a bad probability, the
    host reads the flag (a sync, named "bernoulli"), then copies the mask into out."""
    if not hasattr(p, "_meta"):
        # U < p with U = X / 2^53 is X < ceil(p 2^53): p 2^53 is exact in float64 (p in [0, 1])
        _fill("philox_bernoulli", out, seed, offset, np.uint64(math.ceil(float(p) * 2.0 ** 53)))
        return
    plan = K.plan(out, p)  # bounds, one device and one index type for both operands
    n, dev, ix, pop = plan.n, plan.device, plan.index, plan.operands[1]
    if not n:
        return
    pshape, (pstride,) = coalesce(tuple(pop.layout.shape), tuple(pop.layout.stride))
    flag_at = -(-n // 4) * 4
    buf = allocate(flag_at + 4, Device("cuda", dev))
    try:
        stream = driver.current_stream(dev)
        driver.memset(Pointer(buf, flag_at), 0, 4, stream)
        K.launch(_SRC, f"bernoulli_mask<{pop.dtype.ctype}, {ix}>", dev,
                 (Pointer(buf), plan.ptrs[1], K.index_scalar(n, ix), K.strided_layout(pshape, pstride, ix),
                  np.uint64(seed), np.uint64(offset), Pointer(buf, flag_at)), n=n)
        from ...sync import host_wait
        host_wait("bernoulli", Device("cuda", dev))
        bad = np.zeros(1, np.int32)
        driver.memcpy_dtoh(bad, Pointer(buf, flag_at), 4, stream, False)
        if bad[0]:
            raise RuntimeError("bernoulli_: Expected p_in >= 0 && p_in <= 1 to be true, but got false: every "
                               "probability must be in [0, 1]")
        shape = tuple(out.shape)
        copy(out, K.Operand(buf, Layout(shape, contiguous_strides(shape), 0), dtypes.bool_))
    finally:
        retire(buf)


def philox_randperm(out, seed, offset):
    """Sort (key_i, i) over a power-of-two m >= n (padding keys sort last); out[j] = the j-th index."""
    t = _Target(out)
    n = t.plan.n
    if not n:
        return
    dev = t.plan.device
    m = 2
    while m < n:
        m *= 2
    tile = min(m, _TILE)
    buf = allocate(16 * m, Device("cuda", dev))
    try:
        keys, idx = Pointer(buf), Pointer(buf, 8 * m)
        ix = "long long" if K.wide_forced() or m + K.MAX_GRID_THREADS > K.INT_MAX else "int"
        i = K.index_scalar
        mi = i(m, ix)
        K.launch(_SRC, f"randperm_keys<{ix}>", dev,
                 (keys, idx, i(n, ix), mi, np.uint64(seed), np.uint64(offset)), n=m // 2)
        tiles_grid = (min(65535, m // tile),)
        K.launch(_SRC, f"bitonic_sort_tiles<{ix}>", dev, (keys, idx, mi, np.int32(tile)), grid=tiles_grid,
                 block=_TILE // 2)
        k = 2 * tile
        while k <= m:
            j = k // 2
            while j >= tile:
                K.launch(_SRC, f"bitonic_merge_global<{ix}>", dev, (keys, idx, mi, i(j, ix), i(k, ix)), n=m // 2)
                j //= 2
            K.launch(_SRC, f"bitonic_merge_tiles<{ix}>", dev, (keys, idx, mi, np.int32(tile), i(k, ix)),
                     grid=tiles_grid, block=_TILE // 2)
            k *= 2
        K.launch(_SRC, f"randperm_store<{t.template()}>", dev, (t.plan.ptrs[0], t.plan.count, t.layout, idx), n=n)
    finally:
        retire(buf)
