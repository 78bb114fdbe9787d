"""Convolutions as torch.nn.functional has them: conv1d, conv2d, conv_transpose1d, conv_transpose2d,
unfold and fold, and the non-zero padding modes (reflect, replicate, circular) of the Conv modules.

Two primitives carry all of them: `im2col` (the sliding windows of a (B, C, H, W) input as a
(B, C, kh, kw, oh, ow) tensor) and `col2im` (its adjoint, the windows summed back into the image,
deterministically: each output element gathers its own terms). A convolution is im2col followed
by the existing batched matmul (groups are a batch dim); a transposed convolution is a matmul
followed by col2im. Each primitive is the other's derivative, so every op here is differentiable
to any order through the composite. 1-D ops are the 2-D ones over a height of 1."""
from __future__ import annotations

from .. import autograd_hooks, dtypes
from ..tensor import Tensor, channels_last as _CL
from . import registry
from ._common import empty_tensor, same_device
from .registry import KEEP, OpDef

_F = "conv"
registry.register(
    OpDef("im2col", _F, "im2col", KEEP),
    OpDef("col2im", _F, "col2im", KEEP),
    # index_select / its adjoint with indices built from a layer's geometry (padding modes, nearest
    # resampling): in range by construction, so the CUDA backend skips the bounds check (a host wait)
    OpDef("take_rows", _F, "index", KEEP),
    OpDef("put_rows", _F, "index_put", KEEP),
)

FUNCTIONS = ("conv1d", "conv2d", "conv_transpose1d", "conv_transpose2d")
_TYPE_NAMES = {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16", "int64": "Long",
               "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool"}
_C_NAMES = {"float32": "float", "float64": "double", "float16": "c10::Half", "bfloat16": "c10::BFloat16",
            "int64": "long int", "int32": "int", "int16": "short int", "int8": "signed char", "uint8": "unsigned char",
            "bool": "bool"}


def type_name(dt):
    return _TYPE_NAMES[dt.name]


# -- the two primitives, recorded for autograd ---------------------------------------------------------
def im2col(x, kernel, dilation, padding, stride, out_hw, pad_value=0):
    """(B, C, kh, kw, oh, ow): window element (i, j) of output position (y, z) of the 4-D `x`;
    positions outside x read pad_value. Only the leading (top/left) padding is needed: the
    windows' count (out_hw) fixes how far past the end they reach."""
    shape = tuple(x.shape[:2]) + tuple(kernel) + tuple(out_hw)
    out = empty_tensor(shape, x._dtype, x.device)
    if out.numel():
        x._backend.im2col(out, x, tuple(kernel), tuple(dilation), tuple(padding), tuple(stride), pad_value)
    return autograd_hooks.record(out, "im2col", (x,), kernel=tuple(kernel), dilation=tuple(dilation),
                                 padding=tuple(padding), stride=tuple(stride), in_hw=tuple(x.shape[2:]))


def col2im(cols, in_hw, kernel, dilation, padding, stride):
    """The adjoint of im2col: a (B, C, H, W) tensor, each element the sum of the window elements
    of cols (B, C, kh, kw, oh, ow) that im2col would have read from it."""
    shape = tuple(cols.shape[:2]) + tuple(in_hw)
    out = empty_tensor(shape, cols._dtype, cols.device)
    if out.numel():
        cols._backend.col2im(out, cols, tuple(kernel), tuple(dilation), tuple(padding), tuple(stride))
    return autograd_hooks.record(out, "col2im", (cols,), kernel=tuple(kernel), dilation=tuple(dilation),
                                 padding=tuple(padding), stride=tuple(stride))


_GEOMETRY_CACHE = {}
_GEOMETRY_LIMIT = 64


def geometry_tensor(key, dtype, device, build):
    """A small constant tensor that depends only on a layer's geometry (pool divisors, resampling
    matrices, padding indices), built from `build()` (nested lists) once per (key, dtype, device)
    and reused: on CUDA an upload is a host wait, which a layer must not repeat on every call. The
    tensors are internal and never written."""
    k = (key, dtype, device)
    t = _GEOMETRY_CACHE.get(k)
    if t is None:
        from ..autograd import inference_mode
        from .creation import tensor
        with inference_mode(False):  # a normal tensor: autograd may save it, whatever mode built it
            t = tensor(build(), dtype=dtype, device=device)
        if len(_GEOMETRY_CACHE) >= _GEOMETRY_LIMIT:
            _GEOMETRY_CACHE.clear()
        _GEOMETRY_CACHE[k] = t
    return t


