"""torch's LU / LDL / Householder family: linalg.lu_factor(_ex), linalg.lu, lu_unpack,
linalg.lu_solve (and the legacy torch.lu / torch.lu_solve), linalg.ldl_factor(_ex),
linalg.ldl_solve, linalg.householder_product (torch.orgqr), geqrf, ormqr, and the randomized
svd_lowrank / pca_lowrank (torch/_lowrank.py's algorithms), over the `lapack` primitive
(getrf, getrs, sytrf, sytrs, geqrf, orgqr, ormqr: SciPy's LAPACK on the CPU, cuSOLVER on CUDA;
ldl_solve on CUDA runs sytrs's steps as tensor ops, CuPy having no binding for cuSOLVER's sytrs).

Pivots follow torch: 1-based int32, LAPACK's sequential row interchanges. Gradients: lu_factor
(and lu through it) is an autograd Function with torch's linalg_lu_backward; lu_solve,
householder_product and ormqr run the primitive when no gradient is needed and otherwise an
equivalent composite of differentiable ops (triangular solves; the reflectors applied one by
one), whose derivative is torch's; geqrf and the LDL functions have none, as in torch."""
from __future__ import annotations

from collections import namedtuple

from .. import dtypes
from ..tensor import Tensor
from . import creation
from .lapack import LinAlgError, _check, _info, _out, _run, _host_info, _batch_prefix


def _named(name, fields):
    cls = namedtuple(name, fields)
    cls.__module__ = "tensorlab.return_types"
    cls.__qualname__ = name
    return cls


_T_linalg_lu_factor = _named("linalg_lu_factor", ("LU", "pivots"))
_T_linalg_lu_factor_ex = _named("linalg_lu_factor_ex", ("LU", "pivots", "info"))
_T_linalg_lu = _named("linalg_lu", ("P", "L", "U"))
_T_lu_unpack_t = _named("lu_unpack", ("P", "L", "U"))
_T_linalg_ldl_factor = _named("linalg_ldl_factor", ("LD", "pivots"))
_T_linalg_ldl_factor_ex = _named("linalg_ldl_factor_ex", ("LD", "pivots", "info"))
_T_geqrf_t = _named("geqrf", ("a", "tau"))


def _tensor(x, fn, arg, pos):
    if not isinstance(x, Tensor):
        raise TypeError(f"{fn}(): argument '{arg}' (position {pos}) must be Tensor, not {type(x).__name__}")
    return x


# -- LU ---------------------------------------------------------------------------------------------
_LU = None


def _lu_function():
    global _LU
    if _LU is not None:
        return _LU
    from ..autograd.function import Function

    class LinalgLuFactor(Function):
        @staticmethod
        def forward(ctx, A, pivot):
            m, n = A.shape[-2:]
            k = min(m, n)
            b = tuple(A.shape[:-2])
            (lu, piv), info = _run("lu_factor", "linalg.lu_factor", [A], [(A.shape, A.dtype), (b + (k,), dtypes.int32)],
                                   pivot=pivot)
            if not pivot:
                piv.copy_(creation.arange(1, k + 1, dtype=dtypes.int32, device=A.device).expand(b + (k,)))
            info = _info(info, A)
            ctx.mark_non_differentiable(piv, info)
            ctx.pivot = pivot
            ctx.save_for_backward(lu, piv)
            return lu, piv, info

        @staticmethod
        def backward(ctx, g, _gp, _gi):
            lu, piv = ctx.saved_tensors
            m, n = lu.shape[-2:]
            k = min(m, n)
            P, L, U = lu_unpack(lu, piv)
            return _lu_backward(g[..., :, :k].tril(-1), g[..., :k, :].triu(), P, L, U, ctx.pivot), None

    _LU = LinalgLuFactor
    return _LU


