"""LocalResponseNorm (F.local_response_norm over neighbouring channels) and the legacy CrossMapLRN2d
(torch's Lua-era _cross_map_lrn2d: its own running-window forward and hand-written backward, whose
windows are not the symmetric ones of LocalResponseNorm; both reproduced as torch computes them)."""
from __future__ import annotations

import tensorlab as _tl

from ..autograd.function import Function
from . import functional as F
from .module import Module


class LocalResponseNorm(Module):
    """x / (k + alpha / size * sum of x^2 over `size` neighbouring channels) ** beta."""

    def __init__(self, size, alpha=1e-4, beta=0.75, k=1.0):
        super().__init__()
        self.size = size
        self.alpha = alpha
        self.beta = beta
        self.k = k

    def forward(self, input):
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self):
        return "{size}, alpha={alpha}, beta={beta}, k={k}".format(**self.__dict__)


def _forward_windows(channels, size):
    """0/1 matrix (C, C): row c marks the channels torch's running sum holds for channel c (its loop
    starts with channels [0, pre_pad), then adds the next and drops c - pre_pad only for c > pre_pad)."""
    pre_pad = int((size - 1) / 2 + 1)
    rows, cur = [], set(range(min(pre_pad, channels)))
    rows.append(sorted(cur))
    for c in range(1, channels):
        cur = set(cur)
        if c < channels - pre_pad + 1:
            cur.add(c + pre_pad - 1)
        if c > pre_pad:
            cur.discard(c - pre_pad)
        rows.append(sorted(cur))
    return [[1.0 if j in r else 0.0 for j in range(channels)] for r in rows]


def _backward_windows(channels, size):
    """0/1 matrix (C, C): row c marks the channels of the ratio torch's backward accumulates for c
    (padded positions [c, c + size - 1], the ratio starting at inversePrePad)."""
    ipp = int(size - (size - 1) / 2)
    return [[1.0 if c - ipp <= j <= c + size - 1 - ipp else 0.0 for j in range(channels)] for c in range(channels)]


def _window_sum(matrix, t):
    n, c = t.shape[0], t.shape[1]
    m = _tl.tensor(matrix, dtype=t.dtype, device=t.device)
    return _tl.matmul(m, t.reshape(n, c, -1)).reshape(t.shape)


class _CrossMapLRN2dFn(Function):
    @staticmethod
    def forward(ctx, input, size, alpha, beta, k):
        c = input.shape[1]
        scale = _window_sum(_forward_windows(c, size), input * input) * (alpha / size) + k
        output = input * scale.pow(-beta)
        ctx.size, ctx.alpha, ctx.beta = size, alpha, beta
        ctx.save_for_backward(input, output, scale)
        return output

    @staticmethod
    def backward(ctx, grad_output):
        input, output, scale = ctx.saved_tensors
        ratio = grad_output * output / scale
        acc = _window_sum(_backward_windows(input.shape[1], ctx.size), ratio)
        grad = scale.pow(-ctx.beta) * grad_output - (2 * ctx.alpha * ctx.beta / ctx.size) * input * acc
        return grad, None, None, None, None


class CrossMapLRN2d(Module):
    """torch's legacy cross-channel LRN over 4-D input, with its exact forward and backward."""

    def __init__(self, size, alpha=1e-4, beta=0.75, k=1):
        super().__init__()
        self.size = size
        self.alpha = alpha
        self.beta = beta
        self.k = k

    def forward(self, input):
        if input.dim() != 4:
            raise ValueError(f"CrossMapLRN2d: Expected input to be 4D, got {input.dim()}D instead.")
        return _CrossMapLRN2dFn.apply(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self):
        return "{size}, alpha={alpha}, beta={beta}, k={k}".format(**self.__dict__)
