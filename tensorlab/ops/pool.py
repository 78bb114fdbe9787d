"""Pooling as torch.nn.functional has it: max_pool1d/2d (with indices, dilation, ceil_mode),
avg_pool1d/2d (count_include_pad, ceil_mode, divisor_override), adaptive_avg_pool1d/2d and
adaptive_max_pool1d/2d.

Max and average pooling read their windows through conv's `im2col` primitive (padding with the
dtype's lowest value for max, zero for average), then reduce over the window dim; the gradient
flows back through the gather of the chosen element (max) or the sum (average) and im2col's
derivative, col2im, which gathers each input element's terms: deterministic, no atomics.
Adaptive average pooling is two products with averaging matrices (one per spatial dim);
adaptive max pooling is its own primitive pair (adaptive_max_pool2d and its backward, a gather per
input element over the windows holding it).

Indices follow torch: the flat position in the input plane of the first maximum of the window
(row-major), or of the last NaN when the window has NaNs; a window whose every element is the
lowest value (e.g. all -inf) gives its first element inside the input, never a padding position."""
from __future__ import annotations

from .. import autograd_hooks, dtypes
from ..tensor import Tensor
from . import _bounds, registry
from ._common import empty_tensor
from .conv import expand_param, geometry_tensor, im2col, keep_channels_last, type_name
from .registry import KEEP, OpDef

_F = "pool"
registry.register(
    OpDef("max_pool2d", _F, "max_pool2d", KEEP),
    OpDef("max_pool2d_backward", _F, "max_pool2d_backward", KEEP),
    OpDef("adaptive_max_pool2d", _F, "adaptive_max_pool2d", KEEP),
    OpDef("adaptive_max_pool2d_backward", _F, "adaptive_max_pool2d_backward", KEEP),
)
# torch's top-level names (torch.max_pool2d, ...), as the functional forms
FUNCTIONS = ("max_pool1d", "max_pool2d", "avg_pool1d", "adaptive_avg_pool1d")  # torch.adaptive_max_pool1d returns a pair: not exported
_INT64 = dtypes.int64


def _check_tensor(x, op):
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument 'input' (position 1) must be Tensor, not {type(x).__name__}")


def _pair(value, op, name, allow_none=False):
    if value is None and allow_none:
        return None
    if isinstance(value, (tuple, list)) and len(value) not in (1, 2):
        what = "either be omitted, a single int, or a tuple of two ints" if allow_none else \
            "either be a single int, or a tuple of two ints"
        raise RuntimeError(f"{op}: {name} must {what}")
    v = expand_param(value, 2, name, op)
    return v


def _no_bool(x, op):
    if x._dtype is dtypes.bool_:
        raise NotImplementedError(f"\"{op}\" not implemented for 'Bool' (convert the input with .to(tensorlab.uint8) "
                                  "or .float() first)")


def pooling_output_shape(n, k, pad, stride, dilation, ceil_mode):
    """ATen's pooling_output_shape: ceil_mode adds windows that start inside the padded input."""
    if stride == 0:
        raise RuntimeError("stride should not be zero")
    if pad < 0:
        raise RuntimeError(f"pad must be non-negative, but got pad: {pad}")
    if pad > ((k - 1) * dilation + 1) // 2:
        raise RuntimeError(f"pad should be at most half of effective kernel size, but got pad={pad}, kernel_size={k} "
                           f"and dilation={dilation}")
    num = n + 2 * pad - dilation * (k - 1) - 1 + (stride - 1 if ceil_mode else 0)
    out = num // stride + 1
    if ceil_mode and (out - 1) * stride >= n + pad:
        out -= 1
    return out


def _pool2d_geometry(inp, kernel, stride, padding, dilation, ceil_mode):
    """(oh, ow) after ATen's pool2d_shape_check, for the 4-D (batched) inp.x."""
    x = inp.x
    H, W = x.shape[-2:]
    oh = pooling_output_shape(H, kernel[0], padding[0], stride[0], dilation[0], ceil_mode)
    ow = pooling_output_shape(W, kernel[1], padding[1], stride[1], dilation[1], ceil_mode)
    if kernel[0] <= 0 or kernel[1] <= 0:
        raise RuntimeError(f"kernel size should be greater than zero, but got kH: {kernel[0]} kW: {kernel[1]}")
    if stride[0] <= 0 or stride[1] <= 0:
        raise RuntimeError(f"stride should be greater than zero, but got dH: {stride[0]} dW: {stride[1]}")
    if dilation[0] <= 0 or dilation[1] <= 0:
        raise RuntimeError(f"dilation should be greater than zero, but got dilationH: {dilation[0]} dilationW: "
                           f"{dilation[1]}")
    if 0 in tuple(x.shape[1:]):
        shown = list(inp.shape)
        raise RuntimeError(f"Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but got:"
                           f"{shown}")
    if oh < 1 or ow < 1:
        C = x.shape[1]
        raise RuntimeError(f"Given input size: ({C}x{H}x{W}). Calculated output size: ({C}x{oh}x{ow}). Output size is "
                           f"too small")
    return oh, ow


