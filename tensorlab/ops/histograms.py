"""torch.histogram and torch.histogramdd: counts (or weight sums, or densities) of the points of an
(M, D) point set in a grid of bins. Bin edges are the given tensors, or `bins + 1` linspace points
over `range` or over the data's extent (one device wait for min/max, as torch's own .item()); a
point lands in bin searchsorted(edges, x, right=True) - 1, the top edge belonging to the last bin,
and points outside any dim's edges (NaN included) are dropped. All the points are counted at once:
one flat bin index each (an extra overflow slot for the dropped ones) and one accumulating
index_put, so nothing loops on the host. Float32/float64 inputs only, as torch."""
from __future__ import annotations

import math
import numbers
from .. import dtypes
from ..return_types import histogram as histogram_result, histogramdd as histogramdd_result
from ..tensor import Tensor
from ._composite import tensor_arg, tl



def _check_input(x, op):
    tensor_arg(x, op)
    if x.dtype not in (dtypes.float32, dtypes.float64):
        name = {"int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool",
                "float16": "Half", "bfloat16": "BFloat16"}.get(x.dtype.torch_name, x.dtype.torch_name)
        raise NotImplementedError(f"\"histogramdd\" not implemented for '{name}'")


def _edges(x2, bins, rng, op):
    """One edges tensor per dim (x2: (M, D) points)."""
    t = tl()
    d = x2.shape[1]
    dev, dt = x2.device, x2.dtype
    if isinstance(bins, Tensor):
        bins = [bins]
    if isinstance(bins, numbers.Integral) and not isinstance(bins, bool):
        bins = [int(bins)] * d
    bins = list(bins)
    if len(bins) != d:
        raise RuntimeError("histogramdd: The size of bins must be equal to the innermost dimension of the input.")
    if all(isinstance(b, Tensor) for b in bins):
        out = []
        for i, b in enumerate(bins):
            if b.dim() != 1:
                raise RuntimeError(f"torch.histogramdd: bins tensor should have one dimension, but got {b.dim()} "
                                   f"dimensions in the bins tensor for dimension {i}")
            if b.numel() < 1:
                raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {b.numel() - 1} for dimension {i}")
            if b.dtype is not dt:
                raise RuntimeError(f"torch.histogramdd: input tensor and bins tensors should have the same dtype, but "
                                   f"got input {dt.torch_name} and bins {b.dtype.torch_name} for dimension {i}")
            if b.device != dev:
                raise RuntimeError(f"torch.histogramdd: bins tensor for dimension {i} is on {b.device}, the input on "
                                   f"{dev}; move it with .to({str(dev)!r})")
            out.append(b)
        return out
    counts = []
    for i, b in enumerate(bins):
        if isinstance(b, bool) or not isinstance(b, numbers.Integral):
            raise TypeError(f"{op}(): argument 'bins' must be int, a tensor or a sequence of either, not "
                            f"{type(b).__name__}")
        if b <= 0:
            raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {b} for dimension {i}")
        counts.append(int(b))
    if rng is not None:
        rng = [float(v) for v in rng]
        if len(rng) != 2 * d:
            raise RuntimeError(f"torch.histogramdd: for a {d}-dimensional histogram, range should have {2 * d} "
                               f"elements, but got {len(rng)}")
        lo, hi = rng[0::2], rng[1::2]
    elif x2.shape[0] > 0:
        mn, mx = x2.detach().aminmax(dim=0)
        lo, hi = t.stack([mn, mx]).tolist()  # the one device wait: the data's extent, as torch's
    else:
        lo, hi = [0.0] * d, [1.0] * d
    out = []
    for i in range(d):
        a, b = lo[i], hi[i]
        if not (math.isfinite(a) and math.isfinite(b)):
            raise RuntimeError(f"torch.histogramdd: dimension {i}'s range [{a:g}, {b:g}] is not finite")
        if a > b:
            raise RuntimeError(f"torch.histogramdd: min should not exceed max, but got min {a:g} max {b:g} for "
                               f"dimension {i}")
        if a == b:
            a, b = a - 0.5, b + 0.5
        out.append(t.linspace(a, b, counts[i] + 1, dtype=dt, device=dev))
    return out


