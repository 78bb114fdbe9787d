"""Composites that repeat, lay out or pick along dims: repeat, tile, repeat_interleave, meshgrid,
diag, diag_embed, trace, take_along_dim. Written once over views, expand/reshape, index_select,
gather and cumsum, so they run on every device and get their gradients from those ops."""
from __future__ import annotations

from .. import _warn, dtypes, layout as L
from ..tensor import Tensor, contiguous_format
from . import creation
from ._common import sizes_or_keyword
from ._composite import wrap_negative


def _tensor(x, op, name="input", pos=1):
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument '{name}' (position {pos}) must be Tensor, not {type(x).__name__}")
    return x


def _wrap(d, n, op):
    m = max(n, 1)
    if not -m <= d < m:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-m}, {m - 1}], but got {d})")
    return d + m if d < 0 else d


def _to_out(r, out):
    """r, or r copied into out (resized to r's shape) when an out= tensor is given."""
    if out is None:
        return r
    from .copy import copy_
    out.resize_(r.shape)
    copy_(out, r)
    return out


def _int_sizes(sizes, op):
    if len(sizes) == 1 and isinstance(sizes[0], (tuple, list, L.Size)):
        sizes = tuple(sizes[0])
    out = []
    for s in sizes:
        if isinstance(s, Tensor):
            s = s.item()
        if isinstance(s, bool) or not isinstance(s, int):
            raise TypeError(f"{op}(): argument 'repeats' must be tuple of ints, but found element of type "
                            f"{type(s).__name__}")
        out.append(int(s))
    return tuple(out)


def _repeat(x, reps, op):
    shape = (1,) * (len(reps) - x.dim()) + tuple(x.shape)
    if any(r < 0 for r in reps):
        sizes = [r * s for r, s in zip(reps, shape)]
        neg = next(s for s in sizes if s < 0) if any(s < 0 for s in sizes) else min(reps)
        raise RuntimeError(f"Trying to create tensor with negative dimension {neg}: {sizes}")
    x = x.reshape(shape)
    # (r0, s0, r1, s1, ...) as a broadcast view, then one copy into the repeated shape
    inter, expanded = [], []
    for r, s in zip(reps, shape):
        inter += [1, s]
        expanded += [r, s]
    out_shape = tuple(r * s for r, s in zip(reps, shape))
    # always a new tensor, as torch's: with every repeated dim of size 1 (or new) the expand and the
    # reshape are views, and the result used to alias the input (an in-place op on it wrote x)
    return x.reshape(inter).expand(expanded).clone(memory_format=contiguous_format).reshape(out_shape)


def repeat(self, *sizes, repeats=None):
    """Tensor.repeat(*sizes): the tensor tiled sizes[i] times along dim i (leading dims added)."""
    if repeats is not None:
        sizes = sizes_or_keyword(sizes, repeats, "repeat", "repeats")
    _tensor(self, "repeat", "self")
    reps = _int_sizes(sizes, "repeat")
    if len(reps) < self.dim():
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number of dimensions of "
                           "tensor")
    return _repeat(self, reps, "repeat")


def tile(input, dims):
    """torch.tile: repeat, with `dims` padded by leading ones when shorter than input.dim()."""
    _tensor(input, "tile")
    reps = _int_sizes((dims,) if not isinstance(dims, (tuple, list, L.Size)) else (tuple(dims),), "tile")
    reps = (1,) * (input.dim() - len(reps)) + reps
    return _repeat(input, reps, "tile")


