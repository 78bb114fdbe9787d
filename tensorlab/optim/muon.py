"""Muon (torch.optim.Muon; K. Jordan's MomentUm Orthogonalized by Newton-Schulz): SGD momentum
on 2-D parameters whose update is replaced by an approximate orthogonalization (U V' of its SVD)
from a few quintic Newton-Schulz iterations run in bfloat16, as torch runs them."""
from __future__ import annotations

import math

from .. import dtypes
from ..ops.creation import zeros_like
from .optimizer import Optimizer, _grad_mode, _value

DEFAULT_COEFFICIENTS = (3.4445, -4.7750, 2.0315)


def orthogonalize(matrix, coefficients=DEFAULT_COEFFICIENTS, steps=5, eps=1e-7):
    """X <- a X + (b A + c A^2) X with A = X X', `steps` times, from X = M / max(|M|_F, eps) in
    bfloat16 (on the wide orientation: a tall M is transposed in and out); returns bfloat16."""
    if steps >= 100:
        raise ValueError("Number of steps must be less than 100 for computational efficiency")
    if matrix.dim() != 2:
        raise ValueError("Input tensor gradient must be a 2D matrix")
    if len(coefficients) != 3:
        raise ValueError("Coefficients must be a tuple of exactly 3 values")
    a, b, c = coefficients
    tall = matrix.shape[0] > matrix.shape[1]
    x = matrix.to(dtypes.bfloat16)
    if tall:
        x = x.T
    x = x.div(x.norm().clamp(min=eps))
    # each product-and-sum in float32 from the bfloat16 values, rounded to bfloat16 once (as torch's
    # bfloat16 addmm: alpha A B + beta C accumulated in float32; tensorlab's addmm rounds A B first)
    for _ in range(steps):
        xf = x.float()
        gram = (xf @ xf.T).to(dtypes.bfloat16).float()
        poly = (gram @ gram).mul_(c).add_(gram, alpha=b).to(dtypes.bfloat16).float()
        x = (poly @ xf).add_(xf, alpha=a).to(dtypes.bfloat16)
    return x.T if tall else x


def _lr_ratio(adjust_lr_fn, shape):
    rows, cols = shape[0], shape[1]
    if adjust_lr_fn is None or adjust_lr_fn == "original":
        return math.sqrt(max(1, rows / cols))
    if adjust_lr_fn == "match_rms_adamw":
        return 0.2 * math.sqrt(max(rows, cols))
    return 1.0


class Muon(Optimizer):
    """torch.optim.Muon: lr=1e-3, weight_decay=0.1 (decoupled), momentum=0.95, nesterov=True,
    ns_coefficients=(3.4445, -4.775, 2.0315), eps=1e-7, ns_steps=5, adjust_lr_fn=None|"original"|
    "match_rms_adamw". Every parameter must be 2-D (others belong to another optimizer)."""

    def __init__(self, params, lr=1e-3, weight_decay=0.1, momentum=0.95, nesterov=True,
                 ns_coefficients=DEFAULT_COEFFICIENTS, eps=1e-7, ns_steps=5, adjust_lr_fn=None):
        if hasattr(lr, "numel") and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 <= momentum:
            raise ValueError(f"momentum should be >= 0 but is: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight decay should be >= 0 but is: {weight_decay}")
        if adjust_lr_fn is not None and adjust_lr_fn not in ("original", "match_rms_adamw"):
            raise ValueError(f"Adjust learning rate function {adjust_lr_fn} is not supported")
        defaults = {"lr": lr, "weight_decay": weight_decay, "momentum": momentum, "nesterov": nesterov,
                    "ns_coefficients": ns_coefficients, "eps": eps, "ns_steps": ns_steps,
                    "adjust_lr_fn": adjust_lr_fn}
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                if p.dim() != 2:
                    raise ValueError("Muon only supports 2D parameters whereas we found a parameter with size: "
                                     f"{p.size()} (optimize biases, norms and embeddings with another optimizer, "
                                     "e.g. AdamW)")

    def step(self, closure=None):
        """buf <- lerp(buf, g, 1 - momentum); u = lerp(g, buf, momentum) (nesterov) or buf;
        p <- p (1 - lr wd) - lr * ratio(shape) * NS(u)."""
        loss = self._closure_loss(closure)
        with _grad_mode(self):
            for group in self.param_groups:
                lr, momentum = _value(group["lr"]), group["momentum"]
                for p in group["params"]:
                    if p._grad is None:
                        continue
                    if p.is_complex():
                        raise RuntimeError("Muon does not support complex parameters")
                    grad = p._grad.detach()
                    if grad.dim() != 2:
                        raise ValueError("Param gradient must be a 2D matrix")
                    state = self.state[p]
                    if "momentum_buffer" not in state:
                        state["momentum_buffer"] = zeros_like(grad)
                    buf = state["momentum_buffer"]
                    buf.lerp_(grad, 1 - momentum)
                    direction = grad.lerp(buf, momentum) if group["nesterov"] else buf
                    update = orthogonalize(direction, group["ns_coefficients"], group["ns_steps"], group["eps"])
                    param = p.detach()
                    param.mul_(1 - lr * group["weight_decay"])
                    param.add_(update, alpha=-lr * _lr_ratio(group["adjust_lr_fn"], tuple(p.shape)))
        return loss
