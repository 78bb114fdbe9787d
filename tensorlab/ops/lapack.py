"""torch.linalg's dense factorizations and norms: solve, inv, det, slogdet, cholesky, qr, svd,
svdvals, eigh, eigvalsh (the one `lapack` backend primitive: NumPy's LAPACK on the CPU; on CUDA
it refuses with a RuntimeError naming the fix, .cpu()), and vector_norm / matrix_norm / norm
(composites; the spectral and nuclear matrix norms go through svdvals).

Gradients: each factorization is a custom autograd Function whose backward is torch's formula
written with tensorlab ops (and these functions themselves), so double backward works too:
inv: -A^-T g A^-T; solve: gB = A^-T g, gA = -gB X^T; det: g det A^-T (the SVD cofactor form when
A is singular); slogdet: g A^-T; cholesky, qr, svd, eigh: torch's linalg_*_backward."""
from __future__ import annotations

import math
from collections import namedtuple

from .. import dtypes
from ..tensor import Tensor
from . import creation, registry
from .registry import NONE, OpDef

registry.register(OpDef("linalg_lapack", "lapack", "lapack", NONE, differentiable=False))


class LinAlgError(RuntimeError):
    """A factorization failed on its input (singular or not positive-definite), as torch.linalg.LinAlgError."""


def _named(name, fields):
    cls = namedtuple(name, fields)
    cls.__module__ = "tensorlab.return_types"
    cls.__qualname__ = name
    return cls


linalg_slogdet = _named("linalg_slogdet", ("sign", "logabsdet"))
slogdet_t = _named("slogdet", ("sign", "logabsdet"))
linalg_qr = _named("linalg_qr", ("Q", "R"))
linalg_svd = _named("linalg_svd", ("U", "S", "Vh"))
linalg_eigh = _named("linalg_eigh", ("eigenvalues", "eigenvectors"))
linalg_inv_ex = _named("linalg_inv_ex", ("inverse", "info"))
linalg_solve_ex = _named("linalg_solve_ex", ("result", "info"))
linalg_cholesky_ex = _named("linalg_cholesky_ex", ("L", "info"))
linalg_lstsq = _named("linalg_lstsq", ("solution", "residuals", "rank", "singular_values"))


# -- checks ----------------------------------------------------------------------------------------
def _check(A, name, square=True, arg="A"):
    if not isinstance(A, Tensor):
        raise TypeError(f"{name}(): argument '{arg}' (position 1) must be Tensor, not {type(A).__name__}")
    if A.dim() < 2:
        raise RuntimeError(f"{name}: The input tensor {arg} must have at least 2 dimensions.")
    dt = A.dtype
    if dt in (dtypes.float16, dtypes.bfloat16):
        raise RuntimeError(f"{name}: Low precision dtypes not supported. Got {dt.torch_name}")
    if not dt.is_floating_point:
        raise RuntimeError(f"{name}: Expected a floating point or complex tensor as input. Got {dt.torch_name}")
    if square and A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"{name}: {arg} must be batches of square matrices, but they are {A.shape[-2]} by "
                           f"{A.shape[-1]} matrices")
    return A


def _run(op, name, ins, out_specs, **params):
    """Allocate the outputs (shape, dtype) on the inputs' device and run the lapack primitive."""
    dev = ins[0].device
    outs = [creation.empty(tuple(s), dtype=d, device=dev) for s, d in out_specs]
    params["name"] = name
    info = ins[0]._backend.lapack(op, outs, [t.detach() for t in ins], params)
    return outs, info


def _info(info, A):
    """LAPACK's per-matrix info as torch's int32 tensor of A's batch shape."""
    shape = tuple(A.shape[:-2])
    if not info:
        return creation.zeros(shape, dtype=dtypes.int32, device=A.device)
    return creation.tensor(list(info), dtype=dtypes.int32, device=A.device).reshape(shape)


