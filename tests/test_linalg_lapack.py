"""tl.linalg against torch.linalg: solve/inv/det/slogdet/cholesky/qr/svd/svdvals/eigh/eigvalsh on
the CPU (NumPy's LAPACK; tests/test_linalg_cuda.py runs them on every device), their errors, the
gradients (float64 gradcheck, and gradgradcheck-style double backward for inv/solve), and the
norms (vector_norm / matrix_norm / norm) on every device."""
from __future__ import annotations

import math

import numpy as np
import pytest

import tensorlab as tl
from tensorlab.autograd import gradcheck


def rnd(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def spd(n, batch=(), seed=0):
    a = rnd(*batch, n, n, seed=seed)
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


def close(ours, ref, rtol=1e-6, atol=1e-8):
    assert tuple(ours.shape) == tuple(ref.shape), (ours.shape, ref.shape)
    assert str(ours.dtype).split(".")[-1] == str(ref.dtype).split(".")[-1]
    np.testing.assert_allclose(ours.detach().cpu().numpy(), ref.detach().numpy(), rtol=rtol, atol=atol)


# -- values against torch --------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_inv_det_slogdet(torch, dtype):
    a = rnd(2, 3, 3).astype(dtype)
    tol = dict(rtol=1e-4, atol=1e-5) if dtype == "float32" else {}
    close(tl.linalg.inv(tl.tensor(a)), torch.linalg.inv(torch.tensor(a)), **tol)
    close(tl.inverse(tl.tensor(a)), torch.inverse(torch.tensor(a)), **tol)
    close(tl.linalg.det(tl.tensor(a)), torch.linalg.det(torch.tensor(a)), **tol)
    close(tl.tensor(a).det(), torch.tensor(a).det(), **tol)
    s, la = tl.linalg.slogdet(tl.tensor(a))
    ts, tla = torch.linalg.slogdet(torch.tensor(a))
    close(s, ts)
    close(la, tla, **tol)
    r = tl.slogdet(tl.tensor(a))
    assert type(r).__name__ == "slogdet" and type(tl.linalg.slogdet(tl.tensor(a))).__name__ == "linalg_slogdet"
    close(r.logabsdet, tla, **tol)
    close(tl.logdet(tl.tensor(a)), torch.logdet(torch.tensor(a)), **tol)


def test_solve(torch):
    A = rnd(2, 3, 3)
    for B in (rnd(2, 3, 4, seed=1), rnd(3, seed=1), rnd(2, 3, seed=1), rnd(3, 2, seed=1), rnd(5, 2, 3, 1, seed=1)[0]):
        close(tl.linalg.solve(tl.tensor(A), tl.tensor(B)), torch.linalg.solve(torch.tensor(A), torch.tensor(B)))
    Bl = rnd(2, 4, 3, seed=2)
    close(tl.linalg.solve(tl.tensor(A), tl.tensor(Bl), left=False),
          torch.linalg.solve(torch.tensor(A), torch.tensor(Bl), left=False))
    with pytest.raises(RuntimeError, match="Incompatible shapes"):
        torch.linalg.solve(torch.tensor(A), torch.tensor(rnd(2, 4, 1)))
    with pytest.raises(RuntimeError, match="Incompatible shapes"):
        tl.linalg.solve(tl.tensor(A), tl.tensor(rnd(2, 4, 1)))
    with pytest.raises(RuntimeError, match="same dtype"):
        tl.linalg.solve(tl.tensor(A), tl.tensor(rnd(3).astype(np.float32)))


def test_cholesky(torch):
    a = spd(4, (2,))
    close(tl.linalg.cholesky(tl.tensor(a)), torch.linalg.cholesky(torch.tensor(a)))
    close(tl.linalg.cholesky(tl.tensor(a), upper=True), torch.linalg.cholesky(torch.tensor(a), upper=True))
    junk = np.triu(np.full((4, 4), 1e6), 1)  # only the lower triangle is read
    close(tl.linalg.cholesky(tl.tensor(a[0] + junk)), torch.linalg.cholesky(torch.tensor(a[0] + junk)))


@pytest.mark.parametrize("shape", [(4, 3), (3, 3), (3, 5), (2, 4, 3)])
@pytest.mark.parametrize("mode", ["reduced", "complete", "r"])
def test_qr(torch, shape, mode):
    a = rnd(*shape)
    q, r = tl.linalg.qr(tl.tensor(a), mode=mode)
    tq, tr = torch.linalg.qr(torch.tensor(a), mode=mode)
    close(q, tq)
    close(r, tr)


@pytest.mark.parametrize("shape", [(4, 3), (3, 3), (3, 5), (2, 4, 3)])
@pytest.mark.parametrize("full", [True, False])
def test_svd(torch, shape, full):
    a = rnd(*shape)
    u, s, vh = tl.linalg.svd(tl.tensor(a), full_matrices=full)
    tu, ts, tvh = torch.linalg.svd(torch.tensor(a), full_matrices=full)
    assert u.shape == tuple(tu.shape) and vh.shape == tuple(tvh.shape)
    close(s, ts)
    k = s.shape[-1]
    # singular vectors are unique up to sign: compare the products
    rec = (u[..., :, :k] * s.unsqueeze(-2)) @ vh[..., :k, :]
    np.testing.assert_allclose(rec.numpy(), a, atol=1e-10)
    np.testing.assert_allclose(np.abs(u[..., :, :k].numpy()), np.abs(tu[..., :, :k].numpy()), atol=1e-8)
    eye_u = u.mT @ u
    np.testing.assert_allclose(eye_u.numpy(), np.broadcast_to(np.eye(u.shape[-1]), eye_u.shape), atol=1e-10)
    close(tl.linalg.svdvals(tl.tensor(a)), torch.linalg.svdvals(torch.tensor(a)))


@pytest.mark.parametrize("uplo", ["L", "U"])
def test_eigh(torch, uplo):
    a = rnd(2, 4, 4)
    junk = np.triu(np.full((4, 4), 3.0), 1) if uplo == "L" else np.tril(np.full((4, 4), 3.0), -1)
    a = a + np.swapaxes(a, -1, -2) + junk  # the other triangle is ignored
    w, v = tl.linalg.eigh(tl.tensor(a), UPLO=uplo)
    tw, tv = torch.linalg.eigh(torch.tensor(a), UPLO=uplo)
    close(w, tw)
    np.testing.assert_allclose(np.abs(v.numpy()), np.abs(tv.numpy()), atol=1e-8)
    close(tl.linalg.eigvalsh(tl.tensor(a), UPLO=uplo), torch.linalg.eigvalsh(torch.tensor(a), UPLO=uplo))


# -- errors ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("call", [
    lambda L, m, A: L.inv(A(np.zeros((2, 2)))),
    lambda L, m, A: L.inv(A(np.zeros((3, 2, 2)))),
    lambda L, m, A: L.inv(A(np.ones((2, 3)))),
    lambda L, m, A: L.inv(A(np.ones(3))),
    lambda L, m, A: L.inv(A(np.ones((2, 2), np.float16))),
    lambda L, m, A: L.inv(A(np.ones((2, 2), np.int64))),
    lambda L, m, A: L.cholesky(A(-np.eye(3))),
    lambda L, m, A: L.cholesky(A(np.stack([np.eye(2), np.diag([1.0, -1.0])]))),
    lambda L, m, A: L.solve(A(np.zeros((2, 2))), A(np.ones(2))),
    lambda L, m, A: L.qr(A(np.ones((2, 2))), mode="bad"),
    lambda L, m, A: L.eigh(A(np.eye(2)), UPLO="X"),
    lambda L, m, A: L.det(A(np.ones((2, 3)))),
])
def test_errors_match_torch(torch, call):
    def ours_A(a):
        return tl.tensor(a)

    def torch_A(a):
        return torch.tensor(a)
    with pytest.raises(RuntimeError) as te:
        call(torch.linalg, torch, torch_A)
    with pytest.raises(RuntimeError) as oe:
        call(tl.linalg, tl, ours_A)
    assert str(oe.value) == str(te.value)
    assert isinstance(oe.value, tl.linalg.LinAlgError) == isinstance(te.value, torch.linalg.LinAlgError)


