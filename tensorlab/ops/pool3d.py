"""The 3-D pools (max_pool3d, avg_pool3d, adaptive_avg_pool3d, adaptive_max_pool3d), fractional max
pooling (2-D and 3-D) and max_pool2d_with_indices_backward.

The 3-D pools reduce their depth dim to the 2-D primitives of ops/pool.py: a table of depth taps
(one per output depth and kernel tap) gathers the depth slices (`take_rows`), the 2-D pool runs over
them as extra channels, and the taps are combined per output depth (a masked sum for average
pooling, an argmax with torch's first-maximum / last-NaN rule for max pooling, whose index becomes
d * H * W + the 2-D index). A depth tap in the padding reads the window's first inside slice (a
duplicate never changes a maximum or its index) or, for average pooling, is masked out. Every step
is a differentiable op, so the gradients (any order) and the CUDA path come from the 2-D ones.

Fractional max pooling gathers each plane's windows, whose starts follow torch's interval formula
from `_random_samples` (computed in the input's dtype, as ATen's CPU kernel), then takes the
window's first maximum (last NaN)."""
from __future__ import annotations

from .. import dtypes
from ..tensor import Tensor
from . import pool as _p
from .conv import expand_param, geometry_tensor, im2col, take_rows, type_name

# torch's top-level names (torch.max_pool3d; aten's max_pool2d_with_indices_backward, which torch's OpInfo names)
FUNCTIONS = ("max_pool3d", "max_pool2d_with_indices_backward")
_INT64 = dtypes.int64


class _Plain:
    """A batched input as ops/pool.py's _Input sees it, with nothing to undo."""

    def __init__(self, x):
        self.x = x
        self.shape = tuple(x.shape)

    def back(self, y):
        return y


def _triple(value, op, name, allow_none=False):
    if value is None and allow_none:
        return None
    if isinstance(value, (tuple, list)) and len(value) not in (1, 3):
        what = "either be omitted, a single int, or a tuple of three ints" if allow_none else \
            "either be a single int, or a tuple of three ints"
        raise RuntimeError(f"{op}: {name} must {what}")
    return expand_param(value, 3, name, op)


def _batched(input, op):
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    if input.dim() not in (4, 5):
        raise RuntimeError(f"non-empty 4D or 5D (batch mode) tensor expected for input ({op} got "
                           f"{list(input.shape)})")
    if 0 in tuple(input.shape[-4:]):
        raise RuntimeError(f"{op}: Expected 4D or 5D tensor with optional 0 dim batch size and non-zero channel and "
                           f"spatial sizes for input, but got: {list(input.shape)}")
    return (input.unsqueeze(0), True) if input.dim() == 4 else (input, False)


def _geometry3d(op, x, kernel, stride, padding, dilation, ceil_mode):
    if any(k <= 0 for k in kernel):
        raise RuntimeError(f"kernel size should be greater than zero, but got kT: {kernel[0]} kH: {kernel[1]} kW: "
                           f"{kernel[2]}")
    if any(s <= 0 for s in stride):
        raise RuntimeError(f"stride should be greater than zero, but got dT: {stride[0]} dH: {stride[1]} dW: "
                           f"{stride[2]}")
    if any(d <= 0 for d in dilation):
        raise RuntimeError(f"dilation should be greater than zero, but got dilationT: {dilation[0]} dilationH: "
                           f"{dilation[1]} dilationW: {dilation[2]}")
    sizes = tuple(x.shape[2:])
    outs = tuple(_p.pooling_output_shape(n, k, p, s, d, ceil_mode)
                 for n, k, p, s, d in zip(sizes, kernel, padding, stride, dilation))
    if any(o < 1 for o in outs):
        C = x.shape[1]
        raise RuntimeError(f"Given input size: ({C}x{'x'.join(map(str, sizes))}). Calculated output size: "
                           f"({C}x{'x'.join(map(str, outs))}). Output size is too small")
    return outs


