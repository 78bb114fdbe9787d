"""tensorlab.nn.functional: activations, linear, dropout and the losses, as compositions of
tensorlab ops (so autograd differentiates them through the ops' own derivatives). The losses
follow ATen's definitions (LossNLL.cpp, Loss.cpp) term by term."""
from __future__ import annotations

from .. import _warn
from .. import dtypes
from .. import sync
from ..ops import elementwise as _ew, reduction as _red
from ..ops.creation import empty_like, zeros
from ..tensor import Tensor

_REDUCTIONS = ("none", "mean", "sum")
_INDEX_TARGET_DTYPES = (dtypes.int64, dtypes.uint8)


# -- reductions ---------------------------------------------------------------------------------
def _legacy_reduction(size_average, reduce):
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    ret = "mean" if size_average and reduce else ("sum" if reduce else "none")
    _warn.warn(f"size_average and reduce args will be deprecated, please use reduction='{ret}' instead.")
    return ret


def _reduction(reduction, size_average=None, reduce=None):
    if size_average is not None or reduce is not None:
        return _legacy_reduction(size_average, reduce)
    if reduction == "elementwise_mean":
        _warn.warn("reduction='elementwise_mean' is deprecated. Please use reduction='mean' instead.")
        return "mean"
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return reduction


def _reduce(loss, reduction):
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


def _check_tensor(x, fn, arg):
    if not isinstance(x, Tensor):
        raise TypeError(f"{fn}(): argument '{arg}' must be Tensor, not {type(x).__name__}")


# -- activations --------------------------------------------------------------------------------
def relu(input, inplace=False):
    _check_tensor(input, "relu", "input")
    return input.relu_() if inplace else input.relu()


def sigmoid(input):
    return input.sigmoid()


def tanh(input):
    return input.tanh()


def gelu(input, approximate="none"):
    return _ew.gelu(input, approximate=approximate)


def _softmax_dim(name, ndim, stacklevel):
    _warn.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call to include dim=X "
               f"as an argument.")
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = _softmax_dim("softmax", input.dim(), _stacklevel)
    return _red.softmax(input, dim, dtype=dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = _softmax_dim("log_softmax", input.dim(), _stacklevel)
    return _red.log_softmax(input, dim, dtype=dtype)


# -- linear, dropout ----------------------------------------------------------------------------
def linear(input, weight, bias=None):
    """input @ weight.T + bias (weight [out_features, in_features])."""
    _check_tensor(input, "linear", "input")
    _check_tensor(weight, "linear", "weight")
    if bias is not None:
        _check_tensor(bias, "linear", "bias")
        if weight.dim() == 1:  # torch's addmm path: a vector weight takes no bias
            raise RuntimeError(f"mat2 must be a matrix, got 1-D tensor (linear: weight {list(weight.shape)} with a "
                               f"bias {list(bias.shape)}; give the weight as [out_features, in_features])")
    if _linear_fused.supported(input, weight, bias):  # one GEMM, bias added in place (ops/linear_fused.py)
        return _linear_fused.linear(input, weight, bias)
    out = input.matmul(weight.t())
    return out if bias is None else out + bias


def _check_dropout_p(p):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def dropout(input, p=0.5, training=True, inplace=False):
    """Zero each element with probability p and scale the rest by 1/(1-p); the input itself when
    not training (as torch, which returns the same tensor)."""
    _check_tensor(input, "dropout", "input")
    _check_dropout_p(p)
    if not training or p == 0 or input.numel() == 0:
        return input
    if p == 1:
        mask = zeros((), dtype=input.dtype, device=input.device)
    else:
        mask = empty_like(input).bernoulli_(1 - p)
        mask.div_(1 - p)
    return input.mul_(mask) if inplace else input * mask


# -- losses -------------------------------------------------------------------------------------
def _size_warning(input, target):
    if target.shape != input.shape:
        _warn.warn(f"Using a target size ({target.shape}) that is different to the input size ({input.shape}). "
                   "This will likely lead to incorrect results due to broadcasting. Please ensure they have the "
                   "same size.")


def _weighted(loss, weight, reduction, input):
    if weight is None:
        return _reduce(loss, reduction)
    if weight.shape != input.shape:
        raise ValueError("Weights and input must have the same size.")
    loss = loss * weight
    return loss.sum() / weight.sum() if reduction == "mean" else _reduce(loss, reduction)


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    _check_tensor(input, "mse_loss", "input")
    _check_tensor(target, "mse_loss", "target")
    _size_warning(input, target)
    reduction = _reduction(reduction, size_average, reduce)
    diff = input - target
    return _weighted(diff * diff, weight, reduction, input)


def _class_dim(input):
    return 0 if input.dim() == 1 else 1


def _check_class_weight(weight, n_classes, prefix=""):
    if weight is not None and (weight.dim() != 1 or weight.numel() != n_classes):
        raise RuntimeError(f"{prefix}weight tensor should be defined either for all {n_classes} classes or no "
                           f"classes but got weight tensor of shape: {list(weight.shape)}")


def _check_index_target(input, target):
    """ATen's nll_loss_nd shape rules: input (C), (N, C) or (N, C, d1, ...); target (), (N) or
    (N, d1, ...) of int64 (or uint8) class indices."""
    if input.dim() < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {input.dim()})")
    if input.dim() == 1:
        if target.dim() == 1 and target.shape[0] != 1:
            raise ValueError(f"For 1D input, 1D target must have size 1, but got target size: {target.shape[0]}")
        if target.dim() > 1:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    else:
        n_t = target.shape[0] if target.dim() else 0
        if input.shape[0] != n_t:
            raise ValueError(f"Expected input batch_size ({input.shape[0]}) to match target batch_size ({n_t}).")
        if input.dim() == 2 and target.dim() != 1:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        want = [input.shape[0]] + list(input.shape[2:])
        if list(target.shape) != want:
            raise RuntimeError(f"Expected target size {want}, got {list(target.shape)}")
    if target.dtype not in _INDEX_TARGET_DTYPES:
        raise RuntimeError(f"expected target dtype to be Long or Byte, but got {target.dtype.torch_name}")