def _lu_backward(gL, gU, P, L, U, pivot):
    """torch's linalg_lu_backward (real case), for square, wide and tall A."""
    from .linalg_composites import solve_triangular
    from .shape import cat
    m, n = L.shape[-2], U.shape[-1]
    k = min(m, n)
    if m == n:
        gA = (L.mT @ gL).tril(-1) + (gU @ U.mT).triu()
        gA = solve_triangular(U.mT, gA, upper=False, left=False)
        gA = solve_triangular(L.mT, gA, upper=True, unitriangular=True)
        return P @ gA if pivot else gA
    if m < n:
        U1, gU1, gU2 = U[..., :, :k], gU[..., :, :k], gU[..., :, k:]
        gA = L.mT @ gL - gU.triu() @ U.mT
        gA = solve_triangular(U1.mT, gA.tril(-1), upper=False, left=False)
        gA = cat([gA + gU1.triu(), gU2], -1)
        gA = solve_triangular(L.mT, gA, upper=True, unitriangular=True)
        return P @ gA if pivot else gA
    L1, gL1, gL2 = L[..., :k, :], gL[..., :k, :], gL[..., k:, :]
    gA = gU @ U.mT - L.mT @ gL.tril(-1)
    gA = solve_triangular(L1.mT, gA.triu(), upper=True, unitriangular=True)
    gA = cat([gA + gL1.tril(-1), gL2], -2)
    gA = solve_triangular(U.mT, gA, upper=False, left=False)
    return P @ gA if pivot else gA


def _check_lu_input(A, name):
    _tensor(A, name.replace("torch.", "").replace(".", "_"), "A", 1)
    if A.dim() < 2:
        raise RuntimeError(f"torch.lu_factor: Expected tensor with 2 or more dimensions. Got size: {list(A.shape)} "
                           f"instead")
    _check(A, name, square=False)


def _lu_checked(A, pivot, name, check):
    if not pivot and A.device.type == "cpu":
        raise RuntimeError(f"{name}: LU without pivoting is not implemented on the CPU")
    lu, piv, info = _lu_function().apply(A, bool(pivot))
    if check:
        for i, c in enumerate(_host_info(info, name)):
            if c:
                raise RuntimeError(f"{name}: {_batch_prefix(A, i)}U[{c},{c}] is zero and using it on lu_solve would "
                                  f"result in a division by zero. If you still want to perform the factorization, "
                                  f"consider calling linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)")
    return lu, piv, _info(info, A)


def lu_factor_ex(A, *, pivot=True, check_errors=False, out=None):
    """torch.linalg.lu_factor_ex: (LU, pivots, info), info on the device (no host wait unless check_errors)."""
    _check_lu_input(A, "torch.linalg.lu_factor_ex")
    return _out(_T_linalg_lu_factor_ex(*_lu_checked(A, pivot, "torch.linalg.lu_factor_ex", bool(check_errors))), out)


def lu_factor(A, *, pivot=True, out=None):
    """torch.linalg.lu_factor: the packed LU factorization with partial pivoting (LinAlgError on a zero pivot)."""
    _check_lu_input(A, "torch.linalg.lu_factor")
    lu, piv, _ = _lu_checked(A, pivot, "torch.linalg.lu_factor", True)
    return _out(_T_linalg_lu_factor(lu, piv), out)


def _perm_matrix(piv, m, dtype):
    """P (m x m) with A = P L U from LAPACK's sequential row interchanges, on piv's device with
    elementwise ops and sums (no host read of the pivots)."""
    from .elementwise import where
    b = tuple(piv.shape[:-1])
    k = piv.shape[-1]
    ar = creation.arange(m, dtype=dtypes.int64, device=piv.device)
    perm = ar.expand(b + (m,)).clone() if b else ar.clone()
    p0 = piv.to(dtypes.int64) - 1
    for i in range(k):
        pi = p0[..., i:i + 1]
        vi = perm[..., i:i + 1]
        vp = where(ar == pi, perm, 0).sum(-1, keepdim=True)  # perm[pi] (no gather: no bounds-check wait)
        perm = where(ar == pi, vi, where(ar == i, vp, perm))
    # row i of P^T A is row perm[i] of A: P[perm[i], i] = 1
    return (perm.unsqueeze(-1) == ar).to(dtype).mT


def lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True, *, out=None):
    """torch.lu_unpack: (P, L, U) from lu_factor's packed form (empty tensors for what is not unpacked)."""
    _tensor(LU_data, "lu_unpack", "LU_data", 1)
    _tensor(LU_pivots, "lu_unpack", "LU_pivots", 2)
    if LU_data.dim() < 2:
        raise RuntimeError("torch.lu_unpack: Expected tensor with 2 or more dimensions. Got size: "
                           f"{list(LU_data.shape)} instead")
    m, n = LU_data.shape[-2:]
    k = min(m, n)
    if unpack_pivots:
        if LU_pivots.dtype is not dtypes.int32:
            raise RuntimeError("torch.lu_unpack: LU_pivots is expected to be a contiguous tensor of torch.int32 dtype."
                               "\nNote: this function is intended to be used with the output produced by "
                               "torch.linalg.lu_factor")
        if tuple(LU_pivots.shape) != tuple(LU_data.shape[:-2]) + (k,):
            raise RuntimeError(f"torch.lu_unpack: Expected LU_pivots.size() == {list(LU_data.shape[:-2]) + [k]}, "
                               f"but got {list(LU_pivots.shape)}")
    empty = creation.empty(0, dtype=LU_data.dtype, device=LU_data.device)
    if unpack_data:
        eye = creation.eye(m, k, dtype=LU_data.dtype, device=LU_data.device)
        L = LU_data[..., :, :k].tril(-1) + eye
        U = LU_data[..., :k, :].triu()
    else:
        L = U = empty
    P = _perm_matrix(LU_pivots, m, LU_data.dtype) if unpack_pivots else empty
    return _out(_T_lu_unpack_t(P, L, U), out)


def linalg_lu(A, *, pivot=True, out=None):
    """torch.linalg.lu: A = P L U (P m x m, L m x k unit lower, U k x n upper)."""
    _check_lu_input(A, "torch.linalg.lu")
    lu_, piv, _ = _lu_checked(A, pivot, "torch.linalg.lu", False)
    P, L, U = lu_unpack(lu_, piv)
    if not pivot:  # torch: P is an empty tensor
        P = creation.empty(0, dtype=A.dtype, device=A.device)
    return _out(_T_linalg_lu(P, L, U), out)


_WARNED = set()


def _deprecated(name, message):
    """torch's TORCH_WARN_ONCE for the legacy LU names: once per process."""
    if name not in _WARNED:
        _WARNED.add(name)
        from .._warn import warn
        warn(message)


def lu(A, pivot=True, get_infos=False, out=None):
    """torch.lu / Tensor.lu: (LU, pivots[, infos]) without raising on singular input."""
    _deprecated("lu", "torch.lu is deprecated in favor of torch.linalg.lu_factor / torch.linalg.lu_factor_ex and will "
                      "be removed in a future PyTorch release.\nLU, pivots = torch.lu(A, compute_pivots)\nshould be "
                      "replaced with\nLU, pivots = torch.linalg.lu_factor(A, compute_pivots)\nand\nLU, pivots, info "
                      "= torch.lu(A, compute_pivots, get_infos=True)\nshould be replaced with\nLU, pivots, info = "
                      "torch.linalg.lu_factor_ex(A, compute_pivots)")
    _check_lu_input(A, "torch.lu")
    lu_, piv, info = _lu_checked(A, pivot, "torch.lu", False)
    res = (lu_, piv, info) if get_infos else (lu_, piv)
    return _out(res, out)


def _lu_solve_composite(LU, pivots, B, left, adjoint):
    from .linalg_composites import solve_triangular
    P, L, U = lu_unpack(LU, pivots)
    if left and not adjoint:      # X = U^-1 L^-1 P^T B
        Y = solve_triangular(L, P.mT @ B, upper=False, unitriangular=True)
        return solve_triangular(U, Y, upper=True)
    if left:                      # A^T X = B: X = P L^-T U^-T B
        Y = solve_triangular(U.mT, B, upper=False)
        return P @ solve_triangular(L.mT, Y, upper=True, unitriangular=True)
    if not adjoint:               # X A = B: X = B U^-1 L^-1 P^T
        Y = solve_triangular(U, B, upper=True, left=False)
        return solve_triangular(L, Y, upper=False, left=False, unitriangular=True) @ P.mT
    Y = B @ P                     # X A^T = B: X = B P L^-T U^-T
    Y = solve_triangular(L.mT, Y, upper=True, left=False, unitriangular=True)
    return solve_triangular(U.mT, Y, upper=False, left=False)