def _depth_table(n_out, n_in, k, s, p, d):
    """(positions, inside) of each (output depth, tap): a tap outside the input reads the window's
    first inside position (0 where the window has none) and is marked outside."""
    pos, inside = [], []
    for o in range(n_out):
        taps = [o * s - p + t * d for t in range(k)]
        first = next((q for q in taps if 0 <= q < n_in), 0)
        pos += [q if 0 <= q < n_in else first for q in taps]
        inside += [1 if 0 <= q < n_in else 0 for q in taps]
    return pos, inside


def _pick_taps(vals, idx2, dpos, plane):
    """vals, idx2 (B, C, OD, K, OH, OW): per output, the tap of the first maximum (or the last NaN)
    over dim 3; its value and its index dpos[od, tap] * plane + the 2-D index."""
    B, C, OD, K, OH, OW = vals.shape
    pick = vals.argmax(3, keepdim=True)
    if vals._dtype.is_floating_point and K > 1:
        order = geometry_tensor(("taps", K), _INT64, vals.device, lambda: list(range(1, K + 1))).reshape(1, 1, 1, K, 1, 1)
        last_nan = (vals.isnan().to(_INT64) * order).amax(3, keepdim=True) - 1
        pick = last_nan.where(last_nan >= 0, pick)
    v = vals.gather(3, pick).squeeze(3)
    i2 = idx2.gather(3, pick).squeeze(3)
    d = dpos.reshape(1, 1, OD, K, 1, 1).expand(B, C, OD, K, OH, OW).gather(3, pick).squeeze(3)
    return v, d * plane + i2


def _back(y, unbatched):
    return y.squeeze(0) if unbatched else y


# -- max_pool3d ---------------------------------------------------------------------------------------------
def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    op = "max_pool3d"
    kernel = _triple(kernel_size, op, "kernel_size")
    stride = kernel if _p._stride_defaults_to_kernel(stride) else _triple(stride, op, "stride", True)
    padding = _triple(padding, op, "padding")
    dilation = _triple(dilation, op, "dilation")
    x, unbatched = _batched(input, op)
    if x._dtype is dtypes.bool_:
        raise RuntimeError("\"max_pool3d\" not implemented for 'Bool' (convert the input with .to(tensorlab.uint8) "
                           "or .float() first)")
    outs = _geometry3d(op, x, kernel, stride, padding, dilation, ceil_mode)
    B, C, D, H, W = x.shape
    od, oh, ow = outs
    kd = kernel[0]
    key = ("max_pool3d_depth", od, D, kd, stride[0], padding[0], dilation[0])
    table = _depth_table(od, D, kd, stride[0], padding[0], dilation[0])
    dpos = geometry_tensor(key, _INT64, x.device, lambda: table[0])
    xd = take_rows(x, 2, dpos).reshape(B, C * od * kd, H, W)
    vals, idx2 = _p._max_pool_primitive(xd, (oh, ow), kernel[1:], stride[1:], padding[1:], dilation[1:])
    v, ix = _pick_taps(vals.reshape(B, C, od, kd, oh, ow), idx2.reshape(B, C, od, kd, oh, ow), dpos, H * W)
    if return_indices:
        return _back(v, unbatched), _back(ix, unbatched)
    return _back(v, unbatched)


def max_pool3d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=False):
    return max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


