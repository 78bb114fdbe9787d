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
        else:
            raise ValueError(f"lapack: unknown op {op!r}")
    return info
