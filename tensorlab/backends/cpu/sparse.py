"""CPU sparse primitive: the CSR-times-dense product through SciPy's sparse kernels (scipy.sparse.csr_matrix
@ dense), imported on first use. The CUDA backend has the same name over cuSPARSE (backends/cuda/sparse.py)."""
from __future__ import annotations

import numpy as np

from ... import _faults
from .memory import array

__all__ = ("sparse_csr_mm",)


def sparse_csr_mm(out, crow, col, values, dense):
    """out (m, n) = A @ dense, A the (m, k) CSR matrix (crow (m + 1,), col (nnz,), values (nnz,)); dense (k, n).
    Duplicate entries add up."""
    _faults.hit("launch")
    import scipy.sparse
    o = array(out)
    m, n = o.shape
    b = array(dense)
    k = b.shape[0]
    v = array(values)
    if m == 0 or n == 0:
        return
    if v.shape[0] == 0 or k == 0:
        o[...] = 0
        return
    a = scipy.sparse.csr_matrix((v, array(col), array(crow)), shape=(m, k))
    o[...] = np.asarray(a @ b, dtype=o.dtype)
