"""Every tl.linalg factorization (and the LU / LDL / Householder family) on every device against
torch on the CPU: batched, empty, singular (info on the device for the _ex forms, torch's errors
for the others), gradients, no host wait where torch has none; and the emulated cuSOLVER
stand-ins' argument checks (the call path the real library sees)."""
from __future__ import annotations

import numpy as np
import pytest

import tensorlab as tl
from tensorlab.autograd import gradcheck


def rnd(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def spd(n, batch=(), seed=0):
    a = rnd(*batch, n, n, seed=seed)
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


def close(ours, ref, rtol=1e-7, atol=1e-9):
    assert tuple(ours.shape) == tuple(ref.shape), (ours.shape, ref.shape)
    assert str(ours.dtype).split(".")[-1] == str(ref.dtype).split(".")[-1]
    np.testing.assert_allclose(ours.detach().cpu().numpy(), ref.detach().numpy(), rtol=rtol, atol=atol)


SQUARE = [(3, 3), (2, 4, 4), (2, 1, 3, 3), (0, 3, 3), (2, 0, 0)]
RECT = [(4, 3), (3, 5), (2, 5, 2), (2, 2, 6), (0, 3), (3, 0), (2, 0, 4)]


@pytest.mark.parametrize("shape", SQUARE)
def test_square_factorizations(device, torch, shape):
    a = rnd(*shape)
    A, At = tl.tensor(a, device=device), torch.tensor(a)
    assert A.device.type == device
    close(tl.linalg.inv(A), torch.linalg.inv(At))
    close(tl.linalg.det(A), torch.linalg.det(At))
    for x, y in zip(tl.linalg.slogdet(A), torch.linalg.slogdet(At)):
        close(x, y)
    b = rnd(*shape[:-1], 2, seed=1)
    close(tl.linalg.solve(A, tl.tensor(b, device=device)), torch.linalg.solve(At, torch.tensor(b)))
    close(tl.linalg.solve(A, tl.tensor(b, device=device).mT, left=False), torch.linalg.solve(At, torch.tensor(b).mT,
                                                                                           left=False))
    s = spd(shape[-1], shape[:-2])
    S, St = tl.tensor(s, device=device), torch.tensor(s)
    close(tl.linalg.cholesky(S), torch.linalg.cholesky(St))
    close(tl.linalg.cholesky(S, upper=True), torch.linalg.cholesky(St, upper=True))
    close(tl.linalg.eigvalsh(S), torch.linalg.eigvalsh(St))
    for uplo in ("L", "U"):
        w, v = tl.linalg.eigh(S + tl.tensor(np.triu(a, 1), device=device), UPLO=uplo)
        tw, tv = torch.linalg.eigh(St + torch.tensor(np.triu(a, 1)), UPLO=uplo)
        close(w, tw)
        close(v.abs(), tv.abs(), atol=1e-7)  # eigenvectors up to sign
    for x, y in zip(tl.linalg.lu_factor(A), torch.linalg.lu_factor(At)):
        close(x, y)
    for x, y in zip(tl.linalg.lu(A), torch.linalg.lu(At)):
        close(x, y)
    LU, piv = torch.linalg.lu_factor(At)
    for left in (True, False):
        for adjoint in (True, False):
            bb = b if left else np.swapaxes(b, -1, -2)
            close(tl.linalg.lu_solve(tl.tensor(LU.numpy(), device=device), tl.tensor(piv.numpy(), device=device),
                                     tl.tensor(bb, device=device), left=left, adjoint=adjoint),
                  torch.linalg.lu_solve(LU, piv, torch.tensor(bb), left=left, adjoint=adjoint), atol=1e-8)
    sym = a + np.swapaxes(a, -1, -2)
    for x, y in zip(tl.linalg.ldl_factor(tl.tensor(sym, device=device)), torch.linalg.ldl_factor(torch.tensor(sym))):
        close(x, y)


@pytest.mark.parametrize("shape", RECT)
def test_rectangular_factorizations(device, torch, shape):
    a = rnd(*shape)
    A, At = tl.tensor(a, device=device), torch.tensor(a)
    for mode in ("reduced", "complete", "r"):
        q, r = tl.linalg.qr(A, mode=mode)
        tq, tr = torch.linalg.qr(At, mode=mode)
        assert tuple(q.shape) == tuple(tq.shape)
        close(r.abs(), tr.abs())  # up to the signs of R's rows (LAPACK's choice on both)
        if mode != "r":
            close(q @ r, At if mode == "reduced" or shape[-2] <= shape[-1] else (tq @ tr))
    for full in (True, False):
        u, s_, vh = tl.linalg.svd(A, full_matrices=full)
        tu, ts, tvh = torch.linalg.svd(At, full_matrices=full)
        assert (tuple(u.shape), tuple(vh.shape)) == (tuple(tu.shape), tuple(tvh.shape))
        close(s_, ts)
        k = ts.shape[-1]
        close((u[..., :, :k] * s_.unsqueeze(-2)) @ vh[..., :k, :], At)
    close(tl.linalg.svdvals(A), torch.linalg.svdvals(At))
    for x, y in zip(tl.linalg.lu_factor(A), torch.linalg.lu_factor(At)):
        close(x, y)
    for x, y in zip(tl.linalg.lu(A), torch.linalg.lu(At)):
        close(x, y)
    g, tau = tl.geqrf(A)
    tg, ttau = torch.geqrf(At)
    close(g, tg)
    close(tau, ttau)
    if shape[-2] >= shape[-1]:
        close(tl.linalg.householder_product(g, tau), torch.linalg.householder_product(tg, ttau))
    m = shape[-2]
    for left in (True, False):
        for tr_ in (True, False):
            c = rnd(*shape[:-2], m, 3, seed=2) if left else rnd(*shape[:-2], 3, m, seed=2)
            close(tl.ormqr(g, tau, tl.tensor(c, device=device), left, tr_),
                  torch.ormqr(tg, ttau, torch.tensor(c), left, tr_))


def test_composites_on_every_device(device, torch):
    a = rnd(2, 5, 3)
    A, At = tl.tensor(a, device=device), torch.tensor(a)
    close(tl.linalg.pinv(A), torch.linalg.pinv(At))
    close(tl.linalg.matrix_rank(A), torch.linalg.matrix_rank(At))
    close(tl.linalg.matrix_norm(A, "nuc"), torch.linalg.matrix_norm(At, "nuc"))
    close(tl.linalg.matrix_norm(A, 2), torch.linalg.matrix_norm(At, 2))
    close(tl.linalg.cond(A[..., :3, :]), torch.linalg.cond(At[..., :3, :]))
    b = rnd(2, 5, 2, seed=3)
    close(tl.linalg.lstsq(A, tl.tensor(b, device=device)).solution,
          torch.linalg.lstsq(At, torch.tensor(b)).solution, atol=1e-8)
    L = np.linalg.cholesky(spd(3, (2,)))
    rhs = rnd(2, 3, 2, seed=6)
    for upper in (False, True):
        F = np.swapaxes(L, -1, -2) if upper else L
        close(tl.cholesky_solve(tl.tensor(rhs, device=device), tl.tensor(F, device=device), upper),
              torch.cholesky_solve(torch.tensor(rhs), torch.tensor(F), upper))
    t = np.triu(rnd(2, 3, 3, seed=4)) + 3 * np.eye(3)
    for left in (True, False):
        bb = rnd(2, 3, 2, seed=5) if left else rnd(2, 2, 3, seed=5)
        close(tl.linalg.solve_triangular(tl.tensor(t, device=device), tl.tensor(bb, device=device), upper=True,
                                         left=left),
              torch.linalg.solve_triangular(torch.tensor(t), torch.tensor(bb), upper=True, left=left))
    close(tl.linalg.solve_triangular(tl.tensor(t, device=device).mT, tl.tensor(bb.swapaxes(-1, -2), device=device),
                                     upper=False, unitriangular=True),
          torch.linalg.solve_triangular(torch.tensor(t).mT, torch.tensor(bb.swapaxes(-1, -2)), upper=False,
                                        unitriangular=True))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_float32_and_float64(device, torch, dtype):
    a = rnd(3, 4, 4).astype(dtype)
    tol = dict(rtol=1e-4, atol=1e-5) if dtype == "float32" else {}
    A, At = tl.tensor(a, device=device), torch.tensor(a)
    close(tl.linalg.inv(A), torch.linalg.inv(At), **tol)
    close(tl.linalg.svdvals(A), torch.linalg.svdvals(At), **tol)
    close(tl.linalg.lu_factor(A).LU, torch.linalg.lu_factor(At).LU, **tol)
    close(tl.linalg.eigvalsh(A + A.mT), torch.linalg.eigvalsh(At + At.mT), **tol)


def test_singular_input_info_and_errors(device, torch):
    sing = np.array([[[1., 2], [2, 4]], [[1., 0], [0, 1]]])
    A, At = tl.tensor(sing, device=device), torch.tensor(sing)
    inv, info = tl.linalg.inv_ex(A)
    assert info.device.type == device
    close(info, torch.linalg.inv_ex(At).info)
    close(tl.linalg.solve_ex(A, A).info, torch.linalg.solve_ex(At, At).info)
    close(tl.linalg.lu_factor_ex(A).info, torch.linalg.lu_factor_ex(At).info)
    close(tl.linalg.lu_factor_ex(A).LU, torch.linalg.lu_factor_ex(At).LU)
    notpd = np.array([[[1., 0], [0, 1]], [[1., 2], [2, 1]]])
    close(tl.linalg.cholesky_ex(tl.tensor(notpd, device=device)).info,
          torch.linalg.cholesky_ex(torch.tensor(notpd)).info)
    close(tl.linalg.det(A), torch.linalg.det(At))
    for x, y in zip(tl.linalg.slogdet(A), torch.linalg.slogdet(At)):
        close(x, y)
    for ours, theirs in ((lambda: tl.linalg.inv(A), lambda: torch.linalg.inv(At)),
                         (lambda: tl.linalg.solve(A, A), lambda: torch.linalg.solve(At, At)),
                         (lambda: tl.linalg.inv_ex(A, check_errors=True), lambda: torch.linalg.inv_ex(At, check_errors=True)),
                         (lambda: tl.linalg.lu_factor(A), lambda: torch.linalg.lu_factor(At)),
                         (lambda: tl.linalg.cholesky(tl.tensor(notpd, device=device)),
                          lambda: torch.linalg.cholesky(torch.tensor(notpd)))):
        with pytest.raises(RuntimeError) as te:
            theirs()
        with pytest.raises(RuntimeError) as oe:
            ours()
        assert str(oe.value) == str(te.value)
        assert isinstance(oe.value, tl.linalg.LinAlgError) == isinstance(te.value, torch.linalg.LinAlgError)


def test_ex_forms_do_not_wait_and_checks_name_their_wait(device):
    if device == "cpu":
        pytest.skip("the CPU has no device to wait for")
    A = tl.tensor(rnd(2, 3, 3), device=device)
    S = tl.tensor(spd(3, (2,)), device=device)
    with tl.cuda.set_sync_debug_mode("error"):
        tl.linalg.inv_ex(A)
        tl.linalg.solve_ex(A, A)
        tl.linalg.cholesky_ex(S)
        tl.linalg.lu_factor_ex(A)
        tl.linalg.ldl_factor_ex(S)
        tl.linalg.det(A)
        tl.linalg.slogdet(A)
        tl.linalg.qr(A)
        tl.linalg.svd(A)
        tl.linalg.eigh(S)
        g, tau = tl.geqrf(A)
        tl.linalg.householder_product(g, tau)
        tl.ormqr(g, tau, A)
        LU, piv, _ = tl.linalg.lu_factor_ex(A)
        tl.lu_unpack(LU, piv)
        tl.linalg.lu(A)
        tl.linalg.lu_solve(LU, piv, A)
        LD, lpiv, _ = tl.linalg.ldl_factor_ex(S)
        tl.linalg.ldl_solve(LD, lpiv, A)
        tl.linalg.solve_triangular(A, A, upper=True)
        tl.cholesky_solve(A, S)
        with pytest.raises(RuntimeError, match="linalg.inv: checking the factorization's info"):
            tl.linalg.inv(A)


def test_inputs_are_left_unchanged(device):
    a = rnd(2, 4, 3)
    A = tl.tensor(a, device=device)
    tl.linalg.svd(A)
    tl.linalg.qr(A)
    tl.linalg.lu_factor(A)
    tl.geqrf(A)
    np.testing.assert_array_equal(A.cpu().numpy(), a)
    s = spd(3, (2,))
    S = tl.tensor(s, device=device)
    tl.linalg.cholesky(S)
    tl.linalg.eigh(S)
    tl.linalg.inv(S)
    np.testing.assert_array_equal(S.cpu().numpy(), s)


def _leaf(a, device):
    return tl.tensor(a, device=device, requires_grad=True)


def test_gradients_match_torch(device, torch):
    for shape in [(3, 3), (2, 4, 2), (2, 4)]:
        a = rnd(*shape)
        g = rnd(*shape, seed=7)
        A = _leaf(a, device)
        tl.linalg.lu_factor(A).LU.backward(tl.tensor(g, device=device))
        At = torch.tensor(a, requires_grad=True)
        torch.linalg.lu_factor(At).LU.backward(torch.tensor(g))
        close(A.grad, At.grad, atol=1e-8)
        A = _leaf(a, device)
        P, L, U = tl.linalg.lu(A)
        (L.sum() + (U * U).sum()).backward()
        At = torch.tensor(a, requires_grad=True)
        tP, tL, tU = torch.linalg.lu(At)
        (tL.sum() + (tU * tU).sum()).backward()
        close(A.grad, At.grad, atol=1e-8)
    a = rnd(2, 3, 3)
    LU, piv = torch.linalg.lu_factor(torch.tensor(a))
    b = rnd(2, 3, 2, seed=8)
    for left, adjoint in ((True, False), (True, True), (False, False), (False, True)):
        bb = b if left else np.swapaxes(b, -1, -2)
        L1, B1 = _leaf(LU.numpy(), device), _leaf(bb, device)
        tl.linalg.lu_solve(L1, tl.tensor(piv.numpy(), device=device), B1, left=left, adjoint=adjoint).sum().backward()
        L2, B2 = LU.clone().requires_grad_(), torch.tensor(bb, requires_grad=True)
        torch.linalg.lu_solve(L2, piv, B2, left=left, adjoint=adjoint).sum().backward()
        close(L1.grad, L2.grad, atol=1e-8)
        close(B1.grad, B2.grad, atol=1e-8)
    q, tau = torch.geqrf(torch.tensor(rnd(2, 4, 3)))
    Q1, T1 = _leaf(q.numpy(), device), _leaf(tau.numpy(), device)
    (tl.linalg.householder_product(Q1, T1) ** 2 * tl.tensor(rnd(2, 4, 3, seed=9), device=device)).sum().backward()
    Q2, T2 = q.clone().requires_grad_(), tau.clone().requires_grad_()
    (torch.linalg.householder_product(Q2, T2) ** 2 * torch.tensor(rnd(2, 4, 3, seed=9))).sum().backward()
    close(Q1.grad, Q2.grad, atol=1e-8)
    close(T1.grad, T2.grad, atol=1e-8)


def test_gradcheck(device):
    a = rnd(3, 3)
    assert gradcheck(lambda t: tl.linalg.lu_factor(t).LU, (_leaf(a, device),))
    assert gradcheck(lambda t: tl.linalg.lu(t).U, (_leaf(rnd(2, 4), device),))
    assert gradcheck(lambda t: tl.linalg.lu(t).L, (_leaf(rnd(4, 2), device),))
    LU, piv = tl.linalg.lu_factor(tl.tensor(a, device=device))
    assert gradcheck(lambda l_, b: tl.linalg.lu_solve(l_, piv, b, adjoint=True),
                     (_leaf(LU.cpu().numpy(), device), _leaf(rnd(3, 2), device)))
    g, tau = tl.geqrf(tl.tensor(rnd(4, 3), device=device))
    assert gradcheck(tl.linalg.householder_product, (_leaf(g.cpu().numpy(), device), _leaf(tau.cpu().numpy(), device)))
    assert gradcheck(lambda x, t, c: tl.ormqr(x, t, c, False, True),
                     (_leaf(g.cpu().numpy(), device), _leaf(tau.cpu().numpy(), device), _leaf(rnd(2, 4), device)))
    assert gradcheck(tl.linalg.inv, (_leaf(a, device),))
    assert gradcheck(tl.linalg.det, (_leaf(a, device),))
    assert gradcheck(lambda t: tl.linalg.svd(t, full_matrices=False).S, (_leaf(rnd(4, 3), device),))


def test_legacy_names_and_methods(device, torch):
    a = rnd(2, 3, 3)
    A, At = tl.tensor(a, device=device), torch.tensor(a)
    lu_, piv, info = tl.lu(A, get_infos=True)
    tlu, tpiv, tinfo = torch.lu(At, get_infos=True)
    close(lu_, tlu)
    close(piv, tpiv)
    close(info, tinfo)
    close(A.lu()[0], At.lu()[0])
    b = rnd(2, 3, 2, seed=3)
    close(tl.lu_solve(tl.tensor(b, device=device), lu_, piv), torch.lu_solve(torch.tensor(b), tlu, tpiv))
    close(tl.tensor(b, device=device).lu_solve(lu_, piv), torch.tensor(b).lu_solve(tlu, tpiv))
    for x, y in zip(tl.lu_unpack(lu_, piv), torch.lu_unpack(tlu, tpiv)):
        close(x, y)
    P, L, U = tl.lu_unpack(lu_, piv, unpack_pivots=False)
    assert P.numel() == 0
    g, tau = A.geqrf()
    close(g, At.geqrf()[0])
    close(g.orgqr(tau), torch.tensor(g.cpu().numpy()).orgqr(torch.tensor(tau.cpu().numpy())))


def test_ldl_solve(device, torch):
    """CPU: LAPACK's sytrs; CUDA: the same steps as tensor ops (cuSOLVER's sytrs is not in CuPy)."""
    for n, zero in ((4, False), (5, True), (1, False)):
        a = rnd(2, n, n, seed=n)
        s = a + np.swapaxes(a, -1, -2)
        if zero and n > 1:
            s[..., 0, 0] = 0  # Bunch-Kaufman takes a 2x2 pivot
        LD, piv = tl.linalg.ldl_factor(tl.tensor(s, device=device))
        tLD, tpiv = torch.linalg.ldl_factor(torch.tensor(s))
        close(LD, tLD)
        close(piv, tpiv)
        assert not zero or bool((tpiv < 0).any())
        b = rnd(2, n, 3, seed=2)
        close(tl.linalg.ldl_solve(LD, piv, tl.tensor(b, device=device)),
              torch.linalg.ldl_solve(tLD, tpiv, torch.tensor(b)), atol=1e-8)
        close(tl.linalg.ldl_solve(LD[0], piv[0], tl.tensor(b, device=device)),
              torch.linalg.ldl_solve(tLD[0], tpiv[0], torch.tensor(b)), atol=1e-8)


def test_lowrank(device):
    a = rnd(20, 4) @ rnd(4, 12, seed=1)  # rank 4
    A = tl.tensor(a, device=device)
    U, S, V = tl.svd_lowrank(A, q=6)
    assert (tuple(U.shape), tuple(S.shape), tuple(V.shape)) == ((20, 6), (6,), (12, 6))
    np.testing.assert_allclose(((U * S) @ V.mT).cpu().numpy(), a, atol=1e-8)
    np.testing.assert_allclose(S.cpu().numpy()[:4], np.linalg.svd(a, compute_uv=False)[:4], rtol=1e-8)
    U, S, V = tl.pca_lowrank(A, q=4)
    c = a - a.mean(0)
    np.testing.assert_allclose(S.cpu().numpy(), np.linalg.svd(c, compute_uv=False)[:4], rtol=1e-8)
    U, S, V = tl.svd_lowrank(tl.tensor(a.T, device=device), q=5, M=tl.tensor(a.T.mean(0), device=device))
    assert tuple(U.shape) == (12, 5)
    with pytest.raises(ValueError, match="q"):
        tl.pca_lowrank(A, q=50)


def test_argument_errors(device, torch):
    a = rnd(3, 3)
    A, At = tl.tensor(a, device=device), torch.tensor(a)
    cases = [
        lambda m, X: m.linalg.lu_solve(X, m.zeros(3, dtype=m.int32), X[:2]),
        lambda m, X: m.linalg.householder_product(X[:2], m.zeros(2, dtype=X.dtype)),
        lambda m, X: m.ormqr(X, m.zeros(4, dtype=X.dtype), X),
        lambda m, X: m.linalg.lu_factor(X[0]),
    ]
    for f in cases:
        with pytest.raises(RuntimeError) as te:
            f(torch, At)
        with pytest.raises(RuntimeError) as oe:
            f(tl, A)
        assert str(oe.value) == str(te.value)
    if device == "cpu":
        with pytest.raises(RuntimeError, match="LU without pivoting is not implemented on the CPU"):
            tl.linalg.lu_factor(A, pivot=False)
    else:  # CUDA factors without pivoting (getrf with no ipiv), pivots 1..k as torch
        LU, piv = tl.linalg.lu_factor(A, pivot=False)
        assert piv.cpu().tolist() == [1, 2, 3]
        L, U = np.tril(LU.cpu().numpy(), -1) + np.eye(3), np.triu(LU.cpu().numpy())
        np.testing.assert_allclose(L @ U, a, atol=1e-10)


def test_emulated_solver_checks_arguments(device):
    if device == "cpu":
        pytest.skip("the stand-ins belong to the emulated CUDA driver")
    from tensorlab.backends.cuda import launch as K
    drv = K.driver
    if type(drv).__name__ != "EmulationDriver":
        pytest.skip("a real GPU: the library itself checks")
    from tensorlab.backends.cuda.driver import Pointer
    A = tl.tensor(rnd(4, 4), device=device)
    info = tl.zeros(1, dtype=tl.int32, device=device)
    piv = tl.zeros(4, dtype=tl.int32, device=device)
    op = K.operand
    stream = drv.current_stream(0)
    P = lambda t: Pointer(op(t).buffer, 0)  # noqa: E731
    W = P(tl.zeros(1000, dtype=tl.float64, device=device))
    with pytest.raises(RuntimeError, match="ld=3 < max"):
        drv.getrf(4, 4, P(A), 3, 16, P(piv), 4, P(info), 1, W, 1000, "float64", stream)
    with pytest.raises(RuntimeError, match="lwork"):
        drv.getrf(4, 4, P(A), 4, 16, P(piv), 4, P(info), 1, P(A), 1, "float64", stream)
    with pytest.raises(RuntimeError, match="bytes at offset"):
        drv.getrf(4, 4, P(A), 4, 16, P(piv), 4, P(info), 2, W, drv.getrf_buffer_size(4, 4, P(A), 4, "float64",
                                                                                    stream), "float64", stream)
    with pytest.raises(RuntimeError, match="m >= n"):
        drv.gesvd("S", "A", 2, 4, P(A), 2, 8, P(A), 2, P(A), 2, 4, P(A), 4, 16, P(info), 1, W, 1000, "float64", stream)
    with pytest.raises(RuntimeError, match="dtype"):
        drv.potrf(True, 4, P(A), 4, 16, P(info), 1, W, 1000, "float16", stream)
    # a well-formed call factors in place and writes info on the device
    drv.getrf(4, 4, P(A), 4, 16, P(piv), 4, P(info), 1, W, 1000, "float64", stream)
    assert info.item() == 0 and sorted(set(piv.cpu().tolist())) != [0]


def test_cupy_driver_calls_cusolver_per_matrix(monkeypatch):
    """The CuPy driver's library calls (runs without a GPU, on fake cusolver/cublas modules): each
    batch element's pointers advance by its stride in bytes, None pointers become NULL, the handle
    is bound to the stream first."""
    import contextlib
    import sys
    import types

    from tensorlab.backends.cuda import cupy_driver
    from tensorlab.backends.cuda.driver import Pointer

    calls = []

    class Rec(types.ModuleType):
        def __getattr__(self, name):
            if name.isupper() or name.startswith("CU"):
                return f"<{name}>"
            return lambda *a: calls.append((name, a)) or 77

    libs = types.ModuleType("cupy_backends.cuda.libs")
    libs.cusolver, libs.cublas = Rec("cusolver"), Rec("cublas")
    for mod in ("cupy_backends", "cupy_backends.cuda"):
        monkeypatch.setitem(sys.modules, mod, types.ModuleType(mod))
    monkeypatch.setitem(sys.modules, "cupy_backends.cuda.libs", libs)
    monkeypatch.setitem(sys.modules, "cupy_backends.cuda.libs.cusolver", libs.cusolver)
    monkeypatch.setitem(sys.modules, "cupy_backends.cuda.libs.cublas", libs.cublas)
    arrays = []

    class DevArr:  # CuPy's device array, as far as the pointer arrays use it
        def __init__(self, v):
            self.v = v
            self.data = types.SimpleNamespace(ptr=900000 + len(arrays))
            arrays.append(self)

        def __mul__(self, k):
            return DevArr(self.v * k)

        def __add__(self, k):
            return DevArr(self.v + k)

    fake_cp = types.SimpleNamespace(
        arange=lambda n, dtype: DevArr(np.arange(n, dtype=np.uint64)), uint64=np.uint64,
        cuda=types.SimpleNamespace(
            Device=lambda d: contextlib.nullcontext(),
            runtime=types.SimpleNamespace(memsetAsync=lambda *a: calls.append(("memsetAsync", a))),
            device=types.SimpleNamespace(get_cusolver_handle=lambda: "hs", get_cublas_handle=lambda: "hb")))
    monkeypatch.setattr(cupy_driver, "_cp", fake_cp)
    d = cupy_driver.CupyDriver()
    stream = types.SimpleNamespace(device=0, ptr=4242, cp=contextlib.nullcontext())

    def ptr(base, off=0):
        return Pointer(types.SimpleNamespace(ptr=base), off)

    a, ipiv, info, work = ptr(10000, 8), ptr(20000), ptr(30000), ptr(40000)
    # square batches: one cuBLAS getrfBatched / getrsBatched / cuSOLVER potrfBatched call over pointer arrays
    d.getrf(3, 3, a, 3, 9, ipiv, 3, info, 4, work, 77, "float64", stream)
    (name, args), = [c for c in calls if c[0] == "dgetrfBatched"]
    assert args == ("hb", 3, arrays[-1].data.ptr, 3, 20000, 30000, 4)
    assert arrays[-1].v.tolist() == [10008 + i * 72 for i in range(4)]
    calls.clear()
    d.getrs(False, 3, 2, a, 3, 9, ipiv, 3, ptr(50000), 3, 6, info, 4, "float32", stream)
    (name, args), = [c for c in calls if c[0] == "sgetrsBatched"]
    assert args[:6] == ("hb", "<CUBLAS_OP_N>", 3, 2, arrays[-4].data.ptr, 3) and args[6:10] == (
        20000, arrays[-1].data.ptr, 3, args[9]) and args[10] == 4
    assert arrays[-4].v.tolist() == [10008 + i * 36 for i in range(4)]  # arange, *, + per array
    assert arrays[-1].v.tolist() == [50000 + i * 24 for i in range(4)]
    assert calls[-1] == ("memsetAsync", (30000, 0, 16, 4242))
    calls.clear()
    d.potrf(False, 3, a, 3, 9, info, 4, work, 77, "float64", stream)
    assert calls[-1] == ("dpotrfBatched", ("hs", "<CUBLAS_FILL_MODE_UPPER>", 3, arrays[-1].data.ptr, 3, 30000, 4))
    assert arrays[-1].v.tolist() == [10008 + i * 72 for i in range(4)]
    # rectangular (or large) matrices: cuSOLVER per matrix
    assert d.getrf_buffer_size(4, 3, a, 4, "float64", stream) == 77
    calls.clear()
    d.getrf(4, 3, a, 4, 12, ipiv, 3, info, 2, work, 77, "float64", stream)
    assert calls[0] == ("setStream", ("hs", 4242))
    assert [c for c in calls if c[0] == "dgetrf"] == [
        ("dgetrf", ("hs", 4, 3, 10008, 4, 40000, 20000, 30000)),
        ("dgetrf", ("hs", 4, 3, 10008 + 12 * 8, 4, 40000, 20000 + 3 * 4, 30004))]
    calls.clear()
    d.getrf(3, 3, a, 3, 9, None, 3, info, 1, work, 77, "float32", stream)
    assert calls[-1] == ("sgetrf", ("hs", 3, 3, 10008, 3, 40000, 0, 30000))
    calls.clear()
    monkeypatch.setattr(cupy_driver.CupyDriver, "_BATCHED_MAX_N", 2)
    d.getrs(True, 3, 2, a, 3, 9, ipiv, 3, ptr(50000), 3, 6, info, 2, "float64", stream)
    assert [c[1] for c in calls if c[0] == "dgetrs"] == [
        ("hs", "<CUBLAS_OP_T>", 3, 2, 10008, 3, 20000, 50000, 3, 30000),
        ("hs", "<CUBLAS_OP_T>", 3, 2, 10008 + 72, 3, 20012, 50000 + 48, 3, 30004)]
    calls.clear()
    d.gesvd("N", "N", 4, 3, a, 4, 12, ptr(60000), 3, None, 1, 0, None, 1, 0, info, 1, work, 77, "float32", stream)
    assert calls[-1] == ("sgesvd", ("hs", ord("N"), ord("N"), 4, 3, 10008, 4, 60000, 0, 1, 0, 1, 40000, 77, 0,
                                    30000))
    calls.clear()
    d.syevd(True, False, 3, a, 3, 9, ptr(70000), 3, info, 2, work, 77, "float64", stream)
    assert [c[1] for c in calls if c[0] == "dsyevd"][1] == (
        "hs", "<CUSOLVER_EIG_MODE_VECTOR>", "<CUBLAS_FILL_MODE_UPPER>", 3, 10008 + 72, 3, 70024, 40000, 77, 30004)
    calls.clear()
    d.potrf(True, 3, a, 3, 9, info, 1, work, 77, "float64", stream)
    assert calls[-1] == ("dpotrf", ("hs", "<CUBLAS_FILL_MODE_LOWER>", 3, 10008, 3, 40000, 77, 30000))
    calls.clear()
    d.trsm(False, True, False, True, 2, 3, a, 3, 9, ptr(80000), 2, 6, 2, "float64", stream)
    got = [c[1] for c in calls if c[0] == "dtrsm"]
    assert [g[:7] for g in got] == [("hb", "<CUBLAS_SIDE_RIGHT>", "<CUBLAS_FILL_MODE_LOWER>", "<CUBLAS_OP_N>",
                                     "<CUBLAS_DIAG_UNIT>", 2, 3)] * 2
    assert [(g[8], g[9], g[10], g[11]) for g in got] == [(10008, 3, 80000, 2), (10008 + 72, 3, 80048, 2)]


def test_strided_expanded_inputs_and_out(device, torch):
    a, b, c8 = rnd(3, 4, 4), rnd(4, 2, seed=1), rnd(3, 8, 8, seed=2)
    A, T = tl.tensor(a, device=device), torch.tensor(a)
    C, Ct = tl.tensor(c8, device=device)[:, ::2, 1::2], torch.tensor(c8)[:, ::2, 1::2]
    close(tl.linalg.inv(A.mT), torch.linalg.inv(T.mT))
    close(tl.linalg.solve(A[:1].expand(3, 4, 4), tl.tensor(b, device=device)),
          torch.linalg.solve(T[:1].expand(3, 4, 4), torch.tensor(b)))
    close(tl.linalg.det(C), torch.linalg.det(Ct))
    close(tl.linalg.svdvals(A.mT), torch.linalg.svdvals(T.mT))
    close(tl.linalg.qr(C).R, torch.linalg.qr(Ct).R)
    close(tl.linalg.lu_factor(A.mT).LU, torch.linalg.lu_factor(T.mT).LU)
    close(tl.linalg.eigvalsh(A.mT + A), torch.linalg.eigvalsh(T.mT + T))
    out, tout = tl.empty(0, dtype=tl.float64, device=device), torch.empty(0, dtype=torch.float64)
    tl.linalg.inv(A.mT, out=out)
    torch.linalg.inv(T.mT, out=tout)
    close(out, tout)
    lu_out = (tl.empty(0, dtype=tl.float64, device=device), tl.empty(0, dtype=tl.int32, device=device))
    res = tl.linalg.lu_factor(A, out=lu_out)
    assert res[0] is lu_out[0] and res[1] is lu_out[1]
    close(lu_out[0], torch.linalg.lu_factor(T).LU)


def test_legacy_lu_names_warn_once_as_torch(monkeypatch):
    import warnings

    from tensorlab.ops import lu_family
    monkeypatch.setattr(lu_family, "_WARNED", set())
    with pytest.warns(UserWarning, match=r"torch.lu is deprecated in favor of torch.linalg.lu_factor"):
        tl.lu(tl.eye(2))
    with pytest.warns(UserWarning, match=r"torch.lu_solve is deprecated in favor of torch.linalg.lu_solve"):
        tl.lu_solve(tl.ones(2, 1), *tl.linalg.lu_factor(tl.eye(2)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tl.lu(tl.eye(2))
        tl.lu_solve(tl.ones(2, 1), *tl.linalg.lu_factor(tl.eye(2)))


def test_svd_driver_keyword(device, torch):
    a = rnd(4, 3)
    A = tl.tensor(a, device=device)
    if device == "cpu":
        with pytest.raises(RuntimeError) as te:
            torch.linalg.svd(torch.tensor(a), driver="gesvd")
        with pytest.raises(RuntimeError) as oe:
            tl.linalg.svd(A, driver="gesvd")
        assert str(oe.value) == str(te.value)
        return
    for drv in ("gesvd", "gesvdj", "gesvda"):
        close(tl.linalg.svd(A, driver=drv).S, torch.linalg.svdvals(torch.tensor(a)))
        close(tl.linalg.svdvals(A, driver=drv), torch.linalg.svdvals(torch.tensor(a)))
    with pytest.raises(RuntimeError, match="driver"):
        tl.linalg.svd(A, driver="qr")


def test_det_slogdet_backward_without_host_wait(device, torch):
    a = rnd(2, 3, 3)
    sing = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [0.5, 1.0, 7.0]])
    A = tl.tensor(np.stack([a[0], sing]), device=device, requires_grad=True)
    d = tl.linalg.det(A)
    S = tl.tensor(a, device=device, requires_grad=True)
    la = tl.linalg.slogdet(S).logabsdet
    if device == "cuda":
        with tl.cuda.set_sync_debug_mode("error"):
            d.sum().backward()
            la.sum().backward()
    else:
        d.sum().backward()
        la.sum().backward()
    At = torch.tensor(a[0], requires_grad=True)
    torch.linalg.det(At).backward()
    close(A.grad[0], At.grad)
    # the singular matrix: the cofactors (the divergence table's row), not torch's zeros
    np.testing.assert_allclose(A.grad[1].cpu().numpy(), [[22.0, -11.0, 0.0], [-11.0, 5.5, 0.0], [0.0, 0.0, 0.0]],
                               atol=1e-9)
    St = torch.tensor(a, requires_grad=True)
    torch.linalg.slogdet(St).logabsdet.sum().backward()
    close(S.grad, St.grad)


def test_backward_formulas_do_not_wait(device, torch):
    if device == "cpu":
        pytest.skip("the CPU has no device to wait for")
    A = tl.tensor(rnd(2, 4, 3), device=device, requires_grad=True)
    S = tl.tensor(spd(3, (2,)), device=device, requires_grad=True)
    B = tl.tensor(rnd(2, 3, 2, seed=1), device=device, requires_grad=True)
    outs = [tl.linalg.qr(A).R.sum(), tl.linalg.svd(A, full_matrices=False).S.sum(), tl.linalg.cholesky(S).sum(),
            tl.linalg.eigh(S).eigenvalues.sum(), tl.linalg.solve_ex(S, B).result.sum(), tl.linalg.inv_ex(S)[0].sum(),
            tl.linalg.lu_factor_ex(A).LU.sum()]
    with tl.cuda.set_sync_debug_mode("error"):
        sum(outs).backward()
    assert A.grad is not None and S.grad is not None and B.grad is not None
