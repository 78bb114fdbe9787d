"""nn.functional's normalization, embedding, padding and distance ops, written over tensorlab ops
so autograd differentiates them through the ops' own derivatives. Reduced-precision inputs
(float16, bfloat16) are computed in float32 and the result cast back, as torch's CPU kernels do."""
from __future__ import annotations

import numpy as np

from .. import dtypes
import tensorlab as _tl
from ..tensor import Tensor
from ._grad import no_grad
from ..ops import norm_fused as _fused
from ..ops import batch_norm_fused as _bn_fused

_LOW = (dtypes.float16, dtypes.bfloat16)


def _check_tensor(x, fn, arg):
    if not isinstance(x, Tensor):
        raise TypeError(f"{fn}(): argument '{arg}' must be Tensor, not {type(x).__name__}")


def _opmath(x):
    return x.float() if x.dtype in _LOW else x


def _shape_list(shape):
    return [int(s) for s in ((shape,) if isinstance(shape, int) else shape)]


# -- layer_norm, rms_norm, group_norm -------------------------------------------------------------
def _check_normalized(fn, input, normalized_shape, weight, bias):
    ns = _shape_list(normalized_shape)
    if len(ns) < 1:
        raise RuntimeError(f"{fn}: Expected normalized_shape to be at least 1-dimensional, i.e., containing at "
                           f"least one element, but got normalized_shape = {ns}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and list(t.shape) != ns:
            raise RuntimeError(f"Expected {name} to be of same shape as normalized_shape, but got {name} of shape "
                               f"{list(t.shape)} and normalized_shape = {ns}")
    if input.dim() < len(ns) or list(input.shape[input.dim() - len(ns):]) != ns:
        raise RuntimeError(f"Given normalized_shape={ns}, expected input with shape [*, {', '.join(map(str, ns))}], "
                           f"but got input of size{list(input.shape)}")
    return tuple(range(-len(ns), 0))


def _affine(y, weight, bias):
    if weight is not None:
        y = y * _opmath(weight)
    if bias is not None:
        y = y + _opmath(bias)
    return y


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """(x - mean) / sqrt(var + eps) * weight + bias over the trailing normalized_shape dims, with the
    biased variance (torch's layer_norm)."""
    _check_tensor(input, "layer_norm", "input")
    dims = _check_normalized("layer_norm", input, normalized_shape, weight, bias)
    if _fused.supported(input, weight, bias):
        return _fused.layer_norm(input, weight, bias, eps, False, len(dims))
    x = _opmath(input)
    mean = x.mean(dims, keepdim=True)
    var = x.var(dims, correction=0, keepdim=True)
    y = _affine((x - mean) * (var + eps).rsqrt(), weight, bias)
    return y.to(input.dtype)


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """x / sqrt(mean(x^2) + eps) * weight over the trailing dims; eps defaults to the input dtype's
    machine epsilon (torch.finfo(input.dtype).eps)."""
    _check_tensor(input, "rms_norm", "input")
    dims = _check_normalized("rms_norm", input, normalized_shape, weight, None)
    if eps is None:
        eps = dtypes.finfo(input.dtype).eps
    if _fused.supported(input, weight):
        return _fused.layer_norm(input, weight, None, eps, True, len(dims))
    x = _opmath(input)
    y = x * ((x * x).mean(dims, keepdim=True) + eps).rsqrt()
    return _affine(y, weight, None).to(input.dtype)


def _channel_view(t, ndim):
    return t.reshape([1, t.shape[0]] + [1] * (ndim - 2))


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """Normalize each sample over groups of num_groups channels (input [N, C, *])."""
    _check_tensor(input, "group_norm", "input")
    if input.dim() < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received {input.dim()}")
    n, c = input.shape[0], input.shape[1]
    if num_groups <= 0 or c % num_groups:
        raise RuntimeError(f"Expected number of channels in input to be divisible by num_groups, but got input of "
                           f"shape {list(input.shape)} and num_groups={num_groups}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and (t.dim() != 1 or t.numel() != c):
            raise RuntimeError(f"Expected {name} to be a vector of size equal to the number of channels in input, "
                               f"but got {name} of shape {list(t.shape)} and input of shape {list(input.shape)}")
    if input.numel() and _fused.supported(input, weight, bias):
        # the fused statistics over each (sample, group) row; the per-channel affine as ops, in float32 (a
        # float16/bfloat16 input with an affine is normalized in float32, so that reduced precision never
        # rounds the normalized values before the affine)
        low = input.dtype is not dtypes.float32 and (weight is not None or bias is not None)
        x = input.float() if low else input
        y = _fused.layer_norm(x.reshape(n, num_groups, -1), None, None, eps, False, 1).reshape(input.shape)
        if weight is not None:
            y = y * _channel_view(_opmath(weight), input.dim())
        if bias is not None:
            y = y + _channel_view(_opmath(bias), input.dim())
        return y.to(input.dtype) if low else y
    x = _opmath(input)
    g = x.reshape(n, num_groups, input.numel() // n // num_groups if n else 0)
    mean = g.mean(-1, keepdim=True)
    var = g.var(-1, correction=0, keepdim=True)
    y = ((g - mean) * (var + eps).rsqrt()).reshape(input.shape)
    if weight is not None:
        y = y * _channel_view(_opmath(weight), input.dim())
    if bias is not None:
        y = y + _channel_view(_opmath(bias), input.dim())
    return y.to(input.dtype)


# -- batch_norm -----------------------------------------------------------------------------------
def _verify_batch_size(shape):
    size = shape[0]
    for s in shape[2:]:
        size *= s
    if size == 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input size "
                         f"torch.Size({list(shape)})")


def _affine_empty(input, weight, bias):
    y = input.clone()
    if weight is not None:
        y = y * _channel_view(weight, input.dim())
    if bias is not None:
        y = y + _channel_view(bias, input.dim())
    return y


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-5):
    """Normalize each channel (dim 1) over the batch and spatial dims (see _batch_norm); torch 2.13's
    eps checks first (positive in training, non-negative in evaluation)."""
    if training and eps <= 0.0:
        raise ValueError(f"batch_norm eps must be positive during training, but got {eps}")
    if eps < 0.0:
        raise ValueError(f"batch_norm eps must be non-negative, but got {eps}")
    return _batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def _batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-5):
    """Normalize each channel (dim 1) over the batch and spatial dims. Training: batch statistics
    (biased variance), and running_mean/running_var, when given, updated in place with
    (1 - momentum) * running + momentum * batch (the unbiased variance). Evaluation: the running
    statistics."""
    _check_tensor(input, "batch_norm", "input")
    if input.dim() < 2:
        raise ValueError(f"batch_norm: expected 2D or more input (got {input.dim()}D input)")
    c = input.shape[1]
    for name, t in (("weight", weight), ("bias", bias), ("running_mean", running_mean), ("running_var", running_var)):
        if t is not None and t.numel() != c:
            raise RuntimeError(f"batch_norm: {name} should contain {c} elements not {t.numel()}")
    if training:
        _verify_batch_size(input.shape)
    if not training and (running_mean is None or running_var is None):
        raise RuntimeError("running_mean must be defined in evaluation mode")
    if input.numel() == 0:  # torch: no statistics, running ones unchanged; the affine keeps the graph
        return _affine_empty(input, weight, bias)
    if _bn_fused.supported(input, weight, bias, running_mean, running_var):
        return _bn_fused.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)
    x = _opmath(input)
    dims = (0,) + tuple(range(2, input.dim()))
    if training:
        mean = x.mean(dims, keepdim=True)
        var = x.var(dims, correction=0, keepdim=True)
        if running_mean is not None or running_var is not None:
            n = input.numel() // c if c else 0
            with no_grad():
                if running_mean is not None:
                    new = running_mean.detach() * (1 - momentum) + mean.detach().reshape(-1) * momentum
                    running_mean.detach().copy_(new)
                if running_var is not None:
                    unbiased = var.detach().reshape(-1) * (n / (n - 1) if n > 1 else float("nan"))
                    running_var.detach().copy_(running_var.detach() * (1 - momentum) + unbiased * momentum)
    else:
        mean = _channel_view(_opmath(running_mean), input.dim())
        var = _channel_view(_opmath(running_var), input.dim())
    y = (x - mean) * (var + eps).rsqrt()
    if weight is not None:
        y = y * _channel_view(_opmath(weight), input.dim())
    if bias is not None:
        y = y + _channel_view(_opmath(bias), input.dim())
    return y.to(input.dtype)


