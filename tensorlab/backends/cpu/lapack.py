"""CPU dense linear algebra through NumPy's LAPACK bindings: one primitive, `lapack(op, outs,
ins, params)`, that computes `op` over the batch of (already validated, float32/float64)
matrices in `ins` and writes the results into the preallocated `outs`. It returns one LAPACK-style
`info` per batch element (0: success; i > 0: the failing pivot / leading minor, 1-based) for the
ops that can fail, so the front end words the error as torch does."""
from __future__ import annotations

import numpy as np

from ... import _faults
from .memory import array

__all__ = ("lapack",)


def _lu_zero_pivot(a):
    """1-based index of the first exactly-zero pivot of LU with partial pivoting (getrf's info)."""
    u = np.array(a, dtype=np.float64 if a.dtype == np.float64 else np.float32, copy=True)
    n = u.shape[-1]
    for k in range(n):
        p = k + int(np.argmax(np.abs(u[k:, k])))
        if u[p, k] == 0:
            return k + 1
        if p != k:
            u[[k, p]] = u[[p, k]]
        u[k + 1:, k:] -= np.outer(u[k + 1:, k] / u[k, k], u[k, k:])
    return 0


def _chol_minor(a):
    """1-based order of the first leading minor that is not positive-definite (potrf's info)."""
    for k in range(1, a.shape[-1] + 1):
        try:
            np.linalg.cholesky(a[:k, :k])
        except np.linalg.LinAlgError:
            return k
    return a.shape[-1]


def _batch(a):
    """a as (batch, rows, cols): the batch count given explicitly (reshape's -1 is ambiguous when a
    matrix dim is 0)."""
    return a.reshape((int(np.prod(a.shape[:-2], dtype=np.int64)),) + a.shape[-2:])


def lapack(op, outs, ins, params):
    xs = [np.array(array(t), copy=True) for t in ins]
    os = [array(t) for t in outs]
    _faults.hit("launch")
    info = []
    with np.errstate(all="ignore"):
        if op in ("inv", "solve"):
            a = xs[0]
            flat = _batch(a)
            if op == "inv":
                res = np.empty_like(flat)
                for i in range(flat.shape[0]):
                    try:
                        res[i] = np.linalg.inv(flat[i])
                        info.append(0)
                    except np.linalg.LinAlgError:
                        info.append(_lu_zero_pivot(flat[i]) or 1)
                        res[i] = np.nan  # undefined where the matrix is singular (torch: garbage)
                np.copyto(os[0], res.reshape(a.shape))
            else:
                b = xs[1]  # (..., n, k), batch already broadcast to a's
                bf = _batch(b)
                res = np.empty_like(bf)
                for i in range(flat.shape[0]):
                    try:
                        res[i] = np.linalg.solve(flat[i], bf[i])
                        info.append(0)
                    except np.linalg.LinAlgError:
                        info.append(_lu_zero_pivot(flat[i]) or 1)
                        res[i] = np.nan
                np.copyto(os[0], res.reshape(b.shape))
        elif op == "cholesky":
            a = xs[0]
            flat = _batch(a)
            res = np.empty_like(flat)
            for i in range(flat.shape[0]):
                m = np.tril(flat[i])
                m = m + np.tril(m, -1).T  # LAPACK reads only the lower triangle
                try:
                    res[i] = np.linalg.cholesky(m)
                    info.append(0)
                except np.linalg.LinAlgError:
                    info.append(_chol_minor(m))
                    res[i] = np.nan
            np.copyto(os[0], res.reshape(a.shape))
        elif op == "slogdet":
            sign, logabs = np.linalg.slogdet(xs[0])
            np.copyto(os[0], sign, casting="unsafe")
            np.copyto(os[1], logabs, casting="unsafe")
        elif op == "det":
            np.copyto(os[0], np.linalg.det(xs[0]), casting="unsafe")
        elif op == "qr":
            q, r = np.linalg.qr(xs[0], mode=params["mode"])
            np.copyto(os[0], q)
            np.copyto(os[1], r)
        elif op == "svd":
            if params["compute_uv"]:
                u, s, vh = np.linalg.svd(xs[0], full_matrices=params["full_matrices"])
                np.copyto(os[0], u)
                np.copyto(os[1], s)
                np.copyto(os[2], vh)
            else:
                np.copyto(os[0], np.linalg.svd(xs[0], compute_uv=False))
        elif op == "eigh":
            a = xs[0]
            if params["UPLO"] == "U":
                a = np.swapaxes(a, -1, -2)  # the upper triangle read as the lower one of the transpose
            if params["compute_v"]:
                w, v = np.linalg.eigh(a, UPLO="L")
                np.copyto(os[0], w)
                np.copyto(os[1], v)
            else:
                np.copyto(os[0], np.linalg.eigvalsh(a, UPLO="L"))
        elif op in _SCIPY_OPS:
            info = _SCIPY_OPS[op](xs, os, params)
        else:
            raise ValueError(f"lapack: unknown op {op!r}")
    return info


# -- the LU / LDL / Householder family through SciPy's LAPACK wrappers (imported on first use) -----------
def _f(name, a):
    from scipy.linalg import lapack as L
    return getattr(L, ("s" if a.dtype == np.float32 else "d") + name)


def _lu_factor(xs, os, params):
    a = xs[0]
    flat = _batch(a)
    m, n = a.shape[-2:]
    k = min(m, n)
    lu = _batch(os[0]) if os[0].size else None
    piv = os[1].reshape((flat.shape[0], k))
    info = []
    for i in range(flat.shape[0]):
        if not k:
            info.append(0)
            continue
        f, p, code = _f("getrf", flat[i])(flat[i])
        lu[i] = f
        piv[i] = p + 1
        info.append(int(code))
    return info