# -- gradients -------------------------------------------------------------------------------------
def _leaf(a):
    return tl.tensor(a, requires_grad=True)


def test_inv_solve_det_gradients():
    A = _leaf(rnd(2, 3, 3))
    B = _leaf(rnd(2, 3, 2, seed=1))
    assert gradcheck(tl.linalg.inv, (A,))
    assert gradcheck(lambda a, b: tl.linalg.solve(a, b), (A, B))
    assert gradcheck(lambda a, b: tl.linalg.solve(a, b, left=False), (A, _leaf(rnd(2, 2, 3, seed=2))))
    assert gradcheck(lambda a, b: tl.linalg.solve(a, b), (A[0].detach().requires_grad_(), _leaf(rnd(3, seed=3))))
    assert gradcheck(lambda a, b: tl.linalg.solve(a, b), (A, _leaf(rnd(3, 1, seed=3))))  # broadcast batch
    assert gradcheck(tl.linalg.det, (A,))
    assert gradcheck(lambda a: tl.linalg.slogdet(a).logabsdet, (A,))


def test_det_gradient_of_a_singular_matrix():
    """d det / dA is the cofactor matrix, also where A is singular (tensorlab takes it from the SVD
    there; torch's LU form gives det * A^-T = 0 * A^-T, which is zeros: a divergence on purpose)."""
    a = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [0.5, 1.0, 7.0]])  # rank 2
    x = _leaf(a)
    tl.linalg.det(x).backward()
    cof = np.array([[(-1) ** (i + j) * np.linalg.det(np.delete(np.delete(a, i, 0), j, 1)) for j in range(3)]
                    for i in range(3)])
    assert np.abs(cof).max() > 1  # a nonzero gradient
    np.testing.assert_allclose(x.grad.numpy(), cof, atol=1e-10)


