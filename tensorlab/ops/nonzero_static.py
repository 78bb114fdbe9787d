"""torch.nonzero_static: the first `size` nonzero positions of a tensor (row-major order) as a
(size, ndim) int64 tensor, the rows past the nonzero count filled with fill_value. The output shape
is fixed by the arguments, so nothing waits for the device: each nonzero element's rank (an
exclusive cumsum of the nonzero flags) is its output row, and one index_put writes the multi-index
rows, the elements ranked past `size` (and the zeros) going to an overflow row that is dropped."""
from __future__ import annotations

import numbers

from .. import dtypes
from ._composite import tensor_arg, tl, to_out


def nonzero_static(input, *, size, fill_value=-1, out=None):
    """torch.nonzero_static(input, *, size, fill_value=-1) -> (size, input.dim()) int64."""
    return to_out(_nonzero_static(input, size, fill_value), out, "nonzero_static")


def _nonzero_static(input, size, fill_value):
    t = tl()
    tensor_arg(input, "nonzero_static")
    if isinstance(size, bool) or not isinstance(size, numbers.Integral) or size < 0:
        raise RuntimeError(f"nonzero_static: 'size' must be an non-negative integer (got {size!r})")
    if isinstance(fill_value, bool) or not isinstance(fill_value, numbers.Integral):
        raise TypeError(f"nonzero_static(): argument 'fill_value' must be int, not {type(fill_value).__name__}")
    nd = input.dim()
    dev = input.device
    out = t.full((size + 1, nd), int(fill_value), dtype=dtypes.int64, device=dev)
    n = input.numel()
    if nd == 0 or n == 0 or size == 0:
        return out[:size].clone()
    flag = (input.detach() != 0).reshape(n)
    rank = flag.to(dtypes.int64).cumsum(0) - 1
    row = t.where(flag & (rank < size), rank, size)
    pos = t.arange(n, device=dev)
    coords = []
    for s in reversed(tuple(input.shape)):
        coords.append(pos % s)
        pos = pos // s
    multi = t.stack(coords[::-1], 1)
    out.index_put_((row,), multi)
    return out[:size].clone()


FUNCTIONS = ("nonzero_static",)
METHODS = {"nonzero_static": nonzero_static}
