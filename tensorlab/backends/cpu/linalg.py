"""CPU linear-algebra primitive: batched matrix multiply over already-broadcast operands."""
from __future__ import annotations

import numpy as np

from ... import _faults
from . import parallel as _par
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
        if o.ndim > 2 and o.size >= _par.elem_min and _batched(o, x, y):
            return
        if o.dtype == x.dtype:
            np.matmul(x, y, out=o)
        else:
            np.copyto(o, np.matmul(x, y), casting="unsafe")


_BLAS_ALONE = 1 << 21  # multiply-adds of one matrix product from which BLAS's own threads take over


def _batched(o, x, y):
    """A stack of small products (attention's heads): blocks of one batch dim on the CPU pool,
    each block one np.matmul (the same per-matrix BLAS calls as the whole stack). Large
    matrices are left to BLAS, which threads each product itself. True when done."""
    n, k, m = x.shape[-2], x.shape[-1], y.shape[-1]
    threads = _par.get_num_threads()
    ax = next((d for d in range(o.ndim - 2) if o.shape[d] >= 2), None)
    if n * k * m >= _BLAS_ALONE or ax is None or threads < 2:
        return False
    per = max(1, -(-o.shape[ax] // (4 * threads)))
    pieces = _par.split_ranges(o.shape[ax], per)
    same = o.dtype == x.dtype

    def task(i):
        sl = (slice(None),) * ax + (slice(*pieces[i]),)
        if same:
            np.matmul(x[sl], y[sl], out=o[sl])
        else:
            np.copyto(o[sl], np.matmul(x[sl], y[sl]), casting="unsafe")
    _par.run(len(pieces), task)
    return True


from .lapack import lapack  # noqa: E402  (dense factorizations: their own file)