def _batch_prefix(A, i):
    return f"(Batch element {i}): " if A.dim() > 2 else ""


def _out(res, out):
    if out is None:
        return res
    from .copy import copy_
    if isinstance(res, tuple):
        for o, r in zip(out, res):
            o.resize_(r.shape)
            copy_(o, r)
        return type(res)(*out) if hasattr(res, "_fields") else tuple(out)
    out.resize_(res.shape)
    copy_(out, res)
    return out


# -- the autograd Functions (built on first use: tensorlab.autograd imports after the ops) ---------
_F = None


def _functions():
    global _F
    if _F is not None:
        return _F
    from ..autograd.function import Function

    def eye_like(n, t):
        return creation.eye(n, dtype=t.dtype, device=t.device)

    class LinalgInv(Function):
        @staticmethod
        def forward(ctx, A, name, check):
            (r,), info = _run("inv", name, [A], [(A.shape, A.dtype)])
            for i, k in enumerate(info):
                if k and check:
                    raise LinAlgError(f"{name}: {_batch_prefix(A, i)}The diagonal element {k} is zero, the "
                                      f"inversion could not be completed because the input matrix is singular.")
            ctx.save_for_backward(r)
            return r, _info(info, A)

        @staticmethod
        def backward(ctx, g, _):
            (r,) = ctx.saved_tensors
            rt = r.mT
            return -(rt @ g @ rt), None, None

    class LinalgSolve(Function):
        @staticmethod
        def forward(ctx, A, B, name, check):
            (x,), info = _run("solve", name, [A, B], [(B.shape, B.dtype)])
            for i, k in enumerate(info):
                if k and check:
                    raise LinAlgError(f"{name}: {_batch_prefix(A, i)}The solver failed because the input "
                                      f"matrix is singular.")
            ctx.save_for_backward(A, x)
            return x, _info(info, A)

        @staticmethod
        def backward(ctx, g, _):
            A, x = ctx.saved_tensors
            gB = _solve_core(A.mT, g)
            gA = -(gB @ x.mT) if ctx.needs_input_grad[0] else None
            return gA, gB, None, None

    class LinalgDet(Function):
        @staticmethod
        def forward(ctx, A):
            (d,), _ = _run("det", "linalg.det", [A], [(A.shape[:-2], A.dtype)])
            ctx.save_for_backward(A, d)
            return d

        @staticmethod
        def backward(ctx, g):
            A, d = ctx.saved_tensors
            n = A.shape[-1]
            if n == 0:
                return g.new_zeros(A.shape)
            try:
                cof = (d.unsqueeze(-1).unsqueeze(-1)) * inv(A).mT
            except LinAlgError:
                cof = _cofactor_svd(A)
            return g.unsqueeze(-1).unsqueeze(-1) * cof

    class LinalgSlogdet(Function):
        @staticmethod
        def forward(ctx, A):
            (s, la), _ = _run("slogdet", "linalg.slogdet", [A], [(A.shape[:-2], A.dtype)] * 2)
            ctx.mark_non_differentiable(s)
            ctx.save_for_backward(A)
            return s, la

        @staticmethod
        def backward(ctx, gs, gla):
            (A,) = ctx.saved_tensors
            return gla.unsqueeze(-1).unsqueeze(-1) * inv(A).mT

    class LinalgCholesky(Function):
        @staticmethod
        def forward(ctx, A, name, check):
            (L,), info = _run("cholesky", name, [A], [(A.shape, A.dtype)])
            for i, k in enumerate(info):
                if k and check:
                    raise LinAlgError(f"{name}: {_batch_prefix(A, i)}The factorization could not be "
                                      f"completed because the input is not positive-definite (the leading minor of "
                                      f"order {k} is not positive-definite).")
            ctx.save_for_backward(L)
            return L, _info(info, A)

        @staticmethod
        def backward(ctx, gL, _):
            (L,) = ctx.saved_tensors
            # torch's cholesky_backward: gA = L^-H Phi(L^H gL) L^-1, Phi = tril with half diagonal
            gA = (L.mT @ gL).tril()
            gA = 0.5 * (gA + gA.tril(-1).mT)
            gA = _solve_core(L.mT, gA)            # L^-H gA
            gA = _solve_core(L.mT, gA.mT).mT      # (.) L^-1
            return gA, None, None

    class LinalgQr(Function):
        @staticmethod
        def forward(ctx, A, mode):
            m, n = A.shape[-2:]
            k = min(m, n)
            b = tuple(A.shape[:-2])
            qs, rs = ((b + (m, m), b + (m, n)) if mode == "complete" else (b + (m, k), b + (k, n)))
            (q, r), _ = _run("qr", "linalg.qr", [A], [(qs, A.dtype), (rs, A.dtype)], mode=mode)
            ctx.mode = mode
            ctx.save_for_backward(q, r)
            return q, r

        @staticmethod
        def backward(ctx, gQ, gR):
            q, r = ctx.saved_tensors
            m, n = q.shape[-2], r.shape[-1]
            if ctx.mode == "complete" and m > n:
                raise RuntimeError("The QR decomposition is not differentiable when mode='complete' and "
                                   "nrows > ncols.")
            return _qr_backward(gQ, gR, q, r), None

    class LinalgSvd(Function):
        @staticmethod
        def forward(ctx, A, full_matrices):
            m, n = A.shape[-2:]
            k = min(m, n)
            b = tuple(A.shape[:-2])
            us, vs = ((b + (m, m), b + (n, n)) if full_matrices else (b + (m, k), b + (k, n)))
            (u, s, vh), _ = _run("svd", "linalg.svd", [A], [(us, A.dtype), (b + (k,), A.dtype), (vs, A.dtype)],
                                 full_matrices=full_matrices, compute_uv=True)
            ctx.full = full_matrices
            ctx.save_for_backward(u, s, vh)
            return u, s, vh

        @staticmethod
        def backward(ctx, gU, gS, gVh):
            u, s, vh = ctx.saved_tensors
            if ctx.full:
                k = s.shape[-1]
                u, vh = u[..., :, :k], vh[..., :k, :]
                gU, gVh = gU[..., :, :k], gVh[..., :k, :]
            return _svd_backward(gU, gS, gVh, u, s, vh), None

    class LinalgEigh(Function):
        @staticmethod
        def forward(ctx, A, UPLO):
            n = A.shape[-1]
            b = tuple(A.shape[:-2])
            (w, v), _ = _run("eigh", "linalg.eigh", [A], [(b + (n,), A.dtype), (A.shape, A.dtype)],
                             UPLO=UPLO, compute_v=True)
            ctx.save_for_backward(w, v)
            return w, v

        @staticmethod
        def backward(ctx, gL, gV):
            w, v = ctx.saved_tensors
            vhgv = v.mT @ gV
            vhgv = 0.5 * (vhgv - vhgv.mT)
            E = w.unsqueeze(-2) - w.unsqueeze(-1)
            E = E + eye_like(w.shape[-1], w)  # the skew part's diagonal is 0: any nonzero divisor
            gA = vhgv / E + gL.diag_embed()
            return v @ gA @ v.mT, None

    class _NS:
        pass

    ns = _NS()
    for c in (LinalgInv, LinalgSolve, LinalgDet, LinalgSlogdet, LinalgCholesky, LinalgQr, LinalgSvd, LinalgEigh):
        setattr(ns, c.__name__, c)
    _F = ns
    return ns


