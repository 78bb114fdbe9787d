"""SparseAdam: Adam for sparse gradients (nn.Embedding(sparse=True)), as torch.optim.SparseAdam: only the rows
the gradient touches have their moments and parameter updated (the lazy variant: untouched rows keep their
moments as they are). Refuses sparse parameters at construction and dense gradients at step()."""
from __future__ import annotations

import math

from ..ops.creation import zeros_like
from .optimizer import Optimizer, _check_betas, _check_lr, _check_nonnegative, _value


class SparseAdam(Optimizer):
    """torch.optim.SparseAdam(params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, maximize=False)."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, maximize=False):
        _check_lr(lr)
        _check_nonnegative(eps=eps)
        _check_betas(betas)
        defaults = {"lr": lr, "betas": betas, "eps": eps, "maximize": maximize}
        super().__init__(params, defaults)
        bad = [[gi, pi] for gi, group in enumerate(self.param_groups) for pi, p in enumerate(group["params"])
               if p.is_sparse]
        if bad:
            raise ValueError(f"Sparse params at indices {bad}: SparseAdam requires dense parameter tensors")

    def _sparse_grads_ok(self, group):
        return True

    def step(self, closure=None):
        """For the coalesced gradient's rows r: m[r] += (1 - b1)(g - m[r]); v[r] += (1 - b2)(g^2 - v[r]);
        p[r] -= lr sqrt(1 - b2^t) / (1 - b1^t) * m[r] / (sqrt(v[r]) + eps)."""
        from ..autograd import no_grad
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            for p in group["params"]:
                if p._grad is not None and not p._grad.is_sparse:
                    raise RuntimeError("SparseAdam does not support dense gradients, please consider Adam instead")
        with no_grad():
            for group in self.param_groups:
                beta1, beta2 = group["betas"]
                lr, eps, maximize = _value(group["lr"]), group["eps"], group["maximize"]
                for p in group["params"]:
                    g = p._grad
                    if g is None:
                        continue
                    state = self.state[p]
                    if not state:
                        state["step"] = 0
                        state["exp_avg"] = zeros_like(p)
                        state["exp_avg_sq"] = zeros_like(p)
                    state["step"] += 1
                    _update(p, g.coalesce(), state, beta1, beta2, lr, eps, maximize)
        return loss


def _update(p, g, state, beta1, beta2, lr, eps, maximize):
    idx, vals = g._indices(), g._values()
    if vals.shape[0] == 0:
        return
    if maximize:
        vals = -vals
    rows = tuple(idx[d] for d in range(idx.shape[0]))
    exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
    old_avg = exp_avg[rows]
    avg_update = (vals - old_avg).mul_(1 - beta1)
    exp_avg.index_put_(rows, avg_update, accumulate=True)
    old_sq = exp_avg_sq[rows]
    sq_update = vals.pow(2).sub_(old_sq).mul_(1 - beta2)
    exp_avg_sq.index_put_(rows, sq_update, accumulate=True)
    numer = avg_update.add_(old_avg)
    denom = sq_update.add_(old_sq).sqrt_().add_(eps)
    step = state["step"]
    step_size = lr * math.sqrt(1 - beta2 ** step) / (1 - beta1 ** step)
    p.index_put_(rows, numer.div_(denom).mul_(-step_size), accumulate=True)
