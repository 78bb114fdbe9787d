"""nn.functional.linear_cross_entropy (torch 2.13): cross_entropy(linear(input, linear_weight,
linear_bias), target, ...) with the logits' shape taken from linear_weight ((C, in) or (C, d1, ...,
dK, in) for a K-dimensional loss). With `options` (a LinearCrossEntropyOptions, torch's or ours) and
a configuration torch's chunked path takes (reduction mean/sum/none, no label smoothing, int64
targets, 2-D linear_weight), the batch is processed in row chunks: each chunk's logits, its
per-row losses, then one reduction over the rows (the mean divides by the summed class weights of
the non-ignored targets, as cross_entropy's). Other configurations ignore `options` with torch's
warning."""
from __future__ import annotations

import dataclasses
import math

from .. import _warn, dtypes
from ..tensor import Tensor

__all__ = ["linear_cross_entropy"]


@dataclasses.dataclass(frozen=True)
class LinearCrossEntropyOptions:
    """torch.nn.LinearCrossEntropyOptions: how the chunked linear_cross_entropy splits the batch.
    batch_chunk_size (rows per chunk) or chunking_method ("auto", "aspect_ratio", "aspect_ratio:N",
    None); acc_dtype (default: float32 for float16/bfloat16 inputs, as torch's) is the dtype the chunks
    are computed in; allow_retain_graph and acc_policy are accepted for torch's signature (the backward
    here is plain autograd through the chunks)."""
    allow_retain_graph: bool = False
    batch_chunk_size: int | None = None
    chunking_method: str | None = "auto"
    acc_policy: str = "auto"
    acc_dtype: object = None

    def __post_init__(self):
        if self.acc_policy not in ("auto", "accurate", "balanced", "compact"):
            raise ValueError(f"LinearCrossEntropyOptions: acc_policy must be one of 'auto', 'accurate', 'balanced', "
                             f"'compact', got {self.acc_policy!r}")
        if self.batch_chunk_size is not None and self.batch_chunk_size < 1:
            raise ValueError(f"LinearCrossEntropyOptions: batch_chunk_size must be >= 1, got {self.batch_chunk_size}")


