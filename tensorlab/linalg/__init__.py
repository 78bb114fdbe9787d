"""tensorlab.linalg: torch.linalg's names. The factorizations (solve, inv, det, slogdet,
cholesky, qr, svd, svdvals, eigh, eigvalsh) run on the CPU through NumPy's LAPACK and raise a
RuntimeError on CUDA tensors (move them to the CPU with .cpu()); the norms are composites that run
on every device (except the spectral/nuclear matrix norms, which need svdvals). The code lives in
tensorlab/ops/lapack.py."""
from __future__ import annotations

from ..ops.lapack import (LinAlgError, cholesky, cholesky_ex, det, inv_ex, lstsq, solve_ex, diagonal, eigh, eigvalsh, inv, matrix_norm, matrix_power,
                          matrix_rank, multi_dot, norm, pinv, qr, solve, solve_triangular, svd, svdvals, vecdot,
                          vector_norm)
from ..ops.lapack import linalg_slogdet_fn as slogdet
from ..ops.linalg import matmul
from ..ops.tensor_algebra import cond, matrix_exp
from ..ops.tensor_algebra import linalg_cross as cross
from ..ops.tensor_algebra import linalg_vander as vander

__all__ = ("LinAlgError", "lstsq", "matrix_exp", "cholesky", "cholesky_ex", "inv_ex", "solve_ex", "cond", "cross", "det", "vander", "diagonal", "eigh", "eigvalsh", "inv", "matmul", "matrix_norm",
           "matrix_power", "matrix_rank", "multi_dot", "norm", "pinv", "qr", "slogdet", "solve", "solve_triangular",
           "svd", "svdvals", "vecdot", "vector_norm")
