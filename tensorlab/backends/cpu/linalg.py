"""CPU linear-algebra primitive: batched matrix multiply over already-broadcast operands."""
from __future__ import annotations

import numpy as np

from ... import _faults
from .memory import array
from .reduction import HALF

__all__ = ("matmul", "lapack")

_F32 = np.dtype(np.float32)


def matmul(out, a, b):
    """out[..., n, m] = a[..., n, k] @ b[..., k, m]. The batch dims of a, b and out are equal
    (broadcast ones have stride 0). float16/bfloat16 multiply and accumulate in float32 and
    round once; integers wrap on overflow as in torch."""
    o = array(out)
    x = array(a)
    y = array(b)
    _faults.hit("launch")
    if x.dtype in HALF:
        x = x.astype(_F32)
        y = y.astype(_F32)
    with np.errstate(all="ignore"):
        if o.dtype == x.dtype:
            np.matmul(x, y, out=o)
        else:
            np.copyto(o, np.matmul(x, y), casting="unsafe")


from .lapack import lapack  # noqa: E402  (dense factorizations: their own file)