def _lu_solve(xs, os, params):
    lu, piv, b = xs
    fl, fp, fb = _batch(lu), piv.reshape(-1, piv.shape[-1]) if piv.size else None, _batch(b)
    out = _batch(os[0])
    n = b.shape[-2]
    for i in range(fb.shape[0]):
        if not (n and b.shape[-1]):
            continue
        p = fp[i].astype(np.int32) - 1
        if p.min() < 0 or p.max() >= n:
            raise RuntimeError(f"{params['name']}: the pivots of matrix {i} hold rows outside [1, {n}]")
        x, _ = _f("getrs", fl[i])(fl[i], p, fb[i], trans=1 if params.get("trans") else 0)
        out[i] = x
    return []


def _potrs(xs, os, params):
    f, b = xs
    ff, fb, out = _batch(f), _batch(b), _batch(os[0])
    for i in range(fb.shape[0]):
        if fb[i].size:
            x, _ = _f("potrs", ff[i])(ff[i], fb[i], lower=int(not params["upper"]))
            out[i] = x
    return []


def _geqrf(xs, os, params):
    a = xs[0]
    flat = _batch(a)
    k = min(a.shape[-2:])
    out, tau = _batch(os[0]), os[1].reshape((flat.shape[0], k))
    for i in range(flat.shape[0]):
        if k:
            qr, t, _, _ = _f("geqrf", flat[i])(flat[i])
            out[i], tau[i] = qr, t
    return []


def _orgqr(xs, os, params):
    a, tau = xs
    m, n = a.shape[-2:]
    k = tau.shape[-1]
    fa, out = _batch(a), _batch(os[0])
    ft = tau.reshape((fa.shape[0], k))
    for i in range(fa.shape[0]):
        if not (m and n):
            continue
        if not k:
            out[i] = np.eye(m, n, dtype=a.dtype)
            continue
        q, _, _ = _f("orgqr", fa[i])(fa[i], ft[i])
        out[i] = q
    return []


def _ormqr(xs, os, params):
    a, tau, c = xs
    m, n = c.shape[-2:]
    k = tau.shape[-1]
    fa, fc, out = _batch(a[..., :, :k]), _batch(c), _batch(os[0])
    ft = tau.reshape((fc.shape[0], k))
    for i in range(fc.shape[0]):
        if not (m and n):
            continue
        if not k:
            out[i] = fc[i]
            continue
        cq, _, _ = _f("ormqr", fc[i])("L" if params["left"] else "R", "T" if params["trans"] else "N", fa[i],
                                      ft[i], fc[i], max(1, 64 * max(m, n)))
        out[i] = cq
    return []


def _ldl_factor(xs, os, params):
    a = xs[0]
    flat = _batch(a)
    n = a.shape[-1]
    out, piv = _batch(os[0]), os[1].reshape(-1, n) if n else None
    info = []
    for i in range(flat.shape[0]):
        if not n:
            info.append(0)
            continue
        ldu, p, code = _f("sytrf", flat[i])(flat[i], lower=1)
        out[i] = np.tril(ldu)
        piv[i] = p
        info.append(int(code))
    return info


def _ldl_solve(xs, os, params):
    ld, piv, b = xs
    n = b.shape[-2]
    fl, fb, out = _batch(ld), _batch(b), _batch(os[0])
    fp = piv.reshape(-1, n) if n else None
    for i in range(fb.shape[0]):
        if not (n and b.shape[-1]):
            continue
        x, _ = _f("sytrs", fl[i])(fl[i], fp[i].astype(np.int32), fb[i], lower=1)
        out[i] = x
    return []


def _geev(xs, os, params):
    """The general eigensolver, LAPACK's own output: outs [w (complex, batch x n), and with vectors
    vr in A's dtype]; for a real A, vr holds geev's packed form (a conjugate pair's vectors as the
    real and imaginary columns j, j+1, the one with Im w > 0 first), unpacked by the front end
    (ops/eig.py) as it unpacks cuSOLVER's Xgeev. info: geev's (i > 0: QR did not converge)."""
    from scipy.linalg import lapack as L
    a = xs[0]
    n = a.shape[-1]
    flat = _batch(a)
    w = os[0].reshape((flat.shape[0], n))
    vr = _batch(os[1]) if len(os) > 1 else None
    cplx = np.iscomplexobj(a)
    f = getattr(L, {np.float32: "s", np.float64: "d", np.complex64: "c", np.complex128: "z"}[a.dtype.type] + "geev")
    info = []
    for i in range(flat.shape[0]):
        if not n:
            info.append(0)
            continue
        res = f(flat[i], compute_vl=0, compute_vr=int(vr is not None), lwork=max(1, 34 * n))
        if cplx:
            w[i], v, code = res[0], res[2], res[3]
        else:
            w[i] = res[0] + 1j * res[1]
            v, code = res[3], res[4]
        if vr is not None:
            vr[i] = v
        info.append(int(code))
    return info


def _trsm(xs, os, params):
    from scipy.linalg import blas
    a, b = xs
    fa, fb, out = _batch(a), _batch(b), _batch(os[0])
    f = getattr(blas, ("s" if a.dtype == np.float32 else "d") + "trsm")
    for i in range(fb.shape[0]):
        if fb[i].size:
            out[i] = f(1.0, fa[i], fb[i], side=0 if params["left"] else 1, lower=int(not params["upper"]),
                       diag=int(bool(params["unitriangular"])))
    return []


_SCIPY_OPS = {"potrs": _potrs, "lu_factor": _lu_factor, "lu_solve": _lu_solve, "geqrf": _geqrf, "orgqr": _orgqr, "ormqr": _ormqr,
              "ldl_factor": _ldl_factor, "ldl_solve": _ldl_solve, "trsm": _trsm, "geev": _geev}