def _histdd(x2, edges, weight, density):
    """(hist of shape (len(e) - 1 for e in edges), edges) for (M, D) points."""
    t = tl()
    m, d = x2.shape
    dev, dt = x2.device, x2.dtype
    nbins = [e.numel() - 1 for e in edges]
    total = 1
    for n in nbins:
        total *= n
    flat = t.zeros((m,), dtype=dtypes.int64, device=dev)
    inside = t.ones((m,), dtype=dtypes.bool_, device=dev)
    for i, e in enumerate(edges):
        col = x2[:, i].detach()
        n = nbins[i]
        inside = inside & (col >= e[0]) & (col <= e[-1])
        pos = (t.searchsorted(e.detach().contiguous(), col.contiguous(), right=True) - 1).clamp(0, max(n - 1, 0))
        flat = flat * n + pos
    flat = t.where(inside, flat, total)  # the overflow slot, dropped below
    w = t.ones((m,), dtype=dt, device=dev) if weight is None else weight.reshape(m)
    hist = t.zeros((total + 1,), dtype=dt, device=dev).index_put((flat,), w.detach(), True)[:total]
    hist = hist.reshape(tuple(nbins))
    if density:
        hist = hist / hist.sum()
        for i, e in enumerate(edges):
            shape = [1] * d
            shape[i] = nbins[i]
            hist = hist / (e[1:] - e[:-1]).reshape(shape)
    return hist


def _check_weight(x, weight, lead):
    if weight is None:
        return None
    tensor_arg(weight, "histogramdd", "weight")
    if tuple(weight.shape) != tuple(lead):
        raise RuntimeError(f"torch.histogramdd: if weight tensor is provided it should have the same shape as the "
                           f"input tensor excluding its innermost dimension, but got input with shape "
                           f"{list(x.shape)} and weight with shape {list(weight.shape)}")
    if weight.dtype is not x.dtype:
        raise RuntimeError(f"torch.histogramdd: if weight tensor is provided, input tensor and weight tensor should "
                           f"have the same dtype, but got input({x.dtype.torch_name}), and "
                           f"weight({weight.dtype.torch_name})")
    if weight.device != x.device:
        raise RuntimeError(f"torch.histogramdd: weight is on {weight.device}, the input on {x.device}; move it with "
                           f".to({str(x.device)!r})")
    return weight


def histogram(input, bins=100, *, range=None, weight=None, density=False, out=None):  # noqa: A002
    """torch.histogram(input, bins, *, range=None, weight=None, density=False) -> (hist, bin_edges)."""
    _check_input(input, "histogram")
    x2 = input.reshape(-1, 1)
    if weight is not None:
        tensor_arg(weight, "histogram", "weight")
        weight = weight.reshape(-1) if tuple(weight.shape) == tuple(input.shape) else weight
    w = _check_weight(x2, weight, (x2.shape[0],))
    edges = _edges(x2, bins, range, "histogram")
    hist = _histdd(x2, edges, w, density)
    r = histogram_result(hist, edges[0].clone() if isinstance(bins, Tensor) else edges[0])
    if out is not None:
        hist_out, edges_out = out
        for o, v in zip((hist_out, edges_out), r):
            if tuple(o.shape) != tuple(v.shape):
                o.resize_(tuple(v.shape))
            o.copy_(v)
        return histogram_result(hist_out, edges_out)
    return r


def histogramdd(input, bins=10, *, range=None, weight=None, density=False):  # noqa: A002
    """torch.histogramdd(input, bins, *, range=None, weight=None, density=False) -> (hist, bin_edges): the
    points are input's innermost dim (D coordinates each), every other dim counts points."""
    _check_input(input, "histogramdd")
    if input.dim() < 2:
        raise RuntimeError("torch.histogramdd: input tensor should have at least 2 dimensions")
    d = input.shape[-1]
    x2 = input.reshape(-1, d)
    w = _check_weight(input, weight, tuple(input.shape[:-1]))
    edges = _edges(x2, bins, range, "histogramdd")
    hist = _histdd(x2, edges, w, density)
    edges = tuple(e.clone() if isinstance(b, Tensor) else e
                  for e, b in zip(edges, bins if isinstance(bins, (list, tuple)) else [bins] * d))
    return histogramdd_result(hist, edges)


FUNCTIONS = ("histogram", "histogramdd")
METHODS = {"histogram": histogram}
