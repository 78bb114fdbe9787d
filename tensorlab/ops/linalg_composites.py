"""torch.linalg functions written over the factorizations (lapack.py) and matmul: vector_norm,
matrix_norm, norm (the spectral and nuclear matrix norms need svdvals: CPU), matrix_power,
multi_dot, vecdot, pinv, matrix_rank, solve_triangular, lstsq, diagonal. Composites: their
gradients come from the ops they use."""
from __future__ import annotations

import math

from .. import dtypes
from ..tensor import Tensor
from . import creation
from .lapack import _check, _named, _out, eigh, eigvalsh, inv, solve, svd, svdvals

linalg_lstsq = _named("linalg_lstsq", ("solution", "residuals", "rank", "singular_values"))


# -- norms -----------------------------------------------------------------------------------------
def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None, out=None):  # noqa: A002
    """torch.linalg.vector_norm: the ord-norm of x's elements over `dim` (all dims when None)."""
    if not isinstance(x, Tensor):
        raise TypeError(f"linalg_vector_norm(): argument 'x' (position 1) must be Tensor, not {type(x).__name__}")
    if isinstance(ord, str):
        raise TypeError("linalg_vector_norm(): argument 'ord' (position 2) must be Number, not str")
    if dtype is not None:
        x = x.to(dtype)
    from .reduction import norm
    return norm(x, ord, dim, keepdim, out=out)


def _mdims(A, dim, name):
    if not isinstance(dim, (tuple, list)) or len(dim) != 2:
        raise RuntimeError(f"{name}: dim must be a 2-tuple. Got {dim}")
    nd = A.dim()
    d0, d1 = (d + nd if d < 0 else d for d in dim)
    if d0 == d1:
        raise RuntimeError(f"{name}: dims must be different. Got ({dim[0]}, {dim[1]})")
    return d0, d1


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None, out=None):  # noqa: A002
    """torch.linalg.matrix_norm: 'fro', 'nuc', inf, -inf, 1, -1, 2, -2 over the two dims `dim`."""
    name = "linalg.matrix_norm"
    if not isinstance(A, Tensor):
        raise TypeError(f"linalg_matrix_norm(): argument 'A' (position 1) must be Tensor, not {type(A).__name__}")
    if A.dim() < 2:
        raise RuntimeError(f"{name}: The input tensor A must have at least 2 dimensions.")
    if not A.dtype.is_floating_point:
        raise RuntimeError(f"{name}: Expected a floating point or complex tensor as input. Got {A.dtype.torch_name}")
    if dtype is not None:
        A = A.to(dtype)
    d0, d1 = _mdims(A, dim, name)
    if isinstance(ord, str):
        if ord == "fro":
            return vector_norm(A, 2, (d0, d1), keepdim, out=out)
        if ord != "nuc":
            raise RuntimeError(f"{name}: Order {ord} not supported.")
        r = _svals(A, d0, d1, name).sum(-1)
    else:
        o = float(ord)
        if o in (1.0, -1.0, math.inf, -math.inf):
            # 1: max column sum (sum over rows d0, then the extreme over d1); inf: max row sum
            sum_dim, ext_dim = (d0, d1) if abs(o) == 1 else (d1, d0)
            s = A.abs().sum(sum_dim, keepdim=True)
            if o > 0 and s.shape[ext_dim] == 0:  # the largest of no sums: 0, as torch's (the smallest raises)
                r = s.sum(ext_dim, keepdim=True)
            else:
                r = s.amax(ext_dim, keepdim=True) if o > 0 else s.amin(ext_dim, keepdim=True)
            if not keepdim:
                r = r.squeeze(max(d0, d1)).squeeze(min(d0, d1))
            return _out(r, out)
        if o not in (2.0, -2.0):
            raise RuntimeError(f"{name}: Order {ord} not supported.")
        sv = _svals(A, d0, d1, name)
        r = sv.sum(-1) if o > 0 and sv.shape[-1] == 0 else sv.amax(-1) if o > 0 else sv.amin(-1)
    if keepdim:
        r = r.unsqueeze(min(d0, d1)).unsqueeze(max(d0, d1))
    return _out(r, out)


def _svals(A, d0, d1, name):
    return svdvals(A.movedim((d0, d1), (-2, -1)))