def _cofactor_svd(A):
    """det(A) A^-T without inverting: det(U) det(V) U diag(prod_{j != i} s_j) V^T."""
    U, S, Vh = svd(A, full_matrices=False)
    n = S.shape[-1]
    cols = []
    for i in range(n):
        others = [S[..., j] for j in range(n) if j != i]
        p = S[..., 0] * 0 + 1
        for o in others:
            p = p * o
        cols.append(p)
    from .shape import stack
    c = stack(cols, -1)
    sign = det(U) * det(Vh)
    return sign.unsqueeze(-1).unsqueeze(-1) * (U * c.unsqueeze(-2)) @ Vh


def _qr_backward(gQ, gR, Q, R):
    m, n = Q.shape[-2], R.shape[-1]
    if m >= n:
        # torch's linalg_qr_backward (m >= n): gA = [gQ + Q syminvadj(triu(gR R^H - Q^H gQ))] R^-H
        M = gR @ R.mT - Q.mT @ gQ
        M = M.triu()
        M = M + M.mT
        M = M - 0.5 * M.diagonal(0, -2, -1).diag_embed()
        gA = Q @ M + gQ
        return _solve_core(R, gA.mT).mT  # gA R^-H (R upper triangular, square)
    # m < n: A = [X | Y], X = Q U square; R = [U | V], V = Q^H Y
    U = R[..., :, :m]
    gU, gV = gR[..., :, :m], gR[..., :, m:]
    Y_ = None
    from .shape import cat
    Y_ = Q @ R[..., :, m:]
    gX = _qr_backward(gQ + Y_ @ gV.mT, gU, Q, U)
    gY = Q @ gV
    return cat([gX, gY], -1)


