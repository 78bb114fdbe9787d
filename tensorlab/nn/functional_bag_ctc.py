"""torch.nn.functional.embedding_bag and ctc_loss.

embedding_bag: the rows of weight picked by input, weighted (per_sample_weights), reduced per bag;
each index's bag comes from `searchsorted` on offsets (no host wait), the bags' sums are the
adjoint of a row gather (`put_rows`, deterministic). Mode 'max' lays the bags out densely (its
width, the longest bag, is read on the host: a named wait, as torch's CPU kernel reads offsets)
and takes each column's first maximum. Rows at padding_idx take no part (nor in a mean's count).

ctc_loss: the log-space alpha / beta recursions of Graves et al. over the extended label
sequence (blanks around every target), vectorized over the batch and the states, one step a
time step; the gradient is torch's (exp(log_probs) - the states' posterior, as ATen's
ctc_loss_backward: the gradient through a log_softmax that produced log_probs), in a custom
autograd Function."""
from __future__ import annotations

from .. import _warn, dtypes, sync
from ..autograd.function import Function
from ..ops import conv as _conv
from ..ops.combinatorics import searchsorted
from ..ops.creation import arange, full, zeros
from ..tensor import Tensor

_MODES = {"sum": 0, "mean": 1, "max": 2}


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False, mode="mean",
                  sparse=False, per_sample_weights=None, include_last_offset=False, padding_idx=None):
    from .functional_norm import _embedding_renorm_, _padding_index
    if not isinstance(input, Tensor) or not isinstance(weight, Tensor):
        bad = input if not isinstance(input, Tensor) else weight
        raise TypeError(f"embedding_bag(): argument '{'input' if bad is input else 'weight'}' must be Tensor, not "
                        f"{type(bad).__name__}")
    if weight._dtype in (dtypes.int64, dtypes.int32) and input._dtype.is_floating_point:
        _warn.warn("Argument order of nn.functional.embedding_bag was changed. Usage `embedding_bag(weight, input, "
                   "...)` is deprecated, and should now be `embedding_bag(input, weight, ...)`.")
        weight, input = input, weight
    if per_sample_weights is not None and tuple(input.shape) != tuple(per_sample_weights.shape):
        raise ValueError(f"embedding_bag: If per_sample_weights ({list(per_sample_weights.shape)}) is not None, then "
                         f"it must have the same shape as the input ({list(input.shape)})")
    if weight.dim() != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension {weight.dim()}")
    if input.dim() == 2:
        if offsets is not None:
            raise ValueError(f"if input is 2D, then offsets has to be None, as input is treated is a mini-batch of "
                             f"fixed length sequences. However, found offsets of type {type(offsets).__name__}")
        offsets = arange(0, input.numel(), max(input.shape[1], 1), dtype=input._dtype, device=input.device) \
            if input.shape[1] else zeros(input.shape[0], dtype=input._dtype, device=input.device)
        input = input.reshape(-1)
        if per_sample_weights is not None:
            per_sample_weights = per_sample_weights.reshape(-1)
    elif input.dim() == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.dim() != 1:
            raise ValueError("offsets has to be a 1D Tensor")
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.dim()}")
    if mode not in _MODES:
        raise ValueError("mode has to be one of sum, mean or max")
    if mode == "max" and sparse:
        raise ValueError("max mode does not support sparse weights")
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(f"embedding_bag: per_sample_weights was not None. per_sample_weights is only "
                                  f"supported for mode='sum' (got mode='{mode}'). Please open a feature request on "
                                  "GitHub.")
    if input._dtype not in (dtypes.int64, dtypes.int32) or offsets._dtype not in (dtypes.int64, dtypes.int32):
        raise RuntimeError(f"embedding_bag: expected input and offsets of dtype Long or Int, but got "
                           f"{input._dtype} and {offsets._dtype}")
    n = weight.shape[0]
    padding_idx = _padding_index(padding_idx, n)
    if max_norm is not None:
        _embedding_renorm_(weight, input, max_norm, norm_type)
    idx = input.long()
    offs = offsets.long()
    B = offs.shape[0] - (1 if include_last_offset else 0)
    if B < 0:
        raise RuntimeError("embedding_bag: include_last_offset=True needs at least one offset")
    if include_last_offset:  # the last bag runs to the input's end, as ATen's generic (float64) kernel has it
        offs = offs.narrow(0, 0, B)
    L = idx.shape[0]
    D = weight.shape[1]
    # each index's bag; a bag B (past the last) collects the padding rows, which no bag takes
    bag = (searchsorted(offs, arange(L, dtype=dtypes.int64, device=idx.device), right=True) - 1).clamp(0, max(B - 1, 0))
    if padding_idx is not None:
        bag = bag.where(idx != padding_idx, full((), B, dtype=dtypes.int64, device=idx.device))
    if sparse and weight.requires_grad:  # the weight's gradient a sparse COO tensor (tensorlab/sparse)
        from ..sparse._embedding import embedding as _sparse_embedding
        rows = _sparse_embedding(idx, weight, padding_idx, scale_grad_by_freq)
    else:
        rows = weight.index_select(0, idx)
    if scale_grad_by_freq and rows.requires_grad and not sparse:
        counts = zeros(n, dtype=weight.dtype, device=weight.device)
        counts.index_put_((idx,), full((L,), 1, dtype=weight.dtype, device=weight.device), accumulate=True)
        inv = counts.index_select(0, idx).reciprocal().unsqueeze(-1)
        rows.register_hook(lambda g: g * inv)
    if per_sample_weights is not None:
        rows = rows * per_sample_weights.unsqueeze(1).to(rows.dtype)
    if mode != "max":
        out = _conv.put_rows(rows, 0, bag, B + 1).narrow(0, 0, B)
        if mode == "mean":
            ones = full((L, 1), 1, dtype=weight.dtype, device=weight.device)
            count = _conv.put_rows(ones, 0, bag, B + 1).narrow(0, 0, B)
            out = out / count.clamp(min=1)
        return out
    # max: the bags laid out densely, (B + 1, width, D); empty slots -inf, empty bags 0
    starts = offs.narrow(0, 0, B).index_select(0, bag.clamp(0, max(B - 1, 0))) if B else bag
    pos = arange(L, dtype=dtypes.int64, device=idx.device) - starts
    ends = offs.narrow(0, 1, B - 1) if B > 1 else None
    lengths = [0] if B == 0 or L == 0 else None
    if lengths is None:
        from ..ops.shape import cat
        last_end = full((1,), L, dtype=dtypes.int64, device=idx.device)
        ends = last_end if ends is None else cat([ends, last_end])
        sync.host_wait("embedding_bag(mode='max'): the longest bag's length sizes its windows", idx.device)
        lengths = (ends - offs.narrow(0, 0, B)).clamp(min=0).tolist()
    width = max(max(lengths), 1)
    slot = bag * width + pos.clamp(0, width - 1)
    dense = _conv.put_rows(rows, 0, slot, (B + 1) * width)
    filled = _conv.put_rows(full((L, 1), 1, dtype=weight.dtype, device=weight.device), 0, slot, (B + 1) * width) > 0
    dense = dense.where(filled, full((), float("-inf"), dtype=weight.dtype, device=weight.device))
    best = dense.reshape(B + 1, width, D).narrow(0, 0, B).max(1).values
    return best.where(best != float("-inf"), zeros((), dtype=weight.dtype, device=weight.device))


