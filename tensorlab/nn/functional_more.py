"""More of torch.nn.functional, written over tensorlab ops (every device, autograd through the ops):
hardswish, hardsigmoid, hardshrink, softshrink, celu, selu, glu, threshold, softmin, prelu,
pixel_shuffle/pixel_unshuffle, channel_shuffle, and the losses margin_ranking, hinge_embedding,
soft_margin, cosine_embedding, poisson_nll, gaussian_nll, triplet_margin, multilabel_soft_margin.
The formulas are ATen's (Activation.cpp, Loss.cpp, PixelShuffle.cpp), term by term."""
from __future__ import annotations

import math

import tensorlab as _tl

from ..tensor import Tensor
from .functional import _check_tensor
from .functional_act import _inplace

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _check(x, op, name="input"):
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument '{name}' (position 1) must be Tensor, not {type(x).__name__}")
    return x


def _reduction(reduction, size_average=None, reduce=None):
    from .functional import _reduction as r
    return r(reduction, size_average, reduce)


def _reduce(loss, reduction):
    from .functional import _reduce as r
    return r(loss, reduction)


# -- activations -----------------------------------------------------------------------------------------
def hardswish(input, inplace=False):
    _check(input, "hardswish")
    if inplace:
        return _inplace(input, hardswish)
    return input * (input + 3).clamp(0, 6) / 6


def hardsigmoid(input, inplace=False):
    _check(input, "hardsigmoid")
    if inplace:
        return _inplace(input, hardsigmoid)
    return (input + 3).clamp(0, 6) / 6


def hardshrink(input, lambd=0.5):
    _check(input, "hardshrink")
    return _tl.where((input > lambd) | (input < -lambd), input, input.new_zeros(()))


def softshrink(input, lambd=0.5):
    _check(input, "softshrink")
    if lambd < 0:
        raise RuntimeError(f"lambda must be greater or equal to 0, but found to be {lambd}.")
    z = input.new_zeros(())
    return _tl.where(input > lambd, input - lambd, _tl.where(input < -lambd, input + lambd, z))


def celu(input, alpha=1.0, inplace=False):
    _check(input, "celu")
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError")
    if inplace:
        return _inplace(input, lambda t: celu(t, alpha))
    return _tl.where(input > 0, input, (input.clamp(max=0) / alpha).expm1() * alpha)


def selu(input, inplace=False):
    _check(input, "selu")
    if inplace:
        return _inplace(input, selu)
    return _tl.where(input > 0, input, input.clamp(max=0).expm1() * _SELU_ALPHA) * _SELU_SCALE


def glu(input, dim=-1):
    _check(input, "glu")
    if input.dim() == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    d = dim % input.dim()
    n = input.shape[d]
    if n % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {d} is size {n}")
    a, b = input.narrow(d, 0, n // 2), input.narrow(d, n // 2, n // 2)
    return a * b.sigmoid()


def threshold(input, threshold, value, inplace=False):
    _check(input, "threshold")
    if inplace:
        return _inplace(input, lambda t: globals()["threshold"](t, threshold, value))
    return _tl.where(input > threshold, input, _tl.tensor(value, device=input.device).to(input.dtype))


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    _check(input, "softmin")
    if dim is None:
        from .functional import _softmax_dim
        dim = _softmax_dim("softmin", input.dim(), _stacklevel)
    return _tl.softmax(-(input if dtype is None else input.to(dtype)), dim)


def prelu(input, weight):
    _check(input, "prelu")
    _check(weight, "prelu", "weight")
    if input.dtype is not weight.dtype:
        raise RuntimeError(f"prelu: Type promoting not supported. Got {input.dtype.torch_name} and "
                           f"{weight.dtype.torch_name} (convert the input or the weight, e.g. "
                           f"PReLU(...).to(input.dtype))")
    if weight.dim() > 1:
        raise RuntimeError(f"prelu: Expected `weight` to be a scalar or 1D tensor, but got: ndim = {weight.dim()}")
    n = weight.numel()
    if n != 1:
        if input.dim() < 2:
            raise RuntimeError("Not allow zero-dim input tensor.") if input.dim() == 0 else RuntimeError(
                f"Mismatch of parameter numbers and input channel size. Found parameter numbers = {n} and channel "
                f"size = 1.")
        c = input.shape[1]
        if c != n:
            raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found parameter numbers = {n} "
                               f"and channel size = {c}.")
        w = weight.reshape((1, n) + (1,) * (input.dim() - 2))
    else:
        w = weight.reshape(())
    return _tl.where(input > 0, input, w * input)