# -- normalize, distances ---------------------------------------------------------------------------
def _clamp_min_no_grad(n, eps):
    """n clamped below at eps, the clamp invisible to autograd (torch clamps the norm in place under
    no_grad, so gradients flow as through the unclamped norm)."""
    d = n.detach()
    return n + (d.clamp(min=eps) - d)


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    """input / max(||input||_p along dim, eps)."""
    _check_tensor(input, "normalize", "input")
    denom = input.norm(p, dim, keepdim=True).clamp(min=eps).expand_as(input)
    if out is None:
        return input / denom
    return _tl.div(input, denom, out=out)


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """sum(x1/||x1|| * x2/||x2||) along dim, each norm clamped below at eps (torch's formula)."""
    _check_tensor(x1, "cosine_similarity", "x1")
    _check_tensor(x2, "cosine_similarity", "x2")
    x1, x2 = _tl.broadcast_tensors(x1, x2)
    if x1.dtype.is_floating_point is False:
        x1, x2 = x1.float(), x2.float()
    n1 = _clamp_min_no_grad(x1.norm(2, dim, keepdim=True), eps)
    n2 = _clamp_min_no_grad(x2.norm(2, dim, keepdim=True), eps)
    return ((x1 / n1) * (x2 / n2)).sum(dim)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """||x1 - x2 + eps||_p along the last dim."""
    _check_tensor(x1, "pairwise_distance", "x1")
    _check_tensor(x2, "pairwise_distance", "x2")
    d = x1 - x2 + eps
    if d.dim() == 0:
        return d.abs()
    return d.norm(p, -1, keepdim=keepdim)