def _svd_backward(gU, gS, gVh, U, S, Vh):
    m, n = U.shape[-2], Vh.shape[-1]
    k = S.shape[-1]
    V, gV = Vh.mT, gVh.mT
    S2 = S * S
    E = S2.unsqueeze(-2) - S2.unsqueeze(-1)
    E = E + creation.eye(k, dtype=S.dtype, device=S.device)
    UhgU = U.mT @ gU
    VhgV = V.mT @ gV
    skU = UhgU - UhgU.mT
    skV = VhgV - VhgV.mT
    ret = (skU * S.unsqueeze(-2) + S.unsqueeze(-1) * skV) / E
    ret = ret + gS.diag_embed()
    if m > k:
        gA = U @ ret
        gUSinv = gU / S.unsqueeze(-2)
        gA = gA + gUSinv - U @ (U.mT @ gUSinv)
        return gA @ Vh
    if n > k:
        gA = ret @ Vh
        gVSinv = gV / S.unsqueeze(-2)
        gA = gA + gVSinv.mT - (gVSinv.mT @ V) @ Vh
        return U @ gA
    return U @ ret @ Vh


# -- the public functions --------------------------------------------------------------------------
def _solve_core(A, B):
    return _functions().LinalgSolve.apply(A, B, "torch.linalg.solve", True)[0]


def inv(A, *, out=None):
    """torch.linalg.inv: the inverse of each square matrix (LinAlgError when one is singular)."""
    _check(A, "linalg.inv")
    return _out(_functions().LinalgInv.apply(A, "linalg.inv", True)[0], out)


def inv_ex(A, *, check_errors=False, out=None):
    """torch.linalg.inv_ex: (inverse, info); info[i] > 0 marks a singular matrix, whose inverse is
    undefined (NaN here), unless check_errors=True raises."""
    _check(A, "linalg.inv_ex")
    r, info = _functions().LinalgInv.apply(A, "linalg.inv_ex", bool(check_errors))
    return _out(linalg_inv_ex(r, info), out)


def cholesky_ex(A, *, upper=False, check_errors=False, out=None):
    """torch.linalg.cholesky_ex: (L, info); info[i] > 0 is the order of the first leading minor
    that is not positive-definite (L undefined there: NaN)."""
    _check(A, "linalg.cholesky_ex")
    L, info = _functions().LinalgCholesky.apply(A, "linalg.cholesky_ex", bool(check_errors))
    return _out(linalg_cholesky_ex(L.mT if upper else L, info), out)