def _nll_terms(logp, target, weight, ignore_index):
    """(loss, w, valid) per target element: loss = -w * logp[target], w = weight[target] (1
    without class weights) and both 0 where target == ignore_index; an ignored row never gives
    NaN, even when it holds -inf."""
    cd = _class_dim(logp)
    if logp.dim() == 1 and target.dim() == 1:
        target = target.reshape(())
    if target.dtype is not dtypes.int64:
        target = target.long()
    n_classes = logp.shape[cd]
    valid = target != ignore_index
    safe = _ew.where(valid, target, 0)
    if safe.device.type == "cpu":
        # torch's IndexError and message; on a GPU a check here would be a host wait per loss: there
        # gather's bounds check on the device finds an out-of-range target, reported (as this same
        # error) at the next host wait, where torch has a device-side assert
        bad = (safe < 0).logical_or(safe >= n_classes)
        if bad.any().item():
            raise IndexError(f"Target {safe.masked_select(bad)[0].item()} is out of bounds.")
    with sync.reported_as("nll_loss", lambda e, value: IndexError(f"Target {value} is out of bounds.")):
        picked = logp.gather(cd, safe.unsqueeze(cd)).squeeze(cd)
        if weight is None:
            return _ew.where(valid, -picked, 0.0), valid.to(logp.dtype), valid
        w = _ew.where(valid, weight.index_select(0, safe.reshape(-1)).reshape(safe.shape), 0.0)
    return _ew.where(valid, -(picked * w), 0.0), w, valid


def _weighted_reduce(loss, w, reduction):
    """torch's NLL reductions: the mean divides by the total weight of the non-ignored targets."""
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    return loss.sum() / w.sum()


def _nll(logp, target, weight, ignore_index, reduction):
    if _nll_fused.supported(logp, target, weight, reduction):  # one NllLossBackward0 node (ops/nll_fused.py)
        loss = _nll_fused.nll_loss(logp, target, ignore_index, reduction)
        if loss is not None:
            return loss
    loss, w, _ = _nll_terms(logp, target, weight, ignore_index)
    return _weighted_reduce(loss, w, reduction)


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
    _check_tensor(input, "nll_loss", "input")
    _check_tensor(target, "nll_loss", "target")
    reduction = _reduction(reduction, size_average, reduce)
    _check_index_target(input, target)
    _check_class_weight(weight, input.shape[_class_dim(input)] if input.dim() else 0)
    return _nll(input, target, weight, ignore_index, reduction)


