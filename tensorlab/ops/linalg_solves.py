"""Solves written over tl.linalg's factorizations and solve_triangular (CPU LAPACK; on CUDA they
refuse as those do): cholesky_solve, cholesky_inverse, the legacy triangular_solve, and
linalg.tensorinv / linalg.tensorsolve (torch's reshapes around inv and solve)."""
from __future__ import annotations

import math
from collections import namedtuple

from .. import dtypes
from ._composite import tensor_arg, tl, to_outs


_tl = tl
_tensor = tensor_arg


def cholesky_solve(input, input2, upper=False, *, out=None):
    """X with A X = input, A = L L^T (upper=False: input2 is L) or U^T U (upper=True: input2 is U)."""
    tl = _tl()
    _tensor(input, "cholesky_solve")
    _tensor(input2, "cholesky_solve", "input2", 2)
    if input.dim() < 2 or input2.dim() < 2:
        raise RuntimeError(f"b should have at least 2 dimensions, but has {input.dim()} dimensions instead"
                           if input.dim() < 2 else
                           f"u should have at least 2 dimensions, but has {input2.dim()} dimensions instead")
    if input.dtype is not input2.dtype:
        raise RuntimeError(f"Expected b and A to have the same dtype, but found b of type {input.dtype.torch_name} "
                           f"and A of type {input2.dtype.torch_name} instead.")
    f = input2
    from ..autograd.grad_mode import is_grad_enabled
    if (input.device == input2.device and input.dtype.is_floating_point and input2.shape[-1] == input2.shape[-2]
            and input2.shape[-1] == input.shape[-2] and input.dtype not in (dtypes.float16, dtypes.bfloat16)
            and not (is_grad_enabled() and (input.requires_grad or input2.requires_grad))):
        # no gradient: LAPACK's / cuSOLVER's potrs on the (broadcast) factor
        from ..layout import broadcast_shapes
        from .lapack import _run
        n = input2.shape[-1]
        batch = tuple(broadcast_shapes(tuple(input.shape[:-2]), tuple(input2.shape[:-2])))
        Bb = input.expand(batch + tuple(input.shape[-2:]))
        (r,), _ = _run("potrs", "cholesky_solve", [input2.expand(batch + (n, n)).detach(), Bb.detach()],
                       [(Bb.shape, input.dtype)], upper=bool(upper))
        if out is not None:
            out.resize_(r.shape)
            return out.copy_(r)
        return r
    if upper:
        y = tl.linalg.solve_triangular(f.mT, input, upper=False)
        r = tl.linalg.solve_triangular(f, y, upper=True)
    else:
        y = tl.linalg.solve_triangular(f, input, upper=False)
        r = tl.linalg.solve_triangular(f.mT, y, upper=True)
    if out is not None:
        out.resize_(r.shape)
        return out.copy_(r)
    return r


def cholesky_inverse(input, upper=False, *, out=None):
    tl = _tl()
    _tensor(input, "cholesky_inverse")
    if input.dim() < 2:
        raise RuntimeError(f"cholesky_inverse: The input tensor A must have at least 2 dimensions.")
    n = input.shape[-1]
    eye = tl.eye(n, dtype=input.dtype, device=input.device).expand(input.shape)
    return cholesky_solve(eye, input, upper, out=out)


triangular_solve_result = namedtuple("triangular_solve", ("solution", "cloned_coefficient"))


def triangular_solve(input, A, upper=True, transpose=False, unitriangular=False, *, out=None):
    """The legacy torch.triangular_solve: (solution of op(A) X = b, a copy of A)."""
    tl = _tl()
    _tensor(input, "triangular_solve", "input")
    _tensor(A, "triangular_solve", "A", 2)
    a = A.mT if transpose else A
    x = tl.linalg.solve_triangular(a, input, upper=upper != transpose, unitriangular=unitriangular)
    return to_outs(triangular_solve_result(x, A.clone()), out)


def tensorinv(A, ind=2, *, out=None):
    tl = _tl()
    _tensor(A, "linalg.tensorinv", "A")
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    rows, cols = A.shape[:ind], A.shape[ind:]
    pr, pc = math.prod(rows), math.prod(cols)
    if pr != pc:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[ind:]) == "
                           f"prod(self.shape[:ind]), but got {pc} != {pr}")
    r = tl.linalg.inv(A.reshape(pr, pc)).reshape(tuple(cols) + tuple(rows))
    if out is not None:
        out.resize_(r.shape)
        return out.copy_(r)
    return r


def tensorsolve(A, B, dims=None, *, out=None):
    tl = _tl()
    _tensor(A, "linalg.tensorsolve", "A")
    _tensor(B, "linalg.tensorsolve", "B", 2)
    if dims is not None:
        nd = A.dim()
        dims = [d % nd for d in dims]
        A = A.movedim(dims, list(range(nd - len(dims), nd)))
    rest = A.shape[B.dim():]
    n = math.prod(B.shape)
    m = math.prod(rest)
    if n != m:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[other.ndim:]) == "
                           f"prod(self.shape[:other.ndim]), but got {m} != {n}")
    r = tl.linalg.solve(A.reshape(n, m), B.reshape(n)).reshape(rest)
    if out is not None:
        out.resize_(r.shape)
        return out.copy_(r)
    return r


FUNCTIONS = ("cholesky_solve", "cholesky_inverse", "triangular_solve")
METHODS = {"cholesky_solve": cholesky_solve, "cholesky_inverse": cholesky_inverse,
           "triangular_solve": triangular_solve}
