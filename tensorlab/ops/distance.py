"""torch.cdist: batched p-norm distances between the rows of two collections, written over
broadcast differences and norm (any p), or, for p=2 where torch's compute_mode picks it, torch's
matrix-product form |x|^2 + |y|^2 - 2 x.y (clamped at 0, square-rooted). Composite, so both
devices and the gradients come from the ops it uses."""
from __future__ import annotations

import math

from .. import dtypes, layout as L
from ..tensor import Tensor
from ._common import strictly_same_device
from .shape import cat

_MODES = ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist", "donot_use_mm_for_euclid_dist")


def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    for t, name, pos in ((x1, "x1", 1), (x2, "x2", 2)):
        if not isinstance(t, Tensor):
            raise TypeError(f"cdist(): argument '{name}' (position {pos}) must be Tensor, not {type(t).__name__}")
    if compute_mode not in _MODES:
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    for t, name in ((x1, "X1"), (x2, "X2")):
        if not t.dtype.is_floating_point:
            raise RuntimeError(f"cdist only supports floating-point dtypes, {name} got: {t.dtype.torch_name}")
        if t.dim() < 2:
            raise RuntimeError(f"cdist only supports at least 2D tensors, {name} got: {t.dim()}D")
    if x1.dtype is not x2.dtype:
        raise RuntimeError(f"expected scalar type {x1.dtype.torch_name} but found {x2.dtype.torch_name} (cdist "
                           f"takes X1 and X2 of one dtype)")
    strictly_same_device(x1, (x2,), "cdist")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} X2: {x2.shape[-1]}")
    p = float(p)
    if p < 0 or math.isnan(p):
        raise RuntimeError("cdist only supports non-negative p values")
    batch = tuple(L.broadcast_shapes(tuple(x1.shape[:-2]), tuple(x2.shape[:-2])))
    r1, r2, c = x1.shape[-2], x2.shape[-2], x1.shape[-1]
    a = x1.expand(batch + (r1, c))
    b = x2.expand(batch + (r2, c))
    if r1 == 0 or r2 == 0:
        from .creation import zeros
        return zeros(batch + (r1, r2), dtype=x1.dtype, device=x1.device)
    if c == 0:
        from .creation import zeros
        return zeros(batch + (r1, r2), dtype=x1.dtype, device=x1.device)
    use_mm = p == 2.0 and (compute_mode == "use_mm_for_euclid_dist"
                           or (compute_mode == _MODES[0] and (r1 > 25 or r2 > 25)))
    if use_mm:
        # torch's _euclidean_dist: one matrix product of padded operands
        n1 = a.pow(2).sum(-1, keepdim=True)
        n2 = b.pow(2).sum(-1, keepdim=True)
        one1 = n1.detach() * 0 + 1
        one2 = n2.detach() * 0 + 1
        a_ = cat([a * -2, n1, one1], -1)
        b_ = cat([b, one2, n2], -1)
        return a_.matmul(b_.transpose(-1, -2)).clamp(min=0).sqrt()
    if x1.dtype in (dtypes.float16, dtypes.bfloat16):  # torch has only the matrix-product form for these
        raise NotImplementedError(f"\"cdist\" not implemented for '{x1.dtype.torch_name}'")
    diff = a.unsqueeze(-2) - b.unsqueeze(-3)
    if p == 0:  # a count: torch's gradient is zero (but defined)
        return (diff != 0).sum(-1).to(x1.dtype) + (diff * 0).sum(-1)
    if p == math.inf:
        # torch's cdist backward gives every tied maximum the whole sign(diff), not a share of it
        ad = diff.abs()
        m = ad.detach().amax(-1, keepdim=True)
        return m.squeeze(-1) + ((ad - m) * (ad.detach() == m)).sum(-1)
    return diff.norm(p, dim=-1)


FUNCTIONS = ("cdist",)
METHODS = {}