def take_rows(x, dim, idx):
    """x.index_select(dim, idx) for a geometry index (in range by construction: no bounds check)."""
    shape = tuple(x.shape[:dim]) + (idx.shape[0],) + tuple(x.shape[dim + 1:])
    out = empty_tensor(shape, x._dtype, x.device)
    if out.numel():
        x._backend.index(out, x, tuple(idx if d == dim else None for d in range(x.dim())), True)
    return autograd_hooks.record(out, "take_rows", (x,), dim=dim, index=idx)


def put_rows(g, dim, idx, size):
    """The adjoint of take_rows: zeros with `size` along dim, g's slices added at the positions idx."""
    shape = tuple(g.shape[:dim]) + (size,) + tuple(g.shape[dim + 1:])
    out = empty_tensor(shape, g._dtype, g.device)
    if out.numel():
        out._backend.fill(out, 0)
        if g.numel():
            out._backend.index_put(out, tuple(idx if d == dim else None for d in range(g.dim())), g, True, True)
    return autograd_hooks.record(out, "put_rows", (g,), dim=dim, index=idx)


def _channels_last(t):
    return t.dim() == 4 and not t.is_contiguous() and t.is_contiguous(memory_format=_CL)


def keep_channels_last(y, *sources):
    """torch's memory-format rule for 4-D convolutions and pools: a channels-last source (input, or a
    convolution's weight) gives a channels-last result."""
    if y.dim() == 4 and any(_channels_last(t) for t in sources if t is not None):
        return y.contiguous(memory_format=_CL)
    return y


# -- argument checks -------------------------------------------------------------------------------------
def expand_param(value, n, name, op):
    """An int or a sequence of n ints (torch's expand_param_if_needed / _pair)."""
    if isinstance(value, Tensor):
        value = value.tolist()
    if isinstance(value, bool) or not isinstance(value, (int, tuple, list)) and not hasattr(value, "__index__"):
        raise TypeError(f"{op}(): argument '{name}' must be tuple of ints, not {type(value).__name__}")
    if isinstance(value, (tuple, list)):
        vals = []
        for v in value:
            if isinstance(v, bool) or not hasattr(v, "__index__"):
                raise TypeError(f"{op}(): argument '{name}' must be tuple of ints, but found element of type "
                                f"{type(v).__name__} at pos {len(vals)}")
            vals.append(int(v))
        if len(vals) == 1:
            vals = vals * n
        return tuple(vals)
    return (int(value),) * n


def _check_tensor(x, op, name, pos):
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument '{name}' (position {pos}) must be Tensor, not {type(x).__name__}")


def _conv_params(op, nd, weight, stride, padding, dilation):
    k = weight.dim() - 2
    for name, v in (("stride", stride), ("padding", padding), ("dilation", dilation)):
        if isinstance(v, str):
            continue
        if len(v) != k:
            raise RuntimeError(f"expected {name} to be a single integer value or a list of {k} values to match the "
                               f"convolution dimensions, but got {name}={list(v)}")
    if any(s <= 0 for s in stride):
        raise RuntimeError(f"non-positive stride is not supported ({op} got stride={list(stride)})")
    if not isinstance(padding, str) and any(p < 0 for p in padding):
        raise RuntimeError(f"negative padding is not supported ({op} got padding={list(padding)})")
    if any(d <= 0 for d in dilation):
        raise RuntimeError(f"non-positive dilation is not supported ({op} got dilation={list(dilation)})")


def _batched(x, nd, op):
    """x with a batch dim (torch accepts unbatched inputs: nd + 1 dims) and whether it was added."""
    if x.dim() == nd + 2:
        return x, False
    if x.dim() == nd + 1:
        return x.unsqueeze(0), True
    raise RuntimeError(f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to {op}, but got input of size: "
                       f"{list(x.shape)}")


