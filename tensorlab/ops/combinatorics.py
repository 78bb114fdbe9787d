"""Sorting-based composites: searchsorted, bucketize, unique, unique_consecutive, bincount,
histc, multinomial. Each is written over sort/argsort (stable), cumsum, scatter, index_put and
the random fills, so one body runs on every device; the data-dependent output sizes (unique's
number of values, bincount's length) wait for the device once, as torch does.

searchsorted without a binary-search kernel: the values and the boundaries are sorted together
(stable, values first for side='left', last for 'right'), so a value's insertion index is the
number of boundaries before it in that order: its position minus the values before it (its rank
among the values). Sorts only: nothing waits for the device."""
from __future__ import annotations

import math

from .. import dtypes
from ..tensor import Tensor
from ._common import strictly_same_device
from . import creation
from .repeats import _to_out, _wrap
from .shape import cat, stack

_INTS = (dtypes.uint8, dtypes.int8, dtypes.int16, dtypes.int32, dtypes.int64)


def _tensor(x, op, name="input", pos=1):
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument '{name}' (position {pos}) must be Tensor, not {type(x).__name__}")
    return x


# -- searchsorted / bucketize ----------------------------------------------------------------------
def _insertion_index(seq2, val2, right):
    """(B, N) sorted rows and (B, M) values -> (B, M) int64 insertion indices, with sorts only (no
    scatter or gather, so no index bounds check and no device wait): a value's position in the
    stable merged order minus its rank among the values alone."""
    b, n = seq2.shape
    m = val2.shape[1]
    dev = seq2.device
    if m == 0 or n == 0:
        return creation.zeros((b, m), dtype=dtypes.int64, device=dev)
    both = cat([seq2, val2], 1) if right else cat([val2, seq2], 1)
    where = both.argsort(dim=1, stable=True).argsort(dim=1)  # each element's position in the merged order
    pos = where[:, n:] if right else where[:, :m]
    rank = val2.argsort(dim=1, stable=True).argsort(dim=1)
    return pos - rank


def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None, out=None, sorter=None):
    """torch.searchsorted: for each value the index where it would be inserted into the innermost
    dim of `sorted_sequence` to keep it sorted (the first such index, or the last with
    right=True / side='right'); sorter= gives the indices that sort an unsorted sequence."""
    _tensor(sorted_sequence, "searchsorted", "sorted_sequence", 1)
    scalar = not isinstance(input, Tensor)
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"torch.searchsorted(): side can only be 'left' or 'right' but got {side}")
        if right and side == "left":
            raise RuntimeError("torch.searchsorted(): side and right can't be set to opposites, got side of left "
                               "while right was True")
        right = side == "right"
    seq = sorted_sequence
    if scalar:
        if isinstance(input, bool) or not isinstance(input, (int, float)):
            raise TypeError(f"searchsorted(): argument 'input' must be Tensor or Number, not {type(input).__name__}")
        if seq.dim() != 1:
            raise RuntimeError(f"torch.searchsorted(): input value can be a scalar only when boundaries tensor "
                               f"dimension is 1, but we got boundaries tensor dim({seq.dim()}) and input value's "
                               f"dim(0) numel(1)")
        input = creation.tensor(input, device=seq.device)
    strictly_same_device(seq, (input,), "searchsorted")
    if seq.dim() == 0:
        raise RuntimeError("torch.searchsorted(): boundaries tensor should have positive dimension, but got 0 "
                           "dimension")
    if seq.dim() != 1 and (seq.dim() != input.dim() or tuple(seq.shape[:-1]) != tuple(input.shape[:-1])):
        raise RuntimeError(f"torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 dimensions "
                           f"of boundaries tensor and input value tensor must match, but we got boundaries tensor "
                           f"{list(seq.shape)} and input value tensor {list(input.shape)}")
    if sorter is not None:
        _tensor(sorter, "searchsorted", "sorter")
        if tuple(sorter.shape) != tuple(seq.shape):
            raise RuntimeError(f"torch.searchsorted(): boundary and sorter must have the same size, but got boundary "
                               f"tensor {list(seq.shape)}and got sorter tensor {list(sorter.shape)}")
        if sorter._dtype is not dtypes.int64:
            raise RuntimeError(f"torch.searchsorted(): sorter must be a tensor of long dtype but got dtype "
                               f"{sorter._dtype.torch_name}")
        seq = seq.gather(-1, sorter)
    if seq._dtype is dtypes.bool_ or input._dtype is dtypes.bool_:
        raise NotImplementedError("\"searchsorted_out_cpu\" not implemented for 'Bool'")
    dt = dtypes.promote_types(seq._dtype, input._dtype)
    seq, val = seq.detach().to(dt), input.detach().to(dt)
    n = seq.shape[-1]
    if seq.dim() == 1:
        r = _insertion_index(seq.reshape(1, n), val.reshape(1, val.numel()), right).reshape(input.shape)
    else:
        b = 1
        for s in seq.shape[:-1]:
            b *= s
        r = _insertion_index(seq.reshape(b, n), val.reshape(b, val.shape[-1]), right).reshape(input.shape)
    if not right and dt.is_floating_point:
        r = r.where(~val.isnan(), n)  # torch's binary search puts NaN after every boundary, NaN ones too
    if out_int32:
        r = r.to(dtypes.int32)
    return _to_out(r, out)


