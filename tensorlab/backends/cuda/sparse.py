"""CUDA sparse primitive (the name of backends/cpu/sparse.py): the CSR-times-dense product through
cuSPARSE's SpMM (driver.csrmm: CuPy's cupyx.scipy.sparse on a GPU, a SciPy stand-in that checks its
arguments in the emulation), on the current stream. The front end passes contiguous operands."""
from __future__ import annotations

from . import launch as K
from .active import driver
from .driver import Pointer

__all__ = ("sparse_csr_mm",)


def _ptr(op):
    return Pointer(op.buffer, op.layout.offset * op.dtype.itemsize)


def sparse_csr_mm(out, crow, col, values, dense):
    o, r, c, v, b = (K.operand(t) for t in (out, crow, col, values, dense))
    m, n = (int(s) for s in o.layout.shape)
    k = int(b.layout.shape[0])
    if m == 0 or n == 0:
        return
    if K._fault_plans:
        K._faults.hit("launch")
    device = o.buffer.device
    driver.csrmm(m, n, k, int(v.layout.shape[0]), _ptr(r), _ptr(c), r.dtype.name, _ptr(v), _ptr(b), _ptr(o),
                 o.dtype.name, driver.current_stream(device))
