"""The activations' gradients as one elementwise kernel each, kernels of the generic `binary`
primitive (backends/cpu/elementwise.py; kernels/tensorlab/functors.cuh on CUDA) with torch's
formulas: "gelu_backward" (GeluBackward; on the CPU, "gelu_backward_out" of `ternary` reads Phi(x)
off the forward's kept result instead of evaluating erfc again), and "tanh_backward",
"sigmoid_backward", "threshold_backward" (relu's) and "silu_backward" (`activation_backward`).
autograd/derivatives_elementwise.py uses them when no create_graph is asked for (the composite
formulas there stay for differentiable gradients): one kernel and one front-end step where the
composite took two to five, each a full op with its own output."""
from __future__ import annotations

from .. import dtypes
from ._common import empty_tensor, pinned

_HALVES = (dtypes.float16, dtypes.bfloat16)


def activation_backward(kernel, grad, other, **params):
    """grad times an activation's derivative read off `other` (the forward's result, or its input
    for silu and gelu) as kernel `kernel` of `binary` with the kernel's `params`, or None where the operands do not fit it (dtypes or
    devices differ, not a real floating dtype, or grad's shape is not other's: the caller's
    composite runs). 16-bit operands compute in float32 and round once, as torch's kernels."""
    dt = other._dtype
    gm, om = grad._meta, other._meta
    dev = om.storage.device
    shape = om.layout.shape
    if grad._dtype is not dt or dt not in dtypes.FLOATING or gm.layout.shape != shape or \
            (gm.storage.device is not dev and gm.storage.device != dev):
        return None
    out = empty_tensor(shape, dt, dev)
    other._backend.binary(out, kernel, pinned(grad, gm), pinned(other, om), dtypes.float32 if dt in _HALVES else dt,
                          **params)
    return out


def gelu_backward(grad, x, approximate="none"):
    """grad * d gelu(x) / dx as a new tensor ("gelu_backward"; p0 of the CUDA functor selects the tanh
    approximation), or None where the operands do not fit the kernel (the caller's composite runs)."""
    return activation_backward("gelu_backward", grad, x, approximate=approximate)


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