def solve_ex(A, B, *, left=True, check_errors=False, out=None):
    """torch.linalg.solve_ex: (result, info) of linalg.solve without raising on singular input."""
    X, info = _solve(A, B, left, "torch.linalg.solve_ex", bool(check_errors))
    return _out(linalg_solve_ex(X, info), out)


def inverse(input, *, out=None):
    return inv(input, out=out)


def solve(A, B, *, left=True, out=None):
    """torch.linalg.solve: X with A X = B (or X A = B with left=False); B may be a (batch of)
    vector(s): B.dim() == 1, or B.shape == A.shape[:-1]. Batch dims broadcast."""
    return _out(_solve(A, B, left, "torch.linalg.solve", True)[0], out)


def _solve(A, B, left, name, check):
    _check(A, "linalg.solve")
    if not isinstance(B, Tensor):
        raise TypeError(f"linalg_solve(): argument 'B' (position 2) must be Tensor, not {type(B).__name__}")
    if A.dtype is not B.dtype:
        raise RuntimeError(f"linalg.solve: Expected A and B to have the same dtype, but found A of type "
                           f"{A.dtype.torch_name} and B of type {B.dtype.torch_name} instead")
    if A.device != B.device:
        raise RuntimeError(f"Expected all tensors to be on the same device, but found at least two devices, "
                           f"{A.device} and {B.device}! (linalg.solve)")
    vector = B.dim() == 1 or (B.dim() == A.dim() - 1 and tuple(B.shape) == tuple(A.shape[:-1]))
    Bm = B.unsqueeze(-1) if vector else B
    n = A.shape[-1]
    if left:
        if Bm.shape[-2] != n:
            raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation AX = B "
                               f"({A.shape[-2]}x{A.shape[-1]} and {Bm.shape[-2]}x{Bm.shape[-1]})")
    elif Bm.shape[-1] != n:
        raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation XA = B "
                           f"({A.shape[-2]}x{A.shape[-1]} and {Bm.shape[-2]}x{Bm.shape[-1]})")
    from ..layout import broadcast_shapes
    try:
        batch = tuple(broadcast_shapes(tuple(A.shape[:-2]), tuple(Bm.shape[:-2])))
    except (RuntimeError, ValueError):
        raise RuntimeError(f"linalg.solve: the batch dimensions of A {list(A.shape[:-2])} and B "
                           f"{list(Bm.shape[:-2])} do not broadcast") from None
    Ab = A.expand(batch + (n, n))
    Bb = Bm.expand(batch + tuple(Bm.shape[-2:]))
    S = _functions().LinalgSolve
    if left:
        X, info = S.apply(Ab, Bb, name, check)
    else:
        X, info = S.apply(Ab.mT, Bb.mT, name, check)
        X = X.mT
    if vector:
        X = X.squeeze(-1)
    return X, info


def det(A, *, out=None):
    """torch.linalg.det (also torch.det / Tensor.det)."""
    _check(A, "linalg.det")
    return _out(_functions().LinalgDet.apply(A), out)


def linalg_slogdet_fn(A, *, out=None):
    """torch.linalg.slogdet: (sign, log|det|); only logabsdet carries a gradient."""
    _check(A, "linalg.slogdet")
    s, la = _functions().LinalgSlogdet.apply(A)
    return _out(linalg_slogdet(s, la), out)


def slogdet(input, *, out=None):
    """torch.slogdet / Tensor.slogdet: torch.linalg.slogdet's pair as torch.return_types.slogdet."""
    s, la = linalg_slogdet_fn(input)
    return _out(slogdet_t(s, la), out)


def logdet(input):
    """torch.logdet: log(det), NaN for a negative determinant."""
    s, la = linalg_slogdet_fn(input)
    from .elementwise import where
    return where(s < 0, float("nan"), la)