def _pixel_factor(input, factor, op, what):
    _check(input, op)
    r = int(factor)
    if input.dim() < 3:
        raise RuntimeError(f"{op} expects input to have at least 3 dimensions, but got input with {input.dim()} "
                           "dimension(s)")
    if r <= 0:
        raise RuntimeError(f"{op} expects a positive {what}, but got {r}")
    return r


def pixel_shuffle(input, upscale_factor):
    r = _pixel_factor(input, upscale_factor, "pixel_shuffle", "upscale_factor")
    *lead, c, h, w = input.shape
    if c % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of "
                           f"upscale_factor, but input.size(-3)={c} is not divisible by {r * r}")
    n = len(lead)
    x = input.reshape(*lead, c // (r * r), r, r, h, w)
    return x.permute(list(range(n)) + [n, n + 3, n + 1, n + 4, n + 2]).reshape(*lead, c // (r * r), h * r, w * r)


def pixel_unshuffle(input, downscale_factor):
    r = _pixel_factor(input, downscale_factor, "pixel_unshuffle", "downscale_factor")
    *lead, c, h, w = input.shape
    if h % r or w % r:
        which, size = ("height", h) if h % r else ("width", w)
        raise RuntimeError(f"pixel_unshuffle expects {which} to be divisible by downscale_factor, but input.size("
                           f"{-2 if h % r else -1})={size} is not divisible by {r}")
    n = len(lead)
    x = input.reshape(*lead, c, h // r, r, w // r, r)
    return x.permute(list(range(n)) + [n, n + 2, n + 4, n + 1, n + 3]).reshape(*lead, c * r * r, h // r, w // r)


def channel_shuffle(input, groups):
    _check(input, "channel_shuffle")
    if input.dim() < 3:
        raise RuntimeError(f"channel_shuffle expects input to have at least 3 dimensions, but got input with "
                           f"{input.dim()} dimension(s)")
    if groups <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of groups:{groups}")
    c = input.shape[1]
    if c % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels and {groups} groups.")
    rest = tuple(input.shape[2:])
    return input.reshape(input.shape[0], groups, c // groups, *rest).transpose(1, 2).reshape(input.shape)


# -- losses ----------------------------------------------------------------------------------------------
def margin_ranking_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None, reduction="mean"):
    red = _reduction(reduction, size_average, reduce)
    if input1.dim() != input2.dim() or input1.dim() != target.dim():
        raise RuntimeError(f"margin_ranking_loss : All input tensors should have same dimension but got sizes: "
                           f"input1: {tuple(input1.shape)}, input2: {tuple(input2.shape)}, target: "
                           f"{tuple(target.shape)} ")
    return _reduce((-target * (input1 - input2) + margin).clamp(min=0), red)


def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None, reduction="mean"):
    _check_tensor(input, "hinge_embedding_loss", "input")
    _check_tensor(target, "hinge_embedding_loss", "target")
    red = _reduction(reduction, size_average, reduce)
    zeros = input.new_zeros(())
    margin_clamp = (margin - input).clamp(min=0)
    out_margin = _tl.where(target != 1, margin_clamp, zeros)
    out_self = _tl.where(target != -1, input, zeros)
    return _reduce(out_margin + out_self, red)


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    _check_tensor(input, "soft_margin_loss", "input")
    _check_tensor(target, "soft_margin_loss", "target")
    red = _reduction(reduction, size_average, reduce)
    return _reduce((-target * input).exp().log1p(), red)


def cosine_embedding_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None, reduction="mean"):
    red = _reduction(reduction, size_average, reduce)
    tdim = target.dim()
    if tdim > 1:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if tdim == 1 and (input1.dim() != 2 or input2.dim() != 2):
        raise RuntimeError(f"1D target tensor expects 2D input tensors, but found inputs with sizes "
                           f"{list(input1.shape)} and {list(input2.shape)}.")
    if tdim == 0 and (input1.dim() != 1 or input2.dim() != 1):
        raise RuntimeError(f"0D target tensor expects 1D input tensors, but found inputs with sizes "
                           f"{list(input1.shape)} and {list(input2.shape)}.")
    if input1.dim() != input2.dim():
        raise RuntimeError(f"cosine_embedding_loss : All input tensors should have same dimension but got sizes: "
                           f"input1: {tuple(input1.shape)}, input2: {tuple(input2.shape)}")
    if input1.dim() not in (1, 2):
        raise RuntimeError(f"1D target tensor expects 2D input tensors, but found inputs with sizes "
                           f"{tuple(input1.shape)} and {tuple(input2.shape)}.")
    eps = 1e-12
    d = input1.dim() - 1
    prod = (input1 * input2).sum(d)
    mag1 = (input1 * input1).sum(d) + eps
    mag2 = (input2 * input2).sum(d) + eps
    cos = prod / (mag1 * mag2).sqrt()
    zeros = cos.new_zeros(())
    pos = 1 - cos
    neg = (cos - margin).clamp(min=0)
    out = _tl.where(target == 1, pos, zeros) + _tl.where(target == -1, neg, zeros)
    return _reduce(out, red)


def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8, reduce=None,
                     reduction="mean"):
    _check_tensor(input, "poisson_nll_loss", "input")
    _check_tensor(target, "poisson_nll_loss", "target")
    red = _reduction(reduction, size_average, reduce)
    loss = input.exp() - target * input if log_input else input - target * (input + eps).log()
    if full:
        stirling = target * target.log() - target + (2 * math.pi * target).log() * 0.5
        loss = loss + _tl.where(target > 1, stirling, stirling.new_zeros(()))
    return _reduce(loss, red)


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """0.5 * (log(max(var, eps)) + (input - target)**2 / max(var, eps)) (+ 0.5 log(2 pi) when full). As
    torch, the clamp to eps does not stop var's gradient; var may be a float, input's shape, input's shape
    without its last dimension, or input's shape with one dimension of size 1 (homoscedastic)."""
    if isinstance(var, float):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = _tl.full_like(input, var)
    elif not isinstance(var, Tensor):
        raise TypeError(f"gaussian_nll_loss(): var must be a Tensor or a float, not {type(var).__name__}")
    elif bool((var < 0).any()):
        raise ValueError("var has negative entry/entries")
    if var.shape != input.shape:
        if input.shape[:-1] == var.shape:
            var = var.unsqueeze(-1)
        elif input.dim() == var.dim() and sum(v for i, v in zip(input.shape, var.shape) if i != v) == 1:
            pass
        else:
            raise ValueError(f"var is of incorrect size (gaussian_nll_loss: input {tuple(input.shape)}, var "
                             f"{tuple(var.shape)}; var must match input, input without its last dimension, or "
                             f"input with one dimension of size 1)")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    var = var + (var.clamp(min=eps) - var).detach()  # torch clamps in place under no_grad
    loss = 0.5 * (var.log() + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False, size_average=None,
                        reduce=None, reduction="mean"):
    red = _reduction(reduction, size_average, reduce)
    a_dim, p_dim, n_dim = anchor.dim(), positive.dim(), negative.dim()
    if not (a_dim == p_dim == n_dim):
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the same number of "
                           f"dimensions, but got: anchor {a_dim}D, positive {p_dim}D, and negative {n_dim}D inputs")
    from .functional import pairwise_distance
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = d_neg.minimum(pairwise_distance(positive, negative, p, eps))
    return _reduce((margin + d_pos - d_neg).clamp(min=0), red)


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    red = _reduction(reduction, size_average, reduce)
    from .functional import logsigmoid
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    c = input.shape[-1] if input.dim() else 1
    loss = loss.sum(-1) / c if input.dim() else loss
    return _reduce(loss, red)