# -- embedding, one_hot -------------------------------------------------------------------------------
_INDEX_DTYPES = (dtypes.int64, dtypes.int32)


def _embedding_renorm_(weight, input, max_norm, norm_type):
    """Rows of weight that input references, with norm above max_norm, scaled in place to
    max_norm / (norm + 1e-7) of themselves (torch.embedding_renorm_)."""
    with no_grad():
        rows = np.unique(input.detach().reshape(-1).cpu().numpy().astype(np.int64))
        if rows.size == 0:
            return
        w = weight.detach()
        idx = _tl.tensor(rows, device=w.device)
        sel = w.index_select(0, idx)
        norms = sel.norm(norm_type, 1, keepdim=True)
        scale = _tl.where(norms > max_norm, max_norm / (norms + 1e-7), 1.0)
        w.index_put_((idx,), (sel * scale).to(w.dtype))


def _padding_index(padding_idx, n):
    """torch's check of padding_idx against n embeddings, made non-negative (None stays None)."""
    if padding_idx is not None:
        if padding_idx > 0:
            assert padding_idx < n, "Padding_idx must be within num_embeddings"
        elif padding_idx < 0:
            assert padding_idx >= -n, "Padding_idx must be within num_embeddings"
            padding_idx = n + padding_idx
    return padding_idx


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False, sparse=False):
    """weight's rows picked by the integer indices in input (output input.shape + [embedding_dim]).
    The row at padding_idx gets no gradient; max_norm renormalizes the referenced rows of weight
    in place first; scale_grad_by_freq divides each row's gradient by its count in input."""
    _check_tensor(input, "embedding", "input")
    _check_tensor(weight, "embedding", "weight")
    if input.dtype not in _INDEX_DTYPES:
        raise RuntimeError(f"Expected tensor for argument #1 'indices' to have one of the following scalar types: "
                           f"Long, Int; but got {input.type()} instead (while checking arguments for embedding)")
    if weight.dim() != 2:
        raise RuntimeError(f"'weight' must be 2-D, got a {weight.dim()}-D weight of shape {list(weight.shape)}")
    n = weight.shape[0]
    padding_idx = _padding_index(padding_idx, n)
    if max_norm is not None:
        _embedding_renorm_(weight, input.contiguous(), max_norm, norm_type)
    flat = input.reshape(-1)
    if flat.dtype is not dtypes.int64:
        flat = flat.long()
    if sparse and weight.requires_grad:  # the weight's gradient a sparse COO tensor (tensorlab/sparse)
        from ..sparse._embedding import embedding as _sparse_embedding
        return _sparse_embedding(flat, weight, padding_idx, scale_grad_by_freq).reshape(
            list(input.shape) + [weight.shape[1]])
    if _fused.supported_embedding(flat, weight):
        return _fused.embedding(flat, weight, padding_idx, scale_grad_by_freq, list(input.shape) + [weight.shape[1]])
    out = weight.index_select(0, flat)
    if padding_idx is not None and out.requires_grad:
        pad = (flat == padding_idx).unsqueeze(-1)
        out = _tl.where(pad, out.detach(), out)
    if scale_grad_by_freq and out.requires_grad:
        counts = _tl.zeros(n, dtype=weight.dtype, device=weight.device)
        counts.index_put_((flat,), _tl.ones(flat.shape[0], dtype=weight.dtype, device=weight.device),
                          accumulate=True)
        inv = counts.index_select(0, flat).reciprocal().unsqueeze(-1)
        out.register_hook(lambda g: g * inv)
    return out.reshape(list(input.shape) + [weight.shape[1]])


