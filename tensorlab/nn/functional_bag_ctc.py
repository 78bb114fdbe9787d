"""torch.nn.functional.embedding_bag and ctc_loss.

embedding_bag: the rows of weight picked by input, weighted (per_sample_weights), reduced per bag;
each index's bag comes from `searchsorted` on offsets (no host wait), the bags' sums are the
adjoint of a row gather (`put_rows`, deterministic). Mode 'max' lays the bags out densely (its
width, the longest bag, is read on the host: a named wait, as torch's CPU kernel reads offsets)
and takes each column's first maximum. Rows at padding_idx take no part (nor in a mean's count).

ctc_loss: the log-space alpha / beta recursions of Graves et al. over the extended label
sequence (blanks around every target) as two backend primitives, ctc_loss_fwd and ctc_loss_bwd
(NumPy on the CPU; kernels/ctc.cu on CUDA, one block per batch element with the time loop inside);
the gradient is torch's (exp(log_probs) - the states' posterior, as ATen's ctc_loss_backward: the
gradient through a log_softmax that produced log_probs), in a custom autograd Function."""
from __future__ import annotations

from .. import _warn, dtypes, sync
from ..autograd.function import Function
from ..ops import conv as _conv
from ..ops.combinatorics import searchsorted
from ..ops._common import empty_tensor
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


class _CTC(Function):
    """Per-sample negative log likelihoods (the ctc_loss_fwd primitive, which also keeps alpha);
    backward: the ctc_loss_bwd primitive (torch's ctc_loss_backward formula) times the incoming grad."""

    @staticmethod
    def forward(ctx, log_probs, targets, in_lens, tgt_lens, blank, zero_infinity):
        lp = log_probs.detach().contiguous()
        flat, offs, il, sl, Lx = _ctc_operands(lp, targets.detach(), in_lens, tgt_lens)
        T, N, _ = lp.shape
        nll = empty_tensor((N,), lp._dtype, lp.device)
        alpha = empty_tensor((N, T, Lx), lp._dtype, lp.device)
        lp._backend.ctc_loss_fwd(nll, alpha, lp, flat, offs, il, sl, blank)
        ctx.save_for_backward(lp, alpha, nll, flat, offs, il, sl)
        ctx.blank, ctx.zero_infinity = blank, zero_infinity
        if zero_infinity:
            nll = nll.where(nll != float("inf"), zeros((), dtype=nll.dtype, device=nll.device))
        return nll

    @staticmethod
    def backward(ctx, g):
        lp, alpha, nll, flat, offs, il, sl = ctx.saved_tensors
        grad = empty_tensor(tuple(lp.shape), lp._dtype, lp.device)
        lp._backend.ctc_loss_bwd(grad, lp, alpha, nll, flat, offs, il, sl, ctx.blank, ctx.zero_infinity)
        return grad * g.reshape(1, -1, 1), None, None, None, None, None


def _ctc_operands(lp, targets, in_lens, tgt_lens):
    """The primitives' int64 operands: the targets flattened, each sample's first target's position in
    them, the lengths (constant tensors per length tuple: uploaded once), and the states Lx."""
    N, dev = lp.shape[1], lp.device
    flat = targets.long().contiguous().reshape(-1)
    if targets.dim() == 2:
        width = targets.shape[1]
        starts = [i * width for i in range(N)]
    else:
        starts = [0]
        for n in tgt_lens[:-1]:
            starts.append(starts[-1] + n)
    offs = _conv.geometry_tensor(("ctc_offsets", tuple(starts)), dtypes.int64, dev, lambda: starts)
    il = _conv.geometry_tensor(("ctc_in", tuple(in_lens)), dtypes.int64, dev, lambda: list(in_lens))
    sl = _conv.geometry_tensor(("ctc_tgt", tuple(tgt_lens)), dtypes.int64, dev, lambda: list(tgt_lens))
    return flat, offs, il, sl, 2 * (max(tgt_lens) if tgt_lens else 0) + 1


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