# -- dropout variants (torch's Dropout.cpp) -----------------------------------------------------------
def _check_p(p):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _feature_dropout(input, p, training, inplace, alpha, batched_dims, name):
    """Zero whole channels (every element past the channel dim shares one draw); alpha=True keeps the
    self-normalizing mean and variance as alpha_dropout does."""
    _check(input, name)
    _check_p(p)
    if not training or p == 0 or input.numel() == 0:
        return input
    if input.dim() < 2:
        raise RuntimeError(f"{name}: expected input with at least 2 dimensions (got {input.dim()}D)")
    shape = list(input.shape[:batched_dims]) + [1] * (input.dim() - batched_dims)
    return _apply_mask(input, shape, p, alpha, inplace)


def _apply_mask(input, shape, p, alpha, inplace):
    """torch's _dropout_impl: a Bernoulli(1 - p) mask of `shape` (broadcast over input); plain dropout
    scales the kept values by 1/(1 - p), alpha dropout keeps SELU's mean and variance:
    out = input * mask * a + (mask - 1) * A * a + A * a * p, a = ((A^2 p + 1)(1 - p))^-1/2."""
    keep = 1 - p
    mask = input.new_zeros(shape) if p == 1 else input.new_empty(shape).bernoulli_(keep)
    if not alpha:
        r = input * (mask / keep) if p < 1 else input * mask
    else:
        big_a = 1.7580993408473766  # SELU's scale * alpha
        a = 1.0 / math.sqrt((big_a * big_a * p + 1) * keep) if keep else 0.0
        r = input * (mask * a) + ((mask - 1) * (big_a * a) + big_a * a * p)
    return input.copy_(r) if inplace else r