def _checked_operands(op, nd, input, weight, bias):
    """A convolution's operand checks (tensors, one device) and its input as a batch: (x, unbatched)."""
    _check_tensor(input, op, "input", 1)
    _check_tensor(weight, op, "weight", 2)
    if bias is not None:
        _check_tensor(bias, op, "bias", 3)
    same_device(op, input, weight, bias)
    return _batched(input, nd, op)


def _check_dtypes(x, weight, bias):
    if weight._dtype is not x._dtype:
        raise RuntimeError(f"expected scalar type {type_name(x._dtype)} but found {type_name(weight._dtype)} "
                           f"(input and weight must have the same dtype; convert one with .to())")
    if bias is not None and bias._dtype is not x._dtype:
        raise RuntimeError(f"Input type ({_C_NAMES[x._dtype.name]}) and bias type ({_C_NAMES[bias._dtype.name]}) "
                           f"should be the same")
    if x._dtype is dtypes.bool_:
        raise NotImplementedError('"slow_conv2d_cpu" not implemented for \'Bool\' (convolutions take numbers; '
                                  "convert the input and weight with .float())")


def _same_padding(kernel, dilation):
    """(before, after) per spatial dim for padding='same': the total d*(k-1), the extra on the end."""
    out = []
    for k, d in zip(kernel, dilation):
        total = d * (k - 1)
        out.append((total // 2, total - total // 2))
    return out


def _out_size(n, k, s, p_lo, p_hi, d):
    return (n + p_lo + p_hi - d * (k - 1) - 1) // s + 1


# -- convolution ---------------------------------------------------------------------------------------------
def _conv(op, nd, input, weight, bias, stride, padding, dilation, groups):
    x, unbatched = _checked_operands(op, nd, input, weight, bias)
    stride = expand_param(stride, nd, "stride", op)
    dilation = expand_param(dilation, nd, "dilation", op)
    if isinstance(padding, str):
        if padding not in ("same", "valid"):
            raise RuntimeError(f"Invalid padding string: '{padding}'")
        pad_mode = padding
    else:
        padding = expand_param(padding, nd, "padding", op)
        pad_mode = None
    _conv_params(op, nd, weight, stride, padding, dilation)
    if groups <= 0:
        raise RuntimeError(f"non-positive groups is not supported ({op} got groups={groups})")
    _check_dtypes(x, weight, bias)
    if weight.dim() != nd + 2:
        raise RuntimeError(f"weight should have at least three dimensions, and {op} expects a {nd + 2}-D weight "
                           f"(out_channels, in_channels/groups, kernel...), got size {list(weight.shape)}")
    cout, cin_g = weight.shape[0], weight.shape[1]
    kernel = tuple(weight.shape[2:])
    if cout % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, but "
                           f"got weight of size {list(weight.shape)} instead")
    if x.shape[1] != cin_g * groups:
        raise RuntimeError(f"Given groups={groups}, weight of size {list(weight.shape)}, expected input"
                           f"{list(x.shape)} to have {cin_g * groups} channels, but got {x.shape[1]} channels instead")
    if bias is not None and (bias.dim() != 1 or bias.shape[0] != cout):
        raise RuntimeError(f"Given weight of size {list(weight.shape)}, expected bias to be 1-dimensional with {cout} "
                           f"elements, but got bias of size {list(bias.shape)} instead")
    if pad_mode == "same":
        if any(s != 1 for s in stride):
            raise RuntimeError("padding='same' is not supported for strided convolutions")
        pads = _same_padding(kernel, dilation)
    elif pad_mode == "valid":
        pads = [(0, 0)] * nd
    else:
        pads = [(p, p) for p in padding]
    spatial = tuple(x.shape[2:])
    padded = tuple(n + lo + hi for n, (lo, hi) in zip(spatial, pads))
    eff = tuple(d * (k - 1) + 1 for k, d in zip(kernel, dilation))
    if any(p < e for p, e in zip(padded, eff)):
        raise RuntimeError(f"Calculated padded input size per channel: ({' x '.join(map(str, padded))}). Kernel size: "
                           f"({' x '.join(map(str, eff))}). Kernel size can't be greater than actual input size")
    outs = tuple(_out_size(n, k, s, lo, hi, d) for n, k, s, (lo, hi), d in zip(spatial, kernel, stride, pads, dilation))
    if nd == 3:  # the depth dim reduced to the 2-D path (ops/conv3d.py)
        from .conv3d import conv3d_core
        y = conv3d_core(x, weight, kernel, dilation, pads, stride, outs, groups)
        if bias is not None:
            y = y + bias.reshape((cout,) + (1,) * nd)
        return y.squeeze(0) if unbatched else y
    if nd == 1:  # as 2-D over a height of 1
        x4, w4 = x.unsqueeze(2), weight.unsqueeze(2)
        k2, d2, p2, s2, o2 = (1,) + kernel, (1,) + dilation, (0, pads[0][0]), (1,) + stride, (1,) + outs
    else:
        x4, w4 = x, weight
        k2, d2, p2, s2, o2 = kernel, dilation, tuple(lo for lo, _ in pads), stride, outs
    y = _conv2d_core(x4, w4, k2, d2, p2, s2, o2, groups)
    if nd == 1:
        y = y.squeeze(2)
    if bias is not None:
        y = y + bias.reshape((cout,) + (1,) * nd)
    if nd == 2 and not unbatched:
        y = keep_channels_last(y, input, weight)
    return y.squeeze(0) if unbatched else y


def _conv2d_core(x, w, kernel, dilation, padding, stride, out_hw, groups):
    """One (cout/g, K) x (K, L) BLAS product per image and group, the weight broadcast over the
    batch: the columns are read as im2col lays them out and each product is written straight
    into its place in the (B, cout, oh, ow) result, so nothing is permuted or copied around the
    products (nor in their gradients: the columns' gradient comes out in col2im's layout)."""
    B, C = x.shape[:2]
    cout = w.shape[0]
    L = out_hw[0] * out_hw[1]
    K = C // groups * kernel[0] * kernel[1]
    if kernel == (1, 1) and stride == (1, 1) and padding == (0, 0):  # a 1x1 convolution is a product as it is
        cols = x.reshape(B, groups, K, L)
    else:
        cols = im2col(x, kernel, dilation, padding, stride, out_hw).reshape(B, groups, K, L)
    y = w.reshape(groups, cout // groups, K).matmul(cols)
    return y.reshape(B, cout, out_hw[0], out_hw[1])


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _conv("conv1d", 1, input, weight, bias, stride, padding, dilation, groups)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _conv("conv2d", 2, input, weight, bias, stride, padding, dilation, groups)


# -- transposed convolution -------------------------------------------------------------------------------------
def _conv_transpose(op, nd, input, weight, bias, stride, padding, output_padding, groups, dilation):
    x, unbatched = _checked_operands(op, nd, input, weight, bias)
    if isinstance(padding, str):
        raise TypeError(f"{op}(): argument 'padding' must be tuple of ints, not str")
    stride = expand_param(stride, nd, "stride", op)
    padding = expand_param(padding, nd, "padding", op)
    output_padding = expand_param(output_padding, nd, "output_padding", op)
    dilation = expand_param(dilation, nd, "dilation", op)
    _conv_params(op, nd, weight, stride, padding, dilation)
    if any(p < 0 for p in output_padding):
        raise RuntimeError(f"negative output_padding is not supported ({op} got output_padding={list(output_padding)})")
    if groups <= 0:
        raise RuntimeError(f"non-positive groups is not supported ({op} got groups={groups})")
    _check_dtypes(x, weight, bias)
    if weight.dim() != nd + 2:
        raise RuntimeError(f"{op} expects a {nd + 2}-D weight (in_channels, out_channels/groups, kernel...), got size "
                           f"{list(weight.shape)}")
    cin, cout_g = weight.shape[0], weight.shape[1]
    cout = cout_g * groups
    kernel = tuple(weight.shape[2:])
    if x.shape[1] != cin:
        raise RuntimeError(f"Given transposed=1, weight of size {list(weight.shape)}, expected input{list(x.shape)} to "
                           f"have {cin} channels, but got {x.shape[1]} channels instead")
    if cin % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, but "
                           f"got weight of size {list(weight.shape)} instead")
    if bias is not None and (bias.dim() != 1 or bias.shape[0] != cout):
        raise RuntimeError(f"Given transposed=1, weight of size {list(weight.shape)}, expected bias to be 1-dimensional "
                           f"with {cout} elements, but got bias of size {list(bias.shape)} instead")
    for op_, s, d in zip(output_padding, stride, dilation):
        if op_ >= s and op_ >= d:
            if nd == 2:
                raise RuntimeError(
                    f"output padding must be smaller than either stride or dilation, but got output_padding_height: "
                    f"{output_padding[0]} output_padding_width: {output_padding[1]} stride_height: {stride[0]} "
                    f"stride_width: {stride[1]} dilation_height: {dilation[0]} dilation_width: {dilation[1]}")
            raise RuntimeError(f"output padding must be smaller than either stride or dilation, but got output_padding"
                               f"={list(output_padding)} stride={list(stride)} dilation={list(dilation)}")
    spatial = tuple(x.shape[2:])
    outs = tuple((n - 1) * s - 2 * p + d * (k - 1) + o + 1
                 for n, s, p, d, k, o in zip(spatial, stride, padding, dilation, kernel, output_padding))
    if any(o <= 0 for o in outs):
        raise RuntimeError(f"Given input size per channel: ({' x '.join(map(str, spatial))}). Calculated output size "
                           f"per channel: ({' x '.join(map(str, outs))}). Output size is too small")
    if nd == 3:  # the depth dim reduced to the 2-D path (ops/conv3d.py)
        from .conv3d import conv_transpose3d_core
        y = conv_transpose3d_core(x, weight, groups, stride, padding, output_padding, dilation, outs)
        if bias is not None:
            y = y + bias.reshape((cout,) + (1,) * nd)
        return y.squeeze(0) if unbatched else y
    if nd == 1:
        x, weight = x.unsqueeze(2), weight.unsqueeze(2)
        kernel, stride, padding, dilation, outs, spatial = ((1,) + kernel, (1,) + stride, (0,) + padding,
                                                            (1,) + dilation, (1,) + outs, (1,) + spatial)
    B = x.shape[0]
    hw = spatial[0] * spatial[1]
    kk = kernel[0] * kernel[1]
    wm = weight.reshape(groups, cin // groups, cout_g * kk).transpose(1, 2)  # (g, cout/g * kh * kw, cin/g)
    if B == 1:
        cols = wm.matmul(x.reshape(groups, cin // groups, hw)).reshape((1, cout) + kernel + spatial)
    else:  # the batch folded into the columns: one real GEMM per group (see _conv2d_core)
        xm = x.reshape(B, groups, cin // groups, hw).permute(1, 2, 0, 3).reshape(groups, cin // groups, B * hw)
        cols = wm.matmul(xm).reshape((groups, cout_g * kk, B, hw)).permute(2, 0, 1, 3)
        cols = cols.reshape((B, cout) + kernel + spatial)
    y = col2im(cols, outs, kernel, dilation, padding, stride)
    if nd == 1:
        y = y.squeeze(2)
    if bias is not None:
        y = y + bias.reshape((cout,) + (1,) * nd)
    if nd == 2 and not unbatched:
        y = keep_channels_last(y, input, weight)
    return y.squeeze(0) if unbatched else y


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    return _conv_transpose("conv_transpose1d", 1, input, weight, bias, stride, padding, output_padding, groups,
                           dilation)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    return _conv_transpose("conv_transpose2d", 2, input, weight, bias, stride, padding, output_padding, groups,
                           dilation)


# -- unfold / fold -----------------------------------------------------------------------------------------------
def _floating_only(x, kernel_name):
    if not x._dtype.is_floating_point:
        raise NotImplementedError(f"\"{kernel_name}\" not implemented for '{type_name(x._dtype)}' (convert the "
                                  "input with .float() first)")


def _sliding_window(op, kernel_size, dilation, padding, stride):
    """unfold's and fold's (kernel, dilation, padding, stride) pairs, expanded in torch's order."""
    return tuple(expand_param(v, 2, name, op) for v, name in
                 ((kernel_size, "kernel_size"), (dilation, "dilation"), (padding, "padding"), (stride, "stride")))


def _check_sliding_window(kernel, stride, dilation, padding):
    """im2col's / col2im's shape checks on the window parameters, in torch's order and words."""
    if any(k <= 0 for k in kernel):
        raise RuntimeError(f"kernel size should be greater than zero, but got kernel_height: {kernel[0]} kernel_width: "
                           f"{kernel[1]}")
    if any(s <= 0 for s in stride):
        raise RuntimeError(f"stride should be greater than zero, but got stride_height: {stride[0]} stride_width: "
                           f"{stride[1]}")
    if any(d <= 0 for d in dilation):
        raise RuntimeError(f"dilation should be greater than zero, but got dilation_height: {dilation[0]} "
                           f"dilation_width: {dilation[1]}")
    if any(p < 0 for p in padding):
        raise RuntimeError(f"padding should be non-negative, but got pad_height: {padding[0]} pad_width: {padding[1]}")


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """torch.nn.functional.unfold: (N, C, H, W) -> (N, C * kh * kw, L) (unbatched (C, H, W) too)."""
    _check_tensor(input, "unfold", "input", 1)
    kernel, dilation, padding, stride = _sliding_window("unfold", kernel_size, dilation, padding, stride)
    if input.dim() < 3:
        n = max(input.dim(), 1)
        raise IndexError(f"Dimension out of range (expected to be in range of [-{n}, {n - 1}], but got 2)")
    if input.dim() > 4 or 0 in tuple(input.shape[-3:]):
        raise RuntimeError(f"Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but got:"
                           f"{list(input.shape)} (unfold takes (N, C, H, W) or (C, H, W) with non-zero C, H, W)")
    _check_sliding_window(kernel, stride, dilation, padding)
    _floating_only(input, "im2col_out_cpu")
    x, unbatched = (input.unsqueeze(0), True) if input.dim() == 3 else (input, False)
    H, W = x.shape[2:]
    outs = tuple(_out_size(n, k, s, p, p, d) for n, k, s, p, d in zip((H, W), kernel, stride, padding, dilation))
    if any(o < 1 for o in outs):
        raise RuntimeError(f"Given input with spatial size ({H}, {W}), kernel_size=({kernel[0]}, {kernel[1]}), "
                           f"dilation=({dilation[0]}, {dilation[1]}), padding=({padding[0]}, {padding[1]}), calculated "
                           f"shape of the array of sliding blocks as ({outs[0]}, {outs[1]}), but its components must "
                           f"be at least one.")
    cols = im2col(x, kernel, dilation, padding, stride, outs)
    y = cols.reshape(x.shape[0], x.shape[1] * kernel[0] * kernel[1], outs[0] * outs[1])
    return y.squeeze(0) if unbatched else y


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """torch.nn.functional.fold: (N, C * kh * kw, L) -> (N, C, H, W), overlapping values summed."""
    _check_tensor(input, "fold", "input", 1)
    size = expand_param(output_size, 2, "output_size", "fold")
    kernel, dilation, padding, stride = _sliding_window("fold", kernel_size, dilation, padding, stride)
    if input.dim() not in (2, 3) or 0 in tuple(input.shape[-2:]):
        raise RuntimeError(f"Expected 2D or 3D (batch mode) input tensor with possibly 0 batch size and non-zero "
                           f"dimensions for input, but got: {list(input.shape)}")
    if any(s <= 0 for s in size):
        raise RuntimeError(f"output size should be greater than zero, but got output_height: {size[0]} output_width: "
                           f"{size[1]}")
    _check_sliding_window(kernel, stride, dilation, padding)
    x, unbatched = (input.unsqueeze(0), True) if input.dim() == 2 else (input, False)
    kk = kernel[0] * kernel[1]
    if x.shape[1] % kk:
        raise RuntimeError(f"Expected size of input's dimension 1 to be divisible by the product of kernel_size, but "
                           f"got input.size(1)={x.shape[1]} and kernel_size=({kernel[0]}, {kernel[1]}).")
    outs = tuple(_out_size(n, k, s, p, p, d) for n, k, s, p, d in zip(size, kernel, stride, padding, dilation))
    if outs[0] * outs[1] != x.shape[2] or any(o < 1 for o in outs):
        raise RuntimeError(f"Given output_size=({size[0]}, {size[1]}), kernel_size=({kernel[0]}, {kernel[1]}), "
                           f"dilation=({dilation[0]}, {dilation[1]}), padding=({padding[0]}, {padding[1]}), "
                           f"stride=({stride[0]}, {stride[1]}), expected size of input's dimension 2 to match the "
                           f"calculated number of sliding blocks {outs[0]} * {outs[1]} = {outs[0] * outs[1]}, but got "
                           f"input.size(2)={x.shape[2]}.")
    _floating_only(input, "col2im_out_cpu")
    cols = x.reshape((x.shape[0], x.shape[1] // kk) + kernel + outs)
    y = col2im(cols, size, kernel, dilation, padding, stride)
    return y.squeeze(0) if unbatched else y


# -- padding modes -----------------------------------------------------------------------------------------------
def _mode_positions(n, lo, hi, mode):
    """The positions into a dim of size n that a pad of (lo, hi) in `mode` reads (NumPy, int64)."""
    import numpy as np
    i = np.arange(-lo, n + hi, dtype=np.int64)
    if mode == "reflect":
        period = 2 * (n - 1)
        if not period:
            return np.zeros_like(i)
        j = np.abs(i) % period
        return np.where(j >= n, period - j, j)
    if mode == "replicate":
        return np.clip(i, 0, n - 1)
    return i % n  # circular


def _mode_index(n, lo, hi, mode, device):
    return geometry_tensor(("pad", n, lo, hi, mode), dtypes.int64, device, lambda: _mode_positions(n, lo, hi, mode))


def pad_nd(x, pads, mode, op="pad"):
    """x padded by `pads` ((lo, hi) per trailing dim, first spatial dim first) in reflect,
    replicate or circular mode: an index_select per dim (differentiable through it)."""
    nsp = len(pads)
    for k, (lo, hi) in enumerate(pads):
        d = x.dim() - nsp + k
        n = x.shape[d]
        if mode == "reflect" and (lo >= n or hi >= n):
            raise RuntimeError(f"Argument #4: Padding size should be less than the corresponding input dimension, but "
                               f"got: padding ({lo}, {hi}) at dimension {d} of input {list(x.shape)}")
        if mode == "circular" and (lo > n or hi > n):
            raise RuntimeError("Padding value causes wrapping around more than once.")
        if mode == "replicate" and n == 0 and (lo or hi):
            raise RuntimeError(f"{op}: cannot replicate-pad an empty dimension {d} of input {list(x.shape)}")
        if lo or hi:
            from . import _bounds
            shape = list(x.shape)
            shape[d] = n + lo + hi
            if shape[d] < 0:
                raise RuntimeError(f"{op}: negative padding ({lo}, {hi}) leaves dimension {d} of input "
                                   f"{list(x.shape)} with size {shape[d]}")
            # the padded tensor and its host-built index must fit before either is built
            _bounds.check_shape_fits(shape, x._dtype.itemsize, x.device, op)
            _bounds.check_bytes_fit(shape[d] * 8, None, op)
            x = take_rows(x, d, _mode_index(n, lo, hi, mode, x.device))
    return x


def conv_padded(op, nd, input, weight, bias, stride, padding, dilation, groups, padding_mode):
    """What nn.ConvNd does for a padding_mode other than 'zeros': pad the input in that mode
    (padding='same' split as torch does, the extra element at the end), then convolve unpadded."""
    x = input
    kernel = tuple(weight.shape[2:])
    dilation_t = expand_param(dilation, nd, "dilation", op)
    if padding == "same":
        pads = _same_padding(kernel, dilation_t)
    elif padding == "valid":
        pads = [(0, 0)] * nd
    else:
        pads = [(p, p) for p in expand_param(padding, nd, "padding", op)]
    x = pad_nd(x, pads, padding_mode, op)
    return _conv(op, nd, x, weight, bias, stride, 0, dilation, groups)