def bucketize(input, boundaries, *, out_int32=False, right=False, out=None):
    """torch.bucketize: the bucket of each value among 1-D `boundaries` (searchsorted with the
    arguments swapped)."""
    _tensor(boundaries, "bucketize", "boundaries", 2)
    if boundaries.dim() != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim({boundaries.dim()})")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right, out=out)


# -- unique ----------------------------------------------------------------------------------------
def _group_ids(starts):
    """Group ids (int64) from a bool 'a new group starts here' vector."""
    return starts.to(dtypes.int64).cumsum(0) - 1


def _finish(values, inverse, counts, return_inverse, return_counts):
    r = (values,) + ((inverse,) if return_inverse else ()) + ((counts,) if return_counts else ())
    return r if len(r) > 1 else values


def _counts(gid, num, dev):
    return creation.zeros(num, dtype=dtypes.int64, device=dev).index_put_(
        (gid,), creation.ones(gid.shape, dtype=dtypes.int64, device=dev), True)


def _unique_flat(x, sort, return_inverse, return_counts):
    flat = x.detach().reshape(-1)
    dev = x.device
    n = flat.numel()
    if sort:
        vals, perm = flat.sort(stable=True)
    else:
        vals, perm = flat, creation.arange(n, device=dev)
    if n == 0:
        empty = creation.zeros(0, dtype=dtypes.int64, device=dev)
        return _finish(vals, empty.reshape(x.shape), empty, return_inverse, return_counts)
    starts = creation.ones(n, dtype=dtypes.bool_, device=dev)
    if n > 1:
        starts[1:] = vals[1:] != vals[:-1]
    gid = _group_ids(starts)
    values = vals[starts]  # the one device wait: the number of distinct values
    num = values.numel()
    inverse = counts = None
    if return_inverse and not sort:
        inverse = gid.reshape(x.shape)
    elif return_inverse:
        # inverse[perm[i]] = gid[i], by one sort of perm with gid packed below it (no index op: no wait)
        inverse = (perm * n + gid).sort()[0].remainder(n).reshape(x.shape)
    if return_counts:
        # gid is sorted: each group's count is the width of its run (sorts only: no wait)
        g = creation.arange(num, device=dev)
        counts = searchsorted(gid, g, right=True) - searchsorted(gid, g)
    if inverse is None:
        inverse = creation.zeros(0, dtype=dtypes.int64, device=dev)
    if counts is None:
        counts = creation.zeros(0, dtype=dtypes.int64, device=dev)
    return _finish(values, inverse, counts, return_inverse, return_counts)


