"""tensorlab.nn.init: torch.nn.init's in-place initializers. Each fills the tensor in place
without autograd recording it and returns the tensor."""
from __future__ import annotations

import contextlib
import math
import threading

from .. import _warn
from ._grad import no_grad

__all__ = ["calculate_gain", "uniform_", "normal_", "trunc_normal_", "constant_", "ones_", "zeros_", "eye_", "dirac_",
           "xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_", "orthogonal_", "sparse_",
           "uniform", "normal", "constant", "eye", "dirac", "xavier_uniform", "xavier_normal", "kaiming_uniform",
           "kaiming_normal", "orthogonal", "sparse"]

_state = threading.local()


@contextlib.contextmanager
def _skipping():
    """Within: every initializer here leaves its tensor as it is (nn.utils.skip_init's construction)."""
    depth = getattr(_state, "skip", 0)
    _state.skip = depth + 1
    try:
        yield
    finally:
        _state.skip = depth


def _skipped():
    return getattr(_state, "skip", 0) > 0

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
        raise ValueError(f"Mode {mode} not supported, please use one of ['fan_in', 'fan_out']")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def uniform_(tensor, a=0.0, b=1.0, generator=None):
    """Fill `tensor` with values drawn from U(a, b), in place (from `generator` when given)."""
    if _skipped():
        return tensor
    with no_grad():
        tensor.detach().uniform_(a, b, generator=generator)
    return tensor


def normal_(tensor, mean=0.0, std=1.0, generator=None):
    """Fill `tensor` with values drawn from N(mean, std^2), in place (from `generator` when given)."""
    if _skipped():
        return tensor
    with no_grad():
        tensor.detach().normal_(mean, std, generator=generator)
    return tensor


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
    """Values from N(mean, std^2) truncated to [a, b] (exactly that distribution), by inverting the
    CDF: u uniform over [erf(a' / sqrt 2), erf(b' / sqrt 2)] (a', b' the standardized bounds), then
    mean + std * sqrt(2) * erfinv(u), clamped to [a, b]. Computed in float64 (then copied) so that
    bounds far in a tail keep their resolution."""
    if _skipped():
        return tensor
    if mean < a - 2 * std or mean > b + 2 * std:
        _warn.warn("mean is more than 2 std from [a, b] in nn.init.trunc_normal_. The distribution of values may "
                   "be incorrect.")
    lo = math.erf((a - mean) / std / math.sqrt(2.0))
    hi = math.erf((b - mean) / std / math.sqrt(2.0))
    import tensorlab as _tl
    with no_grad():
        t = tensor.detach()
        wide = t.dtype is _tl.float64
        work = t if wide else _tl.empty(tuple(t.shape), dtype=_tl.float64, device=t.device)
        work.uniform_(lo, hi, generator=generator)
        work.erfinv_()
        work.mul_(std * math.sqrt(2.0))
        work.add_(mean)
        work.clamp_(min=a, max=b)
        if not wide:
            t.copy_(work)
    return tensor


def constant_(tensor, val):
    """Fill `tensor` with `val`, in place."""
    if _skipped():
        return tensor
    with no_grad():
        tensor.detach().fill_(val)
    return tensor


def ones_(tensor):
    """Fill `tensor` with ones, in place."""
    return constant_(tensor, 1.0)


def zeros_(tensor):
    """Fill `tensor` with zeros, in place."""
    if _skipped():
        return tensor
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
    """N(0, std^2) with std = gain * sqrt(2 / (fan_in + fan_out)) (Glorot & Bengio, 2010)."""
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
    """N(0, std^2) with std = gain / sqrt(fan) (He et al., 2015); fan by `mode`, gain by `nonlinearity`."""
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