# -- avg_pool3d ---------------------------------------------------------------------------------------------
def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    op = "avg_pool3d"
    kernel = _triple(kernel_size, op, "kernel_size")
    stride = kernel if _p._stride_defaults_to_kernel(stride) else _triple(stride, op, "stride", True)
    padding = _triple(padding, op, "padding")
    if isinstance(input, Tensor) and input.dim() not in (4, 5):
        raise RuntimeError(f"non-empty 4D or 5D (batch mode) tensor expected for input (avg_pool3d got "
                           f"{list(input.shape)})")
    x, unbatched = _batched(input, op)
    dt = x._dtype
    if dt is dtypes.bool_ or dt in (dtypes.int8, dtypes.int16, dtypes.int32, dtypes.uint8):
        raise RuntimeError(f"\"avg_pool3d_out_frame\" not implemented for '{type_name(dt)}' (avg_pool3d takes "
                           "floating inputs and int64; convert the input with .float())")
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    outs = _geometry3d(op, x, kernel, stride, padding, (1, 1, 1), ceil_mode)
    B, C, D, H, W = x.shape
    od, oh, ow = outs
    kd = kernel[0]
    geo = (od, D, kd, stride[0], padding[0])
    table = _depth_table(od, D, kd, stride[0], padding[0], 1)
    dpos = geometry_tensor(("avg_pool3d_depth",) + geo, _INT64, x.device, lambda: table[0])
    acc = dtypes.float32 if dt in (dtypes.float16, dtypes.bfloat16) else (dt if dt.is_floating_point else _INT64)
    mask = geometry_tensor(("avg_pool3d_inside",) + geo, acc, x.device, lambda: table[1]).reshape(1, 1, od, kd, 1, 1)
    xd = take_rows(x, 2, dpos).reshape(B, C * od * kd, H, W)
    cols = im2col(xd, kernel[1:], (1, 1), padding[1:], stride[1:], (oh, ow))
    sums = cols.sum((2, 3), dtype=acc).reshape(B, C, od, kd, oh, ow)
    s = (sums * mask).sum(3)

    def divisors():
        if divisor_override is not None:
            return [[[divisor_override] * ow for _ in range(oh)] for _ in range(od)]
        per = [_p._avg_divisors(o, n, k, st, p) for o, n, k, st, p in zip(outs, (D, H, W), kernel, stride, padding)]
        ds, hs, ws = (q[0] if count_include_pad else q[1] for q in per)
        return [[[a * b * c for c in ws] for b in hs] for a in ds]
    key = ("avg_pool3d", D, H, W, outs, kernel, stride, padding, bool(count_include_pad), divisor_override)
    if dt.is_floating_point:
        y = s / geometry_tensor(key, acc, x.device, divisors)
        y = y.to(dt) if acc is not dt else y
    else:  # int64: the sum truncated by the divisor, as C++ integer division
        y = s.div(geometry_tensor(key, _INT64, x.device, divisors), rounding_mode="trunc").to(dt)
    return _back(y, unbatched)


# -- adaptive pools ---------------------------------------------------------------------------------------------
def _adaptive_batched(input, op):
    _p._adaptive_checks(input, 3, op, f"{op}(): Expected 4D or 5D tensor, but got: {list(input.shape)}"
                        if isinstance(input, Tensor) else "")
    return (input.unsqueeze(0), True) if input.dim() == 4 else (input, False)


def adaptive_avg_pool3d(input, output_size):
    op = "adaptive_avg_pool3d"
    x, unbatched = _adaptive_batched(input, op)
    od, oh, ow = _p._adaptive_size(output_size, x, 3, op)
    dt = x._dtype
    if not dt.is_floating_point:
        raise NotImplementedError(f"\"{op}\" not implemented for '{type_name(dt)}' (convert the input with .float() "
                                  "first)")
    acc = dtypes.float32 if dt in (dtypes.float16, dtypes.bfloat16) else dt
    xa = x.to(acc) if acc is not dt else x
    B, C, D, H, W = x.shape
    y = _p._adaptive_avg(_Plain(xa.reshape(B, C * D, H, W)), (oh, ow), op).reshape(B, C, D, oh * ow)
    if od != D:
        y = _p._averaging_matrix(D, od, acc, x.device).matmul(y)
    elif acc is dt and (oh, ow) == (H, W):
        y = y.clone()
    y = y.reshape(B, C, od, oh, ow)
    return _back(y.to(dt) if acc is not dt else y, unbatched)