class _Input:
    """A 4-D view of a pooling input and how to shape results back (unbatched, 1-D)."""

    def __init__(self, x, unbatched, one_d, shape, source):
        self.x = x
        self.source = source  # the caller's tensor (its memory format is the result's)
        self.shape = shape  # the caller's
        self.unbatched = unbatched
        self.one_d = one_d

    def back(self, y):
        if self.one_d:
            y = y.squeeze(2)
        elif not self.unbatched:
            y = keep_channels_last(y, self.source)
        return y.squeeze(0) if self.unbatched else y


def _as_4d(input, nd):
    """(x as (N, C, H, W), unbatched, 1-D): torch's pools take nd + 1 or nd + 2 dims."""
    unbatched = input.dim() == nd + 1
    x = input.unsqueeze(0) if unbatched else input
    if nd == 1:
        x = x.unsqueeze(2)
    return _Input(x, unbatched, nd == 1, tuple(input.shape), input)


# -- max pooling ---------------------------------------------------------------------------------------------------
def _max_pool_primitive(x, out_hw, kernel, stride, padding, dilation):
    """(values, indices) of the max_pool2d primitive over a 4-D x, recorded for autograd."""
    shape = tuple(x.shape[:2]) + tuple(out_hw)
    vals = empty_tensor(shape, x._dtype, x.device)
    idx = empty_tensor(shape, _INT64, x.device)
    if vals.numel():
        x._backend.max_pool2d(vals, idx, x, kernel, stride, padding, dilation)
    geo = dict(kernel=kernel, stride=stride, padding=padding, dilation=dilation)
    return autograd_hooks.record(vals, "max_pool2d", (x,), indices=idx, **geo), idx


def max_pool2d_backward(grad_output, indices, in_hw, kernel, stride, padding, dilation):
    """The gradient of max_pool2d's input: each element gets the sum of the gradients of the windows
    whose index is that element (a gather per input element: deterministic)."""
    shape = tuple(grad_output.shape[:2]) + tuple(in_hw)
    gi = empty_tensor(shape, grad_output._dtype, grad_output.device)
    if gi.numel():
        if grad_output.numel():
            grad_output._backend.max_pool2d_backward(gi, grad_output, indices, kernel, stride, padding, dilation)
        else:
            gi.zero_()
    return autograd_hooks.record(gi, "max_pool2d_backward", (grad_output,), indices=indices)


def _max_pool(inp, kernel, stride, padding, dilation, ceil_mode, return_indices):
    oh, ow = _pool2d_geometry(inp, kernel, stride, padding, dilation, ceil_mode)
    vals, idx = _max_pool_primitive(inp.x, (oh, ow), tuple(kernel), tuple(stride), tuple(padding), tuple(dilation))
    if not return_indices:
        return inp.back(vals)
    return inp.back(vals), inp.back(idx)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    op = "max_pool2d"
    _check_tensor(input, op)
    kernel, stride, padding = _window_2d(op, kernel_size, stride, padding)
    dilation = _pair(dilation, op, "dilation")
    if input.dim() not in (3, 4):
        raise RuntimeError(f"non-empty 3D or 4D (batch mode) tensor expected for input (max_pool2d got "
                           f"{list(input.shape)})")
    _no_bool(input, "max_pool2d")
    return _max_pool(_as_4d(input, 2), kernel, stride, padding, dilation, ceil_mode, return_indices)


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    op = "max_pool1d"
    _check_tensor(input, op)
    k, s, p = _window_1d(op, kernel_size, stride, padding)
    (d,) = _single(dilation, op, "dilation")
    if input.dim() not in (2, 3) or 0 in tuple(input.shape[1:]) and input.dim() == 3 or \
            input.dim() == 2 and 0 in tuple(input.shape):
        raise RuntimeError(f"max_pool1d: Expected 2D or 3D (batch mode) tensor with optional 0 dim batch size for "
                           f"input, but got:{list(input.shape)}")
    if k <= 0:
        raise RuntimeError(f"max_pool1d() kernel_size must be greater than zero, but got {k}")
    if s <= 0:
        raise RuntimeError(f"max_pool1d() stride must be greater than zero, but got {s}")
    if p < 0:
        raise RuntimeError(f"max_pool1d() padding must be non-negative, but got {p}")
    if p > k // 2:
        raise RuntimeError(f"max_pool1d() padding should be at most half of kernel size, but got padding={p} and "
                           f"kernel_size={k}")
    if d <= 0:
        raise RuntimeError(f"max_pool1d() dilation must be greater than zero, but got {d}")
    n = pooling_output_shape(input.shape[-1], k, p, s, d, ceil_mode) if p <= ((k - 1) * d + 1) // 2 else 0
    if n < 1:
        raise RuntimeError(f"max_pool1d() Invalid computed output size: {n}")
    _no_bool(input, "max_pool1d")
    return _max_pool(_as_4d(input, 1), (1, k), (1, s), (0, p), (1, d), ceil_mode, return_indices)


