"""torch.linalg's dense factorizations: solve(_ex), inv(_ex), det, slogdet, cholesky(_ex), qr, svd,
svdvals, eigh, eigvalsh, through the one `lapack` backend primitive (NumPy's LAPACK on the CPU; on
CUDA it refuses with a RuntimeError naming the fix, .cpu()). The norms and the composites built on
these (pinv, lstsq, matrix_rank, ...) are in linalg_composites.py.

Gradients: each factorization is a custom autograd Function whose backward is torch's formula
written with tensorlab ops (and these functions themselves), so double backward works too:
inv: -A^-T g A^-T; solve: gB = A^-T g, gA = -gB X^T; det: g det A^-T (the SVD cofactor form when
A is singular); slogdet: g A^-T; cholesky, qr, svd, eigh: torch's linalg_*_backward."""
from __future__ import annotations

from collections import namedtuple

from .. import dtypes
from ..tensor import Tensor
from ._common import strictly_same_device
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


_FAILING = frozenset(("inv", "solve", "cholesky", "lu_factor", "ldl_factor", "geev"))


def _run(op, name, ins, out_specs, **params):
    """Allocate the outputs (shape, dtype) on the inputs' device and run the lapack primitive.
    The info it returns: the CPU backend's list, or (CUDA, ops that can fail) the int32 device
    tensor the library wrote, one per matrix, not read back here."""
    dev = ins[0].device
    outs = [creation.empty(tuple(s), dtype=d, device=dev) for s, d in out_specs]
    params["name"] = name
    info_t = None
    if dev.type == "cuda" and op in _FAILING:
        nb = 1
        for d in ins[0].shape[:-2]:
            nb *= d
        info_t = params["info"] = creation.zeros((nb,), dtype=dtypes.int32, device=dev)
    info = ins[0]._backend.lapack(op, outs, [t.detach() for t in ins], params)
    return outs, (info_t if info_t is not None else info)


def _info(info, A):
    """LAPACK's per-matrix info as torch's int32 tensor of A's batch shape."""
    shape = tuple(A.shape[:-2])
    if isinstance(info, Tensor):
        return info.reshape(shape)
    if not info:
        return creation.zeros(shape, dtype=dtypes.int32, device=A.device)
    return creation.tensor(list(info), dtype=dtypes.int32, device=A.device).reshape(shape)


def _host_info(info, name):
    """The info values on the host: on CUDA the one wait torch makes too, named for the op."""
    if isinstance(info, Tensor):
        if not info.numel():
            return []
        return [int(v) for v in info._host(f"{name}: checking the factorization's info").reshape(-1)]
    return info


def _batch_prefix(A, i):
    return f"(Batch element {i}): " if A.dim() > 2 else ""


def _run_checked(kind, name, args, outs, A, check, why):
    """_run, then (with check) torch's LinAlgError for the first batch element whose info is
    nonzero: "{name}: (Batch element i): " + why(info)."""
    res, info = _run(kind, name, args, outs)
    if not check:
        return res, info
    for i, k in enumerate(_host_info(info, name)):
        if k:
            raise LinAlgError(f"{name}: {_batch_prefix(A, i)}" + why(k))
    return res, info


