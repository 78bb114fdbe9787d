"""torch's native_* normalization entry points, which return the statistics beside the output:
native_batch_norm -> (output, save_mean, save_invstd), native_layer_norm -> (output, mean, rstd),
native_group_norm -> (output, mean, rstd), with torch's shapes (layer norm's statistics keep the
normalized dims as 1s; group norm's are (N, group); batch norm's are (C,) in training and empty
(0,) in evaluation), plus native_dropout_backward (grad * mask * scale). Composites over the
elementwise and reduction ops: float16/bfloat16 are computed in float32 and cast back, as torch's
accumulation type; the gradients (output, and the statistics where torch makes them
differentiable) come from the ops they are written with. Batch norm's training step updates the
running statistics in place after everything else is computed (momentum, unbiased variance)."""
from __future__ import annotations

import numbers

from .. import dtypes
from ..tensor import Tensor
from ._composite import tensor_arg, tl

_LOW = (dtypes.float16, dtypes.bfloat16)


def _acc(x):
    return x.to(dtypes.float32) if x.dtype in _LOW else x


def _floating(x, op):
    if not x.dtype.is_floating_point:
        raise RuntimeError(f"{op}: expected a floating point input, got {x.dtype.torch_name}; convert it with "
                           f".float()")


def _param(p, c, op, name):
    if p is None:
        return None
    tensor_arg(p, op, name)
    if p.numel() != c:
        raise RuntimeError(f"{op}: expected {name} to have {c} elements (one per channel), but got {name} of shape "
                           f"{list(p.shape)}")
    return p


def native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps, *, out=None):
    """torch.native_batch_norm: (output, save_mean, save_invstd); out= a tuple of three tensors to write them to."""
    r = _native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps)
    if out is None:
        return r
    from ._composite import to_out
    if not isinstance(out, (tuple, list)) or len(out) != 3:
        raise TypeError("native_batch_norm(): argument 'out' must be a tuple of 3 Tensors")
    return tuple(to_out(t, o, "native_batch_norm") for t, o in zip(r, out))


def _native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps):
    """torch.native_batch_norm -> (output, save_mean, save_invstd)."""
    t = tl()
    op = "native_batch_norm"
    tensor_arg(input, op)
    _floating(input, op)
    if input.dim() < 2:
        raise RuntimeError(f"{op}: expected an input with at least 2 dims (N, C, ...), got shape {list(input.shape)}")
    c = input.shape[1]
    weight, bias = _param(weight, c, op, "weight"), _param(bias, c, op, "bias")
    running_mean, running_var = _param(running_mean, c, op, "running_mean"), _param(running_var, c, op, "running_var")
    if (running_mean is None) != (running_var is None):
        raise RuntimeError(f"{op}: running_mean and running_var must be given together (got only one)")
    if not training and running_mean is None:
        raise RuntimeError(f"{op}: evaluation (training=False) needs running_mean and running_var")
    save_dt = (running_mean.dtype if running_mean is not None else weight.dtype if weight is not None
               else input.dtype)
    bshape = (1, c) + (1,) * (input.dim() - 2)
    dims = (0,) + tuple(range(2, input.dim()))
    x = _acc(input)
    if training:
        mean = x.mean(dims)
        var = ((x - mean.reshape(bshape)) ** 2).mean(dims)
        invstd = (var + eps).rsqrt()
        y = (x - mean.reshape(bshape)) * invstd.reshape(bshape)
    else:
        rm, rv = _acc(running_mean.detach()), _acc(running_var.detach())
        y = (x - rm.reshape(bshape)) * (rv + eps).rsqrt().reshape(bshape)
    if weight is not None:
        y = y * _acc(weight).reshape(bshape)
    if bias is not None:
        y = y + _acc(bias).reshape(bshape)
    y = y.to(input.dtype)
    if not training:
        empty = t.empty((0,), dtype=save_dt, device=input.device)
        return y, empty, empty.clone()
    save_mean, save_invstd = mean.to(save_dt), invstd.to(save_dt)
    if running_mean is not None:
        n = input.numel() // max(c, 1)
        with t.no_grad():
            unbiased = var.detach() * (n / (n - 1)) if n > 1 else var.detach() * float("inf")
            new_mean = (1 - momentum) * _acc(running_mean) + momentum * mean.detach()
            new_var = (1 - momentum) * _acc(running_var) + momentum * unbiased
            new_mean, new_var = new_mean.to(running_mean.dtype), new_var.to(running_var.dtype)
            old_mean = running_mean.clone()
            running_mean.copy_(new_mean)  # published last: both computed before either is written
            try:
                running_var.copy_(new_var)
            except BaseException:
                running_mean.copy_(old_mean)  # the pair changes together or not at all
                raise
    return y, save_mean, save_invstd


