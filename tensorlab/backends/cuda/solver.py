"""The CUDA side of the `lapack` primitive (backends/cpu/lapack.py): dense factorizations through
cuSOLVER (and cuBLAS's trsm), called by the driver (driver.getrf, potrf, geqrf, orgqr, ormqr,
gesvd, syevd, sytrf, getrs, trsm, geev; NumPy/SciPy stand-ins under the emulation).

Each op copies its (any-strided, row-major) inputs into fresh column-major scratch batches, so
the library sees A itself (not A^T) with lda = max(1, rows) and batch stride rows * cols, runs the
routine over the batch on the current stream, and copies the results into the preallocated
outputs: no input is ever written, and nothing is published before every call was queued. The
per-matrix `info` (LAPACK's int32) stays on the device in params["info"] (a tensor of the batch's
size) where the op can fail; the front end (ops/lapack.py) reads it back only where torch does
(the non-_ex forms), with a named host_wait. What the library leaves beside the result (the
other triangle of a Cholesky factor, the reflectors under R) is cleared by the front end."""
from __future__ import annotations

import numpy as np

from ...device import Device
from ...layout import contiguous_strides, make
from . import launch as K
from .driver import Pointer
from .memory import allocate, copy, fill, retire

__all__ = ("lapack",)

LIBRARY_CALLS = {}  # routine -> calls sent to the library (as launch.LAUNCHES counts kernels)


def _count(routine):
    LIBRARY_CALLS[routine] = LIBRARY_CALLS.get(routine, 0) + 1
    if K._fault_plans:  # a library call fails where a launch can (tests/test_fault_injection.py)
        K._faults.hit("launch")


class _Scratch:
    """Column-major batches in fresh buffers, all retired on the stream when the op is done."""

    def __init__(self, device):
        self.device = device
        self.bufs = []

    def buf(self, nbytes):
        b = allocate(max(int(nbytes), 1), Device("cuda", self.device))
        self.bufs.append(b)
        return b

    def cm(self, batch, rows, cols, dtype, src=None):
        """A (batch..., rows, cols) column-major operand (matrix stride rows * cols), filled from src."""
        nb = int(np.prod(batch, dtype=np.int64))
        mat = rows * cols
        buf = self.buf(nb * mat * dtype.itemsize)
        bstr = tuple(s * mat for s in contiguous_strides(tuple(batch)))
        op = K.Operand(buf, make(tuple(batch) + (rows, cols), bstr + (1, rows)), dtype)
        if src is not None and nb * mat:
            copy(op, src)
        return op

    def vec(self, nb, n, dtype):
        buf = self.buf(nb * n * dtype.itemsize)
        return K.Operand(buf, make((nb, n)), dtype)

    def done(self):
        for b in self.bufs:
            retire(b)


def _ptr(op):
    return Pointer(op.buffer, op.layout.offset * op.dtype.itemsize)


def _view(op, shape, stride, offset=0):
    return K.Operand(op.buffer, make(tuple(shape), tuple(stride), op.layout.offset + offset), op.dtype)


def _info_of(params, nb, s, device):
    from ... import dtypes
    t = params.get("info")
    if t is not None:
        return K.operand(t)
    return s.vec(nb, 1, dtypes.int32)


def _work(s, lwork, dtype):
    return Pointer(s.buf(max(int(lwork), 1) * dtype.itemsize)), int(lwork)


def lapack(op, outs, ins, params):
    name = params.get("name", f"linalg.{op}")
    x = K.operand(ins[0])
    dev = x.buffer.device
    for t in list(ins[1:]) + list(outs):
        o = K.operand(t)
        if o.buffer.device != dev:
            raise RuntimeError(f"{name}: Expected all tensors to be on the same device, but found at least two "
                               f"devices, cuda:{dev} and cuda:{o.buffer.device}!")
    s = _Scratch(dev)
    try:
        _OPS[op](s, outs, ins, params, K.driver, K.driver.current_stream(dev))
    finally:
        s.done()
    return None


def _batch(t):
    shape = tuple(t.shape)
    return shape[:-2], int(np.prod(shape[:-2], dtype=np.int64))