def eye_(tensor):
    """Fill the 2-D `tensor` with the identity matrix (ones on the main diagonal of a rectangle too)."""
    if tensor.dim() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    if _skipped():
        return tensor
    import tensorlab as _tl
    with no_grad():
        eye = _tl.eye(tensor.shape[0], tensor.shape[1], dtype=tensor.dtype, device=tensor.device)
        tensor.detach().copy_(eye)
    return tensor


def dirac_(tensor, groups=1):
    """Fill a 3/4/5-D convolution weight with the Dirac delta: output channel d of each group takes
    input channel d at the kernel's centre (as many channels as min(out per group, in))."""
    dims = tensor.dim()
    if dims not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    sizes = tuple(tensor.shape)
    if sizes[0] % groups != 0:
        raise ValueError("dim 0 must be divisible by groups")
    if _skipped():
        return tensor
    import numpy as np
    import tensorlab as _tl
    per_group = sizes[0] // groups
    n = min(per_group, sizes[1])
    host = np.zeros(sizes, dtype=np.float64)
    centre = tuple(s // 2 for s in sizes[2:])
    for g in range(groups):
        for d in range(n):
            host[(g * per_group + d, d) + centre] = 1
    with no_grad():
        tensor.detach().copy_(_tl.tensor(host, dtype=tensor.dtype, device=tensor.device))
    return tensor


def orthogonal_(tensor, gain=1, generator=None):
    """Fill `tensor` (>= 2-D; trailing dims flattened) with a (semi-)orthogonal matrix times `gain`:
    the Q of a QR factorization of a standard normal matrix, its columns' signs fixed by diag(R)
    so the result is uniformly (Haar) distributed (Saxe et al., 2013)."""
    if tensor.dim() < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0 or _skipped():
        return tensor
    import tensorlab as _tl
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    with no_grad():
        flat = tensor.new_empty((rows, cols)).normal_(0, 1, generator=generator)
        if rows < cols:
            flat = flat.t()
        q, r = _tl.linalg.qr(flat)
        q = q * _tl.diagonal(r, 0).sign()
        if rows < cols:
            q = q.t()
        tensor.detach().copy_((q * gain).reshape(tensor.shape))
    return tensor


def sparse_(tensor, sparsity, std=0.01, generator=None):
    """Fill the 2-D `tensor` from N(0, std^2), then zero ceil(sparsity * rows) randomly chosen rows
    of every column (Martens, 2010)."""
    if tensor.dim() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    if _skipped():
        return tensor
    import tensorlab as _tl
    rows, cols = tensor.shape
    num_zeros = math.ceil(sparsity * rows)
    with no_grad():
        values = _tl.empty_like(tensor).normal_(0, std, generator=generator)
        # one random permutation of the rows per column: the ranks of uniform keys
        ranks = _tl.rand((rows, cols), generator=generator, device=tensor.device).argsort(dim=0).argsort(dim=0)
        values = values.masked_fill(ranks < num_zeros, 0)
        tensor.detach().copy_(values)
    return tensor


def _deprecated(new):
    old = new.__name__[:-1]

    def deprecated_init(*args, **kwargs):
        _warn.warn(f"`nn.init.{old}` is now deprecated in favor of `nn.init.{new.__name__}`.", FutureWarning)
        return new(*args, **kwargs)
    deprecated_init.__name__ = deprecated_init.__qualname__ = old
    deprecated_init.__doc__ = f"{old}(...): deprecated alias of nn.init.{new.__name__} (FutureWarning, as torch)."
    return deprecated_init


uniform = _deprecated(uniform_)
normal = _deprecated(normal_)
constant = _deprecated(constant_)
eye = _deprecated(eye_)
dirac = _deprecated(dirac_)
xavier_uniform = _deprecated(xavier_uniform_)
xavier_normal = _deprecated(xavier_normal_)
kaiming_uniform = _deprecated(kaiming_uniform_)
kaiming_normal = _deprecated(kaiming_normal_)
orthogonal = _deprecated(orthogonal_)
sparse = _deprecated(sparse_)