def dropout1d(input, p=0.5, training=True, inplace=False):
    _check(input, "dropout1d")
    if input.dim() not in (2, 3):
        raise RuntimeError(f"dropout1d: Expected 2D or 3D input, but received a {input.dim()}D input. Note that "
                           "dropout1d exists to provide channel-wise dropout on inputs with 1 spatial dimension, a "
                           "channel dimension, and an optional batch dimension (i.e. 2D or 3D inputs).")
    return _feature_dropout(input, p, training, inplace, False, input.dim() - 1, "dropout1d")


def dropout2d(input, p=0.5, training=True, inplace=False):
    _check(input, "dropout2d")
    return _feature_dropout(input, p, training, inplace, False, 2 if input.dim() == 4 else 1, "dropout2d")


def dropout3d(input, p=0.5, training=True, inplace=False):
    _check(input, "dropout3d")
    return _feature_dropout(input, p, training, inplace, False, 2 if input.dim() == 5 else 1, "dropout3d")


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    _check(input, "alpha_dropout")
    _check_p(p)
    if not training or p == 0 or input.numel() == 0:
        return input
    return _apply_mask(input, list(input.shape), p, True, inplace)


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    return _feature_dropout(input, p, training, inplace, True, 2, "feature_alpha_dropout")


# -- normalization, bilinear, distances, upsampling wrappers ------------------------------------------
def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats=True,
                  momentum=0.1, eps=1e-5):
    """Each (sample, channel) plane normalized by its own statistics (batch_norm over a (1, N*C, ...)
    view); running statistics, when given, are the mean over the batch of the per-instance ones."""
    for _n, _v in (("running_mean", running_mean), ("running_var", running_var), ("weight", weight), ("bias", bias)):
        if _v is not None:
            _check_tensor(_v, "instance_norm", _n)
    _check(input, "instance_norm")
    if input.dim() < 3:
        raise ValueError(f"expected 3D or higher input (got {input.dim()}D input)")
    n, c = input.shape[0], input.shape[1]
    x = input.reshape(1, n * c, *input.shape[2:])
    rm = running_mean.repeat(n) if running_mean is not None else None
    rv = running_var.repeat(n) if running_var is not None else None
    from .functional_norm import _batch_norm  # without batch_norm's eps checks (instance_norm has none)
    y = _batch_norm(x, rm, rv, None, None, use_input_stats, momentum, eps).reshape(input.shape)
    if running_mean is not None and use_input_stats:
        running_mean.copy_(rm.detach().view(n, c).mean(0))
    if running_var is not None and use_input_stats:
        running_var.copy_(rv.detach().view(n, c).mean(0))
    shape = (1, c) + (1,) * (input.dim() - 2)
    if weight is not None:
        y = y * weight.reshape(shape)
    if bias is not None:
        y = y + bias.reshape(shape)
    return y


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """x / (k + alpha / size * sum of x^2 over `size` neighbouring channels) ** beta (torch's formula:
    an average pool of the padded squares)."""
    _check(input, "local_response_norm")
    dim = input.dim()
    if dim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality input (got {dim} dimensions)")
    if input.numel() == 0:
        return input
    div = (input * input).unsqueeze(1)
    from .functional_norm import pad
    if dim == 3:
        div = pad(div, (0, 0, size // 2, (size - 1) // 2))
        div = _tl.nn.functional.avg_pool2d(div, (size, 1), stride=1).squeeze(1)
    else:
        sizes = input.shape
        div = div.reshape(sizes[0], 1, sizes[1], sizes[2], -1)
        div = pad(div, (0, 0, 0, 0, size // 2, (size - 1) // 2))
        n, one, cp, h, w = div.shape
        # average over the channel window: a cumulative sum over channels, differences of width `size`
        cs = div.cumsum(2)
        zero = cs.new_zeros((n, one, 1, h, w))
        cs = _tl.cat([zero, cs], 2)
        div = ((cs.narrow(2, size, cp - size + 1) - cs.narrow(2, 0, cp - size + 1)) / size).squeeze(1)
        div = div.reshape(sizes)
    div = (div * alpha + k) ** beta
    return input / div


def bilinear(input1, input2, weight, bias=None):
    """y_k = x1^T W_k x2 + b_k over the last dims."""
    _check(input1, "bilinear")
    if input1.shape[:-1] != input2.shape[:-1]:
        raise RuntimeError(f"bilinear(): input batch dimensions do not match: got {list(input1.shape[:-1])} and "
                           f"{list(input2.shape[:-1])}")
    if weight.dim() != 3 or weight.shape[1] != input1.shape[-1] or weight.shape[2] != input2.shape[-1]:
        raise RuntimeError(f"bilinear(): weight size does not match the inputs: weight {list(weight.shape)}, "
                           f"input1 {list(input1.shape)}, input2 {list(input2.shape)}")
    y = _tl.einsum("...i,kij,...j->...k", input1, weight, input2)
    return y + bias if bias is not None else y


def pdist(input, p=2.0):
    """The distances between every pair of rows (i < j), row-major."""
    _check(input, "pdist")
    if input.dim() != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.dim()}D")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    n = input.shape[0]
    if n < 2:
        return input.new_empty((0,))
    i, j = _tl.triu_indices(n, n, 1, device=input.device)
    d = input[i] - input[j]
    return _tl.linalg.vector_norm(d, p, dim=-1)


def upsample_nearest(input, size=None, scale_factor=None):
    return _tl.nn.functional.interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    return _tl.nn.functional.interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    """Leaky ReLU with a slope drawn uniformly from [lower, upper] per element when training, the
    mean slope (lower + upper) / 2 otherwise."""
    _check(input, "rrelu")
    if inplace:
        return _inplace(input, lambda t: rrelu(t, lower, upper, training))
    if training:
        slope = input.new_empty(input.shape).uniform_(lower, upper)
    else:
        slope = (lower + upper) / 2
    return _tl.where(input >= 0, input, input * slope)


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None, margin=1.0, swap=False,
                                      reduction="mean"):
    if margin <= 0:
        raise ValueError(f"triplet_margin_with_distance_loss: expected margin to be greater than 0, got {margin} "
                         "instead")
    a_dim, p_dim, n_dim = anchor.dim(), positive.dim(), negative.dim()
    if not (a_dim == p_dim == n_dim):
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the same number of "
                           f"dimensions, but got: anchor {a_dim}D, positive {p_dim}D, and negative {n_dim}D inputs")
    from .functional import pairwise_distance
    dist = distance_function if distance_function is not None else pairwise_distance
    d_pos, d_neg = dist(anchor, positive), dist(anchor, negative)
    if swap:
        d_neg = d_neg.minimum(dist(positive, negative))
    return _reduce((margin + d_pos - d_neg).clamp(min=0), _reduction(reduction))


def _margin_shape_check(input):
    """(batch size, classes) of a multi(label)_margin_loss input, with aten's check of its shape."""
    nd = input.dim()
    if not ((nd == 2 and input.shape[1] != 0) or (nd == 1 and input.shape[0] != 0) or nd == 0):
        raise RuntimeError(f"Expected non-empty vector or matrix with optional 0-dim batch size, but got: "
                           f"{list(input.shape)}")
    if nd <= 1:
        return 1, (1 if nd == 0 else input.shape[0])
    return input.shape[0], input.shape[1]


def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None, reduce=None, reduction="mean"):
    """sum over j != y of max(0, margin - x[y] + x[j]) ** p (times weight[y]), over the C classes."""
    _check_tensor(input, "multi_margin_loss", "input")
    _check_tensor(target, "multi_margin_loss", "target")
    red = _reduction(reduction, size_average, reduce)
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    nframe, dim = _margin_shape_check(input)
    if target.dim() > 1 or target.numel() != nframe:
        raise RuntimeError(f"multi_margin_loss: target tensor should be 1-D with size equal to the number of input "
                           f"samples (batch size). Expected target size [{nframe}], but got {list(target.shape)}. "
                           f"Input has shape {list(input.shape)}.")
    if weight is not None:
        if weight.dim() > 1:
            raise RuntimeError("weight must be one-dimensional")
        if weight.numel() != dim:
            raise RuntimeError(f"inconsistent weight size, expected {dim} but got {list(weight.shape)}")
    x = input if input.dim() == 2 else input.reshape(1, -1)
    y = target.reshape(-1, 1)
    c = x.shape[1]
    xy = x.gather(1, y)
    terms = (margin - xy + x).clamp(min=0)
    if p == 2:
        terms = terms * terms
    if weight is not None:
        terms = terms * weight[y]
    not_y = _tl.arange(c, device=x.device).reshape(1, c) != y
    loss = (terms * not_y).sum(1) / c
    loss = loss if input.dim() == 2 else loss.reshape(tuple(target.shape))  # unbatched: target's shape, as aten
    return _reduce(loss, red)


