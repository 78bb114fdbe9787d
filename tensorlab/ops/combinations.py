"""torch.combinations: the length-r combinations (with_replacement: with repetition) of a 1-D
tensor's elements, as rows in lexicographic order of their positions. The position table depends
only on (n, r), so it is built on the host (no device data read, no wait) and the rows are one
index_select of the input: any dtype, any device, and index_select's gradient."""
from __future__ import annotations

import itertools
import numbers

from .. import dtypes
from ._composite import tensor_arg, tl


def combinations(input, r=2, with_replacement=False):
    """torch.combinations(input, r=2, with_replacement=False) -> (count, r) tensor ((0,) for r == 0)."""
    t = tl()
    tensor_arg(input, "combinations")
    if isinstance(r, bool) or not isinstance(r, numbers.Integral):
        raise TypeError(f"combinations(): argument 'r' must be int, not {type(r).__name__}")
    if input.dim() != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(input.shape)}")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return t.empty((0,), dtype=input.dtype, device=input.device)
    n = input.shape[0]
    gen = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    rows = [i for combo in gen(range(n), r) for i in combo]
    idx = t.tensor(rows, dtype=dtypes.int64, device=input.device)
    return input.index_select(0, idx).reshape(len(rows) // r, r)


FUNCTIONS = ("combinations",)
