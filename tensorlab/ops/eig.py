"""torch.linalg.eig / eigvals: the eigen-decomposition of a general (non-symmetric) square matrix,
A = V diag(w) V^-1, complex results (complex64 for float32/complex64 input, complex128 for
float64/complex128), through the `lapack` primitive's "geev" (LAPACK's geev via SciPy on the CPU;
cuSOLVER's Xgeev on CUDA, backends/cuda/solver.py).

Conventions, as torch's (which calls the same LAPACK routine on the CPU): eigenvalues in geev's
order; each eigenvector of unit 2-norm with its largest-magnitude component real (geev's
normalization). An eigenvector is defined only up to a unit complex factor e^{i phi}; that phase is
what differs between LAPACK builds on ill-conditioned input, so the tests compare A V = V diag(w),
the norms and phase-free quantities (tests/opinfo_harness.py's PHASE_FREE).

For a real A both backends return geev's packed real vectors (a conjugate pair w_j, w_j+1 = conj(w_j),
Im w_j > 0, stored as the columns Re v_j, Im v_j); _unpack builds the complex V with tensor ops on
A's device, so no host wait is needed for it.

Gradient (derived from A V = V L, L = diag(w); X = V^-1 dA V): dL = diag(X), V^-1 dV = C with
C_ij = X_ij / (w_j - w_i) off the diagonal and Re C_jj fixed by |v_j| = 1 (the phase Im C_jj is
the gauge, left at 0). Its adjoint for real losses (gradients as torch's conjugate convention):
    M = V^H gV,  G = M - V^H V diag(Re diag M),  G_ij /= conj(w_j - w_i) (i != j),  G_jj = gL_j,
    gA = V^-H G V^H     (the real part for a real A).
The loss must not depend on the phases: Im diag(M) == 0, checked as torch checks it."""
from __future__ import annotations

from .. import dtypes
from ..tensor import Tensor
from . import creation
from .lapack import LinAlgError, _host_info, _named, _out, _run

linalg_eig = _named("linalg_eig", ("eigenvalues", "eigenvectors"))


def _check(A, name):
    if not isinstance(A, Tensor):
        raise TypeError(f"{name}(): argument 'A' (position 1) must be Tensor, not {type(A).__name__}")
    if A.dim() < 2:
        raise RuntimeError(f"{name}: The input tensor A must have at least 2 dimensions (got shape "
                           f"{tuple(A.shape)}); pass a matrix or a batch of matrices.")
    dt = A.dtype
    if dt in (dtypes.float16, dtypes.bfloat16):
        raise NotImplementedError(f"{name}: not implemented for '{dt.torch_name}' (LAPACK/cuSOLVER have no "
                                  f"half-precision eigensolver); convert A with .float() first.")
    if not (dt.is_floating_point or dt.is_complex):
        raise RuntimeError(f"{name}: Expected a floating point or complex tensor as input. Got {dt.torch_name}; "
                           f"convert A with .double() or .to(complex128) first.")
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"{name}: A must be batches of square matrices, but they are {A.shape[-2]} by "
                           f"{A.shape[-1]} matrices")
    if A.numel():
        finite = A.detach().isfinite().all()
        if not bool(finite._host(f"{name}: checking the input for infs and NaNs")):
            raise RuntimeError(f"torch.{name}: input tensor should not contain infs or NaNs (shape "
                               f"{tuple(A.shape)}, {dt.torch_name}).")


def _complex_of(dt):
    return dt if dt.is_complex else dt.to_complex()


def _geev(A, name, vectors):
    """(w, V or None) from the lapack primitive, V unpacked to complex; LinAlgError where geev's QR
    iteration did not converge (info > 0), after the one host wait on info."""
    b, n = tuple(A.shape[:-2]), A.shape[-1]
    outs = [(b + (n,), _complex_of(A.dtype))] + ([(tuple(A.shape), A.dtype)] if vectors else [])
    res, info = _run("geev", name, [A], outs)
    for i, k in enumerate(_host_info(info, name)):
        if k:
            where = f"(Batch element {i}): " if A.dim() > 2 else ""
            raise LinAlgError(f"{name}: {where}The algorithm failed to converge because the input matrix is "
                              f"ill-conditioned or has too many repeated eigenvalues (error code: {k}).")
    w = res[0]
    if not vectors:
        return w, None
    vr = res[1]
    return w, (vr if A.dtype.is_complex else _unpack(w, vr))