def test_double_backward_of_inv():
    A = _leaf(rnd(3, 3))
    (g,) = tl.autograd.grad(tl.linalg.inv(A).sum(), A, create_graph=True)
    (gg,) = tl.autograd.grad(g.pow(2).sum(), A)
    eps = 1e-6
    a = rnd(3, 3)
    fd = np.zeros_like(a)

    def f(m):
        ai = np.linalg.inv(m)
        gm = -(ai.T @ np.ones((3, 3)) @ ai.T)
        return (gm ** 2).sum()
    for i in range(3):
        for j in range(3):
            d = np.zeros_like(a)
            d[i, j] = eps
            fd[i, j] = (f(a + d) - f(a - d)) / (2 * eps)
    np.testing.assert_allclose(gg.numpy(), fd, rtol=1e-5, atol=1e-6)


def test_cholesky_gradient():
    X = _leaf(rnd(2, 3, 3))
    eye = tl.eye(3, dtype=tl.float64)
    assert gradcheck(lambda x: tl.linalg.cholesky(x @ x.mT + eye), (X,))
    assert gradcheck(lambda x: tl.linalg.cholesky(x @ x.mT + eye, upper=True), (X,))


@pytest.mark.parametrize("shape", [(4, 3), (3, 3), (3, 5)])
def test_qr_svd_gradients(shape):
    X = _leaf(rnd(2, *shape))
    assert gradcheck(lambda x: tl.linalg.qr(x), (X,))
    assert gradcheck(tl.linalg.svdvals, (X,))
    # gauge-invariant functions of the singular vectors
    assert gradcheck(lambda x: (lambda u, s, vh: u @ vh)(*tl.linalg.svd(x, full_matrices=False)), (X,))
    assert gradcheck(lambda x: (lambda u, s, vh: (u[..., :, :s.shape[-1]] * s.unsqueeze(-2)) @ u[..., :, :s.shape[-1]].mT)(
        *tl.linalg.svd(x, full_matrices=True)), (X,))


def test_qr_complete_tall_is_not_differentiable():
    X = _leaf(rnd(4, 2))
    q, r = tl.linalg.qr(X, mode="complete")
    with pytest.raises(RuntimeError, match="not differentiable when mode='complete'"):
        (q.sum() + r.sum()).backward()


def test_eigh_gradient():
    X = _leaf(rnd(2, 4, 4))
    assert gradcheck(lambda x: tl.linalg.eigh(x + x.mT).eigenvalues, (X,))
    assert gradcheck(lambda x: (lambda w, v: (v * w.unsqueeze(-2).exp()) @ v.mT)(*tl.linalg.eigh(x + x.mT)), (X,))
    assert gradcheck(lambda x: tl.linalg.eigvalsh(x + x.mT, UPLO="U"), (X,))


# -- norms (every device) --------------------------------------------------------------------------
@pytest.mark.parametrize("ord", [2, 1, 0, 3.5, math.inf, -math.inf, -1])
def test_vector_norm(device, torch, ord):
    a = rnd(3, 4).astype(np.float32)
    for dim, keep in ((None, False), (1, False), ((0, 1), True), (0, True)):
        close(tl.linalg.vector_norm(tl.tensor(a, device=device), ord, dim, keep),
              torch.linalg.vector_norm(torch.tensor(a), ord, dim, keep), rtol=1e-5, atol=1e-6)
    close(tl.linalg.vector_norm(tl.tensor(a, device=device), ord, dtype=tl.float64),
          torch.linalg.vector_norm(torch.tensor(a), ord, dtype=torch.float64), rtol=1e-5)


