"""tensorlab.nn.init: torch.nn.init's in-place initializers. Each fills the tensor in place
without autograd recording it and returns the tensor."""
from __future__ import annotations

import math

from .. import _warn
from ._grad import no_grad

_LINEAR_FNS = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
               "sigmoid")


def calculate_gain(nonlinearity, param=None):
    """The recommended gain for a nonlinearity (torch's table: tanh 5/3, relu sqrt(2), selu 3/4,
    leaky_relu sqrt(2 / (1 + slope^2)) with slope 0.01 by default, 1 for linear and sigmoid)."""
    if nonlinearity in _LINEAR_FNS:
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            negative_slope = 0.01
        elif (isinstance(param, int) and not isinstance(param, bool)) or isinstance(param, float):
            negative_slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + negative_slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _calculate_fan_in_and_fan_out(tensor):
    if tensor.dim() < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 dimensions")
    receptive = 1
    for s in tensor.shape[2:]:
        receptive *= s
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


def _calculate_correct_fan(tensor, mode):
    mode = mode.lower()
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of fan_in, fan_out")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def uniform_(tensor, a=0.0, b=1.0, generator=None):
    with no_grad():
        tensor.detach().uniform_(a, b, generator=generator)
    return tensor


def normal_(tensor, mean=0.0, std=1.0, generator=None):
    with no_grad():
        tensor.detach().normal_(mean, std, generator=generator)
    return tensor


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
    """Values from N(mean, std^2) truncated to [a, b], torch's way: uniform over [2 Phi(a') - 1,
    2 Phi(b') - 1] (a', b' the standardized bounds), erfinv, scale, shift, clamp."""
    if mean < a - 2 * std or mean > b + 2 * std:
        _warn.warn("mean is more than 2 std from [a, b] in nn.init.trunc_normal_. The distribution of values may "
                   "be incorrect.")

    def cdf(x):
        return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0
    lo, hi = cdf((a - mean) / std), cdf((b - mean) / std)
    with no_grad():
        t = tensor.detach()
        t.uniform_(2 * lo - 1, 2 * hi - 1, generator=generator)
        t.erfinv_()
        t.mul_(std * math.sqrt(2.0))
        t.add_(mean)
        t.clamp_(min=a, max=b)
    return tensor


def constant_(tensor, val):
    with no_grad():
        tensor.detach().fill_(val)
    return tensor


def ones_(tensor):
    return constant_(tensor, 1.0)


def zeros_(tensor):
    with no_grad():
        tensor.detach().zero_()
    return tensor


def xavier_uniform_(tensor, gain=1.0, generator=None):
    """U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out)) (Glorot & Bengio, 2010)."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    a = math.sqrt(3.0) * std
    return uniform_(tensor, -a, a, generator)


def xavier_normal_(tensor, gain=1.0, generator=None):
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return normal_(tensor, 0.0, std, generator)


def _kaiming_std(tensor, a, mode, nonlinearity):
    fan = _calculate_correct_fan(tensor, mode)
    return calculate_gain(nonlinearity, a) / math.sqrt(fan)


def kaiming_uniform_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """U(-b, b) with b = gain * sqrt(3 / fan) (He et al., 2015)."""
    if 0 in tensor.shape:
        _warn.warn("Initializing zero-element tensors is a no-op")
        return tensor
    bound = math.sqrt(3.0) * _kaiming_std(tensor, a, mode, nonlinearity)
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    if 0 in tensor.shape:
        _warn.warn("Initializing zero-element tensors is a no-op")
        return tensor
    return normal_(tensor, 0.0, _kaiming_std(tensor, a, mode, nonlinearity), generator)


def _default_layer_init_(weight, bias, zero_bias_without_fan_in):
    """torch's default reset_parameters of Linear and the Conv layers: kaiming_uniform_(a=sqrt(5)),
    i.e. weight ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in)), and the bias (when there is one) with the same
    bound. Where fan_in is 0, Linear draws the bias from U(0, 0) (zero_bias_without_fan_in) and the
    Conv layers leave it as it is, as torch does."""
    kaiming_uniform_(weight, a=math.sqrt(5))
    if bias is not None:
        fan_in, _ = _calculate_fan_in_and_fan_out(weight)
        if fan_in > 0:
            bound = 1 / math.sqrt(fan_in)
            uniform_(bias, -bound, bound)
        elif zero_bias_without_fan_in:
            uniform_(bias, 0, 0)