def _unique_dim(x, dim, sort, return_inverse, return_counts, op):
    d = _wrap(dim, x.dim(), op)
    dev = x.device
    if x.numel() == 0:  # torch's rules for empty input
        if x.shape[d] != 0:
            raise RuntimeError("There are 0 sized dimensions, and they aren't selected, so unique cannot be applied")
        if list(x.shape).count(0) != 1:
            raise RuntimeError("Number of zero sized dimensions is more than one, so unique cannot be applied ")
        empty = creation.zeros(0, dtype=dtypes.int64, device=dev)
        return _finish(x.detach().clone(), empty, empty, return_inverse, return_counts)
    moved = x.detach().movedim(d, 0)
    n = moved.shape[0]
    rest = 1
    for s in moved.shape[1:]:
        rest *= s
    rows = moved.reshape(n, rest)
    perm = creation.arange(n, device=dev)
    if sort and n > 1:
        for c in range(rows.shape[1] - 1, -1, -1):  # least significant column first: a stable radix order
            key = rows[:, c].index_select(0, perm)
            perm = perm.index_select(0, key.argsort(stable=True))
    srt = rows.index_select(0, perm)
    empty = creation.zeros(0, dtype=dtypes.int64, device=dev)
    starts = creation.ones(n, dtype=dtypes.bool_, device=dev)
    if n > 1:
        starts[1:] = (srt[1:] != srt[:-1]).any(1)
    gid = _group_ids(starts)
    keep = starts.nonzero().reshape(-1)  # the one device wait
    num = keep.numel()
    values = moved.index_select(0, perm.index_select(0, keep)).movedim(0, d)
    inverse = creation.zeros(n, dtype=dtypes.int64, device=dev).scatter(0, perm, gid) if return_inverse else empty
    counts = _counts(gid, num, dev) if return_counts else empty
    return _finish(values, inverse, counts, return_inverse, return_counts)


def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """torch.unique: the distinct elements (or slices along `dim`) in ascending order, with the
    index of each input element's value in them (return_inverse) and each value's count. Like
    torch's CPU kernels, the values come sorted whatever `sorted` says (its order is
    unspecified for sorted=False)."""
    _tensor(input, "unique")
    if dim is None:
        return _unique_flat(input, True, return_inverse, return_counts)
    return _unique_dim(input, dim, True, return_inverse, return_counts, "unique")


def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    """torch.unique_consecutive: each run of equal consecutive elements (or slices) kept once."""
    _tensor(input, "unique_consecutive")
    if dim is None:
        return _unique_flat(input, False, return_inverse, return_counts)
    return _unique_dim(input, dim, False, return_inverse, return_counts, "unique_consecutive")


# -- counting --------------------------------------------------------------------------------------
def bincount(input, weights=None, minlength=0):
    """torch.bincount: occurrences of each value of a 1-D non-negative integer tensor (or the sum
    of their weights: float32 weights give float32, any other weights float64)."""
    _tensor(input, "bincount")
    if input._dtype is dtypes.bool_ or input._dtype.is_floating_point:
        raise NotImplementedError(f"\"bincount_cpu\" not implemented for '{input._dtype.torch_name}'")
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    if input.dim() != 1:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    dev = input.device
    if weights is not None:
        _tensor(weights, "bincount", "weights", 2)
        if weights.dim() != 1 or weights.shape[0] != input.shape[0]:
            raise RuntimeError("weights should be 1-d and have the same length as input")
        wdt = dtypes.float32 if weights._dtype is dtypes.float32 else dtypes.float64
    else:
        wdt = dtypes.int64
    n = input.numel()
    if n == 0:  # torch: int64 zeros, weights or not
        return creation.zeros(minlength, dtype=dtypes.int64, device=dev)
    x = input.detach().to(dtypes.int64)
    lo, hi = stack([x.min(), x.max()]).tolist()  # one device wait
    if lo < 0:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    size = max(int(hi) + 1, int(minlength))
    w = creation.ones(n, dtype=wdt, device=dev) if weights is None else weights.detach().to(wdt)
    return creation.zeros(size, dtype=wdt, device=dev).index_put_((x,), w, True)