# -- ctc_loss -------------------------------------------------------------------------------------------------
def _lengths(v, name, N):
    if isinstance(v, Tensor):
        if v.dim() > 1 or v._dtype not in (dtypes.int64, dtypes.int32, dtypes.int16, dtypes.int8, dtypes.uint8):
            raise RuntimeError(f"ctc_loss: {name} must be a 1-D tensor of integers (or a list of ints), got "
                               f"{v._dtype} of size {list(v.shape)}")
        v = v.reshape(-1).tolist()  # torch's kernels read the lengths on the host too
    v = [int(x) for x in v]
    if len(v) != N:
        raise RuntimeError(f"Expected tensor to have size at least {N} at dimension 1, but got size {len(v)} for "
                           f"argument #2 '{name}' (while checking arguments for ctc_loss_cpu)")
    return v


def _lse(*terms):
    from ..ops.shape import stack
    return stack(terms).logsumexp(0)


class _CTC(Function):
    """Per-sample negative log likelihoods; backward: torch's ctc_loss_backward formula."""

    @staticmethod
    def forward(ctx, log_probs, targets, in_lens, tgt_lens, blank, zero_infinity):
        nll, grad = _ctc_forward(log_probs, targets, in_lens, tgt_lens, blank, zero_infinity)
        ctx.save_for_backward(grad)
        return nll

    @staticmethod
    def backward(ctx, g):
        (grad,) = ctx.saved_tensors
        return grad * g.reshape(1, -1, 1), None, None, None, None, None


