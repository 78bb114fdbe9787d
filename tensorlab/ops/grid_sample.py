"""grid_sample / grid_sampler_2d / grid_sampler_3d and affine_grid, as torch.nn.functional has them.

ATen's GridSampler.h formulas over whole tensors: each grid coordinate is unnormalized
(align_corners), padded (border: clipped; reflection: reflected, then clipped), and the input is
read at the neighbouring integer positions by a `gather` on the flattened spatial dims, weighted
(bilinear / trilinear: the products of the per-dim distances, nearest: the round-half-even
position, bicubic: Keys' cubic convolution with A = -0.75 over a 4 x 4 neighbourhood, each tap's
position padded on its own). A position outside the input reads zero. grid_sampler runs the
grid_sampler_fwd / grid_sampler_bwd primitives (backends/cpu/grid_sample.py, kernels/grid_sample.cu: one kernel each way); the same
formulas as differentiable ops (`_sample`) give the backward of the backward (create_graph)."""
from __future__ import annotations

import itertools

from .. import _warn, dtypes
from ..autograd.function import Function
from ..autograd.grad_mode import is_grad_enabled
from ..tensor import Tensor
from ._common import empty_tensor
from .conv import type_name

FUNCTIONS = ("grid_sampler", "grid_sampler_2d", "grid_sampler_3d", "affine_grid_generator")
_MODES = {"bilinear": 0, "nearest": 1, "bicubic": 2}
_PADS = {"zeros": 0, "border": 1, "reflection": 2}
_INT64 = dtypes.int64
_ALIGN_WARNING = ("Default grid_sample and affine_grid behavior has changed to align_corners=False since 1.3.0. Please "
                  "specify align_corners=True if the old behavior is desired. See the documentation of grid_sample for "
                  "details.")


def _unnormalize(c, size, align, vectorized=False):
    """GridSampler.h's formula; `vectorized`: the 2-D CPU kernel's (GridSamplerKernel.cpp), which
    scales by a precomputed factor (the same value, rounded differently)."""
    if vectorized:
        return (c + 1) * ((size - 1) / 2) if align else (c + 1) * (size / 2) - 0.5
    if align:
        return (c + 1) / 2 * (size - 1)
    return ((c + 1) * size - 1) / 2


def _reflect(c, twice_low, twice_high):
    if twice_low == twice_high:
        return c * 0
    lo = twice_low / 2
    span = (twice_high - twice_low) / 2
    c = (c - lo).abs()
    extra = c.fmod(span)
    flips = (c / span).floor()
    even = flips.fmod(2) == 0
    return (extra + lo).where(even, span - extra + lo)


def _pad_coordinates(c, size, padding, align):
    if padding == 1:
        return c.clamp(0, size - 1)
    if padding == 2:
        c = _reflect(c, 0, 2 * (size - 1)) if align else _reflect(c, -1, 2 * size - 1)
        return c.clamp(0, size - 1)
    return c


def _read(flat, pos, sizes):
    """flat (N, C, S) read at the integer positions pos (per dim, last dim first as the grid
    orders them; each (N, *out)): (N, C, *out), zero where a position is outside."""
    N, C = flat.shape[:2]
    out = tuple(pos[0].shape[1:])
    inside = None
    index = None
    stride = 1
    for p, n in zip(pos, reversed(sizes)):
        ok = (p >= 0) & (p < n)
        inside = ok if inside is None else inside & ok
        term = p.clamp(0, n - 1) * stride
        index = term if index is None else index + term
        stride *= n
    L = 1
    for o in out:
        L *= o
    v = flat.gather(2, index.reshape(N, 1, L).expand(N, C, L)).reshape((N, C) + out)
    return v.where(inside.unsqueeze(1), v.new_zeros(()))


def _check(input, grid, interpolation_mode, padding_mode, op="grid_sampler"):
    for t, name, pos in ((input, "input", 1), (grid, "grid", 2)):
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}(): argument '{name}' (position {pos}) must be Tensor, not {type(t).__name__}")
    if input.device != grid.device:
        raise RuntimeError(f"grid_sampler(): expected input and grid to be on same device, but input is on "
                           f"{input.device} and grid is on {grid.device}")
    if input._dtype is not grid._dtype:
        raise RuntimeError(f"grid_sampler(): expected input and grid to have same dtype, but input has "
                           f"{type_name(input._dtype)} and grid has {type_name(grid._dtype)}")
    if grid.dim() and grid.shape[-1] != input.dim() - 2:
        raise RuntimeError(f"grid_sampler(): expected grid to have size {input.dim() - 2} in last dimension, but got "
                           f"grid with sizes {list(grid.shape)}")
    if input.dim() not in (4, 5) or input.dim() != grid.dim():
        raise RuntimeError(f"grid_sampler(): expected 4D or 5D input and grid with same number of dimensions, but got "
                           f"input with sizes {list(input.shape)} and grid with sizes {list(grid.shape)}")
    if input.shape[0] != grid.shape[0]:
        raise RuntimeError(f"grid_sampler(): expected grid and input to have same batch size, but got input with sizes "
                           f"{list(input.shape)} and grid with sizes {list(grid.shape)}")
    for i in range(2, input.dim()):
        if input.shape[i] == 0:
            raise RuntimeError(f"grid_sampler(): expected input to have non-empty spatial dimensions, but input has "
                               f"sizes {list(input.shape)} with dimension {i} being empty")
    if interpolation_mode == 2 and input.dim() != 4:
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
    if interpolation_mode not in (0, 1, 2) or padding_mode not in (0, 1, 2):
        raise RuntimeError(f"grid_sampler(): expected interpolation_mode in 0..2 and padding_mode in 0..2 (bilinear/"
                           f"nearest/bicubic, zeros/border/reflection), but got {interpolation_mode} and {padding_mode}")
    if not input._dtype.is_floating_point:
        raise NotImplementedError(f"\"grid_sampler_2d_cpu\" not implemented for '{type_name(input._dtype)}' (grid "
                                  "sampling takes floating tensors; convert with .float())")