def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """For each sample, the targets are the leading non-negative entries of `target` (up to the first
    -1): sum over target j and non-target i of max(0, 1 - (x[j] - x[i])), over the C classes."""
    _check_tensor(input, "multilabel_margin_loss", "input")
    _check_tensor(target, "multilabel_margin_loss", "target")
    red = _reduction(reduction, size_average, reduce)
    nframe, dim = _margin_shape_check(input)
    if (input.dim() <= 1 and (target.dim() > 1 or target.numel() != dim)) or (
            input.dim() == 2 and tuple(target.shape) != (nframe, dim)):
        raise RuntimeError(f"inconsistent target size: {list(target.shape)} for input of size: {list(input.shape)}")
    x = input if input.dim() == 2 else input.reshape(1, -1)
    t = target if target.dim() == 2 else target.reshape(1, -1)
    c = x.shape[1]
    stop = (t < 0).to(t.dtype).cumsum(1) > 0  # at and after the first -1
    valid = ~stop
    idx = t.clamp(min=0)
    # the classes named by a valid entry (an invalid entry, clamped to class 0, adds nothing)
    hits = _tl.zeros(x.shape, dtype=x.dtype, device=x.device).scatter_add(1, idx, valid.to(x.dtype))
    is_target = hits > 0
    xj = x.gather(1, idx)  # (N, C): the target scores, valid where `valid`
    diff = (1 - (xj.unsqueeze(2) - x.unsqueeze(1))).clamp(min=0)  # (N, targets, classes)
    mask = valid.unsqueeze(2) & ~is_target.unsqueeze(1)
    loss = (diff * mask).sum((1, 2)) / c
    loss = loss if input.dim() == 2 else loss.reshape(())
    return _reduce(loss, red)