def _out(res, out):
    if out is None:
        return res
    from .copy import copy_
    if isinstance(res, tuple):
        # every out written, or (a failure on the way) none: _common.Outputs publishes them together
        from ._common import Outputs, _check_out, _object_new, _warn_resize
        out = tuple(out)
        if len(out) != len(res):
            raise RuntimeError(f"expected out= to be a tuple of {len(res)} tensors, got {len(out)}")
        o = _object_new(Outputs)
        o.tensors = [r.detach() for r in res]
        for t, r in zip(out, res):
            _check_out(t, r.dtype, r.device, "linalg")
        o._outs = list(out)
        o._metas = [t._meta for t in out]
        for m, r in zip(o._metas, res):
            if tuple(m.layout.shape) != tuple(r.shape):
                _warn_resize("linalg", m.layout.shape, tuple(r.shape))
        o._op, o._inputs = "linalg", ()
        o.finish()
        return type(res)(*out) if hasattr(res, "_fields") else out
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
            (r,), info = _run_checked("inv", name, [A], [(A.shape, A.dtype)], A, check,
                                      lambda k: f"The diagonal element {k} is zero, the inversion could not be "
                                                f"completed because the input matrix is singular.")
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
            (x,), info = _run_checked("solve", name, [A, B], [(B.shape, B.dtype)], A, check,
                                      lambda k: "The solver failed because the input matrix is singular.")
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
            if A.device.type == "cuda":
                d = _det_lu(A)[0]
            else:
                (d,), _ = _run("det", "linalg.det", [A], [(A.shape[:-2], A.dtype)])
            ctx.save_for_backward(A, d)
            return d

        @staticmethod
        def backward(ctx, g):
            A, d = ctx.saved_tensors
            n = A.shape[-1]
            if n == 0:
                return g.new_zeros(A.shape)
            if A.device.type == "cuda":  # no host wait: both forms, chosen per matrix by getrf's info
                from .elementwise import where
                Ainv, info = _functions().LinalgInv.apply(A, "linalg.inv_ex", False)
                cof = where((info != 0).unsqueeze(-1).unsqueeze(-1), _cofactor_svd(A),
                            d.unsqueeze(-1).unsqueeze(-1) * Ainv.mT)
                return g.unsqueeze(-1).unsqueeze(-1) * cof
            try:
                cof = (d.unsqueeze(-1).unsqueeze(-1)) * inv(A).mT
            except LinAlgError:
                cof = _cofactor_svd(A)
            return g.unsqueeze(-1).unsqueeze(-1) * cof

    class LinalgSlogdet(Function):
        @staticmethod
        def forward(ctx, A):
            if A.device.type == "cuda":
                _, s, la = _det_lu(A)
            else:
                (s, la), _ = _run("slogdet", "linalg.slogdet", [A], [(A.shape[:-2], A.dtype)] * 2)
            ctx.mark_non_differentiable(s)
            ctx.save_for_backward(A)
            return s, la

        @staticmethod
        def backward(ctx, gs, gla):
            (A,) = ctx.saved_tensors
            if A.device.type == "cuda":  # torch's backward does not check the factorization: no host wait
                return gla.unsqueeze(-1).unsqueeze(-1) * _functions().LinalgInv.apply(A, "linalg.inv_ex", False)[0].mT
            return gla.unsqueeze(-1).unsqueeze(-1) * inv(A).mT

    class LinalgCholesky(Function):
        @staticmethod
        def forward(ctx, A, name, check):
            (L,), info = _run_checked("cholesky", name, [A], [(A.shape, A.dtype)], A, check,
                                      lambda k: f"The factorization could not be completed because the input is not "
                                                f"positive-definite (the leading minor of order {k} is not "
                                                f"positive-definite).")
            if A.device.type == "cuda":  # potrf leaves A's strict upper triangle in place
                L = L.tril()
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
            if A.device.type == "cuda":  # geqrf's reflectors lie under R
                r = r.triu()
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


def _det_lu(A):
    """(det, sign, log|det|) from getrf's factors (the CUDA path): the product of U's diagonal,
    the sign flipped once per row interchange; a zero pivot gives det 0, sign 0, -inf."""
    n = A.shape[-1]
    if n == 0:
        one = creation.ones(tuple(A.shape[:-2]), dtype=A.dtype, device=A.device)
        return one, one, one * 0
    (lu, piv), _ = _run("lu_factor", "linalg.det", [A], [(A.shape, A.dtype), (tuple(A.shape[:-1]), dtypes.int32)],
                        pivot=True)
    d = lu.diagonal(0, -2, -1)
    ar = creation.arange(1, n + 1, dtype=dtypes.int32, device=A.device)
    swaps = (piv != ar).sum(-1)
    perm = 1 - 2 * (swaps % 2).to(A.dtype)
    det_ = d.prod(-1) * perm
    sign = d.sign().prod(-1) * perm + 0.0  # no -0
    return det_, sign, d.abs().log().sum(-1)


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
    """The solves inside the backward formulas: on CUDA without checking getrf's info (torch's
    backward solves with the saved factors: no host wait)."""
    return _functions().LinalgSolve.apply(A, B, "torch.linalg.solve", A.device.type == "cpu")[0]


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
    strictly_same_device(A, (B,), "linalg.solve")
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


def _svd_driver(A, driver):
    """torch's driver= check: CUDA only; tensorlab's CUDA SVD is cuSOLVER's gesvd whichever is named
    (gesvdj / gesvda agree with it to rounding)."""
    if driver is None:
        return
    if A.device.type != "cuda":
        raise RuntimeError("torch.linalg.svd: keyword argument `driver=` is only supported on CUDA inputs with "
                           "cuSOLVER backend.")
    if driver not in ("gesvd", "gesvdj", "gesvda"):
        raise RuntimeError(f"torch.linalg.svd: driver must be one of 'gesvd', 'gesvdj' or 'gesvda', got {driver!r}")


def svd(A, full_matrices=True, *, driver=None, out=None):
    """torch.linalg.svd: A = U diag(S) Vh, S descending."""
    _check(A, "linalg.svd", square=False)
    _svd_driver(A, driver)
    u, s, vh = _functions().LinalgSvd.apply(A, bool(full_matrices))
    return _out(linalg_svd(u, s, vh), out)


def svdvals(A, *, driver=None, out=None):
    """torch.linalg.svdvals: the singular values, descending (gradient: U diag(g) Vh)."""
    _check(A, "linalg.svdvals", square=False)
    _svd_driver(A, driver)
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


FUNCTIONS = ("det", "slogdet", "logdet", "inverse")
METHODS = {"det": det, "slogdet": slogdet, "logdet": logdet, "inverse": inverse}