def linalg_lu_solve(LU, pivots, B, *, left=True, adjoint=False, out=None):
    """torch.linalg.lu_solve: X with A X = B (adjoint: A^H X = B; left=False: X A = B) from lu_factor."""
    name = "linalg.lu_solve"
    _tensor(LU, "linalg_lu_solve", "LU", 1)
    _tensor(pivots, "linalg_lu_solve", "pivots", 2)
    _tensor(B, "linalg_lu_solve", "B", 3)
    if LU.dim() < 2 or B.dim() < 2:
        raise RuntimeError(f"torch.{name}: Expected LU and B to have at least 2 dimensions, but they have "
                           f"{LU.dim()} and {B.dim()} dimensions.")
    n = LU.shape[-1]
    if LU.shape[-2] != n:
        raise RuntimeError(f"{name}: A must be batches of square matrices, but they are {LU.shape[-2]} by {n} matrices")
    if (B.shape[-2] if left else B.shape[-1]) != n:
        eq = "AX = B" if left else "XA = B"
        raise RuntimeError(f"{name}: Incompatible shapes of A and B for the equation {eq} "
                           f"({n}x{n} and {B.shape[-2]}x{B.shape[-1]})")
    if LU.dtype is not B.dtype:
        raise RuntimeError(f"{name}: Expected LU and B to have the same dtype, but found LU of type "
                           f"{LU.dtype.torch_name} and B of type {B.dtype.torch_name} instead")
    if pivots.dtype is not dtypes.int32:
        raise RuntimeError(f"{name}: pivots should be a Tensor of scalar type torch.int32")
    if pivots.dim() >= 1 and pivots.shape[-1] != n:
        raise RuntimeError(f"{name}: Number of pivots per batch should be same as the dimension of the matrix")
    if tuple(pivots.shape[:-1]) != tuple(LU.shape[:-2]) or pivots.shape[-1] != n:
        raise RuntimeError(f"{name}: Expected LU.shape[:-1] and pivots.shape to be the same, but got pivots with "
                           f"shape {list(pivots.shape)} instead")
    from ..layout import broadcast_shapes
    batch = tuple(broadcast_shapes(tuple(LU.shape[:-2]), tuple(B.shape[:-2])))
    LUb = LU.expand(batch + (n, n))
    Pb = pivots.expand(batch + (n,))
    Bb = B.expand(batch + tuple(B.shape[-2:]))
    from ..autograd.grad_mode import is_grad_enabled
    if is_grad_enabled() and (LU.requires_grad or B.requires_grad):
        return _out(_lu_solve_composite(LUb, Pb, Bb, left, adjoint), out)
    if left:
        (X,), _ = _run("lu_solve", name, [LUb.detach(), Pb, Bb.detach()], [(Bb.shape, B.dtype)], trans=bool(adjoint))
    else:  # X A = B  <=>  A^T X^T = B^T
        Bt = Bb.mT
        (X,), _ = _run("lu_solve", name, [LUb.detach(), Pb, Bt.detach()], [(Bt.shape, B.dtype)], trans=not adjoint)
        X = X.mT
    return _out(X, out)


def lu_solve(input, LU_data, LU_pivots, *, out=None):
    """torch.lu_solve / Tensor.lu_solve: linalg.lu_solve with the right-hand side first."""
    _deprecated("lu_solve", "torch.lu_solve is deprecated in favor of torch.linalg.lu_solveand will be removed in a "
                            "future PyTorch release.\nNote that torch.linalg.lu_solve has its arguments reversed.\nX = "
                            "torch.lu_solve(B, LU, pivots)\nshould be replaced with\nX = torch.linalg.lu_solve(LU, "
                            "pivots, B)")
    return linalg_lu_solve(LU_data, LU_pivots, input, out=out)


# -- LDL^T ----------------------------------------------------------------------------------------------
def _ldl(A, hermitian, name, check):
    _tensor(A, name.replace("torch.", "").replace(".", "_"), "A", 1)
    _check(A, "torch.linalg.ldl_factor_ex")  # torch names the _ex form for both
    b = tuple(A.shape[:-2])
    n = A.shape[-1]
    (ld, piv), info = _run("ldl_factor", name, [A.detach()], [(A.shape, A.dtype), (b + (n,), dtypes.int32)],
                           hermitian=bool(hermitian))
    if A.device.type == "cuda":
        ld = ld.tril()  # sytrf leaves A's strict upper triangle in place
    if check:
        for i, c in enumerate(_host_info(info, name)):
            if c:
                raise LinAlgError(f"{name}: {_batch_prefix(A, i)}The factorization could not be completed because the "
                                  f"input is not invertible ({c}-th diagonal element of D is zero).")
    return ld, piv, _info(info, A)