@pytest.mark.parametrize("ord", ["fro", 1, -1, math.inf, -math.inf])
def test_matrix_norm_composites(device, torch, ord):
    a = rnd(2, 3, 4)
    for dim, keep in (((-2, -1), False), ((0, 2), True), ((2, 1), False)):
        close(tl.linalg.matrix_norm(tl.tensor(a, device=device), ord, dim, keep),
              torch.linalg.matrix_norm(torch.tensor(a), ord, dim, keep))
    x = tl.tensor(a, device=device, requires_grad=True)
    assert gradcheck(lambda t: tl.linalg.matrix_norm(t, ord), (x,))


@pytest.mark.parametrize("ord", ["nuc", 2, -2])
def test_matrix_norm_spectral(torch, ord):
    a = rnd(2, 3, 4)
    for keep in (False, True):
        close(tl.linalg.matrix_norm(tl.tensor(a), ord, keepdim=keep), torch.linalg.matrix_norm(torch.tensor(a), ord,
                                                                                               keepdim=keep))
    assert gradcheck(lambda t: tl.linalg.matrix_norm(t, ord), (_leaf(a),))


def test_linalg_norm(device, torch):
    a = rnd(3, 4)
    ta = torch.tensor(a)
    x = tl.tensor(a, device=device)
    close(tl.linalg.norm(x), torch.linalg.norm(ta))
    close(tl.linalg.norm(x, dim=1), torch.linalg.norm(ta, dim=1))
    close(tl.linalg.norm(x, 1), torch.linalg.norm(ta, 1))
    close(tl.linalg.norm(x, math.inf), torch.linalg.norm(ta, math.inf))
    close(tl.linalg.norm(x, "fro", keepdim=True), torch.linalg.norm(ta, "fro", keepdim=True))
    close(tl.linalg.norm(x[0], 3), torch.linalg.norm(ta[0], 3))
    close(tl.linalg.norm(x, 0.5, dim=0), torch.linalg.norm(ta, 0.5, dim=0))
    with pytest.raises(RuntimeError, match="input must be 1D or 2D"):
        torch.linalg.norm(torch.ones(2, 2, 2), 1)
    with pytest.raises(RuntimeError, match="input must be 1D or 2D"):
        tl.linalg.norm(tl.ones(2, 2, 2, device=device), 1)
    with pytest.raises(RuntimeError, match="Order 3 not supported"):
        tl.linalg.matrix_norm(x, 3)


# -- torch's older forms -----------------------------------------------------------------------------
@pytest.mark.parametrize("some", [True, False])
def test_legacy_svd_qr_cholesky(torch, some):
    a = rnd(4, 3)
    u, s, v = tl.svd(tl.tensor(a), some=some)
    tu, ts, tv = torch.svd(torch.tensor(a), some=some)
    assert u.shape == tuple(tu.shape) and v.shape == tuple(tv.shape)
    close(s, ts)
    np.testing.assert_allclose(np.abs(v.numpy()), np.abs(tv.numpy()), atol=1e-8)
    r = tl.tensor(a).svd(some=some, compute_uv=False)
    tr = torch.tensor(a).svd(some=some, compute_uv=False)
    for o, t in zip(r, tr):
        close(o, t)
    with pytest.warns(UserWarning, match="torch.qr is deprecated"):
        q, rr = tl.qr(tl.tensor(a), some=some)
    tq, trr = torch.qr(torch.tensor(a), some=some)
    close(q, tq)
    close(rr, trr)
    p = spd(3)
    with pytest.warns(UserWarning, match="torch.cholesky is deprecated"):
        c = tl.tensor(p).cholesky(upper=not some)
    close(c, torch.cholesky(torch.tensor(p), upper=not some))