# -- LU: getrf / getrs --------------------------------------------------------------------------------
def _getrf(s, drv, stream, W, m, n, nb, ipiv, info, dtype):
    """getrf over the column-major batch W (ipiv None: no pivoting)."""
    if not nb:
        return
    if not min(m, n):
        fill(info, 0) if info.layout.shape[0] else None
        return
    lda = max(1, m)
    lwork = drv.getrf_buffer_size(m, n, _ptr(W), lda, dtype.name, stream)
    work, lwork = _work(s, lwork, dtype)
    _count("getrf")
    drv.getrf(m, n, _ptr(W), lda, m * n, None if ipiv is None else _ptr(ipiv), min(m, n), _ptr(info), nb, work,
              lwork, dtype.name, stream)


def _getrs(s, drv, stream, W, n, nb, ipiv, Bc, k, trans, dtype):
    if not (nb and n and k):
        return
    inf = s.vec(nb, 1, _int32())
    _count("getrs")
    drv.getrs(trans, n, k, _ptr(W), max(1, n), n * n, _ptr(ipiv), n, _ptr(Bc), max(1, n), n * k, _ptr(inf), nb,
              dtype.name, stream)


def _int32():
    from ... import dtypes
    return dtypes.int32


def _op_inv_solve(s, outs, ins, params, drv, stream, op):
    A = ins[0]
    batch, nb = _batch(A)
    n = A.shape[-1]
    dt = A.dtype
    W = s.cm(batch, n, n, dt, A)
    ipiv = s.vec(nb, n, _int32())
    info = _info_of(params, nb, s, dt)
    _getrf(s, drv, stream, W, n, n, nb, ipiv, info, dt)
    if op == "inv":
        k = n
        X = s.cm(batch, n, n, dt)
        if nb * n:
            fill(X, 0)
            fill(_view(X, (nb, n), (n * n, n + 1)), 1)
    else:
        B = ins[1]
        k = B.shape[-1]
        X = s.cm(batch, n, k, dt, B)
    _getrs(s, drv, stream, W, n, nb, ipiv, X, k, False, dt)
    if nb * n * k:
        copy(outs[0], X)


def _op_lu_factor(s, outs, ins, params, drv, stream):
    A = ins[0]
    batch, nb = _batch(A)
    m, n = A.shape[-2:]
    dt = A.dtype
    W = s.cm(batch, m, n, dt, A)
    k = min(m, n)
    pivot = params.get("pivot", True)
    ipiv = s.vec(nb, k, _int32()) if pivot else None
    _getrf(s, drv, stream, W, m, n, nb, ipiv, _info_of(params, nb, s, dt), dt)
    if nb * m * n:
        copy(outs[0], W)
    if nb * k and pivot:  # pivot=False: the front end writes torch's 1..k
        copy(outs[1], _view(ipiv, tuple(outs[1].shape), contiguous_strides(tuple(outs[1].shape))))


def _op_lu_solve(s, outs, ins, params, drv, stream):
    LU, piv, B = ins
    batch, nb = _batch(B)
    n, k = B.shape[-2:]
    dt = B.dtype
    W = s.cm(batch, n, n, dt, LU)
    P = s.vec(nb, n, _int32())
    if nb * n:
        copy(_view(P, tuple(piv.shape), contiguous_strides(tuple(piv.shape))), piv)
    X = s.cm(batch, n, k, dt, B)
    _getrs(s, drv, stream, W, n, nb, P, X, k, bool(params.get("trans", False)), dt)
    if nb * n * k:
        copy(outs[0], X)


# -- Cholesky: potrf ----------------------------------------------------------------------------------
def _op_cholesky(s, outs, ins, params, drv, stream):
    A = ins[0]
    batch, nb = _batch(A)
    n = A.shape[-1]
    dt = A.dtype
    W = s.cm(batch, n, n, dt, A)
    info = _info_of(params, nb, s, dt)
    if not (nb and n):
        return
    lwork = drv.potrf_buffer_size(True, n, _ptr(W), n, dt.name, stream)
    work, lwork = _work(s, lwork, dt)
    _count("potrf")
    drv.potrf(True, n, _ptr(W), n, n * n, _ptr(info), nb, work, lwork, dt.name, stream)
    copy(outs[0], W)  # the strict upper triangle still holds A's: the front end takes tril


def _op_potrs(s, outs, ins, params, drv, stream):
    F, B = ins
    batch, nb = _batch(B)
    n, k = B.shape[-2:]
    dt = B.dtype
    W = s.cm(batch, n, n, dt, F)
    X = s.cm(batch, n, k, dt, B)
    if nb and n and k:
        inf = s.vec(nb, 1, _int32())
        _count("potrs")
        drv.potrs(not params["upper"], n, k, _ptr(W), n, n * n, _ptr(X), n, n * k, _ptr(inf), nb, dt.name, stream)
        copy(outs[0], X)