def _adaptive_depth_table(n_in, n_out):
    """(n_out * kmax) positions of each adaptive window, padded with its last element, and kmax."""
    wins = _p._adaptive_windows(n_in, n_out)
    k = max(hi - lo for lo, hi in wins)
    return [min(lo + t, hi - 1) for lo, hi in wins for t in range(k)], k


def adaptive_max_pool3d(input, output_size, return_indices=False):
    op = "adaptive_max_pool3d"
    x, unbatched = _adaptive_batched(input, op)
    od, oh, ow = _p._adaptive_size(output_size, x, 3, op)
    dt = x._dtype
    if not dt.is_floating_point:
        raise NotImplementedError(f"\"{op}\" not implemented for '{type_name(dt)}' (convert the input with .float() "
                                  "first)")
    B, C, D, H, W = x.shape
    if 0 in (od, oh, ow) or x.numel() == 0:
        from .creation import empty
        v = empty((B, C, od, oh, ow), dtype=dt, device=x.device) * 0 + x.sum() * 0 if B else \
            empty((B, C, od, oh, ow), dtype=dt, device=x.device)
        ix = empty((B, C, od, oh, ow), dtype=_INT64, device=x.device)
        return (_back(v, unbatched), _back(ix, unbatched)) if return_indices else _back(v, unbatched)
    table, k = _adaptive_depth_table(D, od)
    dpos = geometry_tensor(("adaptive_max_depth", D, od), _INT64, x.device, lambda: table)
    xd = take_rows(x, 2, dpos).reshape(B, C * od * k, H, W)
    vals, idx2 = _p._adaptive_max(_Plain(xd), (oh, ow), True, op)
    v, ix = _pick_taps(vals.reshape(B, C, od, k, oh, ow), idx2.reshape(B, C, od, k, oh, ow), dpos, H * W)
    if return_indices:
        return _back(v, unbatched), _back(ix, unbatched)
    return _back(v, unbatched)


def adaptive_max_pool3d_with_indices(input, output_size, return_indices=False):
    return adaptive_max_pool3d(input, output_size, True)


# -- fractional max pooling ---------------------------------------------------------------------------------------
def _intervals(u, n_in, n_out, k):
    """torch's generate_intervals over the samples u (..., in the input's dtype): (..., n_out)
    window starts, floor((i + u) * alpha) - floor(u * alpha), the last one n_in - k."""
    from .creation import arange, full
    shape = tuple(u.shape)
    last = full(shape + (1,), n_in - k, dtype=_INT64, device=u.device)
    if n_out == 1:
        return last
    dt = u._dtype
    alpha = full((), n_in - k, dtype=dt, device=u.device) / full((), n_out - 1, dtype=dt, device=u.device)
    i = arange(n_out - 1, dtype=dt, device=u.device)
    u1 = u.unsqueeze(-1)
    seq = ((i + u1) * alpha).to(_INT64) - (u1 * alpha).to(_INT64)
    from .shape import cat
    return cat([seq, last], -1)


