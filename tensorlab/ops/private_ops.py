"""torch's underscore-named functions that torch's own decompositions and model code call, as
torch exposes them (torch._chunk_cat, torch.segment_reduce, torch._unsafe_masked_index(_put_accumulate),
torch._native_batch_norm_legit), composed of tensorlab's public ops: they run on every device and
differentiate through those ops."""
from __future__ import annotations

import math

import numpy as np

from .. import dtypes
from ..tensor import Tensor
from . import creation

FUNCTIONS = ("_chunk_cat", "segment_reduce", "_unsafe_masked_index", "_unsafe_masked_index_put_accumulate",
             "_native_batch_norm_legit")


def _chunk_cat(tensors, dim, num_chunks, *, out=None):
    """torch._chunk_cat: each tensor split along dim into num_chunks equal chunks (zero-padded at the end
    to a multiple of num_chunks), each chunk flattened with the dims after dim, and the tensors' chunks
    concatenated: the result is (*shape[:dim], num_chunks, sum of the tensors' chunk sizes)."""
    from .shape import cat
    if not isinstance(tensors, (list, tuple)) or not tensors:
        raise RuntimeError("_chunk_cat expects a non-empty list of tensors")
    if num_chunks < 1:
        raise RuntimeError(f"_chunk_cat expects a positive num_chunks, got {num_chunks}")
    t0 = tensors[0]
    nd = t0.dim()
    if not -nd <= dim < nd:
        raise IndexError(f"_chunk_cat: Dimension out of range (expected to be in range of [{-nd}, {nd - 1}], but got "
                         f"{dim})")
    d = dim % nd
    parts = []
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"_chunk_cat(): tensors[{i}] must be Tensor, not {type(t).__name__}")
        if t.dim() <= d or tuple(t.shape[:d]) != tuple(t0.shape[:d]):
            raise RuntimeError(f"_chunk_cat expects same sizes of 0,...,dim-1 dimensions for all tensors; tensor 0 "
                               f"has shape {tuple(t0.shape)}, tensor {i} {tuple(t.shape)}")
        if t.dtype is not t0.dtype or t.device != t0.device:
            raise RuntimeError(f"_chunk_cat expects all tensors to have the same dtype and device; tensor 0 is "
                               f"{t0.dtype.torch_name} on {t0.device}, tensor {i} {t.dtype.torch_name} on {t.device}")
        s = t.shape[d]
        chunk = -(-s // num_chunks)
        if chunk * num_chunks != s:
            pad = creation.zeros(tuple(t.shape[:d]) + (chunk * num_chunks - s,) + tuple(t.shape[d + 1:]),
                                 dtype=t.dtype, device=t.device)
            t = cat([t, pad], d)
        parts.append(t.reshape(tuple(t.shape[:d]) + (num_chunks, -1) if t.numel() else
                               tuple(t.shape[:d]) + (num_chunks, chunk * math.prod(t.shape[d + 1:]))))
    return cat(parts, d + 1, out=out) if out is not None else cat(parts, d + 1)


_REDUCTIONS = ("max", "min", "sum", "mean", "prod")


def segment_reduce(data, reduce, *, lengths=None, indices=None, offsets=None, axis=0, unsafe=False, initial=None):
    """torch.segment_reduce: `reduce` over consecutive segments of data along axis, the segments given by
    lengths (batch..., S) or offsets (batch..., S + 1) with batch = data.shape[:axis]; an empty segment
    gives `initial` (or the reduction's identity: -inf, inf, 0, NaN for mean, 1), and initial also takes
    part in every other segment's reduction. Each element's segment comes from a searchsorted over the
    offsets, then one scatter_reduce: no host loop, any device, autograd through scatter_reduce."""
    from .combinatorics import searchsorted
    from .elementwise import where
    from .scatter_reduce import scatter_reduce
    from .shape import cat
    op = "segment_reduce"
    if not isinstance(data, Tensor):
        raise TypeError(f"segment_reduce(): argument 'data' must be Tensor, not {type(data).__name__}")
    if reduce not in _REDUCTIONS:
        raise RuntimeError(f"segment_reduce: reduce must be one of {list(_REDUCTIONS)}, got {reduce!r}")
    if indices is not None:
        raise RuntimeError("segment_reduce(): indices based reduction is not supported yet (torch's neither); "
                           "pass lengths or offsets")
    if (lengths is None) == (offsets is None):
        raise RuntimeError("segment_reduce(): Either lengths or offsets must be defined, and not both")
    nd = data.dim()
    ax = axis % nd if -nd <= axis < nd else None
    if ax is None:
        raise IndexError(f"segment_reduce: axis {axis} out of range for data of {nd} dims")
    if data.dtype in (dtypes.float16, dtypes.bfloat16) and reduce in ("sum", "prod"):
        # torch's kernel accumulates half precision in float32, rounding once at the end
        return segment_reduce(data.float(), reduce, lengths=lengths, offsets=offsets, axis=axis, unsafe=unsafe,
                              initial=initial).to(data.dtype)
    seg = lengths if lengths is not None else offsets
    if seg.dim() != ax + 1 or tuple(seg.shape[:ax]) != tuple(data.shape[:ax]):
        raise RuntimeError(f"segment_reduce(): Expected {'lengths' if lengths is not None else 'offsets'} of shape "
                           f"{tuple(data.shape[:ax])} + (segments,) for data of shape {tuple(data.shape)} and axis "
                           f"{axis}, got {tuple(seg.shape)}")
    if seg.dtype.is_floating_point or seg.dtype.is_complex or seg.dtype is dtypes.bool_:
        raise RuntimeError(f"segment_reduce(): lengths/offsets must be an integer tensor, got {seg.dtype.torch_name}")
    seg = seg.to(dtypes.int64)
    if lengths is not None:
        zero = creation.zeros(tuple(seg.shape[:-1]) + (1,), dtype=dtypes.int64, device=seg.device)
        offs = cat([zero, seg.cumsum(-1)], -1)
        lens = seg
    else:
        offs = seg
        lens = offs[..., 1:] - offs[..., :-1]
    n = data.shape[ax]
    S = lens.shape[-1]
    if not unsafe:
        ok = ((lens >= 0).all() & (offs[..., -1] == n).all() & (offs[..., 0] == 0).all())
        if not bool(ok._host("segment_reduce: checking the segments cover the data")):
            raise RuntimeError("segment_reduce(): Expected all rows of lengths along axis to sum to "
                               f"data.size(lengths.dim()-1) = {n} (and every length >= 0) when !unsafe")
    # each element's segment: the number of segment ends <= its position
    pos = creation.arange(n, dtype=dtypes.int64, device=data.device)
    ends = offs[..., 1:].contiguous()
    pos = pos.expand(tuple(ends.shape[:-1]) + (n,)).contiguous()
    # (with unsafe lengths summing short of n, the elements past the last end go to segment S, dropped)
    sid = searchsorted(ends, pos, right=True)
    rest = tuple(data.shape[ax + 1:])
    index = sid.reshape(tuple(sid.shape) + (1,) * len(rest)).expand(tuple(data.shape))
    dt = data.dtype
    kind = {"max": "amax", "min": "amin", "sum": "sum", "prod": "prod", "mean": "sum"}[reduce]
    ident = {"max": -math.inf, "min": math.inf, "sum": 0, "mean": 0, "prod": 1}[reduce]
    if not dt.is_floating_point and reduce in ("max", "min"):
        ident = int(np.iinfo(dt.np).min if reduce == "max" else np.iinfo(dt.np).max)
    start = initial if initial is not None and reduce != "mean" else ident
    spill = tuple(data.shape[:ax]) + (S + 1,) + rest
    base = creation.full(spill, start, dtype=dt, device=data.device)
    res = scatter_reduce(base, ax, index, data, kind, include_self=True) if n else base
    res = res.narrow(ax, 0, S)
    lshape = tuple(lens.shape) + (1,) * len(rest)
    empty = (lens == 0).reshape(lshape)
    if reduce == "mean":
        cnt = lens.reshape(lshape).to(dt)
        total = res + initial if initial is not None else res
        fill = initial if initial is not None else math.nan
        return where(empty, creation.full((), fill, dtype=dt, device=data.device),
                     total / where(empty, creation.ones((), dtype=dt, device=data.device), cnt))
    return res  # an empty segment keeps the start value: initial, or the identity (-inf, inf, 0, 1) as torch's


def _clamped(indices, self):
    """The index tensors clamped into self's dims (the masked-off positions may hold any index)."""
    out = []
    for k, idx in enumerate(indices):
        if idx is None:
            out.append(None)
            continue
        size = self.shape[k]
        out.append(idx.clamp(-size, size - 1) if size else idx)
    return out


def _check_masked(self, mask, indices, op):
    if not isinstance(self, Tensor) or not isinstance(mask, Tensor):
        raise TypeError(f"{op}(): self and mask must be Tensors, got {type(self).__name__}, {type(mask).__name__}")
    if mask.dtype is not dtypes.bool_:
        raise RuntimeError(f"{op}: mask must be a bool tensor, got {mask.dtype.torch_name}")
    if len(indices) > self.dim():
        raise IndexError(f"{op}: too many indices for tensor of dimension {self.dim()} (got {len(indices)})")


def _unsafe_masked_index(self, mask, indices, fill):
    """torch._unsafe_masked_index: where(mask, self[indices], fill), with the indices clamped into range
    (only the masked-in positions must be valid; the others are read and discarded)."""
    from .elementwise import where
    _check_masked(self, mask, indices, "_unsafe_masked_index")
    got = self[tuple(slice(None) if i is None else i for i in _clamped(indices, self))]
    return where(mask, got, creation.full((), fill, dtype=self.dtype, device=self.device))


def _unsafe_masked_index_put_accumulate(self, mask, indices, values):
    """torch._unsafe_masked_index_put_accumulate: a copy of self with where(mask, values, 0) added at the
    (clamped) indices, duplicates accumulating."""
    from .elementwise import where
    from .indexing import index_put
    _check_masked(self, mask, indices, "_unsafe_masked_index_put_accumulate")
    vals = where(mask, values, creation.zeros((), dtype=values.dtype, device=values.device))
    return index_put(self, _clamped(indices, self), vals, accumulate=True)


def _native_batch_norm_legit(input, weight, bias, running_mean, running_var=None, training=None, momentum=None,
                             eps=None):
    """torch._native_batch_norm_legit: native_batch_norm -> (output, save_mean, save_invstd); the no_stats
    overload (input, weight, bias, training, momentum, eps) normalizes without running statistics."""
    from .native_norms import native_batch_norm
    if isinstance(running_mean, bool):  # the no_stats overload: (input, weight, bias, training, momentum, eps)
        training, momentum, eps = running_mean, running_var, training
        running_mean = running_var = None
    return tuple(native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps))