def cholesky(A, *, upper=False, out=None):
    """torch.linalg.cholesky: lower L with A = L L^H (upper=True: U = L^H); only A's lower
    triangle is read, as LAPACK does."""
    _check(A, "linalg.cholesky")
    L = _functions().LinalgCholesky.apply(A, "linalg.cholesky", True)[0]
    return _out(L.mT if upper else L, out)


def qr(A, mode="reduced", *, out=None):
    """torch.linalg.qr: mode 'reduced' (Q m x k, R k x n), 'complete' (Q m x m, R m x n) or 'r'
    (R only; Q is an empty tensor)."""
    _check(A, "linalg.qr", square=False)
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of 'reduced' (default), 'r', or "
                           f"'complete'")
    q, r = _functions().LinalgQr.apply(A, "complete" if mode == "complete" else "reduced")
    if mode == "r":
        q = creation.empty(0, dtype=A.dtype, device=A.device)
        r = r.detach() if not A.requires_grad else r
    return _out(linalg_qr(q, r), out)


def svd(A, full_matrices=True, *, driver=None, out=None):
    """torch.linalg.svd: A = U diag(S) Vh, S descending."""
    _check(A, "linalg.svd", square=False)
    if driver is not None:
        raise RuntimeError("torch.linalg.svd: keyword argument `driver=` is only supported on CUDA inputs with "
                           "cuSOLVER backend.")
    u, s, vh = _functions().LinalgSvd.apply(A, bool(full_matrices))
    return _out(linalg_svd(u, s, vh), out)


def svdvals(A, *, driver=None, out=None):
    """torch.linalg.svdvals: the singular values, descending (gradient: U diag(g) Vh)."""
    _check(A, "linalg.svdvals", square=False)
    if driver is not None:
        raise RuntimeError("torch.linalg.svd: keyword argument `driver=` is only supported on CUDA inputs with "
                           "cuSOLVER backend.")
    if not A.requires_grad:
        m, n = A.shape[-2:]
        (s,), _ = _run("svd", "linalg.svdvals", [A], [(tuple(A.shape[:-2]) + (min(m, n),), A.dtype)],
                       full_matrices=False, compute_uv=False)
        return _out(s, out)
    return _out(svd(A, full_matrices=False).S, out)


def _uplo(UPLO, name):
    if UPLO not in ("L", "U", "l", "u"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    return UPLO.upper()


def eigh(A, UPLO="L", *, out=None):
    """torch.linalg.eigh: eigenvalues (ascending) and orthonormal eigenvectors of a symmetric
    matrix, reading only its UPLO triangle."""
    _check(A, "linalg.eigh")
    w, v = _functions().LinalgEigh.apply(A, _uplo(UPLO, "linalg.eigh"))
    return _out(linalg_eigh(w, v), out)


def eigvalsh(A, UPLO="L", *, out=None):
    _check(A, "linalg.eigvalsh")
    u = _uplo(UPLO, "linalg.eigvalsh")
    if not A.requires_grad:
        (w,), _ = _run("eigh", "linalg.eigvalsh", [A], [(tuple(A.shape[:-1]), A.dtype)], UPLO=u, compute_v=False)
        return _out(w, out)
    return _out(eigh(A, u).eigenvalues, out)


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
            r = s.amax(ext_dim, keepdim=True) if o > 0 else s.amin(ext_dim, keepdim=True)
            if not keepdim:
                r = r.squeeze(max(d0, d1)).squeeze(min(d0, d1))
            return _out(r, out)
        if o not in (2.0, -2.0):
            raise RuntimeError(f"{name}: Order {ord} not supported.")
        sv = _svals(A, d0, d1, name)
        r = sv.amax(-1) if o > 0 else sv.amin(-1)
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


FUNCTIONS = ("det", "slogdet", "logdet", "inverse")
METHODS = {"det": det, "slogdet": slogdet, "logdet": logdet, "inverse": inverse}