# -- QR: geqrf / orgqr / ormqr ------------------------------------------------------------------------
def _geqrf(s, drv, stream, W, m, n, nb, tau, dt):
    if not (nb and min(m, n)):
        return
    lwork = drv.geqrf_buffer_size(m, n, _ptr(W), max(1, m), dt.name, stream)
    work, lwork = _work(s, lwork, dt)
    inf = s.vec(nb, 1, _int32())
    _count("geqrf")
    drv.geqrf(m, n, _ptr(W), max(1, m), W.layout.stride[-1] * n if n else 0, _ptr(tau), tau.layout.shape[1],
              _ptr(inf), nb, work, lwork, dt.name, stream)


def _orgqr(s, drv, stream, Q, m, n, k, nb, tau, stride_tau, dt):
    """Q (column-major m x n batch, matrix stride m * n) <- the first n columns of H_1 ... H_k."""
    if not (nb and m and n):
        return
    lwork = drv.orgqr_buffer_size(m, n, k, _ptr(Q), m, _ptr(tau), dt.name, stream)
    work, lwork = _work(s, lwork, dt)
    inf = s.vec(nb, 1, _int32())
    _count("orgqr")
    drv.orgqr(m, n, k, _ptr(Q), m, m * n, _ptr(tau), stride_tau, _ptr(inf), nb, work, lwork, dt.name, stream)


def _op_qr(s, outs, ins, params, drv, stream):
    A = ins[0]
    batch, nb = _batch(A)
    m, n = A.shape[-2:]
    k = min(m, n)
    dt = A.dtype
    complete = params["mode"] == "complete"
    W = s.cm(batch, m, n, dt, A)
    tau = s.vec(nb, max(k, 1), dt)
    _geqrf(s, drv, stream, W, m, n, nb, tau, dt)
    rr = outs[1].shape[-2]  # k, or m (complete)
    if nb and rr and n:
        if rr > k:  # complete with m > n: R's rows below n are zero
            fill(outs[1], 0)
            copy(_rows_out(outs[1], k), _view(W, tuple(batch) + (k, n), W.layout.stride))
        else:
            copy(outs[1], _view(W, tuple(batch) + (k, n), W.layout.stride))
    mc = m if complete else k
    if not (nb and m and mc):
        return
    Q = s.cm(batch, m, mc, dt)
    if k:
        copy(_view(Q, tuple(batch) + (m, k), Q.layout.stride), _view(W, tuple(batch) + (m, k), W.layout.stride))
    _orgqr(s, drv, stream, Q, m, mc, k, nb, tau, max(k, 1), dt) if k else fill(Q, 0)
    if not k:  # no reflectors: Q is the identity
        fill(_view(Q, (nb, min(m, mc)), (m * mc, m + 1)), 1)
    copy(outs[0], Q)


def _rows_out(t, k):
    """The operand of t's first k rows (t a fresh contiguous tensor)."""
    o = K.operand(t)
    shape = tuple(o.layout.shape[:-2]) + (k, o.layout.shape[-1])
    return K.Operand(o.buffer, make(shape, o.layout.stride, o.layout.offset), o.dtype)


def _op_geqrf(s, outs, ins, params, drv, stream):
    A = ins[0]
    batch, nb = _batch(A)
    m, n = A.shape[-2:]
    k = min(m, n)
    dt = A.dtype
    W = s.cm(batch, m, n, dt, A)
    tau = s.vec(nb, max(k, 1), dt)
    _geqrf(s, drv, stream, W, m, n, nb, tau, dt)
    if nb * m * n:
        copy(outs[0], W)
    if nb * k:
        copy(outs[1], _view(tau, tuple(batch) + (k,), tuple(c * max(k, 1) for c in contiguous_strides(batch)) + (1,)))


def _op_orgqr(s, outs, ins, params, drv, stream):
    A, tau = ins
    batch, nb = _batch(A)
    m, n = A.shape[-2:]
    k = tau.shape[-1]
    dt = A.dtype
    Q = s.cm(batch, m, n, dt, A)
    T = s.vec(nb, max(k, 1), dt)
    if nb * k:
        copy(_view(T, tuple(batch) + (k,), tuple(c * k for c in contiguous_strides(batch)) + (1,)), tau)
    if k:
        _orgqr(s, drv, stream, Q, m, n, k, nb, T, max(k, 1), dt)
    elif nb * m * n:
        fill(Q, 0)
        fill(_view(Q, (nb, min(m, n)), (m * n, m + 1)), 1)
    if nb * m * n:
        copy(outs[0], Q)