def _chunk_rows(options, num_batches, in_features, num_classes):
    size = getattr(options, "batch_chunk_size", None)
    method = getattr(options, "chunking_method", None)
    if size is not None:
        return max(int(size), 1)
    if method is None:
        return max(num_batches, 1)
    if method == "auto":
        method = "aspect_ratio:2"
    div = 1
    if method.startswith("aspect_ratio:"):
        div = max(int(method.split(":", 1)[1]), 1)
    elif method != "aspect_ratio":
        raise ValueError(f"linear_cross_entropy: unknown chunking_method {method!r}; use 'auto', 'aspect_ratio', "
                         f"'aspect_ratio:N' or None")
    rows = math.ceil(num_batches / max(math.ceil(num_classes / max(in_features, 1)), 1))
    rows = 1 << max(rows - 1, 0).bit_length()
    return max(rows // div, 1)


def _acc_dtype(options, dt):
    """torch's acc_dtype: as given, else float32 for float16/bfloat16 inputs (mixed precision), else the
    input's dtype."""
    acc = getattr(options, "acc_dtype", None)
    if acc is not None:
        from .. import dtypes as _d
        name = str(acc).split(".")[-1]
        return getattr(_d, name) if name != "bool" else _d.bool_
    return dtypes.float32 if dt in (dtypes.float16, dtypes.bfloat16) else dt


def _chunked(input, linear_weight, target, linear_bias, weight, reduction, ignore_index, rows):
    from . import functional as F
    from .. import cat, where
    n = input.shape[0]
    losses = []
    for i in range(0, n, rows):
        logits = F.linear(input[i:i + rows], linear_weight, linear_bias)
        losses.append(F.cross_entropy(logits, target[i:i + rows], weight=weight, reduction="none",
                                      ignore_index=ignore_index))
    loss = cat(losses) if len(losses) != 1 else losses[0]
    if reduction == "none":
        return loss
    total = loss.sum()
    if reduction == "sum":
        return total
    valid = target != ignore_index
    if weight is None:
        denom = valid.sum().to(total.dtype)
    else:
        safe = where(valid, target, 0)
        denom = where(valid, weight.detach()[safe], 0).sum().to(total.dtype)
    return total / denom


def linear_cross_entropy(input, linear_weight, target, *, linear_bias=None, weight=None, reduction="mean",
                         ignore_index=None, label_smoothing=0.0, options=None):
    """torch.nn.functional.linear_cross_entropy."""
    from . import functional as F
    for name, v in (("input", input), ("linear_weight", linear_weight), ("target", target)):
        if not isinstance(v, Tensor):
            raise TypeError(f"linear_cross_entropy(): argument '{name}' must be Tensor, not {type(v).__name__}")
    if input.dim() < 1 or input.dim() > 2:
        raise RuntimeError(f"expected input with dimensionality 1 or 2, got {input.dim()}")
    if linear_weight.dim() < 2:
        raise RuntimeError(f"expected linear_weight with dimensionality at least 2, got {linear_weight.dim()}")
    num_batches = tuple(input.shape[:-1])
    in_features = input.shape[-1]
    if in_features != linear_weight.shape[-1]:
        raise RuntimeError(f"expected equal input and linear_weight last dimensions (in_features), got "
                           f"{in_features} and {linear_weight.shape[-1]}, respectively")
    num_classes = linear_weight.shape[0]
    out_features = tuple(linear_weight.shape[1:-1])
    if linear_bias is not None and tuple(linear_bias.shape) != (num_classes, *out_features):
        raise RuntimeError(f"expected linear_bias shape {(num_classes, *out_features)}, got "
                           f"{tuple(linear_bias.shape)}")
    if out_features and not num_batches:
        raise RuntimeError(f"K-dimensional loss defined by linear_weight shape {tuple(linear_weight.shape)} requires "
                           f"batched input, (N, {in_features}), got unbatched input with shape {tuple(input.shape)}")
    logits_shape = (*num_batches, num_classes, *out_features)
    probs = tuple(target.shape) == logits_shape
    if probs and ignore_index is not None:
        raise RuntimeError("ignore_index cannot be specified when target contains probabilities")
    ignore_index = -100 if ignore_index is None else ignore_index
    chunkable = (not out_features and reduction in ("mean", "sum", "none") and label_smoothing == 0.0
                 and target.dtype is dtypes.int64)
    if options is not None and not chunkable:
        _warn.warn("linear_cross_entropy: ``options`` ignored; chunked path needs reduction in {'mean','sum','none'}, "
                   f"label_smoothing == 0, target.dtype == int64, out_features == (). Got reduction={reduction!r}, "
                   f"label_smoothing={label_smoothing}, target.dtype={target.dtype.torch_name}, "
                   f"out_features={out_features}, linear_bias.shape="
                   f"{tuple(linear_bias.shape) if linear_bias is not None else None}.")
    if options is not None and chunkable:
        batched = input.dim() == 2
        x, tg = (input, target) if batched else (input.unsqueeze(0), target.unsqueeze(0))
        rows = _chunk_rows(options, x.shape[0], in_features, num_classes)
        acc = _acc_dtype(options, x.dtype)
        up = (lambda v: v if v is None or v.dtype is acc else v.to(acc))
        r = _chunked(up(x), up(linear_weight), tg, up(linear_bias), up(weight), reduction, ignore_index, rows)
        r = r.to(x.dtype)
        return r if batched or reduction != "none" else r.squeeze(0)
    w2, b2 = linear_weight, linear_bias
    if out_features:
        w2 = linear_weight.reshape(math.prod(out_features, start=num_classes), in_features)
        if linear_bias is not None:
            b2 = linear_bias.reshape(math.prod(out_features, start=num_classes))
    if input.dtype in (dtypes.float16, dtypes.bfloat16) and b2 is not None:
        # torch's 16-bit addmm adds the bias to the float32 product and rounds once
        f32 = dtypes.float32
        logits = F.linear(input.to(f32), w2.to(f32), b2.to(f32)).to(input.dtype).reshape(logits_shape)
    else:
        logits = F.linear(input, w2, b2).reshape(logits_shape)
    return F.cross_entropy(logits, target, weight=weight, reduction=reduction, ignore_index=ignore_index,
                           label_smoothing=label_smoothing)