def _repeat_index(repeats, output_size, op):
    """arange(len(repeats)) with element i repeated repeats[i] times (int64, repeats' device)."""
    if repeats.dim() != 1:
        raise RuntimeError(f"{op}: repeats must be 0-dim or 1-dim tensor (got {repeats.dim()}-D)")
    if repeats._dtype not in (dtypes.int32, dtypes.int64):
        raise NotImplementedError(f"\"repeat_interleave_cpu\" not implemented for '{repeats._dtype.torch_name}'")
    n = repeats.shape[0]
    dev = repeats.device
    if n == 0:
        return creation.zeros(0, dtype=dtypes.int64, device=dev)
    if output_size is None:
        if bool((repeats < 0).any()):
            raise RuntimeError("repeats can not be negative")
        total = int(repeats.sum().item())
    else:
        total = int(output_size)
        # checked where it costs no device wait (the CPU), as torch: output_size exists to avoid one on CUDA
        if dev.type == "cpu" and int(repeats.sum().item()) != total:
            raise RuntimeError("allocated size does not match required size")
    ends = repeats.to(dtypes.int64).cumsum(0)
    from .combinatorics import searchsorted
    pos = creation.arange(total, device=dev)
    return searchsorted(ends, pos, right=True).clamp(max=n - 1)


def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):
    """torch.repeat_interleave: each element (or slice along `dim`) repeated `repeats` times
    (an int, or one count per slice); dim=None works on the flattened input. Called with only a
    tensor of counts, it returns the indices repeated by those counts."""
    _tensor(input, "repeat_interleave")
    if repeats is None:
        return _repeat_index(input, output_size, "repeat_interleave")
    x = input
    if dim is None:
        x, d = x.reshape(-1), 0
    else:
        d = _wrap(dim, x.dim(), "repeat_interleave")
    if x.dim() == 0:
        x = x.reshape(1)
    if isinstance(repeats, Tensor) and repeats.dim() == 0:
        repeats = int(repeats.item())
    if isinstance(repeats, int) and not isinstance(repeats, bool):
        if repeats < 0:
            raise RuntimeError("Repeats must be non-negative")
        shape = list(x.shape)
        expanded = shape[:d + 1] + [repeats] + shape[d + 1:]
        merged = shape[:d] + [shape[d] * repeats] + shape[d + 1:]
        if output_size is not None and output_size != merged[d]:
            raise RuntimeError(f"repeat_interleave: Invalid output_size, expected {merged[d]} but got {output_size}")
        # a new tensor even where expand and reshape stay views (repeats 1, or a size-1 dim)
        return x.unsqueeze(d + 1).expand(expanded).clone(memory_format=contiguous_format).reshape(merged)
    _tensor(repeats, "repeat_interleave", "repeats", 2)
    if repeats.device != x.device:
        raise RuntimeError(f"repeat_interleave: Expected all tensors to be on the same device, but found at least "
                           f"two devices, {x.device} and {repeats.device}!")
    if repeats.dim() == 1 and repeats.shape[0] != x.shape[d]:
        raise RuntimeError(f"repeats must have the same size as input along dim, but got repeats.size(0) = "
                           f"{repeats.shape[0]} and input.size({d}) = {x.shape[d]}")
    idx = _repeat_index(repeats, output_size, "repeat_interleave")
    return x.index_select(d, idx)