def ldl_factor_ex(A, *, hermitian=False, check_errors=False, out=None):
    """torch.linalg.ldl_factor_ex: Bunch-Kaufman LDL^T (LAPACK's sytrf), (LD, pivots, info)."""
    return _out(_T_linalg_ldl_factor_ex(*_ldl(A, hermitian, "torch.linalg.ldl_factor_ex", bool(check_errors))), out)


def ldl_factor(A, *, hermitian=False, out=None):
    """torch.linalg.ldl_factor: (LD, pivots); LinAlgError where D is singular."""
    ld, piv, _ = _ldl(A, hermitian, "torch.linalg.ldl_factor", True)
    return _out(_T_linalg_ldl_factor(ld, piv), out)


def ldl_solve(LD, pivots, B, *, hermitian=False, out=None):
    """torch.linalg.ldl_solve: X with A X = B from ldl_factor (LAPACK's sytrs)."""
    name = "torch.linalg.ldl_solve"
    for x, a, p in ((LD, "LD", 1), (pivots, "pivots", 2), (B, "B", 3)):
        _tensor(x, "linalg_ldl_solve", a, p)
    if LD.dim() < 2 or B.dim() < 2:
        raise RuntimeError(f"{name}: LD and B must have at least 2 dimensions")
    n = LD.shape[-1]
    if LD.shape[-2] != n:
        raise RuntimeError(f"{name}: LD must be batches of square matrices, but they are {LD.shape[-2]} by {n} "
                           f"matrices")
    if B.shape[-2] != n:
        raise RuntimeError(f"{name}: Incompatible shapes of A and B for the equation AX = B ({n}x{n} and "
                           f"{B.shape[-2]}x{B.shape[-1]})")
    if pivots.dtype.is_floating_point or pivots.dtype is dtypes.bool:
        raise RuntimeError(f"{name}: Expected pivots to be integers. Got {pivots.dtype.torch_name}")
    pivots = pivots.to(dtypes.int32)
    if LD.dtype is not B.dtype:
        raise RuntimeError(f"{name}: LD dtype {LD.dtype.torch_name} does not match b dtype {B.dtype.torch_name}")
    if tuple(pivots.shape) != tuple(LD.shape[:-1]):
        raise RuntimeError(f"{name}: LD.shape[:-1] must equal pivots.shape, got {list(LD.shape)} and "
                           f"{list(pivots.shape)}")
    from ..layout import broadcast_shapes
    batch = tuple(broadcast_shapes(tuple(LD.shape[:-2]), tuple(B.shape[:-2])))
    if LD.device.type != "cpu":  # cuSOLVER's sytrs is not in CuPy's binding: LAPACK's sytrs as tensor ops
        X = _sytrs_device(LD.expand(batch + (n, n)).detach(), pivots.expand(batch + (n,)),
                          B.expand(batch + tuple(B.shape[-2:])).detach())
        return _out(X, out)
    (X,), _ = _run("ldl_solve", name, [LD.expand(batch + (n, n)).detach(), pivots.expand(batch + (n,)),
                                        B.expand(batch + tuple(B.shape[-2:])).detach()],
                   [(batch + tuple(B.shape[-2:]), B.dtype)], hermitian=bool(hermitian))
    return _out(X, out)