def _unpool(name, nd, input, indices, kernel_size, stride, padding, output_size):
    _check(input, name)
    ks = (kernel_size,) * nd if isinstance(kernel_size, int) else tuple(kernel_size)
    st = ks if stride is None else ((stride,) * nd if isinstance(stride, int) else tuple(stride))
    pd = (padding,) * nd if isinstance(padding, int) else tuple(padding)
    spatial = tuple(input.shape[-nd:])
    default = tuple((n - 1) * s - 2 * p + k for n, s, p, k in zip(spatial, st, pd, ks))
    if output_size is None:
        size = default
    else:
        size = tuple(output_size)[-nd:]
        for o, dflt, s in zip(size, default, st):
            if not dflt - s < o < dflt + s:
                raise ValueError(f"invalid output_size \"{list(output_size)}\" (dim {nd} must be between "
                                 f"{[d - s for d in default]} and {[d + s for d in default]})")
    lead = tuple(input.shape[:-nd])
    flat_in = input.reshape(*lead, -1) if lead else input.reshape(1, -1)
    flat_idx = indices.reshape(flat_in.shape)
    n_out = 1
    for o in size:
        n_out *= o
    out = input.new_zeros(flat_in.shape[:-1] + (n_out,))
    if flat_idx.numel() and (bool((flat_idx < 0).any()) or bool((flat_idx >= n_out).any())):
        raise RuntimeError(f"Found an invalid max index: {int(flat_idx.max())} (output volumes are of size "
                           f"{'x'.join(map(str, size))}")
    out = out.scatter(-1, flat_idx, flat_in)
    return out.reshape(*lead, *size)


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    return _unpool("max_unpool1d", 1, input, indices, kernel_size, stride, padding, output_size)


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    return _unpool("max_unpool2d", 2, input, indices, kernel_size, stride, padding, output_size)


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    return _unpool("max_unpool3d", 3, input, indices, kernel_size, stride, padding, output_size)


__all__ = ["max_unpool1d", "max_unpool2d", "max_unpool3d", "multi_margin_loss", "multilabel_margin_loss", "rrelu",
           "triplet_margin_with_distance_loss",
           "alpha_dropout", "bilinear", "dropout1d", "dropout2d", "dropout3d", "feature_alpha_dropout",
           "instance_norm", "local_response_norm", "pdist", "upsample_bilinear", "upsample_nearest",
           "celu", "channel_shuffle", "cosine_embedding_loss", "gaussian_nll_loss", "glu", "hardshrink",
           "hardsigmoid", "hardswish", "hinge_embedding_loss", "margin_ranking_loss", "multilabel_soft_margin_loss",
           "pixel_shuffle", "pixel_unshuffle", "poisson_nll_loss", "prelu", "selu", "soft_margin_loss", "softmin",
           "softshrink", "threshold", "triplet_margin_loss"]