def _stride_defaults_to_kernel(stride):
    """torch's pools: stride None or an empty list means stride = kernel_size."""
    return stride is None or (isinstance(stride, (list, tuple)) and not stride)


def _window_2d(op, kernel_size, stride, padding):
    """A 2-D pool's (kernel, stride, padding) pairs, checked in torch's order."""
    kernel = _pair(kernel_size, op, "kernel_size")
    stride = kernel if _stride_defaults_to_kernel(stride) else _pair(stride, op, "stride", True)
    return kernel, stride, _pair(padding, op, "padding")


def _window_1d(op, kernel_size, stride, padding):
    """A 1-D pool's kernel, stride and padding ints, checked in torch's order."""
    (k,) = _single(kernel_size, op, "kernel_size")
    (s,) = (k,) if _stride_defaults_to_kernel(stride) else _single(stride, op, "stride")
    (p,) = _single(padding, op, "padding")
    return k, s, p


def _single(value, op, name):
    if isinstance(value, (tuple, list)) and len(value) != 1:
        raise RuntimeError(f"{op}: {name} must be a single int or a tuple of one int, got {list(value)}")
    return expand_param(value, 1, name, op)


# -- average pooling ----------------------------------------------------------------------------------------------
def _avg_divisors(n_out, size, k, s, p):
    """Per output position: (pool size counting padding, pool size inside the input)."""
    incl, excl = [], []
    for o in range(n_out):
        start = o * s - p
        end = min(start + k, size + p)
        incl.append(end - start)
        excl.append(min(end, size) - max(start, 0))
    return incl, excl


def _avg_pool(inp, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override):
    x = inp.x
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    oh, ow = _pool2d_geometry(inp, kernel, stride, padding, (1, 1), ceil_mode)
    N, C = x.shape[:2]
    dev = x.device
    cols = im2col(x, kernel, (1, 1), padding, stride, (oh, ow))
    win = cols.reshape(N, C, kernel[0] * kernel[1], oh, ow)
    dt = x._dtype
    H, W = x.shape[2:]

    def divisors():
        if divisor_override is not None:
            return [[divisor_override] * ow for _ in range(oh)]
        ih, eh = _avg_divisors(oh, H, kernel[0], stride[0], padding[0])
        iw, ew = _avg_divisors(ow, W, kernel[1], stride[1], padding[1])
        hs, ws = (ih, iw) if count_include_pad else (eh, ew)
        return [[a * b for b in ws] for a in hs]
    key = ("avg_pool", H, W, oh, ow, tuple(kernel), tuple(stride), tuple(padding), bool(count_include_pad),
           divisor_override)
    if dt.is_floating_point:
        acc = dtypes.float32 if dt in (dtypes.float16, dtypes.bfloat16) else dt
        s = win.sum(2, dtype=acc)
        y = s / geometry_tensor(key, acc, dev, divisors)
        y = y.to(dt) if acc is not dt else y
    else:  # integers: the int64 sum truncated by the divisor, as C++ integer division
        s = win.sum(2, dtype=_INT64)
        y = s.div(geometry_tensor(key, _INT64, dev, divisors), rounding_mode="trunc").to(dt)
    return inp.back(y)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    op = "avg_pool2d"
    _check_tensor(input, op)
    kernel, stride, padding = _window_2d(op, kernel_size, stride, padding)
    if input.dim() < 3:
        n = max(input.dim(), 1)
        raise IndexError(f"Dimension out of range (expected to be in range of [-{n}, {n - 1}], but got -3)")
    if input.dim() > 4:
        raise RuntimeError(f"non-empty 3D or 4D (batch mode) tensor expected for input (avg_pool2d got "
                           f"{list(input.shape)})")
    _no_bool(input, "avg_pool2d")
    return _avg_pool(_as_4d(input, 2), kernel, stride, padding, ceil_mode, count_include_pad, divisor_override)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    op = "avg_pool1d"
    _check_tensor(input, op)
    k, s, p = _window_1d(op, kernel_size, stride, padding)
    if input.dim() not in (2, 3):
        raise RuntimeError(f"Expected 2 to 3 dimensions, but got {input.dim()}-dimensional tensor for argument #1 "
                           f"'self' (while checking arguments for avg_pool1d)")
    _no_bool(input, "avg_pool2d")
    return _avg_pool(_as_4d(input, 1), (1, k), (1, s), (0, p), ceil_mode, count_include_pad, None)