def _sytrs_device(LD, piv, B):
    """LAPACK's dsytrs (lower) over a batch with elementwise ops, sums and where: each step k
    runs the 1x1 and the 2x2 block updates for the whole batch and keeps, per matrix, the one its
    pivots call for (the block structure is never read on the host)."""
    from .elementwise import where
    batch, (n, r) = tuple(B.shape[:-2]), tuple(B.shape[-2:])
    nb = 1
    for d in batch:
        nb *= d
    if not (nb and n and r):
        return B.clone()
    LD, B = LD.reshape(nb, n, n), B.reshape(nb, n, r)
    piv = piv.reshape(nb, n).to(dtypes.int64)
    ar = creation.arange(n, dtype=dtypes.int64, device=B.device)
    neg = piv < 0
    p = where(neg, -piv, piv) - 1
    second, prev = [], None
    for k in range(n):  # k is the second row of a 2x2 block
        s = neg[:, k] & neg[:, k - 1] & ~prev if k else neg[:, 0] & False
        second.append(s)
        prev = s

    def swap(X, k, t):
        mt = (ar.unsqueeze(0) == t.unsqueeze(1)).unsqueeze(-1)
        rowt = where(mt, X, 0).sum(1, keepdim=True)  # X[t] (no gather: no bounds-check wait)
        mk = (ar == k).unsqueeze(-1)
        return where(mt, X[:, k:k + 1, :], where(mk, rowt, X))

    def col(k, below):
        return LD[:, :, k] * (ar > below).to(LD.dtype)

    kk = creation.arange(n, dtype=dtypes.int64, device=B.device)
    for k in range(n):  # forward: L D Y = P B
        one = ~neg[:, k]
        t1 = where(one, p[:, k], kk[k])
        B1 = swap(B, k, t1)
        B1 = B1 - col(k, k).unsqueeze(-1) * B1[:, k:k + 1, :]
        d = LD[:, k, k].reshape(nb, 1, 1)
        B1 = where((ar == k).unsqueeze(-1), B1 / d, B1)
        res = where(one.reshape(nb, 1, 1), B1, B)
        if k + 1 < n:
            start = neg[:, k] & ~second[k]
            t2 = where(start, p[:, k], kk[k + 1])
            B2 = swap(B, k + 1, t2)
            B2 = (B2 - col(k, k + 1).unsqueeze(-1) * B2[:, k:k + 1, :]
                  - col(k + 1, k + 1).unsqueeze(-1) * B2[:, k + 1:k + 2, :])
            a21 = LD[:, k + 1, k].reshape(nb, 1)
            akm1, ak = LD[:, k, k].reshape(nb, 1) / a21, LD[:, k + 1, k + 1].reshape(nb, 1) / a21
            denom = akm1 * ak - 1
            bkm1, bk = B2[:, k, :] / a21, B2[:, k + 1, :] / a21
            newk, newk1 = (ak * bkm1 - bk) / denom, (akm1 * bk - bkm1) / denom
            B2 = where((ar == k).unsqueeze(-1), newk.unsqueeze(1), where((ar == k + 1).unsqueeze(-1),
                                                                         newk1.unsqueeze(1), B2))
            res = where(start.reshape(nb, 1, 1), B2, res)
        B = res
    for k in range(n - 1, -1, -1):  # backward: L^T P^T X = Y
        one = ~neg[:, k]
        upd = B - (ar == k).to(B.dtype).unsqueeze(-1) * (col(k, k).unsqueeze(-1) * B).sum(1, keepdim=True)
        B1 = swap(upd, k, where(one, p[:, k], kk[k]))
        res = where(one.reshape(nb, 1, 1), B1, B)
        if k >= 1:
            upd2 = upd - (ar == k - 1).to(B.dtype).unsqueeze(-1) * (col(k - 1, k).unsqueeze(-1) * B).sum(
                1, keepdim=True)
            B2 = swap(upd2, k, where(second[k], p[:, k], kk[k]))
            res = where(second[k].reshape(nb, 1, 1), B2, res)
        B = res
    return B.reshape(batch + (n, r))


# -- Householder: geqrf, householder_product (orgqr), ormqr ------------------------------------------------
def geqrf(input, *, out=None):
    """torch.geqrf: LAPACK's packed QR (R on and above the diagonal, reflectors below) and tau."""
    _tensor(input, "geqrf", "input", 1)
    if input.dim() < 2:
        raise RuntimeError("torch.geqrf: input must have at least 2 dimensions.")
    _check(input, "torch.geqrf", square=False)
    m, n = input.shape[-2:]
    b = tuple(input.shape[:-2])
    (a, tau), _ = _run("geqrf", "torch.geqrf", [input.detach()], [(input.shape, input.dtype),
                                                                 (b + (min(m, n),), input.dtype)])
    return _out(_T_geqrf_t(a, tau), out)


def _reflect(A, tau, C, order):
    """H_{i} applied to C for i in `order` (H_i = I - tau_i v_i v_i^T, v_i = e_i + A[i+1:, i])."""
    m = A.shape[-2]
    ar = creation.arange(m, device=A.device)
    for i in order:
        v = A[..., :, i] * (ar > i).to(A.dtype) + (ar == i).to(A.dtype)
        t = tau[..., i:i + 1].unsqueeze(-1)
        C = C - (t * v.unsqueeze(-1)) @ (v.unsqueeze(-2) @ C)
    return C