# -- composites: matrix_power / multi_dot / vecdot (every device), pinv / matrix_rank / solve_triangular
@pytest.mark.parametrize("n", [0, 1, 2, 5])
def test_matrix_power(device, torch, n):
    a = rnd(2, 3, 3)
    close(tl.linalg.matrix_power(tl.tensor(a, device=device), n), torch.linalg.matrix_power(torch.tensor(a), n))
    close(tl.tensor(a, device=device).matrix_power(n), torch.tensor(a).matrix_power(n))
    ai = np.arange(4).reshape(2, 2)
    close(tl.matrix_power(tl.tensor(ai, device=device), n), torch.matrix_power(torch.tensor(ai), n))
    if n:
        assert gradcheck(lambda t: tl.linalg.matrix_power(t, n), (tl.tensor(a, device=device, requires_grad=True),))
    with pytest.raises(RuntimeError, match="square matrices"):
        tl.linalg.matrix_power(tl.ones(2, 3, device=device), n)


def test_matrix_power_negative(torch):
    a = rnd(3, 3)
    close(tl.linalg.matrix_power(tl.tensor(a), -3), torch.linalg.matrix_power(torch.tensor(a), -3))


def test_multi_dot_vecdot(device, torch):
    v, m1, m2, w = rnd(3), rnd(3, 4, seed=1), rnd(4, 2, seed=2), rnd(2, seed=3)
    for chain in ((v, m1, m2, w), (m1, m2), (v, m1), (m1, m2, w)):
        close(tl.linalg.multi_dot([tl.tensor(c, device=device) for c in chain]),
              torch.linalg.multi_dot([torch.tensor(c) for c in chain]))
    with pytest.raises(RuntimeError, match="expected at least 2 tensors"):
        tl.linalg.multi_dot([tl.tensor(m1, device=device)])
    x, y = rnd(4, 3), rnd(3, seed=1)
    close(tl.linalg.vecdot(tl.tensor(x, device=device), tl.tensor(y, device=device)),
          torch.linalg.vecdot(torch.tensor(x), torch.tensor(y)))
    close(tl.linalg.vecdot(tl.tensor(x, device=device), tl.tensor(x, device=device), dim=0),
          torch.linalg.vecdot(torch.tensor(x), torch.tensor(x), dim=0))
    with pytest.raises(RuntimeError, match="same dtype"):
        tl.linalg.vecdot(tl.ones(3, device=device), tl.ones(3, dtype=tl.float64, device=device))


def test_pinv_matrix_rank_solve_triangular(torch):
    c = rnd(4, 3)
    close(tl.linalg.pinv(tl.tensor(c)), torch.linalg.pinv(torch.tensor(c)))
    close(tl.pinverse(tl.tensor(c)), torch.pinverse(torch.tensor(c)))
    s = c.T @ c
    close(tl.linalg.pinv(tl.tensor(s), hermitian=True), torch.linalg.pinv(torch.tensor(s), hermitian=True))
    low = np.outer(rnd(4), rnd(3, seed=1)) + np.outer(rnd(4, seed=2), rnd(3, seed=3))  # rank 2
    close(tl.linalg.pinv(tl.tensor(low)), torch.linalg.pinv(torch.tensor(low)))
    for kw in ({}, {"atol": 0.5}, {"rtol": 0.3}, {"hermitian": True}):
        m = s if kw.get("hermitian") else c
        close(tl.linalg.matrix_rank(tl.tensor(m), **kw), torch.linalg.matrix_rank(torch.tensor(m), **kw))
    close(tl.linalg.matrix_rank(tl.tensor(low)), torch.linalg.matrix_rank(torch.tensor(low)))
    a, b = rnd(2, 3, 3), rnd(2, 3, 2, seed=1)
    for upper in (True, False):
        for left in (True, False):
            for uni in (True, False):
                B = b if left else np.swapaxes(b, -1, -2)
                close(tl.linalg.solve_triangular(tl.tensor(a), tl.tensor(B), upper=upper, left=left, unitriangular=uni),
                      torch.linalg.solve_triangular(torch.tensor(a), torch.tensor(B), upper=upper, left=left,
                                                    unitriangular=uni))
    with pytest.raises(RuntimeError, match="Incompatible shapes"):
        tl.linalg.solve_triangular(tl.tensor(a), tl.tensor(b), upper=True, left=False)
    assert gradcheck(lambda t: tl.linalg.pinv(t), (_leaf(c),))
    assert gradcheck(lambda t, u: tl.linalg.solve_triangular(t, u, upper=True), (_leaf(a), _leaf(b)))