def native_layer_norm(input, normalized_shape, weight, bias, eps):
    """torch.native_layer_norm -> (output, mean, rstd); mean and rstd have input's leading dims and a 1
    for each normalized dim."""
    op = "native_layer_norm"
    tensor_arg(input, op)
    _floating(input, op)
    ns = (int(normalized_shape),) if isinstance(normalized_shape, numbers.Integral) else tuple(
        int(s) for s in normalized_shape)
    k = len(ns)
    if k == 0:
        raise RuntimeError(f"{op}: Expected normalized_shape to be at least 1-dimensional, i.e., containing at least "
                           f"one element, but got normalized_shape = {list(ns)}")
    if input.dim() < k or tuple(input.shape[input.dim() - k:]) != ns:
        raise RuntimeError(f"Given normalized_shape={list(ns)}, expected input with shape [*, "
                           f"{', '.join(map(str, ns))}], but got input of size{list(input.shape)}")
    for name, p in (("weight", weight), ("bias", bias)):
        if p is not None and (not isinstance(p, Tensor) or tuple(p.shape) != ns):
            raise RuntimeError(f"{op}: Expected {name} to be of same shape as normalized_shape, but got {name} of "
                               f"shape {list(p.shape) if isinstance(p, Tensor) else p} and normalized_shape = "
                               f"{list(ns)}")
    dims = tuple(range(input.dim() - k, input.dim()))
    x = _acc(input)
    mean = x.mean(dims, keepdim=True)
    var = ((x - mean) ** 2).mean(dims, keepdim=True)
    rstd = (var + eps).rsqrt()
    y = (x - mean) * rstd
    if weight is not None:
        y = y * _acc(weight)
    if bias is not None:
        y = y + _acc(bias)
    return y.to(input.dtype), mean.to(input.dtype), rstd.to(input.dtype)


def native_group_norm(input, weight, bias, N, C, HxW, group, eps):
    """torch.native_group_norm -> (output, mean, rstd); mean and rstd are (N, group)."""
    op = "native_group_norm"
    tensor_arg(input, op)
    _floating(input, op)
    if input.numel() != N * C * HxW:
        raise RuntimeError(f"{op}: Expected X.numel() == N * C * HxW, but got input of shape {list(input.shape)} "
                           f"({input.numel()} elements) and N={N}, C={C}, HxW={HxW}")
    if group <= 0 or C % group:
        raise RuntimeError(f"Expected number of channels in input to be divisible by num_groups, but got input of "
                           f"shape {list(input.shape)} and num_groups={group}")
    weight, bias = _param(weight, C, op, "weight"), _param(bias, C, op, "bias")
    x = _acc(input).reshape(N, group, -1) if N * C * HxW else _acc(input).reshape(N, group, (C // group) * HxW)
    mean = x.mean(-1, keepdim=True)
    var = ((x - mean) ** 2).mean(-1, keepdim=True)
    rstd = (var + eps).rsqrt()
    y = ((x - mean) * rstd).reshape(N, C, HxW)
    if weight is not None:
        y = y * _acc(weight).reshape(1, C, 1)
    if bias is not None:
        y = y + _acc(bias).reshape(1, C, 1)
    dt = input.dtype
    return y.reshape(tuple(input.shape)).to(dt), mean.reshape(N, group).to(dt), rstd.reshape(N, group).to(dt)


def native_dropout_backward(grad_output, mask, scale):
    """aten.native_dropout_backward: grad_output * mask * scale (torch's promotion: an integer or bool
    gradient times a float scale is the default float dtype)."""
    op = "native_dropout_backward"
    tensor_arg(grad_output, op, "grad_output")
    tensor_arg(mask, op, "mask", 2)
    if isinstance(scale, bool) or not isinstance(scale, numbers.Real):
        raise TypeError(f"{op}(): argument 'scale' must be float, not {type(scale).__name__}")
    return grad_output * mask * float(scale)


FUNCTIONS = ("native_batch_norm", "native_layer_norm", "native_group_norm", "native_dropout_backward")