def _fractional(op, nd, input, kernel_size, output_size, output_ratio, return_indices, _random_samples):
    from .random import rand
    if output_size is None and output_ratio is None:
        raise ValueError(f"{op} requires specifying either an output_size or an output_ratio")
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    if input.dim() not in (nd + 1, nd + 2):
        raise RuntimeError(f"{op}(): Expected {nd + 1}D or {nd + 2}D tensor, but got: {list(input.shape)}")
    if output_size is None:
        ratio = expand_param(output_ratio, nd, "output_ratio", op) if not isinstance(output_ratio, (float, tuple, list)) \
            else (tuple(output_ratio) if isinstance(output_ratio, (tuple, list)) else (output_ratio,) * nd)
        if len(ratio) == 1:
            ratio = ratio * nd
        output_size = [int(input.shape[-nd + i] * ratio[i]) for i in range(nd)]
    kernel = expand_param(kernel_size, nd, "kernel_size", op)
    outs = expand_param(output_size, nd, "output_size", op)
    if len(kernel) != nd:
        raise RuntimeError(f"{op}: kernel_size must either be a single Int or tuple of {nd} Ints")
    if len(outs) != nd:
        raise RuntimeError(f"{op}: output_size must either be a single Int or tuple of {nd} Ints")
    x = input.unsqueeze(0) if input.dim() == nd + 1 else input
    N, C = x.shape[:2]
    for i in range(1, x.dim()):
        if x.shape[i] == 0:
            raise RuntimeError(f"{op}(): Expected input to have non-zero size for non-batch dimensions, but got "
                               f"{list(input.shape)} with dimension {i} being empty.")
    sizes = tuple(x.shape[2:])
    names = ("time", "height", "width")[3 - nd:]
    for n, k, o, name in zip(sizes, kernel, outs, names):
        if (o + k - 1 > n) if nd == 2 else (o + k - 1 >= n):
            raise RuntimeError(f"{op}_out(): pool {name} {k} too large relative to input {name} {n}")
    dt = x._dtype
    if not dt.is_floating_point:
        raise NotImplementedError(f"\"{op}_out_frame\" not implemented for '{type_name(dt)}' (convert the input with "
                                  ".float() first)")
    if _random_samples is None:
        _random_samples = rand(N, C, nd, dtype=dt, device=x.device)
    samples = _random_samples
    if samples.dim() != 3 or samples.shape[2] != nd:
        raise RuntimeError(f"{op}: expected _random_samples of size {[N, C, nd]} (batch, channels, {nd}), but got "
                           f"{list(samples.shape)}")
    # torch: at least the batch's rows (the first N are used; an unbatched input is a batch of one)
    if samples.shape[0] < N:
        raise RuntimeError(f"{op}: Expect _random_samples.size(0) no less then input batch size "
                           f"(got {list(samples.shape)} for a batch of {N})")
    if samples.shape[1] != C:
        raise RuntimeError(f"{op}: Expect _random_samples.size(1) equals to input channel size "
                           f"(got {list(samples.shape)} for {C} channels)")
    samples = samples[:N].to(dt)
    # sample 0 is the width's, 1 the height's in 2-D; time, height, width in 3-D (ATen's order)
    which = (1, 0) if nd == 2 else (0, 1, 2)
    starts = [_intervals(samples[:, :, which[j]], sizes[j], outs[j], kernel[j]) for j in range(nd)]
    from .creation import arange
    # flat plane index of every (out..., tap...) element: dims (N, C, o_0..o_{nd-1}, k_0..k_{nd-1})
    flat = None
    stride = 1
    for j in reversed(range(nd)):
        shp = [N, C] + [1] * (2 * nd)
        s_j = starts[j].reshape(N, C, *[outs[j] if m == j else 1 for m in range(nd)], *([1] * nd))
        t_j = arange(kernel[j], dtype=_INT64, device=x.device).reshape(
            *([1] * (2 + nd)), *[kernel[j] if m == j else 1 for m in range(nd)])
        term = (s_j + t_j) * stride
        flat = term if flat is None else flat + term
        stride *= sizes[j]
        del shp
    K = 1
    for k in kernel:
        K *= k
    L = 1
    for o in outs:
        L *= o
    flat = flat.expand(N, C, *outs, *kernel).reshape(N, C, L * K)
    P = 1
    for n in sizes:
        P *= n
    vals = x.reshape(N, C, P).gather(2, flat).reshape(N, C, L, K)
    pick = vals.argmax(3, keepdim=True)
    if K > 1:
        order = geometry_tensor(("taps", K), _INT64, x.device, lambda: list(range(1, K + 1)))
        last_nan = (vals.isnan().to(_INT64) * order).amax(3, keepdim=True) - 1
        pick = last_nan.where(last_nan >= 0, pick)
    v = vals.gather(3, pick).reshape(N, C, *outs)
    ix = flat.reshape(N, C, L, K).gather(3, pick).reshape(N, C, *outs)
    if input.dim() == nd + 1:
        v, ix = v.squeeze(0), ix.squeeze(0)
    return (v, ix) if return_indices else v