def _op_ormqr(s, outs, ins, params, drv, stream):
    A, tau, C = ins
    batch, nb = _batch(C)
    m, n = C.shape[-2:]
    ra, k = A.shape[-2], tau.shape[-1]
    dt = C.dtype
    left, trans = bool(params["left"]), bool(params["trans"])
    W = s.cm(batch, ra, k, dt, A[..., :, :k])
    T = s.vec(nb, max(k, 1), dt)
    if nb * k:
        copy(_view(T, tuple(batch) + (k,), tuple(c * k for c in contiguous_strides(batch)) + (1,)), tau)
    X = s.cm(batch, m, n, dt, C)
    if nb and m and n and k:
        lda = max(1, ra)
        lwork = drv.ormqr_buffer_size(left, trans, m, n, k, _ptr(W), lda, _ptr(T), _ptr(X), max(1, m), dt.name,
                                      stream)
        work, lwork = _work(s, lwork, dt)
        inf = s.vec(nb, 1, _int32())
        _count("ormqr")
        drv.ormqr(left, trans, m, n, k, _ptr(W), lda, ra * k, _ptr(T), max(k, 1), _ptr(X), max(1, m), m * n,
                  _ptr(inf), nb, work, lwork, dt.name, stream)
    if nb * m * n:
        copy(outs[0], X)


# -- SVD: gesvd (m >= n; a wide matrix is factored as its transpose) -----------------------------------
def _op_svd(s, outs, ins, params, drv, stream):
    A = ins[0]
    batch, nb = _batch(A)
    m, n = A.shape[-2:]
    k = min(m, n)
    dt = A.dtype
    uv = params["compute_uv"]
    full = params["full_matrices"]
    wide = m < n
    M, N = (n, m) if wide else (m, n)  # the factored matrix (A^T when wide), M >= N
    W = s.cm(batch, M, N, dt, A.mT if wide else A)
    S = s.vec(nb, max(k, 1), dt)
    bs = tuple(batch)
    if uv:
        ucols = M if full else k
        U = s.cm(batch, M, ucols, dt)
        VT = s.cm(batch, N, N, dt)
    if nb and k:
        lwork = drv.gesvd_buffer_size(M, N, dt.name, stream)
        work, lwork = _work(s, lwork, dt)
        inf = s.vec(nb, 1, _int32())
        _count("gesvd")
        if uv:
            drv.gesvd("A" if full else "S", "A", M, N, _ptr(W), M, M * N, _ptr(S), max(k, 1), _ptr(U), M, M * ucols,
                      _ptr(VT), N, N * N, _ptr(inf), nb, work, lwork, dt.name, stream)
        else:
            drv.gesvd("N", "N", M, N, _ptr(W), M, M * N, _ptr(S), max(k, 1), None, 1, 0, None, 1, 0, _ptr(inf), nb,
                      work, lwork, dt.name, stream)
    bstr = tuple(c * max(k, 1) for c in contiguous_strides(bs))
    Sout = outs[1] if uv else outs[0]
    if nb * k:
        copy(Sout, _view(S, bs + (k,), bstr + (1,)))
    if not uv:
        return
    Uout, Vhout = outs[0], outs[2]
    if not k:  # an empty matrix: U and V are identities (full) or empty
        for o in (Uout, Vhout):
            if o.numel():
                fill(o, 0)
                r = o.shape[-1]
                fill(_view(K.operand(o), (nb, r), (r * r, r + 1)), 1)
        return
    ub = tuple(c * M * ucols for c in contiguous_strides(bs))
    vb = tuple(c * N * N for c in contiguous_strides(bs))
    if not wide:
        # U: column-major M x ucols; Vh = VT: column-major N x N
        copy(Uout, U)
        copy(Vhout, VT)
    else:
        # A^T = U' S V'^T  =>  A = V' S U'^T: U_A = V' (VT' read transposed), Vh_A = U'^T
        copy(Uout, _view(VT, bs + (N, N), vb + (N, 1)))
        copy(Vhout, _view(U, bs + (ucols, M), ub + (M, 1)))