def householder_product(A, tau, *, out=None):
    """torch.linalg.householder_product (torch.orgqr): the first n columns of H_1 ... H_k."""
    name = "torch.linalg.householder_product"
    _tensor(A, "linalg_householder_product", "input", 1)
    _tensor(tau, "linalg_householder_product", "tau", 2)
    if A.dim() < 2:
        raise RuntimeError(f"{name}: input must have at least 2 dimensions.")
    m, n = A.shape[-2:]
    if m < n:
        raise RuntimeError(f"{name}: input.shape[-2] must be greater than or equal to input.shape[-1]")
    if tau.dim() < 1 or n < tau.shape[-1]:
        raise RuntimeError(f"{name}: input.shape[-1] must be greater than or equal to tau.shape[-1]")
    if tau.dim() != A.dim() - 1:
        raise RuntimeError(f"{name}: Expected tau to have one dimension less than input, but got tau.ndim equal to "
                           f"{tau.dim()} and input.ndim is equal to {A.dim()}")
    if tuple(tau.shape[:-1]) != tuple(A.shape[:-2]):
        raise RuntimeError(f"{name}: Expected batch dimensions of tau to be equal to input.shape[:-2], but got "
                           f"{list(tau.shape[:-1])}")
    if tau.dtype is not A.dtype:
        raise RuntimeError(f"{name}: tau dtype {tau.dtype.torch_name} does not match input dtype "
                           f"{A.dtype.torch_name}")
    _check(A, name, square=False)
    from ..autograd.grad_mode import is_grad_enabled
    if is_grad_enabled() and (A.requires_grad or tau.requires_grad):
        eye = creation.eye(m, n, dtype=A.dtype, device=A.device).expand(tuple(A.shape))
        return _out(_reflect(A, tau, eye, range(tau.shape[-1] - 1, -1, -1)), out)
    (Q,), _ = _run("orgqr", name, [A.detach(), tau.detach()], [(A.shape, A.dtype)])
    return _out(Q, out)


def orgqr(input, input2, *, out=None):
    """torch.orgqr: linalg.householder_product(input, input2) (torch's argument names)."""
    return householder_product(input, input2, out=out)


def ormqr(input, input2, input3, left=True, transpose=False, *, out=None):
    """torch.ormqr: op(Q) C (left) or C op(Q), Q = H_1 ... H_k from geqrf's (input, tau)."""
    name = "torch.ormqr"
    for x, a, p in ((input, "input", 1), (input2, "input2", 2), (input3, "input3", 3)):
        _tensor(x, "ormqr", a, p)
    if input.dim() < 2:
        raise RuntimeError(f"{name}: input must have at least 2 dimensions.")
    if input3.dim() < 2:
        raise RuntimeError(f"{name}: other must have at least 2 dimensions.")
    lr = -2 if left else -1
    if input3.shape[lr] != input.shape[-2]:
        raise RuntimeError(f"{name}: other.shape[{lr}] must be equal to input.shape[-2]")
    k = input2.shape[-1] if input2.dim() else 0
    if input2.dim() < 1 or k != min(input3.shape[lr], input.shape[-1]):
        raise RuntimeError(f"{name}: tau.shape[-1] must be equal to min(other.shape[{lr}], input.shape[-1])")
    if input2.dim() != input.dim() - 1:
        raise RuntimeError(f"{name}: Expected tau to have one dimension less than input, but got tau.ndim equal to "
                           f"{input2.dim()} and input.ndim is equal to {input.dim()}")
    if k > input.shape[-2]:
        raise RuntimeError(f"{name}: tau.shape[-1] must be less than or equal to input.shape[-2]")
    if input3.dim() != input.dim():
        raise RuntimeError(f"{name}: Expected other to have the same number of dimensions as input, but got "
                           f"other.ndim equal to {input3.dim()} and input.ndim is equal to {input.dim()}")
    if tuple(input2.shape[:-1]) != tuple(input.shape[:-2]) or tuple(input3.shape[:-2]) != tuple(input.shape[:-2]):
        raise RuntimeError(f"{name}: Expected batch dimensions of input, tau and other to be equal")
    for t, a in ((input2, "tau"), (input3, "other")):
        if t.dtype is not input.dtype:
            raise RuntimeError(f"{name}: Expected input and {a} to have the same dtype, but input has dtype "
                               f"{input.dtype.torch_name} and {a} has dtype {t.dtype.torch_name}")
    _check(input, name, square=False)
    from ..autograd.grad_mode import is_grad_enabled
    if is_grad_enabled() and any(t.requires_grad for t in (input, input2, input3)):
        fwd, bwd = range(k - 1, -1, -1), range(k)
        if left:
            res = _reflect(input, input2, input3, bwd if transpose else fwd)
        else:  # C Q = (Q^T C^T)^T, C Q^T = (Q C^T)^T
            res = _reflect(input, input2, input3.mT, fwd if transpose else bwd).mT
        return _out(res, out)
    (X,), _ = _run("ormqr", name, [input.detach(), input2.detach(), input3.detach()], [(input3.shape, input3.dtype)],
                   left=bool(left), trans=bool(transpose))
    return _out(X, out)