# -- adaptive pooling ---------------------------------------------------------------------------------------------
def _adaptive_windows(n_in, n_out):
    """torch's adaptive windows: [floor(i * n_in / n_out), ceil((i + 1) * n_in / n_out))."""
    return [((i * n_in) // n_out, -(-((i + 1) * n_in) // n_out)) for i in range(n_out)]


def _adaptive_size(output_size, x, nd, op):
    if isinstance(output_size, (tuple, list)):
        if len(output_size) != nd:
            raise RuntimeError(f"{op}: output_size must be {nd}")
        sizes = list(output_size)
    else:
        sizes = [output_size] * nd
    spatial = tuple(x.shape[-nd:])
    out = []
    for s, n in zip(sizes, spatial):
        if s is None:
            out.append(n)
        elif isinstance(s, bool) or not hasattr(s, "__index__"):
            raise TypeError(f"{op}(): argument 'output_size' must be tuple of ints, not {type(s).__name__}")
        else:
            out.append(int(s))
    if any(s < 0 for s in out):
        raise RuntimeError(f"{op}: elements of output_size must be greater than or equal to 0 but received "
                           f"{{{', '.join(map(str, out))}}}")
    return tuple(out)


def _adaptive_checks(input, nd, op, dims_msg):
    _check_tensor(input, op)
    if input.dim() not in (nd + 1, nd + 2):
        raise RuntimeError(dims_msg)
    for i in range(1, input.dim()):
        if input.shape[i] == 0 and not (input.dim() == nd + 2 and i == 1):
            raise RuntimeError(f"{op}(): Expected input to have non-zero size for non-batch dimensions, but input has "
                               f"sizes {list(input.shape)} with dimension {i} being empty")


def _averaging_matrix(n_in, n_out, dt, dev):
    def rows():
        return [[1.0 / (hi - lo) if lo <= j < hi else 0.0 for j in range(n_in)]
                for lo, hi in _adaptive_windows(n_in, n_out)]
    return geometry_tensor(("adaptive_avg", n_in, n_out), dt, dev, rows).reshape(n_out, n_in)


def adaptive_average_dim(y, d, n_out, op):
    """torch's adaptive average along dim d of y: each window summed (taps in order, a NaN/inf
    reaching only its own windows) and divided by its length (ops/_taps.py)."""
    from . import _taps
    n_in = y.shape[d]
    idx, valid, length = _taps.adaptive_taps(n_in, n_out)
    _taps.check_taps(y, d, n_out, idx.shape[1], op)
    ti, tv, tl_ = _taps.as_tensors(("adaptive_avg", n_in, n_out), (idx, valid, length),
                                   (_INT64, dtypes.bool_, y._dtype), y.device)
    return _taps.apply(y, d, ti, valid=tv, divisor=tl_)


def _adaptive_avg(inp, out_hw, op):
    x = inp.x
    dt = x._dtype
    if not dt.is_floating_point:
        raise NotImplementedError(f"\"{op}\" not implemented for '{type_name(dt)}' (convert the input with .float() "
                                  "first)")
    acc = dtypes.float32 if dt in (dtypes.float16, dtypes.bfloat16) else dt
    xa = x.to(acc) if acc is not dt else x
    H, W = x.shape[2:]
    oh, ow = out_hw
    if (oh, ow) == (1, 1):
        y = xa.mean((2, 3), keepdim=True)
    elif (oh, ow) == (H, W):
        y = xa.clone() if acc is dt else xa
    else:
        y = xa
        if ow != W:
            y = adaptive_average_dim(y, 3, ow, op)
        if oh != H:
            y = adaptive_average_dim(y, 2, oh, op)
    y = y.to(dt) if acc is not dt else y
    return inp.back(y)


def adaptive_avg_pool2d(input, output_size):
    op = "adaptive_avg_pool2d"
    _adaptive_checks(input, 2, op, f"adaptive_avg_pool2d(): Expected 3D or 4D tensor, but got {list(input.shape)}"
                     if isinstance(input, Tensor) else "")
    out_hw = _adaptive_size(output_size, input, 2, op)
    _bounds.check_shape_fits(tuple(input.shape[:-2]) + out_hw, input._dtype.itemsize, input.device, op)
    return _adaptive_avg(_as_4d(input, 2), out_hw, op)


def adaptive_avg_pool1d(input, output_size):
    op = "adaptive_avg_pool1d"
    _adaptive_checks(input, 1, op, f"Expected 2 to 3 dimensions, but got {input.dim()}-dimensional tensor for argument "
                     f"#1 'self' (while checking arguments for adaptive_avg_pool1d)" if isinstance(input, Tensor) else "")
    (n,) = _adaptive_size(output_size, input, 1, op)
    _bounds.check_shape_fits(tuple(input.shape[:-1]) + (n,), input._dtype.itemsize, input.device, op)
    return _adaptive_avg(_as_4d(input, 1), (1, n), "adaptive_avg_pool2d")


def adaptive_max_pool2d_backward(grad_output, indices, in_hw):
    """The gradient of adaptive_max_pool2d's input: a gather per input element over the windows
    that contain it (deterministic)."""
    shape = tuple(grad_output.shape[:2]) + tuple(in_hw)
    gi = empty_tensor(shape, grad_output._dtype, grad_output.device)
    if gi.numel():
        if grad_output.numel():
            grad_output._backend.adaptive_max_pool2d_backward(gi, grad_output, indices)
        else:
            gi.zero_()
    return autograd_hooks.record(gi, "adaptive_max_pool2d_backward", (grad_output,), indices=indices)


def _adaptive_max(inp, out_hw, return_indices, op):
    x = inp.x
    dt = x._dtype
    if not dt.is_floating_point:
        raise NotImplementedError(f"\"{op}\" not implemented for '{type_name(dt)}' (convert the input with .float() "
                                  "first)")
    shape = tuple(x.shape[:2]) + tuple(out_hw)
    vals = empty_tensor(shape, dt, x.device)
    idx = empty_tensor(shape, _INT64, x.device)
    if vals.numel():
        x._backend.adaptive_max_pool2d(vals, idx, x)
    vals = autograd_hooks.record(vals, "adaptive_max_pool2d", (x,), indices=idx)
    if not return_indices:
        return inp.back(vals)
    return inp.back(vals), inp.back(idx)


def adaptive_max_pool2d(input, output_size, return_indices=False):
    op = "adaptive_max_pool2d"
    _adaptive_checks(input, 2, op, f"adaptive_max_pool2d(): Expected 3D or 4D tensor, but got: {list(input.shape)}"
                     if isinstance(input, Tensor) else "")
    out_hw = _adaptive_size(output_size, input, 2, op)
    _bounds.check_shape_fits(tuple(input.shape[:-2]) + out_hw, 8 + input._dtype.itemsize, input.device, op)
    return _adaptive_max(_as_4d(input, 2), out_hw, return_indices, op)


def adaptive_max_pool1d(input, output_size, return_indices=False):
    op = "adaptive_max_pool1d"
    _adaptive_checks(input, 1, op, f"Expected 2 to 3 dimensions, but got {input.dim()}-dimensional tensor for argument "
                     f"#1 'self' (while checking arguments for adaptive_max_pool1d)" if isinstance(input, Tensor) else "")
    (n,) = _adaptive_size(output_size, input, 1, op)
    _bounds.check_shape_fits(tuple(input.shape[:-1]) + (n,), 8 + input._dtype.itemsize, input.device, op)
    return _adaptive_max(_as_4d(input, 1), (1, n), return_indices, "adaptive_max_pool2d")


# torch.nn.functional's *_with_indices forms: (values, indices) whatever return_indices says
def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=False):
    return max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=False):
    return max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def adaptive_max_pool1d_with_indices(input, output_size, return_indices=False):
    return adaptive_max_pool1d(input, output_size, True)


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=False):
    return adaptive_max_pool2d(input, output_size, True)