def one_hot(tensor, num_classes=-1):
    """int64 tensor of shape tensor.shape + [num_classes] with 1 at each value's position."""
    _check_tensor(tensor, "one_hot", "tensor")
    if tensor.dtype is not dtypes.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if num_classes == -1:
        if tensor.numel() == 0:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        num_classes = int(tensor.max().item()) + 1
    elif num_classes < -1:
        raise RuntimeError("num_classes should be positive")
    if tensor.numel():
        if int(tensor.min().item()) < 0:
            raise RuntimeError("Class values must be non-negative.")
        if int(tensor.max().item()) >= num_classes:
            raise RuntimeError("Class values must be smaller than num_classes.")
    classes = _tl.arange(num_classes, device=tensor.device)
    return (tensor.unsqueeze(-1) == classes).long()


# -- pad ------------------------------------------------------------------------------------------------
_PAD_MODES = ("constant", "reflect", "replicate", "circular")


def _pad_index(n, left, right, mode, dim, shape):
    i = np.arange(-left, n + right)
    if mode == "reflect":
        if left >= n or right >= n:
            raise RuntimeError(f"Argument #4: Padding size should be less than the corresponding input dimension, "
                               f"but got: padding ({left}, {right}) at dimension {dim} of input {list(shape)}")
        i = np.abs(i)
        i = np.where(i >= n, 2 * (n - 1) - i, i)
    elif mode == "replicate":
        if n == 0:
            raise RuntimeError(f"pad: replicate padding needs a non-empty dimension {dim}, got size 0")
        i = np.clip(i, 0, n - 1)
    else:
        if left > n or right > n:
            raise RuntimeError("Padding value causes wrapping around more than once.")
        i = np.mod(i, n) if n else i
    return i


def pad(input, pad, mode="constant", value=None):
    """Pad the last len(pad) // 2 dims, pad = (last_left, last_right, prev_left, ...). Negative
    amounts crop. constant fills with value (0 by default); reflect mirrors without repeating the
    edge; replicate repeats the edge; circular wraps around."""
    _check_tensor(input, "pad", "input")
    pad = [int(p) for p in pad]
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    if len(pad) // 2 > input.dim():
        raise RuntimeError(f"Padding length should be less than or equal to two times the input dimension but got "
                           f"padding length {len(pad)} and input of dimension {input.dim()}")
    if mode not in _PAD_MODES:
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if mode != "constant":
        if value is not None and value != 0:
            raise RuntimeError(f'Padding mode "{mode}" doesn\'t take in value argument')
        npad = len(pad) // 2
        if not (input.dim() in (npad + 1, npad + 2) and 1 <= npad <= 3):
            raise NotImplementedError(
                f"Padding size {len(pad)} is not supported for {input.dim()}D input tensor.\n"
                "Supported combinations for non-constant padding:\n"
                "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
                "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
                "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)")
    out = input
    for k in range(len(pad) // 2):
        dim = input.dim() - 1 - k
        left, right = pad[2 * k], pad[2 * k + 1]
        if left == 0 and right == 0:
            continue
        n = out.shape[dim]
        if mode == "constant":
            if left < 0 or right < 0:
                start, stop = max(-left, 0), n - max(-right, 0)
                if stop < start:
                    raise RuntimeError(f"The input size {n}, plus negative padding {left} and {right} resulted in a "
                                       f"negative output size, which is invalid. Check dimension {dim} of your input.")
                out = out.narrow(dim, start, stop - start)
            parts = []
            for amount in (left, right):
                if amount > 0:
                    shape = list(out.shape)
                    shape[dim] = amount
                    parts.append(_tl.full(shape, 0 if value is None else value, dtype=out.dtype, device=out.device))
                else:
                    parts.append(None)
            if parts[0] is not None or parts[1] is not None:
                out = _tl.cat([p for p in (parts[0], out, parts[1]) if p is not None], dim)
        else:
            if mode == "circular" and (left < 0 or right < 0):
                # torch crops first, then wraps around what is left
                start, stop = max(-left, 0), n - max(-right, 0)
                out = out.narrow(dim, start, stop - start)
                n, left, right = stop - start, max(left, 0), max(right, 0)
            idx = _pad_index(n, left, right, mode, dim, input.shape)
            out = out.index_select(dim, _tl.tensor(idx.astype(np.int64), device=out.device))
    if out.untyped_storage()._buf is input.untyped_storage()._buf:  # zero or cropping-only pads: still a view; torch returns a new tensor
        out = out.clone()
    return out


__all__ = ["batch_norm", "cosine_similarity", "embedding", "group_norm", "layer_norm", "normalize", "one_hot", "pad",
           "pairwise_distance", "rms_norm"]
