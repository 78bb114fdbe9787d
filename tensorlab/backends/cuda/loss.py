"""Cross entropy over class indices as two primitives (backends/cpu/loss.py's names and results),
composed of this backend's own kernels: softmax, gather, sum and a division for the forward; exp,
a multiplication and a scatter-add for the backward."""
from __future__ import annotations

from . import launch as K
from .elementwise import binary, unary
from .memory import retire, temp
from .reduction import reduce, softmax
from .shape import gather, scatter

__all__ = ("cross_entropy", "cross_entropy_backward")


def cross_entropy(loss, logp, x, index, divisor):
    """logp = log_softmax(x, 1) for x [N, C]; loss (0-d) = sum_i logp[i, index[i, 0]] / divisor."""
    softmax(logp, x, 1, True)
    lo = K.operand(logp)
    picked = temp((lo.layout.shape[0], 1), lo.dtype, lo.buffer.device)
    try:
        gather(picked, lo, 1, index)
        reduce(loss, picked, "sum", (0, 1))
        binary(loss, "div_true", loss, float(divisor), lo.dtype)
    finally:
        retire(picked.buffer)


def cross_entropy_backward(grad_input, logp, index, s):
    """grad_input = exp(logp) * -s, then s added at each row's target (index int64 [N, 1])."""
    dt = K.operand(grad_input).dtype
    unary(grad_input, "exp", logp, dt)
    binary(grad_input, "mul", grad_input, -s, dt)
    scatter(grad_input, 1, index, s, reduce="add")
