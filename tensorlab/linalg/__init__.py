"""tensorlab.linalg: torch.linalg's names. The factorizations (solve, inv, det, slogdet, cholesky,
qr, svd, svdvals, eigh, eigvalsh and the _ex forms; tensorlab/ops/lapack.py; eig, eigvals in ops/eig.py; the LU / LDL /
Householder family in ops/lu_family.py) run on the CPU through NumPy's / SciPy's LAPACK and on
CUDA through cuSOLVER (backends/cuda/solver.py). The composites (ops/linalg_composites.py,
tensor_algebra.py) run on every device over them."""
from __future__ import annotations

from ..ops.lapack import (LinAlgError, cholesky, cholesky_ex, det, eigh, eigvalsh, inv, inv_ex, qr, solve, solve_ex,
                          svd, svdvals)
from ..ops.lapack import linalg_slogdet_fn as slogdet
from ..ops.eig import eig, eigvals
from ..ops.linalg import matmul
from ..ops.linalg_composites import (diagonal, lstsq, matrix_norm, matrix_power, matrix_rank, multi_dot, norm, pinv,
                                     solve_triangular, vecdot, vector_norm)
from ..ops.tensor_algebra import cond, matrix_exp
from ..ops.linalg_solves import tensorinv, tensorsolve
from ..ops.lu_family import (householder_product, ldl_factor, ldl_factor_ex, ldl_solve, lu_factor, lu_factor_ex)
from ..ops.lu_family import linalg_lu as lu
from ..ops.lu_family import linalg_lu_solve as lu_solve
from ..ops.tensor_algebra import linalg_cross as cross
from ..ops.tensor_algebra import linalg_vander as vander

__all__ = ("LinAlgError", "cholesky", "cholesky_ex", "cond", "cross", "det", "diagonal", "eig", "eigh", "eigvals", "eigvalsh", "inv",
           "inv_ex", "lstsq", "matmul", "matrix_exp", "matrix_norm", "matrix_power", "matrix_rank", "multi_dot", "norm",
           "pinv", "qr", "slogdet", "solve", "solve_ex", "solve_triangular", "svd", "svdvals", "tensorinv", "tensorsolve", "vander",
           "vecdot", "vector_norm", "householder_product", "ldl_factor", "ldl_factor_ex", "ldl_solve", "lu",
           "lu_factor", "lu_factor_ex", "lu_solve")