# -- symmetric eigensolver: syevd ---------------------------------------------------------------------
def _op_eigh(s, outs, ins, params, drv, stream):
    A = ins[0]
    batch, nb = _batch(A)
    n = A.shape[-1]
    dt = A.dtype
    vectors = params["compute_v"]
    lower = params["UPLO"] == "L"
    W = s.cm(batch, n, n, dt, A)
    w = s.vec(nb, max(n, 1), dt)
    if not (nb and n):
        return
    lwork = drv.syevd_buffer_size(vectors, lower, n, _ptr(W), n, _ptr(w), dt.name, stream)
    work, lwork = _work(s, lwork, dt)
    inf = s.vec(nb, 1, _int32())
    _count("syevd")
    drv.syevd(vectors, lower, n, _ptr(W), n, n * n, _ptr(w), n, _ptr(inf), nb, work, lwork, dt.name, stream)
    copy(outs[0], _view(w, tuple(batch) + (n,), tuple(c * n for c in contiguous_strides(tuple(batch))) + (1,)))
    if vectors:
        copy(outs[1], W)


# -- general eigensolver: Xgeev (right vectors; real A: LAPACK's packed real vectors, the front end unpacks)
def _op_geev(s, outs, ins, params, drv, stream):
    A = ins[0]
    batch, nb = _batch(A)
    n = A.shape[-1]
    dt = A.dtype
    wdt = outs[0].dtype
    vectors = len(outs) > 1
    W = s.cm(batch, n, n, dt, A)
    w = s.vec(nb, max(n, 1), wdt)
    VR = s.cm(batch, n, n, dt) if vectors else None
    info = _info_of(params, nb, s, dt)
    if not (nb and n):
        return
    vr = _ptr(VR) if vectors else None
    dbytes, hbytes = drv.geev_buffer_size(vectors, n, _ptr(W), n, _ptr(w), vr, n, dt.name, stream)
    work = Pointer(s.buf(max(int(dbytes), 1)))
    _count("geev")
    drv.geev(vectors, n, _ptr(W), n, n * n, _ptr(w), n, vr, n, n * n, _ptr(info), nb, work, int(dbytes), int(hbytes),
             dt.name, stream)
    copy(outs[0], _view(w, tuple(batch) + (n,), tuple(c * n for c in contiguous_strides(tuple(batch))) + (1,)))
    if vectors:
        copy(outs[1], VR)


# -- LDL^T: sytrf -------------------------------------------------------------------------------------
def _op_ldl_factor(s, outs, ins, params, drv, stream):
    A = ins[0]
    batch, nb = _batch(A)
    n = A.shape[-1]
    dt = A.dtype
    W = s.cm(batch, n, n, dt, A)
    ipiv = s.vec(nb, max(n, 1), _int32())
    info = _info_of(params, nb, s, dt)
    if not (nb and n):
        return
    lwork = drv.sytrf_buffer_size(n, _ptr(W), n, dt.name, stream)
    work, lwork = _work(s, lwork, dt)
    _count("sytrf")
    drv.sytrf(True, n, _ptr(W), n, n * n, _ptr(ipiv), n, _ptr(info), nb, work, lwork, dt.name, stream)
    copy(outs[0], W)  # the strict upper triangle still holds A's: the front end takes tril
    copy(outs[1], _view(ipiv, tuple(batch) + (n,), tuple(c * n for c in contiguous_strides(tuple(batch))) + (1,)))


# -- triangular solve: cuBLAS trsm --------------------------------------------------------------------
def _op_trsm(s, outs, ins, params, drv, stream):
    A, B = ins
    batch, nb = _batch(B)
    m, n = B.shape[-2:]
    r = A.shape[-1]
    dt = B.dtype
    Ac = s.cm(batch, r, r, dt, A)
    X = s.cm(batch, m, n, dt, B)
    if nb and m and n:
        _count("trsm")
        drv.trsm(bool(params["left"]), not params["upper"], False, bool(params["unitriangular"]), m, n, _ptr(Ac),
                 max(1, r), r * r, _ptr(X), max(1, m), m * n, nb, dt.name, stream)
        copy(outs[0], X)


_OPS = {
    "inv": lambda *a: _op_inv_solve(*a, "inv"),
    "solve": lambda *a: _op_inv_solve(*a, "solve"),
    "lu_factor": _op_lu_factor,
    "lu_solve": _op_lu_solve,
    "cholesky": _op_cholesky,
    "potrs": _op_potrs,
    "qr": _op_qr,
    "geqrf": _op_geqrf,
    "orgqr": _op_orgqr,
    "ormqr": _op_ormqr,
    "svd": _op_svd,
    "eigh": _op_eigh,
    "ldl_factor": _op_ldl_factor,
    "trsm": _op_trsm,
    "geev": _op_geev,
}