def fractional_max_pool2d(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                          _random_samples=None):
    return _fractional("fractional_max_pool2d", 2, input, kernel_size, output_size, output_ratio, return_indices,
                       _random_samples)


def fractional_max_pool3d(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                          _random_samples=None):
    return _fractional("fractional_max_pool3d", 3, input, kernel_size, output_size, output_ratio, return_indices,
                       _random_samples)


def fractional_max_pool2d_with_indices(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                                       _random_samples=None):
    return fractional_max_pool2d(input, kernel_size, output_size, output_ratio, True, _random_samples)


def fractional_max_pool3d_with_indices(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                                       _random_samples=None):
    return fractional_max_pool3d(input, kernel_size, output_size, output_ratio, True, _random_samples)


# -- max_pool2d_with_indices_backward ---------------------------------------------------------------------------------
def max_pool2d_with_indices_backward(grad_output, self=None, kernel_size=(), stride=(), padding=(0,), dilation=(1,),
                                     ceil_mode=False, indices=None, **pool_kwargs):
    """aten.max_pool2d_with_indices_backward(grad_output, self, kernel_size, stride, padding, dilation,
    ceil_mode, indices): the gradient of max_pool2d's input for grad_output, routed by indices.

    Called as torch's OpInfo calls its wrapper (the input alone, the pool's arguments as keywords,
    no indices), it pools the input, takes a gradient of ones and returns the backward of that."""
    if self is None and indices is None:  # (return_indices, which the wrapper passes on, changes nothing)
        x = grad_output
        st = kernel_size if _p._stride_defaults_to_kernel(stride) else stride
        out, idx = _p.max_pool2d(x, kernel_size, st, padding, dilation, ceil_mode, True)
        from .creation import ones_like
        return max_pool2d_with_indices_backward(ones_like(out), x, kernel_size, st, padding, dilation, ceil_mode, idx)
    op = "max_pool2d_with_indices_backward"
    if pool_kwargs:
        raise TypeError(f"{op}() got an unexpected keyword argument '{next(iter(pool_kwargs))}'")
    for t, name in ((grad_output, "grad_output"), (self, "self"), (indices, "indices")):
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}(): argument '{name}' must be Tensor, not {type(t).__name__}")
    kernel, stride, padding = _p._window_2d(op, kernel_size, stride, padding)
    dilation = _p._pair(dilation, op, "dilation")
    if self.dim() not in (3, 4):
        raise RuntimeError(f"non-empty 3D or 4D (batch mode) tensor expected for input ({op} got {list(self.shape)})")
    unbatched = self.dim() == 3
    x = self.unsqueeze(0) if unbatched else self
    oh, ow = _p._pool2d_geometry(_Plain(x), kernel, stride, padding, dilation, ceil_mode)
    g = grad_output.unsqueeze(0) if unbatched else grad_output
    ix = indices.unsqueeze(0) if unbatched else indices
    if tuple(g.shape) != tuple(x.shape[:2]) + (oh, ow) or tuple(ix.shape) != tuple(g.shape):
        raise RuntimeError(f"{op}: expected grad_output and indices of size {list(x.shape[:2]) + [oh, ow]} (the "
                           f"pool's output), but got {list(g.shape)} and {list(ix.shape)}")
    if ix._dtype is not _INT64:
        raise RuntimeError(f"{op}: expected indices of dtype Long, but got {type_name(ix._dtype)}")
    if g._dtype is not x._dtype:
        raise RuntimeError(f"expected scalar type {type_name(x._dtype)} but found {type_name(g._dtype)}")
    gi = _p.max_pool2d_backward(g.contiguous(), ix.contiguous(), tuple(x.shape[2:]), tuple(kernel), tuple(stride),
                                tuple(padding), tuple(dilation))
    return gi.squeeze(0) if unbatched else gi