def histc(input, bins=100, min=0, max=0, *, out=None):  # noqa: A002
    """torch.histc: counts of the elements in `bins` equal-width bins over [min, max] (the data's
    range when both are 0); elements outside are ignored, the top edge belongs to the last bin."""
    _tensor(input, "histc")
    if not input._dtype.is_floating_point:
        raise NotImplementedError(f"\"histogram_cpu\" not implemented for '{input._dtype.torch_name}'")
    if bins <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension 0")
    x = input.detach().reshape(-1)
    lo, hi = float(min), float(max)
    if lo == 0 and hi == 0 and x.numel():
        lo, hi = stack([x.min(), x.max()]).tolist()  # one device wait
    if lo > hi:
        raise RuntimeError("torch.histc: max must be larger than min")
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise RuntimeError(f"torch.histc: range of [{lo:g}, {hi:g}] is not finite")
    dt = input._dtype
    hist = creation.zeros(bins, dtype=dt, device=input.device)
    if x.numel():
        inside = (x >= lo) & (x <= hi)
        # torch's linear-interpolation bin: (x - lo) * bins / (hi - lo), truncated, top edge in the last bin
        pos = ((x - lo) * bins / (hi - lo)).to(dtypes.int64).clamp(0, bins - 1)
        hist.index_put_((pos,), inside.to(dt), True)
    return _to_out(hist, out)


# -- sampling --------------------------------------------------------------------------------------
def multinomial(input, num_samples, replacement=False, *, generator=None, out=None):
    """torch.multinomial: indices sampled from the rows of `input` (non-negative weights).
    Without replacement: torch's exponential race (top-k of p / q, q ~ Exp(1)). With
    replacement: inverse-CDF sampling (uniform draws searched in the normalized cumulative
    sums, its last entry pinned to 1). Both are composites over existing primitives (the
    random fills, topk/argmax, cumsum and the sort-based searchsorted); the validity checks
    wait for the device once."""
    _tensor(input, "multinomial")
    p = input.detach()
    if not p._dtype.is_floating_point:
        raise RuntimeError(f"multinomial only supports floating-point dtypes for input, got: {p._dtype.torch_name}")
    if isinstance(num_samples, bool) or not isinstance(num_samples, int):
        raise TypeError(f"multinomial(): argument 'num_samples' must be int, not {type(num_samples).__name__}")
    if p.dim() not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if num_samples <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    ncat = p.shape[-1]
    if not replacement and num_samples > ncat:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
    if ncat > 2 ** 24:
        raise RuntimeError("number of categories cannot exceed 2^24")
    rows = p.reshape(-1, ncat)
    if p.numel():  # checked where the data is: on CUDA on the device, raised at the next host wait
        be = rows._backend
        be.check_flag((~rows.isfinite() | (rows < 0)).any(), "multinomial", lambda k, v: RuntimeError(
            "probability tensor contains either `inf`, `nan` or element < 0"))
        be.check_flag((rows.sum(-1) == 0).any(), "multinomial", lambda k, v: RuntimeError(
            "invalid multinomial distribution (sum of probabilities <= 0)"))
    dev = p.device
    if not replacement:
        q = creation.empty(rows.shape, dtype=rows.dtype, device=dev).exponential_(1, generator=generator)
        race = rows / q
        if num_samples == 1:
            r = race.argmax(-1, keepdim=True)
        else:
            r = race.topk(num_samples, -1).indices
    else:
        acc = dtypes.float64 if rows._dtype is dtypes.float64 else dtypes.float32
        cdf = rows.to(acc).cumsum(-1)
        cdf = cdf / cdf[:, -1:]
        cdf = cat([cdf[:, :-1], creation.ones((cdf.shape[0], 1), dtype=acc, device=dev)], 1)
        u = creation.empty((rows.shape[0], num_samples), dtype=acc, device=dev).uniform_(0, 1, generator=generator)
        r = searchsorted(cdf, u, right=True).clamp(max=ncat - 1)
    r = r.reshape(num_samples) if p.dim() == 1 else r.reshape(p.shape[0], num_samples)
    return _to_out(r, out)


FUNCTIONS = ("searchsorted", "bucketize", "unique", "unique_consecutive", "bincount", "histc", "multinomial")
METHODS = {"unique": unique, "unique_consecutive": unique_consecutive, "bincount": bincount, "histc": histc,
           "multinomial": multinomial}
