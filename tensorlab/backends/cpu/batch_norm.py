"""CPU primitives of the fused batch norm (the names of backends/cuda/batch_norm.py): the math of
kernels/batch_norm.cu in NumPy. x / y / dy / dx are (N, C, S) tensors (any strides); statistics are
float32 (C,) vectors, sums in float32 for float16/bfloat16/float32 inputs. Everything is computed
before the first write, and the running statistics are written last."""
from __future__ import annotations

import numpy as np

from ... import _faults
from .memory import array

__all__ = ("batch_norm_fwd", "batch_norm_bwd")

_F32 = np.float32
_AXES = (0, 2)


def _f32(t):
    return array(t).astype(_F32, copy=False)


def _chan(v):
    return v[None, :, None]


def _write(t, v):
    np.copyto(array(t), v, casting="unsafe")


def batch_norm_fwd(y, save_mean, save_invstd, x, weight, bias, running_mean, running_var, training, momentum, eps):
    """Training: batch statistics (biased variance for y; the running variance gets the unbiased one);
    evaluation: the running statistics. running = (1 - momentum) * running + momentum * batch."""
    _faults.hit("launch")
    a = _f32(x)
    n, c, s = a.shape
    if not (n and c and s):
        return
    m = n * s
    if training:
        mean = np.mean(a, axis=_AXES, dtype=_F32)
        d = a - _chan(mean)
        m2 = np.einsum("ncs,ncs->c", d, d, dtype=_F32)
        var = m2 / _F32(m)
        var_u = m2 / _F32(m - 1) if m > 1 else np.full(c, np.nan, _F32)
    else:
        mean = _f32(running_mean).copy()
        var = _f32(running_var)
        d = a - _chan(mean)
    invstd = (_F32(1) / np.sqrt(var + _F32(eps))).astype(_F32)
    scale = invstd * _f32(weight) if weight is not None else invstd
    d *= _chan(scale)
    if bias is not None:
        d += _chan(_f32(bias))
    new_rm = new_rv = None
    mom = _F32(momentum)
    if training and running_mean is not None:
        new_rm = _f32(running_mean) * (_F32(1) - mom) + mean * mom
    if training and running_var is not None:
        new_rv = _f32(running_var) * (_F32(1) - mom) + var_u * mom
    _write(y, d)
    _write(save_mean, mean)
    _write(save_invstd, invstd)
    for t, v in ((running_mean, new_rm), (running_var, new_rv)):  # last: nothing above can fail after them
        if v is not None:
            _write(t, v)


def batch_norm_bwd(grad_input, grad_weight, grad_bias, grad_output, x, save_mean, save_invstd, weight, training):
    """dweight = sum(dy * xhat), dbias = sum(dy) per channel; dx = w * invstd * (dy - mean(dy) - xhat *
    mean(dy * xhat)) in training, dy * w * invstd in evaluation."""
    _faults.hit("launch")
    g = _f32(grad_output)
    n, c, s = g.shape
    if not (n and c and s):
        return
    mean = array(save_mean)
    invstd = array(save_invstd)
    xmu = _f32(x) - _chan(mean)
    sum_dy = np.sum(g, axis=_AXES, dtype=_F32)
    sum_dyxh = np.einsum("ncs,ncs->c", g, xmu, dtype=_F32) * invstd
    results = []
    if grad_input is not None:
        scale = invstd * _f32(weight) if weight is not None else invstd
        if training:
            mf = _F32(n * s)
            xmu *= _chan(-(sum_dyxh * invstd) / mf)  # - xhat * mean(dy * xhat), over invstd
            xmu += g
            xmu -= _chan(sum_dy / mf)
            xmu *= _chan(scale)
            gx = xmu
        else:
            gx = g * _chan(scale)
        results.append((grad_input, gx))
    if grad_weight is not None:
        results.append((grad_weight, sum_dyxh))
    if grad_bias is not None:
        results.append((grad_bias, sum_dy))
    for t, v in results:
        _write(t, v)