def norm(A, ord=None, dim=None, keepdim=False, *, dtype=None, out=None):  # noqa: A002
    """torch.linalg.norm: a vector norm (1-D, or an int / 1-tuple dim) or a matrix norm (2-D, or a
    2-tuple dim); ord=None is the 2-norm of the flattened input when dim is None."""
    if not isinstance(A, Tensor):
        raise TypeError(f"linalg_norm(): argument 'A' (position 1) must be Tensor, not {type(A).__name__}")
    if isinstance(dim, int):
        dim = (dim,)
    if dim is not None and len(dim) not in (1, 2):
        raise RuntimeError(f"linalg.norm: If dim is specified, it must be of length 1 or 2. Got {list(dim)}")
    if dim is None and ord is not None and A.dim() not in (1, 2):
        raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. Got "
                           f"{A.dim()}D.")
    if ord is None:
        return vector_norm(A, 2, dim, keepdim, dtype=dtype, out=out)
    if dim is None:
        dim = tuple(range(A.dim()))
    if len(dim) == 2:
        return matrix_norm(A, ord, dim, keepdim, dtype=dtype, out=out)
    if isinstance(ord, str):
        raise RuntimeError(f"linalg.norm: Order {ord} not supported for vector norms (use a 2-D dim)")
    return vector_norm(A, ord, dim, keepdim, dtype=dtype, out=out)


# -- composites over the above and matmul ---------------------------------------------------------
def matrix_power(A, n, *, out=None):
    """torch.linalg.matrix_power: A^n by repeated squaring (any device for n >= 0; n < 0 inverts,
    CPU only); n = 0 gives identities of A's dtype."""
    if not isinstance(A, Tensor):
        raise TypeError(f"linalg_matrix_power(): argument 'A' (position 1) must be Tensor, not {type(A).__name__}")
    if A.dim() < 2:
        raise RuntimeError("linalg.matrix_power: The input tensor A must have at least 2 dimensions.")
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"linalg.matrix_power: A must be batches of square matrices, but they are {A.shape[-2]} by "
                           f"{A.shape[-1]} matrices")
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"linalg_matrix_power(): argument 'n' (position 2) must be int, not {type(n).__name__}")
    if n == 0:
        eye = creation.eye(A.shape[-1], dtype=A.dtype, device=A.device)
        return _out(eye.expand(A.shape).clone() + A * 0 if A.requires_grad else eye.expand(A.shape).clone(), out)
    base = inv(A) if n < 0 else A
    n = abs(n)
    result = None
    while n:
        if n & 1:
            result = base if result is None else result @ base
        n >>= 1
        if n:
            base = base @ base
    return _out(result, out)


def multi_dot(tensors, *, out=None):
    """torch.linalg.multi_dot: the product of a chain of matrices (the first may be a 1-D row
    vector, the last a 1-D column vector), multiplied left to right."""
    ts = list(tensors)
    if len(ts) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(ts)}")
    for i, t in enumerate(ts):
        if not isinstance(t, Tensor):
            raise TypeError(f"linalg_multi_dot(): argument 'tensors' must be tuple of Tensors, but found element of "
                            f"type {type(t).__name__} at pos {i}")
    if ts[0].dim() not in (1, 2):
        raise RuntimeError(f"multi_dot(): the first tensor must be 1D or 2D but got {ts[0].dim()}D")
    if ts[-1].dim() not in (1, 2):
        raise RuntimeError(f"multi_dot(): the last tensor must be 1D or 2D but got {ts[-1].dim()}D")
    for i, t in enumerate(ts[1:-1], 1):
        if t.dim() != 2:
            raise RuntimeError(f"multi_dot(): tensor {i} must be 2D but got {t.dim()}D")
    for i, t in enumerate(ts[1:], 1):
        if t.dtype is not ts[0].dtype:
            raise RuntimeError(f"multi_dot(): all tensors must have be the same dtype but tensor 0 is "
                               f"{ts[0].dtype.torch_name} and tensor {i} {t.dtype.torch_name}")
    first = ts[0].unsqueeze(0) if ts[0].dim() == 1 else ts[0]
    last = ts[-1].unsqueeze(-1) if ts[-1].dim() == 1 else ts[-1]
    chain = [first] + ts[1:-1] + [last]
    for i in range(len(chain) - 1):
        if chain[i].shape[-1] != chain[i + 1].shape[0]:
            raise RuntimeError(f"multi_dot(): tensors {i} and {i + 1} with shapes {list(ts[i].shape)} and "
                               f"{list(ts[i + 1].shape)} cannot be multiplied")
    r = chain[0]
    for t in chain[1:]:
        r = r.mm(t)
    if ts[0].dim() == 1:
        r = r.squeeze(0)
    if ts[-1].dim() == 1:
        r = r.squeeze(-1)
    return _out(r, out)


