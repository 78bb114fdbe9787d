"""nn.functional's further activations and losses (binary cross entropy, L1, smooth L1, Huber,
KL divergence), as compositions of tensorlab ops following ATen's formulas (Activation.cpp,
Loss.cpp), so autograd gives their gradients."""
from __future__ import annotations

import tensorlab as _tl

from .. import _warn
from .functional import _check_tensor, _reduce, _reduction, _size_warning, _weighted


# -- activations ------------------------------------------------------------------------------------
def _inplace(input, fn):
    """input overwritten by fn(input). Under autograd fn reads a clone, so what its backward saved is
    not the tensor being overwritten (torch's in-place activations keep their gradients too)."""
    src = input.clone() if input.requires_grad and _tl.is_grad_enabled() else input
    return input.copy_(fn(src))


def silu(input, inplace=False):
    _check_tensor(input, "silu", "input")
    return _inplace(input, _tl.silu) if inplace else _tl.silu(input)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    """x where x > 0, negative_slope * x elsewhere."""
    if inplace:
        return _inplace(input, lambda t: leaky_relu(t, negative_slope))
    return _tl.where(input > 0, input, input * negative_slope)


def elu(input, alpha=1.0, inplace=False):
    """x where x > 0, alpha * (exp(x) - 1) elsewhere (the exp branch sees min(x, 0), so a large
    x cannot turn the unused branch's gradient into NaN)."""
    _check_tensor(input, "elu", "input")
    if inplace:
        return _inplace(input, lambda t: elu(t, alpha))
    return _tl.where(input > 0, input, (input.clamp(max=0)).expm1() * alpha)


def softplus(input, beta=1.0, threshold=20.0):
    """log(1 + exp(beta * x)) / beta, and x itself where beta * x > threshold."""
    bx = input * beta
    linear = bx > threshold
    safe = _tl.where(linear, 0.0, bx)
    return _tl.where(linear, input, safe.exp().log1p() / beta)


def logsigmoid(input):
    """log(sigmoid(x)): x - log1p(exp(x)) for x < 0, -log1p(exp(-x)) elsewhere (each branch fed only
    its own side of 0, so the gradient is torch's, 1/2 at 0, and never NaN)."""
    neg = input < 0
    x_neg = _tl.where(neg, input, 0.0)
    x_pos = _tl.where(neg, 0.0, input)
    return _tl.where(neg, x_neg - x_neg.exp().log1p(), -(-x_pos).exp().log1p())


def mish(input, inplace=False):
    """x * tanh(softplus(x))."""
    _check_tensor(input, "mish", "input")
    if inplace:
        return _inplace(input, mish)
    return input * softplus(input).tanh()


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    """x clamped to [min_val, max_val]; the gradient is 1 strictly inside and 0 at and beyond the
    bounds (torch's hardtanh_backward)."""
    if min_val > max_val:  # torch checks the bounds first
        raise ValueError("min_val cannot be greater than max_val")
    _check_tensor(input, "hardtanh", "input")
    if not input.is_floating_point():
        # torch's integer hardtanh: the bounds truncated to integers, the dtype kept (no gradient)
        if input.dtype is _tl.bool:
            raise RuntimeError("Bool inputs not supported for hardtanh")
        if input.dtype is _tl.uint8 and (min_val < 0 or max_val < 0):
            raise RuntimeError("cannot do hardtanh on an unsigned type with negative limits "
                               f"(min_val={min_val}, max_val={max_val}); convert the uint8 input to a signed dtype")
        lo, hi = int(min_val), int(max_val)
        return input.clamp_(lo, hi) if inplace else input.clamp(lo, hi)
    if inplace:
        return _inplace(input, lambda t: hardtanh(t, min_val, max_val))
    clamped = input.clamp(min_val, max_val)
    return _tl.where((input > min_val).logical_and(input < max_val), input, clamped.detach())


def relu6(input, inplace=False):
    _check_tensor(input, "relu6", "input")
    return hardtanh(input, 0.0, 6.0, inplace)


def softsign(input):
    return input / (input.abs() + 1)


def tanhshrink(input):
    return input - input.tanh()