def _unpack(w, vr):
    """geev's packed real eigenvectors as complex ones: where Im w_j > 0, v_j = vr_j + i vr_j+1; where
    Im w_j < 0 (its conjugate, the next column), v_j = vr_j-1 - i vr_j; else v_j = vr_j."""
    from .complex_ops import complex as make_complex
    from .elementwise import where
    from .shape import cat
    im = w.imag.unsqueeze(-2)  # (..., 1, n): one flag per column
    pad = creation.zeros(tuple(vr.shape[:-1]) + (1,), dtype=vr.dtype, device=vr.device)
    nxt = cat([vr[..., 1:], pad], -1)
    prv = cat([pad, vr[..., :-1]], -1)
    zero = creation.zeros((), dtype=vr.dtype, device=vr.device)
    re = where(im < 0, prv, vr)
    ii = where(im > 0, nxt, where(im < 0, -vr, zero))
    return make_complex(re, ii)


def _solve_h(V, Y):
    """V^-H Y for complex V, Y (batches), as the real 2n system [[Re, -Im], [Im, Re]] of V^H, so it runs
    (and differentiates, for double backward) on every device tensorlab's real solve runs on."""
    from .complex_ops import complex as make_complex
    from .lapack import solve
    from .shape import cat
    Vh = V.mT.conj()  # (Tensor.mH does not conjugate yet: reported)
    a, c = Vh.real, Vh.imag
    big = cat([cat([a, -c], -1), cat([c, a], -1)], -2)
    rhs = cat([Y.real, Y.imag], -2)
    x = solve(big, rhs)
    n = V.shape[-1]
    return make_complex(x[..., :n, :], x[..., n:, :])


def eig_backward(gL, gV, w, V, real_input):
    """gA from the gradients of the eigenvalues gL and eigenvectors gV (either may be None)."""
    n = w.shape[-1]
    eye = creation.eye(n, dtype=V.dtype.to_real(), device=V.device)  # real: promotes where it meets complex
    Vh = V.mT.conj()  # (Tensor.mH does not conjugate yet: reported)
    if gV is None:
        G = gL.diag_embed() if gL is not None else creation.zeros(tuple(V.shape), dtype=V.dtype, device=V.device)
    else:
        M = Vh @ gV
        d = M.diagonal(dim1=-2, dim2=-1)
        if M.numel():
            worst = float(d.imag.abs().amax()._host("linalg.eig backward: checking the loss does not depend on "
                                                    "the phases"))
            if worst > 1e-2:
                raise RuntimeError(
                    "linalg_eig_backward: The eigenvectors in the complex case are specified up to multiplication "
                    "by e^{i phi}. The specified loss function depends on this quantity, so it is ill-defined "
                    f"(max |Im diag(V^H gV)| = {worst:.3g}); use a loss of |V|, of w or of "
                    "products invariant to each column's phase.")
        G = M - (Vh @ V) * d.real.unsqueeze(-2)
        E = w.unsqueeze(-2) - w.unsqueeze(-1)  # E_ij = w_j - w_i
        G = (G / (E.conj() + eye)) * (1 - eye)
        if gL is not None:
            G = G + gL.diag_embed()
    gA = _solve_h(V, G @ Vh)
    return gA.real if real_input else gA


_F = None


def _function():
    global _F
    if _F is None:
        from ..autograd.function import Function

        class LinalgEig(Function):
            @staticmethod
            def forward(ctx, A, name):
                w, V = _geev(A, name, True)
                ctx.real_input = not A.dtype.is_complex
                ctx.save_for_backward(w, V)
                return w, V

            @staticmethod
            def backward(ctx, gL, gV):
                w, V = ctx.saved_tensors
                return eig_backward(gL, gV, w, V, ctx.real_input), None

        _F = LinalgEig
    return _F


def _needs_grad(A):
    from ..autograd import grad_mode
    return A.requires_grad and grad_mode.is_grad_enabled()


def _check_out(out, A, name, count):
    """out= checked before anything is computed (torch's message names the op and the dtypes)."""
    if out is None:
        return
    from ._common import _check_out as check
    outs = (out,) if count == 1 else tuple(out) if isinstance(out, (tuple, list)) else None
    if outs is None or len(outs) != count:
        raise TypeError(f"{name}(): argument 'out' must be a tuple of {count} Tensors")
    for t in outs:
        check(t, _complex_of(A.dtype), A.device, name)


def eig(A, *, out=None):
    """torch.linalg.eig: (eigenvalues, eigenvectors), complex, A = V diag(w) V^-1; see the module's doc."""
    _check(A, "linalg.eig")
    _check_out(out, A, "linalg.eig", 2)
    w, V = _function().apply(A, "linalg.eig") if _needs_grad(A) else _geev(A, "linalg.eig", True)
    return _out(linalg_eig(w, V), out)


def eigvals(A, *, out=None):
    """torch.linalg.eigvals: the eigenvalues of linalg.eig (the vectors are computed only for a gradient)."""
    _check(A, "linalg.eigvals")
    _check_out(out, A, "linalg.eigvals", 1)
    if _needs_grad(A):
        w = _function().apply(A, "linalg.eigvals")[0]
    else:
        w = _geev(A, "linalg.eigvals", False)[0]
    return _out(w, out)
