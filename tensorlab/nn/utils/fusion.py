"""tensorlab.nn.utils.fusion: fold an eval-mode BatchNorm into the convolution or linear layer
before it (torch's fuse_conv_bn_eval / fuse_linear_bn_eval and their *_weights forms)."""
from __future__ import annotations

import copy

import tensorlab as _tl

from ..parameter import Parameter

__all__ = ["fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval", "fuse_linear_bn_weights"]


def _check_training(layer, bn):
    if layer.training or bn.training:
        raise AssertionError(f"Fusion only for eval! ({type(layer).__name__}.training={layer.training}, "
                             f"{type(bn).__name__}.training={bn.training}; call .eval() on both first)")


def _check_stats(bn):
    if bn.running_mean is None or bn.running_var is None:
        raise AssertionError("bn.running_mean and bn.running_var must not be None (the BatchNorm was built with "
                             "track_running_stats=False, so there are no statistics to fold)")


def fuse_conv_bn_eval(conv, bn, transpose=False):
    """A copy of `conv` whose weight and bias apply `bn` (eval mode) too: conv then bn == the copy."""
    _check_training(conv, bn)
    _check_stats(bn)
    fused = copy.deepcopy(conv)
    fused.weight, fused.bias = fuse_conv_bn_weights(fused.weight, fused.bias, bn.running_mean, bn.running_var,
                                                    bn.eps, bn.weight, bn.bias, transpose)
    return fused


def fuse_conv_bn_weights(conv_w, conv_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b, transpose=False):
    """(weight, bias) Parameters of the fused convolution: w * gamma / sqrt(var + eps) per output
    channel (dim 0, or dim 1 with transpose=True) and (b - mean) * gamma / sqrt(var + eps) + beta."""
    w_dtype = conv_w.dtype
    b_dtype = conv_b.dtype if conv_b is not None else w_dtype
    if conv_b is None:
        conv_b = _tl.zeros_like(bn_rm)
    if bn_w is None:
        bn_w = _tl.ones_like(bn_rm)
    if bn_b is None:
        bn_b = _tl.zeros_like(bn_rm)
    rsqrt = _tl.rsqrt(bn_rv + bn_eps)
    ones = [1] * (conv_w.dim() - 2)
    shape = [1, -1] + ones if transpose else [-1, 1] + ones
    w = (conv_w * (bn_w * rsqrt).reshape(shape)).to(dtype=w_dtype)
    b = ((conv_b - bn_rm) * rsqrt * bn_w + bn_b).to(dtype=b_dtype)
    return Parameter(w, conv_w.requires_grad), Parameter(b, conv_b.requires_grad)


def fuse_linear_bn_eval(linear, bn):
    """A copy of `linear` whose weight and bias apply `bn` (eval mode) too."""
    _check_training(linear, bn)
    if linear.out_features != bn.num_features and bn.num_features != 1:
        raise AssertionError(f"To fuse, linear.out_features == bn.num_features or bn.num_features == 1, got "
                             f"linear.out_features={linear.out_features} and bn.num_features={bn.num_features}")
    _check_stats(bn)
    fused = copy.deepcopy(linear)
    fused.weight, fused.bias = fuse_linear_bn_weights(fused.weight, fused.bias, bn.running_mean, bn.running_var,
                                                      bn.eps, bn.weight, bn.bias)
    return fused


def fuse_linear_bn_weights(linear_w, linear_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b):
    """(weight, bias) Parameters of the fused linear layer."""
    w_dtype = linear_w.dtype
    b_dtype = linear_b.dtype if linear_b is not None else w_dtype
    if linear_b is None:
        linear_b = _tl.zeros_like(bn_rm)
    scale = bn_w * _tl.rsqrt(bn_rv + bn_eps)
    w = linear_w * scale.unsqueeze(-1).to(dtype=w_dtype)
    b = ((linear_b - bn_rm) * scale + bn_b).to(dtype=b_dtype)
    return Parameter(w, linear_w.requires_grad), Parameter(b, linear_b.requires_grad)