def _cubic1(x, A):
    return ((A + 2) * x - (A + 3)) * x * x + 1


def _cubic2(x, A):
    return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A


def _sample(input, grid, mode, padding, align):
    nd = input.dim() - 2
    N, C = input.shape[:2]
    sizes = tuple(input.shape[2:])  # (D,) H, W; the grid's last dim is x (W) first
    P = 1
    for n in sizes:
        P *= n
    flat = input.reshape(N, C, P)
    coords = [grid.select(-1, j) for j in range(nd)]
    dims = list(reversed(sizes))  # the size each coordinate indexes
    if mode == 2:  # bicubic: taps at floor - 1 .. floor + 2, each padded on its own
        ix, iy = (_unnormalize(c, n, align, True) for c, n in zip(coords, dims))
        x0, y0 = ix.floor(), iy.floor()
        tx, ty = ix - x0, iy - y0
        A = -0.75
        wx = [_cubic2(tx + 1, A), _cubic1(tx, A), _cubic1(1 - tx, A), _cubic2(2 - tx, A)]
        wy = [_cubic2(ty + 1, A), _cubic1(ty, A), _cubic1(1 - ty, A), _cubic2(2 - ty, A)]
        out = None
        for j in range(4):
            row = None
            py = _pad_coordinates(y0 + (j - 1), dims[1], padding, align).to(_INT64)
            for i in range(4):
                px = _pad_coordinates(x0 + (i - 1), dims[0], padding, align).to(_INT64)
                term = _read(flat, (px, py), sizes) * wx[i].unsqueeze(1)
                row = term if row is None else row + term
            term = row * wy[j].unsqueeze(1)
            out = term if out is None else out + term
        return out
    src = [_pad_coordinates(_unnormalize(c, n, align, nd == 2), n, padding, align) for c, n in zip(coords, dims)]
    if mode == 1:
        out = _read(flat, tuple(s.round().to(_INT64) for s in src), sizes)
        # the grid's gradient is zero (torch's), not absent: a zero term keeps the grid in the graph
        return out + (src[0] * 0).unsqueeze(1) if grid.requires_grad else out
    lo = [s.floor() for s in src]
    lo_i = [f.to(_INT64) for f in lo]
    out = None
    for bits in itertools.product((0, 1), repeat=nd):  # x fastest, as ATen sums its corners
        bits = bits[::-1]
        w = None
        for s, f, b in zip(src, lo, bits):
            f1 = (s - f) if b else (f + 1 - s)
            w = f1 if w is None else w * f1
        term = _read(flat, tuple(li + b for li, b in zip(lo_i, bits)), sizes) * w.unsqueeze(1)
        out = term if out is None else out + term
    return out


class _GridSampler(Function):
    """The grid_sampler_fwd / grid_sampler_bwd primitives (one kernel each way on CUDA); a backward
    that must itself be differentiable (create_graph) goes through the composite `_sample`."""

    @staticmethod
    def forward(ctx, input, grid, mode, padding, align):
        x, g = input.detach().contiguous(), grid.detach().contiguous()
        out = empty_tensor(tuple(x.shape[:2]) + tuple(g.shape[1:-1]), x._dtype, x.device)
        x._backend.grid_sampler_fwd(out, x, g, mode, padding, align)
        ctx.save_for_backward(input, grid)
        ctx.mode, ctx.padding, ctx.align = mode, padding, align
        return out

    @staticmethod
    def backward(ctx, grad_out):
        input, grid = ctx.saved_tensors
        want_x, want_g = ctx.needs_input_grad[:2]
        if is_grad_enabled():  # create_graph: the gradients as differentiable ops
            from ..autograd import grad as _grad
            wrt = [t for t, w in ((input, want_x), (grid, want_g)) if w]
            got = iter(_grad(_sample(input, grid, ctx.mode, ctx.padding, ctx.align), wrt, grad_out,
                             create_graph=True, allow_unused=True))
            return (next(got) if want_x else None), (next(got) if want_g else None), None, None, None
        x, g = input.detach().contiguous(), grid.detach().contiguous()
        go = grad_out.detach().contiguous()
        acc = dtypes.float32 if x._dtype in (dtypes.float16, dtypes.bfloat16) else x._dtype
        gx = empty_tensor(tuple(x.shape), acc, x.device) if want_x else None
        gg = empty_tensor(tuple(g.shape), g._dtype, g.device) if want_g else None
        x._backend.grid_sampler_bwd(gx, gg, go, x, g, ctx.mode, ctx.padding, ctx.align)
        if gx is not None and acc is not x._dtype:
            gx = gx.to(x._dtype)
        return gx, gg, None, None, None


def grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners):
    _check(input, grid, interpolation_mode, padding_mode)
    return _GridSampler.apply(input, grid, int(interpolation_mode), int(padding_mode), bool(align_corners))


def grid_sampler_2d(input, grid, interpolation_mode, padding_mode, align_corners):
    if isinstance(input, Tensor) and input.dim() != 4:
        raise RuntimeError(f"grid_sampler_2d(): expected 4D input and grid, but got input with sizes "
                           f"{list(input.shape)}")
    return grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners)


def grid_sampler_3d(input, grid, interpolation_mode, padding_mode, align_corners):
    if isinstance(input, Tensor) and input.dim() != 5:
        raise RuntimeError(f"grid_sampler_3d(): expected 5D input and grid, but got input with sizes "
                           f"{list(input.shape)}")
    if interpolation_mode == 2:
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
    return grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners)


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    if mode not in _MODES:
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', but "
                         f"got: '{mode}'")
    if padding_mode not in _PADS:
        raise ValueError(f"nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or "
                         f"'reflection', but got: '{padding_mode}'")
    if align_corners is None:
        _warn.warn(_ALIGN_WARNING)
        align_corners = False
    return grid_sampler(input, grid, _MODES[mode], _PADS[padding_mode], align_corners)


# -- affine_grid ----------------------------------------------------------------------------------------------
def _base_coords(n, align, dt, dev):
    from .creation import linspace, zeros
    if n <= 1:
        return zeros(max(n, 1), dtype=dt, device=dev)[:n] if n == 0 else zeros(1, dtype=dt, device=dev)
    r = linspace(-1, 1, n, dtype=dt, device=dev)
    return r if align else r * ((n - 1) / n)


def affine_grid_generator(theta, size, align_corners):
    from .creation import ones
    from .shape import stack
    nd = len(size) - 2
    N = size[0]
    spatial = list(size[2:])
    dt, dev = theta._dtype, theta.device
    axes = [_base_coords(n, align_corners, dt, dev) for n in reversed(spatial)]  # x (W) first
    out_shape = tuple(spatial)
    cols = []
    for j, a in enumerate(axes):
        shape = [1] * nd
        shape[nd - 1 - j] = spatial[nd - 1 - j]
        cols.append(a.reshape(shape).expand(out_shape))
    cols.append(ones(out_shape, dtype=dt, device=dev))
    base = stack(cols, -1).reshape(1, -1, nd + 1).expand(N, -1, nd + 1)
    grid = base.bmm(theta.transpose(1, 2))
    return grid.reshape((N,) + out_shape + (nd,))


def affine_grid(theta, size, align_corners=None):
    if align_corners is None:
        _warn.warn(_ALIGN_WARNING)
        align_corners = False
    if not isinstance(theta, Tensor):
        raise TypeError(f"affine_grid(): argument 'theta' (position 1) must be Tensor, not {type(theta).__name__}")
    if not theta._dtype.is_floating_point:
        raise ValueError(f"Expected theta to have floating point type, but got {theta._dtype}")
    size = [int(s) for s in size]
    if len(size) == 4:
        if theta.dim() != 3 or tuple(theta.shape[-2:]) != (2, 3):
            raise ValueError(f"Expected a batch of 2D affine matrices of shape Nx2x3 for size {size}. Got "
                             f"{list(theta.shape)}.")
        spatial = size[-2:]
    elif len(size) == 5:
        if theta.dim() != 3 or tuple(theta.shape[-2:]) != (3, 4):
            raise ValueError(f"Expected a batch of 3D affine matrices of shape Nx3x4 for size {size}. Got "
                             f"{list(theta.shape)}.")
        spatial = size[-3:]
    else:
        raise NotImplementedError(f"affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, "
                                  f"respectively. Got size {size}.")
    if align_corners and min(spatial) == 1:
        _warn.warn("Since version 1.3.0, affine_grid behavior has changed for unit-size grids when align_corners=True. "
                   "This is not an intended use case of affine_grid. See the documentation of affine_grid for details.")
    elif min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    if theta.shape[0] != size[0]:
        raise RuntimeError(f"affine_grid(): expected theta's batch size {theta.shape[0]} to equal size[0] = {size[0]}")
    return affine_grid_generator(theta, size, align_corners)