def test_ex_variants(torch):
    a = np.stack([rnd(3, 3), np.zeros((3, 3)), spd(3)])
    r, info = tl.linalg.inv_ex(tl.tensor(a))
    tr, tinfo = torch.linalg.inv_ex(torch.tensor(a))
    close(info, tinfo)
    close(r[0], tr[0])
    close(r[2], tr[2])
    assert np.isnan(r[1].numpy()).all()  # undefined where singular (torch: garbage)
    x, info = tl.linalg.solve_ex(tl.tensor(a), tl.tensor(rnd(3, 3, 2, seed=4)))
    tx, tinfo = torch.linalg.solve_ex(torch.tensor(a), torch.tensor(rnd(3, 3, 2, seed=4)))
    close(info, tinfo)
    close(x[2], tx[2])
    c = np.stack([spd(3), -np.eye(3), np.diag([1.0, 1.0, -1.0])])
    L, info = tl.linalg.cholesky_ex(tl.tensor(c), upper=True)
    tL, tinfo = torch.linalg.cholesky_ex(torch.tensor(c), upper=True)
    close(info, tinfo)
    close(L[0], tL[0])
    for fn, tfn, m in ((tl.linalg.inv_ex, torch.linalg.inv_ex, a), (tl.linalg.cholesky_ex, torch.linalg.cholesky_ex, c)):
        with pytest.raises(RuntimeError) as te:
            tfn(torch.tensor(m), check_errors=True)
        with pytest.raises(tl.linalg.LinAlgError) as oe:
            fn(tl.tensor(m), check_errors=True)
        assert str(oe.value) == str(te.value)
    A = _leaf(rnd(3, 3))
    assert gradcheck(lambda t: tl.linalg.inv_ex(t).inverse, (A,))
    assert type(tl.linalg.inv_ex(A)).__name__ == "linalg_inv_ex"


@pytest.mark.parametrize("driver", [None, "gelsy", "gelsd", "gelss", "gels"])
def test_lstsq(torch, driver):
    a = rnd(2, 5, 3)
    deficient = a.copy()
    deficient[..., 2] = deficient[..., 1]
    b = rnd(2, 5, 2, seed=1)
    cases = [(a, b), (a[:, :2], b[:, :2]), (a[0], b[0, :, 0])]
    if driver != "gels":  # gels assumes full rank
        cases.append((deficient, b))
    for A, B in cases:
        got = tl.linalg.lstsq(tl.tensor(A), tl.tensor(B), driver=driver)
        want = torch.linalg.lstsq(torch.tensor(A), torch.tensor(B), driver=driver)
        assert type(got).__name__ == "linalg_lstsq"
        for o, t in zip(got, want):
            close(o, t)
    with pytest.raises(RuntimeError, match="should match other.size"):
        tl.linalg.lstsq(tl.tensor(a), tl.tensor(b[:, :4]), driver=driver)
    A = _leaf(a[0])
    assert gradcheck(lambda t, u: tl.linalg.lstsq(t, u, driver=driver).solution, (A, _leaf(b[0])))


def test_lstsq_driver_error(torch):
    with pytest.raises(RuntimeError) as te:
        torch.linalg.lstsq(torch.eye(2), torch.ones(2, 1), driver="bad")
    with pytest.raises(RuntimeError) as oe:
        tl.linalg.lstsq(tl.eye(2), tl.ones(2, 1), driver="bad")
    assert str(oe.value) == str(te.value)


def test_strided_inputs_and_out(torch):
    a = rnd(3, 4, 4)
    ta = torch.tensor(a)
    x = tl.tensor(a)
    close(tl.linalg.inv(x.mT), torch.linalg.inv(ta.mT))                      # transposed view
    close(tl.linalg.det(x[:, 1:3, 1:3]), torch.linalg.det(ta[:, 1:3, 1:3]))  # an offset sub-block
    e = x[0].expand(2, 4, 4)                                                  # a stride-0 batch
    close(tl.linalg.solve(e, tl.ones(4, dtype=tl.float64)), torch.linalg.solve(ta[0].expand(2, 4, 4),
                                                                                torch.ones(4, dtype=torch.float64)))
    out = tl.empty(0, dtype=tl.float64)
    r = tl.linalg.inv(x, out=out)
    assert r is out and out.shape == (3, 4, 4)
    close(out, torch.linalg.inv(ta))
    q, rr = tl.empty(0, dtype=tl.float64), tl.empty(0, dtype=tl.float64)
    got = tl.linalg.qr(x, out=(q, rr))
    assert got[0] is q and got[1] is rr
    tq, tr = torch.linalg.qr(ta)
    close(q, tq)
    close(rr, tr)
