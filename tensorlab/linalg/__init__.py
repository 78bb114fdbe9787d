"""tensorlab.linalg: torch.linalg's names. The factorizations (solve, inv, det, slogdet, cholesky,
qr, svd, svdvals, eigh, eigvalsh and the _ex forms; tensorlab/ops/lapack.py) run on the CPU
through NumPy's LAPACK and raise a RuntimeError on CUDA tensors (move them to the CPU with .cpu()).
The composites (tensorlab/ops/linalg_composites.py, tensor_algebra.py) run on every device, except
where they need a factorization (pinv, lstsq, matrix_rank, cond, the spectral/nuclear norms)."""
from __future__ import annotations

from ..ops.lapack import (LinAlgError, cholesky, cholesky_ex, det, eigh, eigvalsh, inv, inv_ex, qr, solve, solve_ex,
                          svd, svdvals)
from ..ops.lapack import linalg_slogdet_fn as slogdet
from ..ops.linalg import matmul
from ..ops.linalg_composites import (diagonal, lstsq, matrix_norm, matrix_power, matrix_rank, multi_dot, norm, pinv,
                                     solve_triangular, vecdot, vector_norm)
from ..ops.tensor_algebra import cond, matrix_exp
from ..ops.linalg_solves import tensorinv, tensorsolve
from ..ops.tensor_algebra import linalg_cross as cross
from ..ops.tensor_algebra import linalg_vander as vander

__all__ = ("LinAlgError", "cholesky", "cholesky_ex", "cond", "cross", "det", "diagonal", "eigh", "eigvalsh", "inv",
           "inv_ex", "lstsq", "matmul", "matrix_exp", "matrix_norm", "matrix_power", "matrix_rank", "multi_dot", "norm",
           "pinv", "qr", "slogdet", "solve", "solve_ex", "solve_triangular", "svd", "svdvals", "tensorinv", "tensorsolve", "vander",
           "vecdot", "vector_norm")