def _ctc_forward(lp, targets, in_lens, tgt_lens, blank, zero_infinity):
    T, N, C = lp.shape
    dt, dev = lp._dtype, lp.device
    S = max(tgt_lens) if tgt_lens else 0
    Lx = 2 * S + 1
    # extended labels (N, Lx): blank, t1, blank, t2, ..., blank; past a sample's own 2 * S_n + 1: blank
    if targets.dim() == 2:
        tg = targets.long().narrow(1, 0, S) if S else zeros((N, 0), dtype=dtypes.int64, device=dev)
    else:
        starts = [0]
        for n in tgt_lens[:-1]:
            starts.append(starts[-1] + n)
        top = max(sum(tgt_lens) - 1, 0)  # a padding position (masked below) reads any target
        pos = [[min(starts[i] + min(j, max(tgt_lens[i] - 1, 0)), top) for j in range(S)] for i in range(N)]
        flat = targets.long().reshape(-1)
        if S and flat.numel():
            tg = flat.index_select(0, _conv.geometry_tensor(("ctc_pos", tuple(tgt_lens)), dtypes.int64, dev,
                                                            lambda: [p for r in pos for p in r])).reshape(N, S)
        else:
            tg = zeros((N, S), dtype=dtypes.int64, device=dev)
    valid_t = [[j < tgt_lens[i] for j in range(S)] for i in range(N)]
    vmask = _conv.geometry_tensor(("ctc_valid", tuple(tgt_lens), S), dtypes.bool_, dev, lambda: valid_t) \
        if S else None
    blank_t = full((), blank, dtype=dtypes.int64, device=dev)
    tg = tg.where(vmask, blank_t) if S else tg
    ext = full((N, Lx), blank, dtype=dtypes.int64, device=dev)
    if S:
        ext[:, 1::2] = tg
    neg = full((), float("-inf"), dtype=dt, device=dev)
    state_ok = _conv.geometry_tensor(("ctc_states", tuple(tgt_lens), Lx), dtypes.bool_, dev,
                                     lambda: [[s < 2 * tgt_lens[i] + 1 for s in range(Lx)] for i in range(N)])
    # skip (s - 2 -> s) allowed where l'_s is not blank and differs from l'_{s-2}
    if Lx > 2:
        skip = (ext.narrow(1, 2, Lx - 2) != blank) & (ext.narrow(1, 2, Lx - 2) != ext.narrow(1, 0, Lx - 2))
    else:
        skip = None
    lpe = lp.gather(2, ext.unsqueeze(0).expand(T, N, Lx))  # (T, N, Lx)

    def shift(a, k):  # a[:, s - k], -inf for s < k
        if k >= Lx:
            return neg.expand(N, Lx)
        from ..ops.shape import cat
        return cat([neg.expand(N, k), a.narrow(1, 0, Lx - k)], 1)

    def shift_back(a, k):  # a[:, s + k], -inf past the end
        if k >= Lx:
            return neg.expand(N, Lx)
        from ..ops.shape import cat
        return cat([a.narrow(1, k, Lx - k), neg.expand(N, k)], 1)

    init = [[0 if s == 0 or (s == 1 and tgt_lens[i] > 0) else 1 for s in range(Lx)] for i in range(N)]
    init_ok = _conv.geometry_tensor(("ctc_init", tuple(tgt_lens), Lx), dtypes.bool_, dev,
                                    lambda: [[v == 0 for v in r] for r in init])
    alphas = []
    a = None
    for t in range(T):
        if t == 0:
            a = lpe[0].where(init_ok, neg)
        else:
            s2 = shift(a, 2)
            if skip is not None:
                from ..ops.shape import cat
                s2 = s2.where(cat([skip.new_zeros((N, 2)), skip], 1), neg)
            a = lpe[t] + _lse(a, shift(a, 1), s2)
            a = a.where(state_ok, neg)
        alphas.append(a)
    # beta from each sample's own last step backwards
    last = [[s == 2 * tgt_lens[i] or s == 2 * tgt_lens[i] - 1 for s in range(Lx)] for i in range(N)]
    last_ok = _conv.geometry_tensor(("ctc_last", tuple(tgt_lens), Lx), dtypes.bool_, dev, lambda: last)
    if skip is not None:
        from ..ops.shape import cat
        skip_b = cat([skip, skip.new_zeros((N, 2))], 1)  # s -> s + 2 allowed where skip at s + 2
    betas = [None] * T
    b = neg.expand(N, Lx)
    lens_t = _conv.geometry_tensor(("ctc_in", tuple(in_lens)), dtypes.int64, dev, lambda: [[v] for v in in_lens])
    for t in range(T - 1, -1, -1):
        s2 = shift_back(b, 2)
        if skip is not None:
            s2 = s2.where(skip_b, neg)
        rec = (lpe[t] + _lse(b, shift_back(b, 1), s2)).where(state_ok, neg)
        start = lpe[t].where(last_ok, neg)
        b = start.where(lens_t == t + 1, rec.where(lens_t > t + 1, neg))
        betas[t] = b
    from ..ops.shape import stack
    alpha = stack(alphas)  # (T, N, Lx)
    beta = stack(betas)
    # nll_n = -log(alpha_{T_n - 1}(2 S_n) + alpha_{T_n - 1}(2 S_n - 1)); T_n = 0: 0 if S_n = 0 else inf
    tl_idx = _conv.geometry_tensor(("ctc_tn", tuple(in_lens)), dtypes.int64, dev,
                                   lambda: [max(v - 1, 0) for v in in_lens])
    at = alpha.gather(0, tl_idx.reshape(1, N, 1).expand(1, N, Lx)).squeeze(0).where(last_ok, neg)
    nll = -at.logsumexp(1)
    empty_in = _conv.geometry_tensor(("ctc_empty", tuple(in_lens), tuple(tgt_lens)), dt, dev,
                                     lambda: [0.0 if v > 0 else (0.0 if s == 0 else float("inf"))
                                              for v, s in zip(in_lens, tgt_lens)])
    has_in = _conv.geometry_tensor(("ctc_has_in", tuple(in_lens)), dtypes.bool_, dev, lambda: [v > 0 for v in in_lens])
    nll = nll.where(has_in, empty_in)
    # torch's gradient: exp(lp) - exp(logsumexp_{s: l'_s = c}(alpha + beta) + nll - lp), zero past T_n
    lcab = alpha + beta
    m = lcab.amax(2, keepdim=True)
    m = m.where(m != float("-inf"), zeros((), dtype=dt, device=dev))
    onehot = (ext.unsqueeze(2) == arange(C, dtype=dtypes.int64, device=dev)).to(dt)  # (N, Lx, C)
    summed = (lcab - m).exp().permute(1, 0, 2).matmul(onehot).permute(1, 0, 2)  # (T, N, C)
    lsum = summed.log() + m
    grad = lp.exp() - (lsum + nll.reshape(1, N, 1) - lp).exp()
    tmask = _conv.geometry_tensor(("ctc_tmask", tuple(in_lens), T), dtypes.bool_, dev,
                                  lambda: [[[t < v] for v in in_lens] for t in range(T)])
    zero = zeros((), dtype=dt, device=dev)
    grad = grad.where(tmask, zero)
    if zero_infinity:
        inf = nll == float("inf")
        nll = nll.where(~inf, zero)
        grad = grad.where(~inf.reshape(1, N, 1), zero)
    return nll, grad


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean", zero_infinity=False):
    from .functional import _reduction
    for t, name in ((log_probs, "log_probs"), (targets, "targets")):
        if not isinstance(t, Tensor):
            raise TypeError(f"ctc_loss(): argument '{name}' must be Tensor, not {type(t).__name__}")
    reduction = _reduction(reduction)
    unbatched = log_probs.dim() == 2
    if log_probs.dim() not in (2, 3):
        raise RuntimeError(f"ctc_loss: expected log_probs of 2 (T, C) or 3 (T, N, C) dimensions, but got "
                           f"{log_probs.dim()}-dimensional log_probs of size {list(log_probs.shape)}")
    lp = log_probs.unsqueeze(1) if unbatched else log_probs
    tg = targets.unsqueeze(0) if unbatched and targets.dim() == 1 else targets
    if not lp._dtype.is_floating_point or lp._dtype not in (dtypes.float32, dtypes.float64):
        raise RuntimeError(f"\"ctc_loss_cpu\" not implemented for '{_conv.type_name(lp._dtype)}' (log_probs must be "
                           "float32 or float64)")
    T, N, C = lp.shape
    if unbatched:
        in_lens = [int(input_lengths.item()) if isinstance(input_lengths, Tensor) else int(
            input_lengths[0] if isinstance(input_lengths, (list, tuple)) else input_lengths)]
        tgt_lens = [int(target_lengths.item()) if isinstance(target_lengths, Tensor) else int(
            target_lengths[0] if isinstance(target_lengths, (list, tuple)) else target_lengths)]
    else:
        in_lens = _lengths(input_lengths, "input_lengths", N)
        tgt_lens = _lengths(target_lengths, "target_lengths", N)
    if not 0 <= blank < C:
        raise RuntimeError(f"blank must be in label range (ctc_loss got blank={blank} for {C} classes)")
    for i, (il, sl) in enumerate(zip(in_lens, tgt_lens)):
        if il < 0 or il > T:
            raise RuntimeError(f"Expected input_lengths to have value at most {T}, but got value {il} (while checking "
                               f"arguments for ctc_loss_cpu)")
        if sl < 0:
            raise RuntimeError(f"ctc_loss: target_lengths must be non-negative, got {sl} for sample {i}")
        if tg.dim() == 2 and sl > tg.shape[1]:
            raise RuntimeError(f"Expected tensor to have size at least {sl} at dimension 1, but got size "
                               f"{tg.shape[1]} for argument #2 'targets' (while checking arguments for ctc_loss_cpu)")
    if tg.dim() == 1 and sum(tgt_lens) > tg.shape[0]:
        raise RuntimeError(f"ctc_loss: the target_lengths sum to {sum(tgt_lens)}, more than the {tg.shape[0]} "
                           f"concatenated targets")
    nll = _CTC.apply(lp, tg, in_lens, tgt_lens, int(blank), bool(zero_infinity))
    if unbatched:
        nll = nll.squeeze(0)
    if reduction == "mean":
        div = _conv.geometry_tensor(("ctc_div", tuple(tgt_lens)), lp._dtype, lp.device,
                                    lambda: [max(v, 1) for v in tgt_lens])
        return (nll / (div.squeeze(0) if unbatched else div)).mean()
    if reduction == "sum":
        return nll.sum()
    return nll