# -- randomized low-rank SVD / PCA (torch/_lowrank.py, Halko et al. 2009) ----------------------------------
def _approximate_basis(A, q, niter, M):
    from .random import randn
    from .lapack import qr
    R = randn(A.shape[-1], q, dtype=A.dtype, device=A.device)
    X = A @ R
    if M is not None:
        X = X - M @ R
    Q = qr(X).Q
    for _ in range(niter):
        X = A.mT @ Q
        if M is not None:
            X = X - M.mT @ Q
        Q = qr(X).Q
        X = A @ Q
        if M is not None:
            X = X - M @ Q
        Q = qr(X).Q
    return Q


def _svd_lowrank(A, q=6, niter=2, M=None):
    from .lapack import svd
    q = 6 if q is None else q
    niter = 2 if niter is None else niter
    m, n = A.shape[-2:]
    if M is not None:
        M = M.broadcast_to(A.shape)
    if m < n:
        A = A.mT
        if M is not None:
            M = M.mT
    Q = _approximate_basis(A, q, niter, M)
    B = Q.mT @ A
    if M is not None:
        B = B - Q.mT @ M
    U, S, Vh = svd(B, full_matrices=False)
    V = Vh.mT
    U = Q @ U
    if m < n:
        U, V = V, U
    return U, S, V


def svd_lowrank(A, q=6, niter=2, M=None):
    """torch.svd_lowrank: a rank-q approximation (U, S, V), A ~ U diag(S) V^T, from a random basis
    refined by `niter` subspace iterations (M: a mean subtracted from A)."""
    _tensor(A, "svd_lowrank", "A", 1)
    if A.dim() < 2:  # torch: the unpacking of A.shape[-2:] fails
        raise ValueError(f"svd_lowrank: A must have at least 2 dimensions: not enough values to unpack (expected 2, "
                         f"got {A.dim()})")
    _check(A, "svd_lowrank", square=False)
    return _svd_lowrank(A, q, niter, M)


def pca_lowrank(A, q=None, center=True, niter=2):
    """torch.pca_lowrank: svd_lowrank of A with its column means subtracted (center=True)."""
    _tensor(A, "pca_lowrank", "A", 1)
    if A.dim() < 2:
        raise ValueError(f"pca_lowrank: A must have at least 2 dimensions: not enough values to unpack (expected 2, "
                         f"got {A.dim()})")
    m, n = A.shape[-2:]
    if q is None:
        q = min(6, m, n)
    elif not (q >= 0 and q <= min(m, n)):
        raise ValueError(f"q(={q}) must be non-negative integer and not greater than min(m, n)={min(m, n)}")
    if not niter >= 0:
        raise ValueError(f"niter(={niter}) must be non-negative integer")
    _check(A, "pca_lowrank", square=False)
    if not center:
        return _svd_lowrank(A, q, niter, None)
    C = A.mean(-2, keepdim=True)
    return _svd_lowrank(A - C, q, niter, None)


FUNCTIONS = ("lu", "lu_solve", "lu_unpack", "geqrf", "ormqr", "orgqr", "svd_lowrank", "pca_lowrank")
METHODS = {"lu": lu, "lu_solve": lu_solve, "geqrf": geqrf, "ormqr": ormqr, "orgqr": orgqr}
