"""torch's older top-level forms of the factorizations: torch.svd (U, S, V), torch.qr(some=) and
torch.cholesky (the last two deprecated in torch, with its warnings), as functions and Tensor
methods, over tensorlab/ops/lapack.py."""
from __future__ import annotations

from . import creation, lapack as L, linalg_composites as C


svd_t = L._named("svd", ("U", "S", "V"))
qr_t = L._named("qr", ("Q", "R"))


def svd(input, some=True, compute_uv=True, *, out=None):
    """torch.svd: (U, S, V) with V (not Vh); some=False gives the full U and V; compute_uv=False
    gives zero-filled (full-sized) U and V, as torch."""
    L._check(input, "svd", square=False)
    if compute_uv:
        u, s, vh = L.svd(input, full_matrices=not some)
        return L._out(svd_t(u, s, vh.mT), out)
    m, n = input.shape[-2:]
    b = tuple(input.shape[:-2])
    s = L.svdvals(input)
    us, vs = b + (m, m), b + (n, n)  # torch's zero-filled U and V are full-sized whatever `some` says
    return L._out(svd_t(creation.zeros(us, dtype=input.dtype, device=input.device), s,
                      creation.zeros(vs, dtype=input.dtype, device=input.device)), out)


def qr(input, some=True, *, out=None):
    """torch.qr (deprecated in torch, with its warning): linalg.qr with mode 'reduced' / 'complete'."""
    from .. import _warn
    _warn.warn("torch.qr is deprecated in favor of torch.linalg.qr and will be removed in a future PyTorch release.\n"
               "The boolean parameter 'some' has been replaced with a string parameter 'mode'.\n"
               "Q, R = torch.qr(A, some)\nshould be replaced with\n"
               "Q, R = torch.linalg.qr(A, 'reduced' if some else 'complete')")
    q, r = L.qr(input, "reduced" if some else "complete")
    return L._out(qr_t(q, r), out)


def cholesky(input, upper=False, *, out=None):
    """torch.cholesky (deprecated in torch, with its warning)."""
    from .. import _warn
    _warn.warn("torch.cholesky is deprecated in favor of torch.linalg.cholesky and will be removed in a future PyTorch "
               "release.\nL = torch.cholesky(A)\nshould be replaced with\nL = torch.linalg.cholesky(A)\nand\n"
               "U = torch.cholesky(A, upper=True)\nshould be replaced with\nU = torch.linalg.cholesky(A).mH\n"
               "This transform will produce equivalent results for all valid (symmetric positive definite) inputs.")
    return L.cholesky(input, upper=upper, out=out)



def matrix_power(input, n, *, out=None):
    """torch.matrix_power / Tensor.matrix_power: torch.linalg.matrix_power."""
    return C.matrix_power(input, n, out=out)


def pinverse(input, rcond=1e-15):
    """torch.pinverse / Tensor.pinverse: linalg.pinv with rtol=rcond."""
    return C.pinv(input, rtol=rcond)


FUNCTIONS = ("svd", "qr", "cholesky", "matrix_power", "pinverse")
METHODS = {"svd": svd, "qr": qr, "cholesky": cholesky, "matrix_power": matrix_power, "pinverse": pinverse}