def vecdot(x, y, *, dim=-1, out=None):
    """torch.linalg.vecdot: the dot product of x and y (broadcast) along `dim`."""
    for t, name, pos in ((x, "x", 1), (y, "y", 2)):
        if not isinstance(t, Tensor):
            raise TypeError(f"linalg_vecdot(): argument '{name}' (position {pos}) must be Tensor, not "
                            f"{type(t).__name__}")
    if x.dtype is not y.dtype:
        raise RuntimeError(f"linalg.vecdot: Expected x and y to have the same dtype, but found x of type "
                           f"{x.dtype.torch_name} and y of type {y.dtype.torch_name} instead")
    return _out((x * y).sum(dim), out)


def _tolerance(S, A, atol, rtol):
    """torch's cutoff for pinv / matrix_rank: max(atol, rtol * largest singular value), with
    rtol = eps * max(m, n) when neither is given."""
    if isinstance(atol, Tensor):
        atol = atol.unsqueeze(-1)
    if isinstance(rtol, Tensor):
        rtol = rtol.unsqueeze(-1)
    if rtol is None:
        rtol = 0.0 if atol is not None and not (isinstance(atol, (int, float)) and atol == 0) else \
            dtypes.finfo(A.dtype).eps * max(A.shape[-2], A.shape[-1])
    smax = S.amax(-1, keepdim=True) if S.shape[-1] else S.sum(-1, keepdim=True)
    tol = smax * rtol
    if atol is not None:
        from .elementwise import maximum
        tol = maximum(tol, atol if isinstance(atol, Tensor) else creation.full((), float(atol), dtype=S.dtype,
                                                                                 device=S.device))
    return tol


def pinv(A, *, atol=None, rtol=None, hermitian=False, out=None):
    """torch.linalg.pinv: the Moore-Penrose pseudo-inverse from the SVD (eigh when hermitian),
    singular values at or below the tolerance dropped."""
    _check(A, "linalg.pinv", square=False)
    if hermitian:
        w, v = eigh(A)
        tol = _tolerance(w.abs(), A, atol, rtol)
        from .elementwise import where
        winv = where(w.abs() > tol, 1.0 / w, 0.0)
        return _out((v * winv.unsqueeze(-2)) @ v.mT, out)
    U, S, Vh = svd(A, full_matrices=False)
    tol = _tolerance(S, A, atol, rtol)
    from .elementwise import where
    sinv = where(S > tol, 1.0 / S, 0.0)
    return _out((Vh.mT * sinv.unsqueeze(-2)) @ U.mT, out)


def matrix_rank(A, *, atol=None, rtol=None, hermitian=False, out=None):
    """torch.linalg.matrix_rank: the number of singular values above the tolerance (int64)."""
    _check(A, "linalg.matrix_rank", square=False)
    S = eigvalsh(A).abs() if hermitian else svdvals(A)
    tol = _tolerance(S, A, atol, rtol)
    return _out((S > tol).sum(-1), out)


