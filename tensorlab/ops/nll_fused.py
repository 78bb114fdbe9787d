"""nn.functional.nll_loss (and so cross_entropy after its log_softmax) over class-index targets as
one autograd node, as torch's NllLossBackward0: the loss is computed from the detached
log-probabilities by a few untracked ops (gather of the targets' entries, a sum, a division),
then recorded as "nll_loss" with the target indices and per-row coefficients in its info. Its
derivative (autograd/derivatives_nn.py) scatters grad * coefficient into a zero [N, C] gradient:
two ops, where the composite's graph (where, gather, squeeze, neg, where, sum, div) took
seven nodes and their backward ops.

`supported` takes 2-D input [N, C] with 1-D target [N], no class weights and reduction "mean" or
"sum" (nn.functional keeps the composite, with its errors, for everything else). On the CPU the
targets are read once on the host: all in [0, C) and none equal to ignore_index is the plain
case (mean divides by N); targets out of range go to the composite, which raises torch's
IndexError. On other devices (no host read: that would be a sync per loss) ignored targets are
masked on the device and out-of-range ones are left to gather's bounds check."""
from __future__ import annotations

import numpy as np

from .. import autograd_hooks, backends, dtypes, sync
from ..tensor import Tensor
from . import registry
from ._common import empty_tensor, pinned
from .registry import KEEP, OpDef

_F = "nll_fused"
registry.register(OpDef("nll_loss", _F, "gather", KEEP), OpDef("cross_entropy_loss", _F, "gather", KEEP),
                  # the plain case's primitives (backends/*/loss.py): forward (recorded as
                  # cross_entropy_loss, whose derivative calls the second), and the gradient
                  OpDef("cross_entropy_plain", _F, "cross_entropy", KEEP, differentiable=False),
                  OpDef("cross_entropy_plain_backward", _F, "cross_entropy_backward", KEEP, differentiable=False))
FUNCTIONS = ()

ENABLED = True  # False: nn.functional uses the composite (tests compare the two paths)
_PLAIN_DTYPES = frozenset((dtypes.float32, dtypes.float64))  # the cross_entropy primitive's dtypes
_FLOATS = frozenset((dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64))


def supported(logp, target, weight, reduction):
    if not ENABLED or weight is not None or reduction not in ("mean", "sum"):
        return False
    if not isinstance(logp, Tensor) or not isinstance(target, Tensor):
        return False
    ls, ts = logp._meta.layout.shape, target._meta.layout.shape
    if len(ls) != 2 or len(ts) != 1 or ts[0] != ls[0] or ls[0] == 0 or ls[1] == 0:
        return False
    return logp._dtype in _FLOATS and target._dtype is dtypes.int64 and logp.device == target.device


def _host_targets(target, c, ignore_index):
    """On the CPU, the targets read once on the host: "plain" (all in [0, c), none ignored),
    "masked" (some equal ignore_index) or None (one out of range: the composite raises torch's
    IndexError). Elsewhere "masked": no host read (that would be a sync per loss)."""
    if target.device.type != "cpu":
        return "masked"
    t = backends.cpu.array(target)  # the host values as they are (no .numpy() checks: nothing escapes)
    lo, hi = int(np.minimum.reduce(t, axis=None)), int(np.maximum.reduce(t, axis=None))
    if lo < 0 or hi >= c:
        if (lo < 0 and lo != ignore_index) or (hi >= c and hi != ignore_index):
            return None
        return "masked"
    return "masked" if lo <= ignore_index <= hi else "plain"


def _terms(lp, target, ignore_index, reduction, kind=None):
    """(loss, index [N, 1], coef) from detached log-probabilities lp, or None where the composite
    must run. loss = sum_i coef_i * lp[i, t_i]; coef is a number (-1/N or -1) when every target
    counts, else a per-row tensor (0 where the target is ignored)."""
    n, c = lp._meta.layout.shape
    kind = kind or _host_targets(target, c, ignore_index)
    if kind is None:
        return None  # the composite raises torch's IndexError (or finds the bad target exactly)
    if kind == "plain":  # every target counts: loss = -sum(logp[i, t_i]) (/ N)
        index = target.unsqueeze(1)
        loss = lp.gather(1, index).sum()
        if reduction == "mean":
            return loss.div_(-n), index, -1.0 / n
        return loss.neg_(), index, -1.0
    valid = target != ignore_index
    index = target.where(valid, 0).unsqueeze(1)
    picked = lp.gather(1, index).squeeze(1)
    s = picked.where(valid, 0.0).sum()
    if reduction == "mean":
        count = valid.sum().to(lp._dtype)
        # 0/0: nan when every target is ignored, as torch; an ignored row gets no gradient
        return s.div_(count).neg_(), index, (-1.0 / count).where(valid, 0.0)
    return s.neg_(), index, valid.to(lp._dtype).neg_()


def _target_error(error, value):
    return IndexError(f"Target {value} is out of bounds.")


def nll_loss(logp, target, ignore_index, reduction):
    """The loss of `supported` arguments, or None where the composite must run (CPU targets out
    of range: it raises torch's error)."""
    with sync.reported_as("nll_loss", _target_error):  # CUDA: gather's device-side check finds a bad target
        r = _terms(logp.detach(), target, ignore_index, reduction)
    if r is None:
        return None
    loss, index, coef = r
    return autograd_hooks.record(loss, "nll_loss", (logp,), index=index, coef=coef)


def cross_entropy(input, target, ignore_index, reduction):
    """log_softmax over dim 1 and nll_loss as one node (the gradient is coef * (onehot - softmax)
    in one pass over the probabilities), or None where the composite must run."""
    from .reduction import log_softmax
    n, c = input._meta.layout.shape
    kind = _host_targets(target, c, ignore_index)
    if kind == "plain" and input._dtype in _PLAIN_DTYPES and input.device.type == "cpu":
        # log_softmax, gather, sum and the division as one primitive (backends/cpu/loss.py)
        x = pinned(input)
        lp = empty_tensor((n, c), x._dtype, x.device)
        loss = empty_tensor((), x._dtype, x.device)
        index = target.unsqueeze(1)
        x._backend.cross_entropy(loss, lp, x, index, -n if reduction == "mean" else -1)
        coef = -1.0 / n if reduction == "mean" else -1.0
        return autograd_hooks.record(loss, "cross_entropy_loss", (input,), index=index, coef=coef, logp=lp)
    lp = log_softmax(input.detach(), 1)
    with sync.reported_as("cross_entropy", _target_error):
        r = _terms(lp, target, ignore_index, reduction, kind)
    if r is None:
        return None
    loss, index, coef = r
    return autograd_hooks.record(loss, "cross_entropy_loss", (input,), index=index, coef=coef, logp=lp)