def meshgrid(*tensors, indexing=None):
    """torch.meshgrid: N 1-D (or 0-dim) tensors -> N tensors of their sizes' product shape,
    broadcast views; indexing 'ij' (matrix, the default with torch's warning) or 'xy'
    (Cartesian: the first two dims swapped)."""
    if len(tensors) == 1 and isinstance(tensors[0], (tuple, list)):
        tensors = tuple(tensors[0])
    if indexing is None:
        _warn.warn("torch.meshgrid: in an upcoming release, it will be required to pass the indexing argument.")
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f'torch.meshgrid: indexing must be one of "xy" or "ij", but received: {indexing}')
    if not tensors:
        raise RuntimeError("meshgrid expects a non-empty TensorList")
    for i, t in enumerate(tensors):
        _tensor(t, "meshgrid", "tensors", 1)
        if t.dim() > 1:
            raise RuntimeError(f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: {t.shape}")
        if t.dtype != tensors[0].dtype:
            raise RuntimeError("meshgrid expects all tensors to have the same dtype")
        if t.device != tensors[0].device:
            raise RuntimeError("meshgrid expects all tensors to have the same device")
    ts = list(tensors)
    swap = indexing == "xy" and len(ts) >= 2
    if swap:
        ts[0], ts[1] = ts[1], ts[0]
    sizes = [t.numel() for t in ts]
    n = len(ts)
    out = []
    for i, t in enumerate(ts):
        view = [1] * n
        view[i] = sizes[i]
        out.append(t.reshape(view).expand(sizes))
    if swap:
        out[0], out[1] = out[1], out[0]
    return tuple(out)


def diag_embed(input, offset=0, dim1=-2, dim2=-1):
    """torch.diag_embed: the last dim of input placed on the `offset` diagonal of new (dim1, dim2)
    planes of zeros."""
    _tensor(input, "diag_embed")
    n = input.dim() + 1
    d1, d2 = _wrap(dim1, n, "diag_embed"), _wrap(dim2, n, "diag_embed")
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    k = input.shape[-1] + abs(offset) if input.dim() else 1 + abs(offset)
    rest = list(input.shape[:-1])
    shape = []
    it = iter(rest)
    for i in range(n):
        shape.append(k if i in (d1, d2) else next(it))
    out = creation.zeros(shape, dtype=input.dtype, device=input.device)
    out.diagonal(offset, d1, d2).copy_(input)
    return out


def diag(input, diagonal=0, *, out=None):
    """torch.diag: a 1-D input becomes a square matrix with it on the `diagonal`-th diagonal; a
    2-D input gives a copy of that diagonal."""
    _tensor(input, "diag")
    if input.dim() == 1:
        r = diag_embed(input, diagonal, 0, 1)
    elif input.dim() == 2:
        r = input.diagonal(diagonal).clone()
    else:
        raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {input.dim()}D")
    if out is not None:
        from .copy import copy_
        out.resize_(r.shape)
        copy_(out, r)
        return out
    return r


def trace(input):
    """torch.trace: sum of a matrix's main diagonal (integers accumulate in int64, as sum)."""
    _tensor(input, "trace")
    if input.dim() != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {input.dim()}")
    if input.dtype is dtypes.bool_:
        raise NotImplementedError("\"trace\" not implemented for 'Bool'")
    return input.diagonal().sum()


def take_along_dim(input, indices, dim=None, *, out=None):
    """torch.take_along_dim: gather with input and indices broadcast against each other except
    along `dim`; dim=None indexes the flattened input."""
    _tensor(input, "take_along_dim")
    _tensor(indices, "take_along_dim", "indices", 2)
    if indices._dtype not in (dtypes.int64, dtypes.int32, dtypes.int16, dtypes.int8, dtypes.uint8):
        raise RuntimeError(f"torch.take_along_dim(): dtype of indices should be int but got "
                           f"{indices._dtype.torch_name} instead")
    indices = indices.to(dtypes.int64)
    if dim is None:
        r = input.reshape(-1).gather(0, wrap_negative(indices.reshape(-1), input.numel()))
    else:
        if input.dim() != indices.dim():
            raise RuntimeError(f"torch.take_along_dim(): input and indices should have the same number of dimensions, "
                               f"but got {input.dim()} dimensions for input, and {indices.dim()} dimensions for indices")
        d = _wrap(dim, input.dim(), "take_along_dim")
        si, sx = list(indices.shape), list(input.shape)
        si[d] = sx[d] = 1
        b = list(L.broadcast_shapes(tuple(sx), tuple(si)))
        bi, bx = list(b), list(b)
        bi[d], bx[d] = indices.shape[d], input.shape[d]
        r = input.expand(bx).gather(d, wrap_negative(indices.expand(bi), input.shape[d]))
    if out is not None:
        from .copy import copy_
        out.resize_(r.shape)
        copy_(out, r)
        return out
    return r


FUNCTIONS = ("tile", "repeat_interleave", "meshgrid", "diag", "diag_embed", "trace", "take_along_dim")
METHODS = {"repeat": repeat, "tile": tile, "repeat_interleave": repeat_interleave, "diag": diag,
           "diag_embed": diag_embed, "trace": trace, "take_along_dim": take_along_dim}
