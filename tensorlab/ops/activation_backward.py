"""GELU's gradient as one elementwise kernel: the "gelu_backward" kernel of the generic `binary`
primitive (backends/cpu/elementwise.py; kernels/tensorlab/functors.cuh's GeluBackward on CUDA),
torch's GeluBackward formulas; on the CPU, "gelu_backward_out" of `ternary` reads Phi(x) off the
forward's kept result instead of evaluating erfc again. autograd/derivatives_elementwise.py uses it when
no create_graph is asked for (the composite formula there stays for differentiable gradients)."""
from __future__ import annotations

from .. import dtypes
from ._common import empty_tensor

_HALVES = (dtypes.float16, dtypes.bfloat16)


def gelu_backward(grad, x, approximate="none"):
    """grad * d gelu(x) / dx as a new tensor, or None where the operands do not fit the kernel
    (another dtype or shape or device: the caller's composite runs)."""
    dt = x._dtype
    if grad._dtype is not dt or tuple(grad.shape) != tuple(x.shape) or grad.device != x.device:
        return None
    if dt not in dtypes.FLOATING:
        return None
    out = empty_tensor(tuple(x.shape), dt, x.device)
    x._backend.binary(out, "gelu_backward", grad.detach(), x.detach(), dtypes.float32 if dt in _HALVES else dt,
                      approximate=approximate)
    return out


def gelu_backward_from_output(grad, x, y):
    """grad * d gelu(x) / dx from x and the forward's result y = gelu(x) (the "gelu_backward_out"
    kernel of `ternary`: Phi(x) = y / x, no erf evaluated again), or None where the operands do not
    fit (the caller recomputes from x)."""
    dt = x._dtype
    shape = tuple(x.shape)
    if grad._dtype is not dt or y._dtype is not dt or tuple(grad.shape) != shape or tuple(y.shape) != shape \
            or grad.device != x.device or y.device != x.device or dt not in (dtypes.float32, dtypes.float64):
        return None
    out = empty_tensor(shape, dt, x.device)
    x._backend.ternary(out, "gelu_backward_out", grad.detach(), x.detach(), y.detach(), dt)
    return out