def _class_view(weight, logp, cd):
    """weight [C] shaped to broadcast along logp's class dim."""
    if logp.dim() <= 1:
        return weight
    shape = [1] * logp.dim()
    shape[cd] = weight.shape[0]
    return weight.reshape(shape)


def _cross_entropy_probs(input, target, weight, reduction, label_smoothing, cd, n_classes):
    if not target.dtype.is_floating_point:
        raise RuntimeError(f"Expected floating point type for target with class probabilities, got "
                           f"{target.dtype.torch_name}")
    logp = log_softmax(input, cd)
    if label_smoothing > 0.0:
        target = target * (1 - label_smoothing) + label_smoothing / n_classes
    prod = logp * target
    if weight is not None:
        prod = prod * _class_view(weight, logp, cd)
    if reduction == "none":
        return -prod.sum(cd)
    total = -prod.sum()
    if reduction == "sum":
        return total
    return total / (input.numel() // n_classes if n_classes else 0)


def _cross_entropy_smoothed(input, target, weight, ignore_index, reduction, label_smoothing, cd, n_classes):
    """(1 - eps) * nll + eps / C * sum over classes of -w_c * logp_c, ignored targets giving 0
    (ATen's cross_entropy_loss_label_smoothing)."""
    logp = log_softmax(input, cd)
    loss, w, valid = _nll_terms(logp, target, weight, ignore_index)
    terms = logp if weight is None else logp * _class_view(weight, logp, cd)
    smooth = _ew.where(valid, -terms.sum(cd), 0.0)
    nll, ret = _weighted_reduce(loss, w, reduction), _weighted_reduce(smooth, w, reduction)
    return (1 - label_smoothing) * nll + ret * (label_smoothing / n_classes)


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean",
                  label_smoothing=0.0):
    """log_softmax over the class dim (dim 1, or 0 for unbatched input) followed by the NLL of
    class-index targets, or the cross entropy with class-probability targets when target has
    input's shape. label_smoothing mixes in the uniform distribution over classes."""
    _check_tensor(input, "cross_entropy", "input")
    _check_tensor(target, "cross_entropy", "target")
    reduction = _reduction(reduction, size_average, reduce)
    if input.dim() < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {input.dim()})")
    cd = _class_dim(input)
    n_classes = input.shape[cd]
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    if input.shape == target.shape:
        if ignore_index >= 0:
            raise RuntimeError("ignore_index is not supported for floating point target")
        _check_class_weight(weight, n_classes, "cross_entropy: ")
        return _cross_entropy_probs(input, target, weight, reduction, label_smoothing, cd, n_classes)
    _check_index_target(input, target)
    _check_class_weight(weight, n_classes)
    if label_smoothing > 0.0:
        return _cross_entropy_smoothed(input, target, weight, ignore_index, reduction, label_smoothing, cd,
                                       n_classes)
    if _nll_fused.supported(input, target, weight, reduction):  # log_softmax + nll as one node
        loss = _nll_fused.cross_entropy(input, target, ignore_index, reduction)
        if loss is not None:
            return loss
    return _nll(log_softmax(input, cd), target, weight, ignore_index, reduction)


from .functional_layers import *  # noqa: E402,F401,F403  (norms, embedding, pad, more activations/losses, attention)
# -- convolution and pooling (ops/conv.py, ops/pool.py) --------------------------------------------
from ..ops.conv import conv1d, conv2d, conv_transpose1d, conv_transpose2d, fold, unfold  # noqa: E402,F401
from ..ops.pool import (adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_max_pool1d,  # noqa: E402,F401
                        adaptive_max_pool1d_with_indices, adaptive_max_pool2d, adaptive_max_pool2d_with_indices,
                        avg_pool1d, avg_pool2d, max_pool1d, max_pool1d_with_indices, max_pool2d,
                        max_pool2d_with_indices)
from ..ops.upsample import interpolate  # noqa: E402,F401
from .functional_conv3d import *  # noqa: E402,F401,F403  (3-D conv/pools, grid_sample, embedding_bag, ctc_loss)
from ..ops import linear_fused as _linear_fused  # noqa: E402  (F.linear as one op)
from ..ops import nll_fused as _nll_fused  # noqa: E402  (nll_loss as one node)
from .functional_lppool import lp_pool1d, lp_pool2d, lp_pool3d  # noqa: E402,F401  (power-average pooling)