# -- losses -------------------------------------------------------------------------------------------
def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    _check_tensor(input, "l1_loss", "input")
    _check_tensor(target, "l1_loss", "target")
    _size_warning(input, target)
    reduction = _reduction(reduction, size_average, reduce)
    return _weighted((input - target).abs(), weight, reduction, input)


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    """0.5 * d^2 / beta where |d| < beta, |d| - 0.5 * beta elsewhere (beta = 0: the L1 loss)."""
    _check_tensor(input, "smooth_l1_loss", "input")
    _check_tensor(target, "smooth_l1_loss", "target")
    _size_warning(input, target)
    reduction = _reduction(reduction, size_average, reduce)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    d = (input - target).abs()
    if beta == 0:
        return _reduce(d, reduction)
    return _reduce(_tl.where(d < beta, d * d * (0.5 / beta), d - 0.5 * beta), reduction)


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    """0.5 * d^2 where |d| < delta, delta * (|d| - 0.5 * delta) elsewhere."""
    _check_tensor(input, "huber_loss", "input")
    _check_tensor(target, "huber_loss", "target")
    _size_warning(input, target)
    reduction = _reduction(reduction)
    if delta <= 0:
        raise RuntimeError(f"huber_loss does not support non-positive values for delta, got {delta}.")
    d = (input - target).abs()
    loss = _tl.where(d < delta, d * d * 0.5, (d - 0.5 * delta) * delta)
    if weight is not None:  # torch: the weighted mean is a plain mean here (l1_loss divides by sum(weight))
        if weight.shape != input.shape:
            raise ValueError("Weights and input must have the same size.")
        loss = loss * weight
    return _reduce(loss, reduction)


def _check_same_size(fn, input, target):
    if target.shape != input.shape:
        raise ValueError(f"Using a target size ({_tsize(target.shape)}) that is different to the input size "
                         f"({_tsize(input.shape)}) is deprecated. Please ensure they have the same size.")


def _tsize(shape):
    return f"torch.Size({list(shape)})"


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """-(t * log(x) + (1 - t) * log(1 - x)), each log clamped below at -100 (torch's rule, so x = 0
    or 1 gives a finite loss)."""
    _check_tensor(input, "binary_cross_entropy", "input")
    _check_tensor(target, "binary_cross_entropy", "target")
    reduction = _reduction(reduction, size_average, reduce)
    _check_same_size("binary_cross_entropy", input, target)
    if input.device.type == "cpu" and input.numel():
        # a GPU would need a host sync per loss for this check (torch asserts on the device)
        x = input.detach()
        if (x < 0).logical_or(x > 1).any().item():
            raise RuntimeError("all elements of input should be between 0 and 1")
    if weight is not None:
        weight = weight.expand(input.shape)
    loss = -(target * input.log().clamp(min=-100) + (1 - target) * (1 - input).log().clamp(min=-100))
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None, reduction="mean",
                                     pos_weight=None):
    """(1 - t) * x - w_p * logsigmoid(x), with w_p = (pos_weight - 1) * t + 1 (ATen's stable form)."""
    _check_tensor(input, "binary_cross_entropy_with_logits", "input")
    _check_tensor(target, "binary_cross_entropy_with_logits", "target")
    reduction = _reduction(reduction, size_average, reduce)
    if target.shape != input.shape:
        raise ValueError(f"Target size ({_tsize(target.shape)}) must be the same as input size "
                         f"({_tsize(input.shape)})")
    ls = logsigmoid(input)
    if pos_weight is not None:
        log_weight = (pos_weight - 1) * target + 1
        loss = (1 - target) * input - log_weight * ls
    else:
        loss = (1 - target) * input - ls
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def _xlogy(t):
    zero = t == 0
    return _tl.where(zero, 0.0, t * _tl.where(zero, 1.0, t).log())


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """target * (log(target) - input) pointwise (input holds log-probabilities); log_target: the
    target holds log-probabilities too. 'batchmean' divides the sum by the batch size."""
    _check_tensor(input, "kl_div", "input")
    _check_tensor(target, "kl_div", "target")
    if size_average is not None or reduce is not None:
        reduction = _reduction(reduction, size_average, reduce)
    elif reduction == "mean":
        _warn.warn("reduction: 'mean' divides the total loss by both the batch size and the support size."
                   "'batchmean' divides only by the batch size, and aligns with the KL div math definition."
                   "'mean' will be changed to behave the same as 'batchmean' in the next major release.")
    elif reduction not in ("batchmean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if log_target:
        loss = target.exp() * (target - input)
    else:
        loss = _xlogy(target) - target * input
    if reduction == "batchmean":
        total = loss.sum()
        return total / input.shape[0] if input.dim() else total
    return _reduce(loss, reduction)


__all__ = ["binary_cross_entropy", "binary_cross_entropy_with_logits", "elu", "hardtanh", "huber_loss", "kl_div",
           "l1_loss", "leaky_relu", "logsigmoid", "mish", "relu6", "silu", "smooth_l1_loss", "softplus", "softsign",
           "tanhshrink"]
