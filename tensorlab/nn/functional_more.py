"""More of torch.nn.functional, written over tensorlab ops (every device, autograd through the ops):
hardswish, hardsigmoid, hardshrink, softshrink, celu, selu, glu, threshold, softmin, prelu,
pixel_shuffle/pixel_unshuffle, channel_shuffle, and the losses margin_ranking, hinge_embedding,
soft_margin, cosine_embedding, poisson_nll, gaussian_nll, triplet_margin, multilabel_soft_margin.
The formulas are ATen's (Activation.cpp, Loss.cpp, PixelShuffle.cpp), term by term."""
from __future__ import annotations

import math

import tensorlab as _tl

from ..tensor import Tensor
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
        dim = 0 if input.dim() in (0, 1, 3) else 1
    return _tl.softmax(-(input if dtype is None else input.to(dtype)), dim)


def prelu(input, weight):
    _check(input, "prelu")
    _check(weight, "prelu", "weight")
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


def pixel_shuffle(input, upscale_factor):
    _check(input, "pixel_shuffle")
    r = int(upscale_factor)
    if input.dim() < 3:
        raise RuntimeError(f"pixel_shuffle expects input to have at least 3 dimensions, but got input with "
                           f"{input.dim()} dimension(s)")
    if r <= 0:
        raise RuntimeError(f"pixel_shuffle expects a positive upscale_factor, but got {r}")
    *lead, c, h, w = input.shape
    if c % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of "
                           f"upscale_factor, but input.size(-3)={c} is not divisible by {r * r}")
    oc = c // (r * r)
    n = len(lead)
    x = input.reshape(*lead, oc, r, r, h, w)
    perm = list(range(n)) + [n, n + 3, n + 1, n + 4, n + 2]
    return x.permute(perm).reshape(*lead, oc, h * r, w * r)


def pixel_unshuffle(input, downscale_factor):
    _check(input, "pixel_unshuffle")
    r = int(downscale_factor)
    if input.dim() < 3:
        raise RuntimeError(f"pixel_unshuffle expects input to have at least 3 dimensions, but got input with "
                           f"{input.dim()} dimension(s)")
    if r <= 0:
        raise RuntimeError(f"pixel_unshuffle expects a positive downscale_factor, but got {r}")
    *lead, c, h, w = input.shape
    if h % r or w % r:
        which, size = ("height", h) if h % r else ("width", w)
        raise RuntimeError(f"pixel_unshuffle expects {which} to be divisible by downscale_factor, but input.size("
                           f"{-2 if h % r else -1})={size} is not divisible by {r}")
    n = len(lead)
    x = input.reshape(*lead, c, h // r, r, w // r, r)
    perm = list(range(n)) + [n, n + 2, n + 4, n + 1, n + 3]
    return x.permute(perm).reshape(*lead, c * r * r, h // r, w // r)


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
    red = _reduction(reduction, size_average, reduce)
    zeros = input.new_zeros(())
    margin_clamp = (margin - input).clamp(min=0)
    out_margin = _tl.where(target != 1, margin_clamp, zeros)
    out_self = _tl.where(target != -1, input, zeros)
    return _reduce(out_margin + out_self, red)


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    red = _reduction(reduction, size_average, reduce)
    return _reduce((-target * input).exp().log1p(), red)


def cosine_embedding_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None, reduction="mean"):
    red = _reduction(reduction, size_average, reduce)
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
    red = _reduction(reduction, size_average, reduce)
    loss = input.exp() - target * input if log_input else input - target * (input + eps).log()
    if full:
        stirling = target * target.log() - target + (2 * math.pi * target).log() * 0.5
        loss = loss + _tl.where(target > 1, stirling, stirling.new_zeros(()))
    return _reduce(loss, red)


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    if isinstance(var, (int, float)):
        var = input.new_full((), float(var))
    if var.shape != input.shape:
        if input.shape[:-1] == var.shape:
            var = var.unsqueeze(-1)
        elif input.shape[:-1] == var.shape[:-1] and var.shape[-1] == 1:
            pass
        else:
            raise ValueError("var is of incorrect size")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    if bool((var < 0).any()):
        raise ValueError("var has negative entry/entries")
    var = var.clamp(min=eps)
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


__all__ = ["celu", "channel_shuffle", "cosine_embedding_loss", "gaussian_nll_loss", "glu", "hardshrink",
           "hardsigmoid", "hardswish", "hinge_embedding_loss", "margin_ranking_loss", "multilabel_soft_margin_loss",
           "pixel_shuffle", "pixel_unshuffle", "poisson_nll_loss", "prelu", "selu", "soft_margin_loss", "softmin",
           "softshrink", "threshold", "triplet_margin_loss"]