def solve_triangular(A, B, *, upper, left=True, unitriangular=False, out=None):
    """torch.linalg.solve_triangular: X with A X = B (X A = B with left=False) for triangular A,
    reading only A's `upper` (or lower) triangle; unitriangular takes its diagonal as ones."""
    name = "linalg.solve_triangular"
    _check(A, name)
    if not isinstance(B, Tensor):
        raise TypeError(f"linalg_solve_triangular(): argument 'B' (position 2) must be Tensor, not {type(B).__name__}")
    if B.dim() < 2:
        raise RuntimeError(f"{name}: The input tensor B must have at least 2 dimensions.")
    n = A.shape[-1]
    if (B.shape[-2] if left else B.shape[-1]) != n:
        raise RuntimeError(f"{name}: Incompatible shapes of A and B for the equation {'AX = B' if left else 'XA = B'} "
                           f"({A.shape[-2]}x{A.shape[-1]} and {B.shape[-2]}x{B.shape[-1]})")
    from ..autograd.grad_mode import is_grad_enabled
    if (A.dtype is B.dtype and A.device == B.device and not (is_grad_enabled() and (A.requires_grad or B.requires_grad))):
        # no gradient: LAPACK's / cuBLAS's trsm, reading only the `upper` (or lower) triangle
        from ..layout import broadcast_shapes
        from .lapack import _run
        batch = tuple(broadcast_shapes(tuple(A.shape[:-2]), tuple(B.shape[:-2])))
        Bb = B.expand(batch + tuple(B.shape[-2:]))
        (X,), _ = _run("trsm", name, [A.expand(batch + (n, n)).detach(), Bb.detach()], [(Bb.shape, B.dtype)],
                       upper=bool(upper), left=bool(left), unitriangular=bool(unitriangular))
        return _out(X, out)
    T = A.triu() if upper else A.tril()
    if unitriangular:
        T = T - T.diagonal(0, -2, -1).diag_embed() + creation.eye(n, dtype=A.dtype, device=A.device)
    return solve(T, B, left=left, out=out)


_LSTSQ_DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


def lstsq(A, B, rcond=None, *, driver=None):
    """torch.linalg.lstsq: the minimum-norm least-squares solution of A X = B, from the SVD
    (pinv(A) B, singular values at or below rcond * the largest dropped; rcond defaults to
    eps * max(m, n)). What else it returns follows torch's CPU drivers: rank for all but 'gels',
    singular values for 'gelsd'/'gelss', residuals for all but 'gelsy' when m > n and every
    matrix has full rank (else empty tensors). Gradients flow through pinv."""
    name = "torch.linalg.lstsq"
    _check(A, "linalg.lstsq", square=False)
    if not isinstance(B, Tensor):
        raise TypeError(f"linalg_lstsq(): argument 'b' (position 2) must be Tensor, not {type(B).__name__}")
    drv = "gelsy" if driver is None else driver
    if drv not in _LSTSQ_DRIVERS:
        raise RuntimeError(f"{name}: parameter `driver` should be one of (gels, gelsy, gelsd, gelss)")
    if A.dtype is not B.dtype:
        raise RuntimeError(f"{name}: Expected input and other to have the same dtype, but got input's dtype "
                           f"{A.dtype.torch_name} and other's dtype {B.dtype.torch_name}")
    vector = B.dim() == 1 or (B.dim() == A.dim() - 1 and tuple(B.shape) == tuple(A.shape[:-1]))
    Bm = B.unsqueeze(-1) if vector else B
    if Bm.dim() < 2:
        raise RuntimeError(f"{name}: input must have at least 2 dimensions.")
    m, n = A.shape[-2:]
    if Bm.shape[-2] != m:
        raise RuntimeError(f"{name}: input.size(-2) should match other.size(-2)")
    eps = dtypes.finfo(A.dtype).eps * max(m, n)
    r = eps if rcond is None or rcond < 0 else float(rcond)
    U, S, Vh = svd(A, full_matrices=False)
    smax = S.amax(-1, keepdim=True) if S.shape[-1] else S.sum(-1, keepdim=True)
    from .elementwise import where
    sinv = where(S > smax * r, 1.0 / S, 0.0)
    X = (Vh.mT * sinv.unsqueeze(-2)) @ (U.mT @ Bm)
    dev = A.device
    empty_f = creation.zeros(0, dtype=A.dtype, device=dev)
    rank = (S.detach() > smax.detach() * r).sum(-1) if drv != "gels" else creation.zeros(0, dtype=dtypes.int64,
                                                                                         device=dev)
    svals = S if drv in ("gelsd", "gelss") else empty_f
    residuals = empty_f
    if drv != "gelsy" and m > n:
        full = drv == "gels" or bool((rank == n).all().item())
        if full:
            residuals = (A @ X - Bm).pow(2).sum(-2)  # (..., k); k = 1 for a vector B, as torch
    if vector:
        X = X.squeeze(-1)
    return linalg_lstsq(X, residuals, rank, svals)


def diagonal(A, *, offset=0, dim1=-2, dim2=-1):
    """torch.linalg.diagonal: torch.diagonal with matrix-first defaults."""
    return A.diagonal(offset, dim1, dim2)
