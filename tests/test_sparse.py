"""Sparse COO and CSR tensors (tensorlab/sparse) on every device, against torch's sparse tensors and SciPy:
construction and its errors, coalesce with duplicates, to_dense / to_sparse round trips, mm/addmm values and
gradients (torch's sparse_grad semantics), CSR matmul, sum/softmax, arithmetic, the refusals of dense ops,
Embedding(sparse=True) + SparseAdam training steps and a graph-convolution training loop matching torch's
losses step by step."""
import pickle

import numpy as np
import pytest

import tensorlab as tl

RNG = np.random.default_rng(34)
IDX = np.array([[0, 1, 1, 2, 0, 3], [2, 0, 2, 1, 2, 3]])  # (0, 2) twice: uncoalesced
VAL = RNG.standard_normal(6)


def _np(t):
    return t.detach().cpu().numpy()


def _coo(device, dtype=tl.float64, **kw):
    return tl.sparse_coo_tensor(tl.tensor(IDX, device=device), tl.tensor(VAL, dtype=dtype, device=device), (4, 5),
                                **kw)


def _torch_coo(torch, dtype=None, **kw):
    return torch.sparse_coo_tensor(torch.tensor(IDX), torch.tensor(VAL, dtype=dtype or torch.float64), (4, 5), **kw)


def _same_sparse(got, want):
    """Same layout, size, nnz, coalesced flag and parts as torch's."""
    assert got.layout.name == str(want.layout).split(".")[1]
    assert tuple(got.shape) == tuple(want.shape)
    assert got._nnz() == want._nnz()
    if want.layout.__repr__().endswith("sparse_coo"):
        assert got.is_coalesced() == want.is_coalesced()
        assert np.array_equal(_np(got._indices()), want._indices().numpy())
        np.testing.assert_allclose(_np(got._values()), want._values().detach().numpy(), rtol=1e-6, atol=1e-12)
    else:
        assert np.array_equal(_np(got.crow_indices()), want.crow_indices().numpy())
        assert np.array_equal(_np(got.col_indices()), want.col_indices().numpy())
        np.testing.assert_allclose(_np(got.values()), want.values().detach().numpy(), rtol=1e-6, atol=1e-12)


# -- construction -----------------------------------------------------------------------------------------
def test_construction_and_metadata(device, torch):
    s = _coo(device)
    t = _torch_coo(torch)
    _same_sparse(s, t)
    assert s.is_sparse and not s.is_sparse_csr and s.layout is tl.sparse_coo
    assert (s.sparse_dim(), s.dense_dim(), s.dim(), s.dtype) == (2, 0, 2, tl.float64)
    assert s.device.type == tl.device(device).type
    assert s.numel() == 20 and len(s) == 4
    inferred = tl.sparse_coo_tensor(tl.tensor(IDX, device=device), tl.tensor(VAL, device=device))
    assert tuple(inferred.shape) == tuple(torch.sparse_coo_tensor(torch.tensor(IDX), torch.tensor(VAL)).shape)
    lists = tl.sparse_coo_tensor([[0, 2]], [1.0, 2.0], (3,), device=device)
    assert lists.dtype is tl.float32 and np.array_equal(_np(lists.to_dense()), [1.0, 0.0, 2.0])
    dense_dims = tl.sparse_coo_tensor(tl.tensor([[0, 2]], device=device), tl.ones(2, 3, device=device), (4, 3))
    assert (dense_dims.sparse_dim(), dense_dims.dense_dim()) == (1, 1)
    assert tl.sparse_coo_tensor(tl.tensor(IDX, device=device), tl.tensor(VAL, device=device), (4, 5),
                                is_coalesced=True).is_coalesced()


def test_construction_errors(device, torch):
    i, v = tl.tensor(IDX, device=device), tl.tensor(VAL, device=device)
    ti, tv = torch.tensor(IDX), torch.tensor(VAL)
    cases = [
        ((i, v[:4], (4, 5)), (ti, tv[:4], (4, 5))),  # nnz mismatch
        ((i[0], v, (4, 5)), (ti[0], tv, (4, 5))),  # 1-D indices
        ((i, v, (4, 5, 2)), (ti, tv, (4, 5, 2))),  # too many dims
    ]
    for args, targs in cases:
        with pytest.raises(Exception) as want:
            torch.sparse_coo_tensor(*targs)
        with pytest.raises(type(want.value)):
            tl.sparse_coo_tensor(*args)
    with pytest.raises(RuntimeError, match="size is inconsistent with indices"):
        tl.sparse_coo_tensor(i, v, (2, 5), check_invariants=True)
    with pytest.raises(RuntimeError, match="negative index"):
        tl.sparse_coo_tensor(tl.tensor([[-1, 0]], device=device), tl.ones(2, device=device), (3,),
                             check_invariants=True)
    with pytest.raises(RuntimeError, match="values has incorrect size"):
        tl.sparse_coo_tensor(tl.tensor([[0, 1]], device=device), tl.ones(2, 3, device=device), (4, 2))
    assert np.array_equal(_np(tl.sparse_coo_tensor(i.double(), v, (4, 5)).to_dense()), _np(_coo(device).to_dense()))
    s = _coo(device)
    with pytest.raises(RuntimeError, match="coalesce"):
        s.indices()
    with pytest.raises(RuntimeError, match="coalesce"):
        s.values()


# -- coalesce and conversions -----------------------------------------------------------------------------
def test_coalesce_sums_duplicates(device, torch):
    import scipy.sparse
    s = _coo(device)
    assert not s.is_coalesced()
    c = s.coalesce()
    _same_sparse(c, _torch_coo(torch).coalesce())
    ref = scipy.sparse.coo_matrix((VAL, (IDX[0], IDX[1])), shape=(4, 5))
    ref.sum_duplicates()
    np.testing.assert_allclose(_np(c.to_dense()), ref.toarray())
    assert c.coalesce() is c
    assert np.array_equal(_np(c.indices()), _np(c._indices()))


def test_to_dense_round_trips(device, torch):
    x = RNG.standard_normal((4, 3, 2))
    x[1] = 0
    x[2, 1] = 0
    x[3, 0, 1] = 0
    xt = torch.tensor(x)
    xl = tl.tensor(x, device=device)
    for sd in (None, 1, 2, 3):
        want = xt.to_sparse() if sd is None else xt.to_sparse(sd)
        got = xl.to_sparse() if sd is None else xl.to_sparse(sd)
        _same_sparse(got, want)
        assert np.array_equal(_np(got.to_dense()), x)
    np.testing.assert_allclose(_np(_coo(device).to_dense()), _torch_coo(torch).to_dense().numpy())
    assert np.array_equal(_np(xl.to_sparse_coo().to_dense()), x)
    assert xl.to_dense() is xl and xl.sparse_dim() == 0 and xl.dense_dim() == 3
    with pytest.raises(RuntimeError, match="Strided"):
        xl.indices()


def test_csr_conversions_and_construction(device, torch):
    x = RNG.standard_normal((4, 5))
    x[x < 0.3] = 0
    got = tl.tensor(x, device=device).to_sparse_csr()
    _same_sparse(got, torch.tensor(x).to_sparse_csr())
    assert got.is_sparse_csr and got.layout is tl.sparse_csr and not got.is_sparse
    assert np.array_equal(_np(got.to_dense()), x)
    _same_sparse(_coo(device).to_sparse_csr(), _torch_coo(torch).to_sparse_csr())
    _same_sparse(got.to_sparse(), torch.tensor(x).to_sparse_csr().to_sparse())
    assert np.array_equal(_np(tl.tensor(x, device=device).to_sparse(layout=tl.sparse_csr).to_dense()), x)
    crow, col, val = [0, 2, 2, 3], [0, 3, 1], [1.0, 2.0, 3.0]
    c = tl.sparse_csr_tensor(tl.tensor(crow, device=device), tl.tensor(col, device=device),
                             tl.tensor(val, device=device), (3, 4))
    np.testing.assert_allclose(_np(c.to_dense()), torch.sparse_csr_tensor(
        torch.tensor(crow), torch.tensor(col), torch.tensor(val), (3, 4)).to_dense().numpy())
    assert tuple(tl.sparse_csr_tensor(tl.tensor(crow, device=device), tl.tensor(col, device=device),
                                      tl.tensor(val, device=device)).shape) == (3, 4)
    with pytest.raises(RuntimeError, match="crow_indices.numel"):
        tl.sparse_csr_tensor(tl.tensor(crow, device=device), tl.tensor(col, device=device),
                             tl.tensor(val, device=device), (4, 4))
    with pytest.raises(RuntimeError, match="same number of elements"):
        tl.sparse_csr_tensor(tl.tensor(crow, device=device), tl.tensor(col, device=device),
                             tl.tensor(val[:2], device=device), (3, 4))
    with pytest.raises(RuntimeError, match="col_indices < ncols"):
        tl.sparse_csr_tensor(tl.tensor(crow, device=device), tl.tensor(col, device=device),
                             tl.tensor(val, device=device), (3, 3), check_invariants=True)
    with pytest.raises(RuntimeError, match="sparse row compressed"):
        _coo(device).crow_indices()


# -- products ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_mm_values(device, torch, dtype):
    import scipy.sparse
    d = RNG.standard_normal((5, 3))
    tdt = getattr(torch, dtype)
    s = _coo(device, getattr(tl, dtype))
    ts = _torch_coo(torch, tdt)
    D = tl.tensor(d, dtype=getattr(tl, dtype), device=device)
    want = torch.sparse.mm(ts, torch.tensor(d, dtype=tdt)).numpy()
    tol = 1e-5 if dtype == "float32" else 1e-12
    for got in (tl.sparse.mm(s, D), tl.mm(s, D), s @ D, s.mm(D), tl.matmul(s, D), tl.spmm(s, D),
                s.to_sparse_csr() @ D, tl.mm(s.to_sparse_csr(), D)):
        assert got.layout is tl.strided and got.dtype is getattr(tl, dtype)
        np.testing.assert_allclose(_np(got), want, rtol=tol, atol=tol)
    ref = scipy.sparse.coo_matrix((VAL, (IDX[0], IDX[1])), shape=(4, 5)) @ d
    np.testing.assert_allclose(_np(tl.sparse.mm(s, D)), ref, rtol=tol, atol=tol)
    np.testing.assert_allclose(_np(s @ tl.tensor(d[:, 0], dtype=getattr(tl, dtype), device=device)), want[:, 0],
                               rtol=tol, atol=tol)
    e = RNG.standard_normal((2, 4))
    np.testing.assert_allclose(_np(tl.tensor(e, dtype=getattr(tl, dtype), device=device) @ s),
                               (torch.tensor(e, dtype=tdt) @ ts.to_dense()).numpy(), rtol=tol, atol=tol)
    m = RNG.standard_normal((4, 3))
    M = tl.tensor(m, dtype=getattr(tl, dtype), device=device)
    np.testing.assert_allclose(_np(tl.sparse.addmm(M, s, D, beta=0.5, alpha=2.0)), torch.sparse.addmm(
        torch.tensor(m, dtype=tdt), ts, torch.tensor(d, dtype=tdt), beta=0.5, alpha=2.0).numpy(), rtol=tol, atol=tol)
    np.testing.assert_allclose(_np(tl.addmm(M, s, D)), torch.addmm(torch.tensor(m, dtype=tdt), ts,
                                                                   torch.tensor(d, dtype=tdt)).numpy(),
                               rtol=tol, atol=tol)
    sp = tl.sparse.mm(s, tl.tensor(RNG.standard_normal((5, 4)), dtype=getattr(tl, dtype), device=device).to_sparse())
    assert sp.layout is tl.sparse_coo


def test_mm_errors(device):
    s = _coo(device)
    with pytest.raises(RuntimeError, match="cannot be multiplied"):
        tl.sparse.mm(s, tl.ones(4, 2, dtype=tl.float64, device=device))
    with pytest.raises(RuntimeError, match="same dtype"):
        tl.sparse.mm(s, tl.ones(5, 2, device=device))


def test_mm_gradients(device, torch):
    d = RNG.standard_normal((5, 3))
    g = RNG.standard_normal((4, 3))
    ts = _torch_coo(torch, requires_grad=True)
    tD = torch.tensor(d, requires_grad=True)
    (torch.sparse.mm(ts, tD) * torch.tensor(g)).sum().backward()
    for conv in (lambda s: s, lambda s: s.coalesce(), lambda s: s.to_sparse_csr()):
        s = _coo(device, requires_grad=True)
        D = tl.tensor(d, device=device, requires_grad=True)
        (tl.sparse.mm(conv(s), D) * tl.tensor(g, device=device)).sum().backward()
        np.testing.assert_allclose(_np(D.grad), tD.grad.numpy(), rtol=1e-12, atol=1e-12)
        assert s.grad.is_sparse
        _same_sparse(s.grad, ts.grad)
    v = tl.tensor(VAL, device=device, requires_grad=True)
    D = tl.tensor(d, device=device, requires_grad=True)
    idx = tl.tensor(IDX, device=device)
    assert tl.autograd.gradcheck(lambda vv, dd: tl.sparse.mm(tl.sparse_coo_tensor(idx, vv, (4, 5)), dd), (v, D))

    def first(vv, dd):  # double backward: the gradients, differentiable again
        with tl.enable_grad():
            out = tl.sparse.mm(tl.sparse_coo_tensor(idx, vv, (4, 5)), dd)
            return tl.autograd.grad(out.pow(2).sum(), (vv, dd), create_graph=True)
    assert tl.autograd.gradcheck(first, (v, D))
    assert tl.autograd.gradcheck(lambda vv: tl.sparse_coo_tensor(idx, vv, (4, 5)).to_dense(), (v,))
    assert tl.autograd.gradcheck(lambda dd: dd.to_sparse().to_dense() * 2, (D,))


# -- reductions, softmax, arithmetic ----------------------------------------------------------------------
def test_sum_softmax(device, torch):
    s, ts = _coo(device), _torch_coo(torch)
    np.testing.assert_allclose(_np(tl.sparse.sum(s)), torch.sparse.sum(ts).numpy())
    for dim in (0, 1, (0, 1)):
        want = torch.sparse.sum(ts, dim)
        got = tl.sparse.sum(s, dim)
        if want.layout == torch.strided:
            np.testing.assert_allclose(_np(got), want.numpy())
        else:
            _same_sparse(got, want)
    for fn in ("softmax", "log_softmax"):
        for dim in (0, 1):
            _same_sparse(getattr(tl.sparse, fn)(s, dim), getattr(torch.sparse, fn)(ts, dim))
    v = tl.tensor(VAL, device=device, requires_grad=True)
    idx = tl.tensor(IDX, device=device)
    assert tl.autograd.gradcheck(lambda vv: tl.sparse.softmax(tl.sparse_coo_tensor(idx, vv, (4, 5)), 1).to_dense(),
                                 (v,))


def test_arithmetic(device, torch):
    s, ts = _coo(device), _torch_coo(torch)
    c, tc = s.coalesce(), ts.coalesce()
    # uncoalesced operands: entries concatenated (torch's CPU merges the two lists; the same tensor once coalesced)
    assert not (s + s).is_coalesced() and (s + s)._nnz() == 12
    _same_sparse((s + s).coalesce(), (ts + ts).coalesce())
    _same_sparse(c + c, tc + tc)
    _same_sparse(c - c * 0.5, tc - tc * 0.5)
    _same_sparse(s * 3, ts * 3)
    _same_sparse(2 * s, 2 * ts)
    _same_sparse(s / 4, ts / 4)
    _same_sparse(-c, -tc)
    x = RNG.standard_normal((4, 5))
    np.testing.assert_allclose(_np(tl.tensor(x, device=device) + s), (torch.tensor(x) + ts).numpy())
    np.testing.assert_allclose(_np(s + tl.tensor(x, device=device)), (ts.to_dense() + torch.tensor(x)).numpy())
    _same_sparse(c * tl.tensor(x, device=device), tc * torch.tensor(x))
    _same_sparse(c * c, tc * tc)
    _same_sparse(c.t(), tc.t())
    with pytest.raises(RuntimeError, match="same size"):
        s + tl.sparse_coo_tensor(tl.tensor(IDX, device=device), tl.tensor(VAL, device=device), (4, 6))


def test_dense_ops_refuse_sparse_operands(device):
    s = _coo(device)
    with pytest.raises(NotImplementedError, match="'aten::abs'.*Sparse(CPU|CUDA)"):
        s.abs()
    with pytest.raises(NotImplementedError, match="'exp'.*sparse_coo"):
        tl.exp(s)
    with pytest.raises(NotImplementedError, match="'aten::unsqueeze'.*SparseCsr"):
        s.to_sparse_csr().unsqueeze(0)
    with pytest.raises(RuntimeError, match="do not have strides"):
        s.stride()
    with pytest.raises(RuntimeError, match="is_contiguous"):
        s.is_contiguous()
    with pytest.raises(TypeError, match="to_dense"):
        s.numpy()


def test_device_moves_and_pickling(device, tmp_path):
    s = _coo(device)
    c = s.cpu()
    assert c.device.type == "cpu" and c.is_sparse and np.array_equal(_np(c.to_dense()), _np(s.to_dense()))
    assert s.float().dtype is tl.float32 and s.double().dtype is tl.float64
    r = pickle.loads(pickle.dumps(s))
    assert r.is_sparse and r.device == s.device and not r.is_coalesced()
    np.testing.assert_allclose(_np(r.to_dense()), _np(s.to_dense()))
    cs = s.to_sparse_csr()
    tl.save({"coo": s, "csr": cs}, tmp_path / "sp.pt")
    back = tl.load(tmp_path / "sp.pt")
    np.testing.assert_allclose(_np(back["csr"].to_dense()), _np(cs.to_dense()))
    assert back["coo"].is_sparse and back["csr"].is_sparse_csr
    assert "indices=tensor" in repr(s) and "layout=tensorlab.sparse_coo" in repr(s)
    assert "crow_indices=tensor" in repr(cs)


# -- training: Embedding(sparse=True) + SparseAdam; a graph convolution --------------------------------------
def test_embedding_sparse_gradient(device, torch):
    w = RNG.standard_normal((7, 3))
    idx = np.array([[1, 2, 0], [2, 6, 0]])
    tw = torch.tensor(w, requires_grad=True)
    torch.nn.functional.embedding(torch.tensor(idx), tw, padding_idx=0, sparse=True).pow(2).sum().backward()
    lw = tl.tensor(w, device=device, requires_grad=True)
    tl.nn.functional.embedding(tl.tensor(idx, device=device), lw, padding_idx=0, sparse=True).pow(2).sum().backward()
    assert lw.grad.is_sparse
    _same_sparse(lw.grad, tw.grad)
    tl.nn.functional.embedding(tl.tensor(idx, device=device), lw, sparse=True).sum().backward()  # accumulates
    tw2 = torch.tensor(w, requires_grad=True)
    tw2.grad = tw.grad
    torch.nn.functional.embedding(torch.tensor(idx), tw2, sparse=True).sum().backward()
    np.testing.assert_allclose(_np(lw.grad.to_dense()), tw2.grad.to_dense().numpy())
    lw.grad = None
    with pytest.raises(RuntimeError, match="scale_grad_by_freq not supported with sparse"):
        tl.nn.functional.embedding(tl.tensor(idx, device=device), lw, scale_grad_by_freq=True,
                                   sparse=True).sum().backward()


def test_embedding_sparse_adam_matches_torch(device, torch):
    torch.manual_seed(0)
    w = torch.randn(12, 4)
    tmod = torch.nn.Embedding.from_pretrained(w.clone(), freeze=False, sparse=True)
    lmod = tl.nn.Embedding.from_pretrained(tl.tensor(w.numpy(), device=device), freeze=False, sparse=True)
    to = torch.optim.SparseAdam(tmod.parameters(), lr=0.05, betas=(0.8, 0.99))
    lo = tl.optim.SparseAdam(lmod.parameters(), lr=0.05, betas=(0.8, 0.99))
    rng = np.random.default_rng(3)
    for _ in range(5):
        idx = rng.integers(0, 12, (4, 3))
        target = rng.standard_normal((4, 3, 4))
        tloss = ((tmod(torch.tensor(idx)) - torch.tensor(target, dtype=torch.float32)) ** 2).mean()
        lloss = ((lmod(tl.tensor(idx, device=device)) - tl.tensor(target, dtype=tl.float32, device=device)) ** 2).mean()
        to.zero_grad()
        lo.zero_grad()
        tloss.backward()
        lloss.backward()
        to.step()
        lo.step()
        assert abs(lloss.item() - tloss.item()) < 1e-6
        np.testing.assert_allclose(_np(lmod.weight), tmod.weight.detach().numpy(), rtol=1e-5, atol=1e-6)
    untouched = sorted(set(range(12)))
    assert len(untouched) == 12


def test_optimizer_sparse_refusals(device):
    lw = tl.nn.Embedding(6, 2, sparse=True).to(device)
    lw(tl.tensor([1, 3], device=device)).sum().backward()
    for cls, msg in ((tl.optim.Adam, "Adam does not support sparse gradients, please consider SparseAdam"),
                     (tl.optim.AdamW, "Adam does not support sparse gradients"),
                     (tl.optim.RMSprop, "RMSprop does not support sparse gradients")):
        before = _np(lw.weight).copy()
        with pytest.raises(RuntimeError, match=msg):
            cls(lw.parameters()).step()
        assert np.array_equal(_np(lw.weight), before)
    dense = tl.nn.Linear(2, 2).to(device)
    dense(tl.ones(1, 2, device=device)).sum().backward()
    with pytest.raises(RuntimeError, match="SparseAdam does not support dense gradients"):
        tl.optim.SparseAdam(dense.parameters()).step()
    with pytest.raises(ValueError, match="SparseAdam requires dense parameter tensors"):
        tl.optim.SparseAdam([tl.ones(2, 2, device=device).to_sparse().requires_grad_()])
    for kw, msg in (({"lr": -1}, "Invalid learning rate"), ({"eps": -1}, "Invalid epsilon value"),
                    ({"betas": (1.0, 0.9)}, "Invalid beta parameter at index 0")):
        with pytest.raises(ValueError, match=msg):
            tl.optim.SparseAdam(lw.parameters(), **kw)


def _normalized_adjacency(n, rng):
    a = (rng.random((n, n)) < 0.3).astype(np.float64)
    a = np.maximum(a, a.T) + np.eye(n)
    deg = a.sum(1)
    norm = a / np.sqrt(deg)[:, None] / np.sqrt(deg)[None, :]
    rows, cols = np.nonzero(norm)
    return np.stack([rows, cols]), norm[rows, cols]


@pytest.mark.parametrize("layout", ["coo", "csr"])
def test_graph_convolution_training_matches_torch(device, torch, layout):
    rng = np.random.default_rng(5)
    n, f, h, c = 12, 6, 5, 3
    idx, val = _normalized_adjacency(n, rng)
    x = rng.standard_normal((n, f)).astype(np.float32)
    y = rng.integers(0, c, n)
    w1, w2 = (rng.standard_normal((f, h)) * 0.3).astype(np.float32), (rng.standard_normal((h, c)) * 0.3).astype(
        np.float32)
    ta = torch.sparse_coo_tensor(torch.tensor(idx), torch.tensor(val, dtype=torch.float32), (n, n)).coalesce()
    la = tl.sparse_coo_tensor(tl.tensor(idx, device=device), tl.tensor(val, dtype=tl.float32, device=device), (n, n))
    if layout == "csr":
        ta, la = ta.to_sparse_csr(), la.to_sparse_csr()
    tp = [torch.tensor(w, requires_grad=True) for w in (w1, w2)]
    lp = [tl.tensor(w, device=device, requires_grad=True) for w in (w1, w2)]
    to, lo = torch.optim.Adam(tp, lr=0.05), tl.optim.Adam(lp, lr=0.05)
    tx, lx = torch.tensor(x), tl.tensor(x, device=device)
    ty, ly = torch.tensor(y), tl.tensor(y, device=device)
    for _ in range(6):
        th = torch.relu(torch.sparse.mm(ta, tx @ tp[0]))
        tloss = torch.nn.functional.cross_entropy(torch.sparse.mm(ta, th @ tp[1]), ty)
        lh = tl.relu(tl.sparse.mm(la, lx @ lp[0]))
        lloss = tl.nn.functional.cross_entropy(tl.sparse.mm(la, lh @ lp[1]), ly)
        to.zero_grad()
        lo.zero_grad()
        tloss.backward()
        lloss.backward()
        for a, b in zip(lp, tp):
            np.testing.assert_allclose(_np(a.grad), b.grad.numpy(), rtol=1e-4, atol=1e-6)
        to.step()
        lo.step()
        assert abs(lloss.item() - tloss.item()) < 1e-5


# -- the CUDA path: cuSPARSE's SpMM through the driver (its emulated stand-in checks the arguments) -----------
@pytest.mark.cuda
def test_cuda_spmm_goes_through_the_driver(torch):
    from tensorlab.backends import cuda as _cuda_backend_probe  # noqa: F401
    from tensorlab.backends.cuda.active import driver
    if not hasattr(driver, "CSRMM_CALLS"):
        pytest.skip("the emulation driver records its cuSPARSE calls; a GPU runs CuPy's")
    before = len(driver.CSRMM_CALLS)
    s = _coo("cuda", tl.float32)
    out = tl.sparse.mm(s, tl.ones(5, 2, device="cuda"))
    np.testing.assert_allclose(_np(out), torch.sparse.mm(_torch_coo(torch, torch.float32), torch.ones(5, 2)).numpy(),
                               rtol=1e-6)
    assert driver.CSRMM_CALLS[before:] == [(4, 2, 5, 5, "int64", "float32")]


@pytest.mark.cuda
def test_emulated_spmm_checks_its_arguments():
    import os
    if os.environ.get("TENSORLAB_CUDA_EMULATION") != "1":
        pytest.skip("checks the emulation driver's cuSPARSE stand-in")
    from tensorlab.backends.cuda import sparse as csp
    crow = tl.tensor([0, 2, 1], device="cuda")  # decreasing offsets
    col = tl.tensor([0, 1], device="cuda")
    vals = tl.ones(2, device="cuda")
    out = tl.empty(2, 2, device="cuda")
    with pytest.raises(RuntimeError, match="row offsets"):
        csp.sparse_csr_mm(out, crow, col, vals, tl.ones(2, 2, device="cuda"))
    with pytest.raises(RuntimeError, match="column index"):
        csp.sparse_csr_mm(out, tl.tensor([0, 1, 2], device="cuda"), tl.tensor([0, 5], device="cuda"), vals,
                          tl.ones(2, 2, device="cuda"))


def test_mm_reduce_and_sampled_addmm(device, torch):
    x = RNG.standard_normal((4, 5))
    x[x < 0.2] = 0
    x[2] = 0  # a row without entries
    d = RNG.standard_normal((5, 3))
    tc, lc = torch.tensor(x).to_sparse_csr(), tl.tensor(x, device=device).to_sparse_csr()
    for reduce in ("sum", "mean", "amax", "amin"):
        np.testing.assert_allclose(_np(tl.sparse.mm(lc, tl.tensor(d, device=device), reduce)),
                                   torch.sparse.mm(tc, torch.tensor(d), reduce).numpy(), rtol=1e-12, atol=1e-12)
    with pytest.raises(RuntimeError, match="reduce argument must be one of"):
        tl.sparse.mm(lc, tl.tensor(d, device=device), "max")
    a, b = RNG.standard_normal((4, 2)), RNG.standard_normal((2, 5))
    want = torch.sparse.sampled_addmm(tc, torch.tensor(a), torch.tensor(b), beta=0.5, alpha=2.0)
    got = tl.sparse.sampled_addmm(lc, tl.tensor(a, device=device), tl.tensor(b, device=device), beta=0.5, alpha=2.0)
    _same_sparse(got, want)


def test_autograd_grad_of_a_sparse_input(device, torch):
    d = RNG.standard_normal((5, 3))
    ts = _torch_coo(torch, requires_grad=True)
    (tg,) = torch.autograd.grad(torch.sparse.mm(ts, torch.tensor(d)).sum(), ts)
    s = _coo(device, requires_grad=True)
    (g,) = tl.autograd.grad(tl.sparse.mm(s, tl.tensor(d, device=device)).sum(), s)
    _same_sparse(g, tg)


def test_sgd_takes_sparse_gradients(device, torch):
    w = RNG.standard_normal((6, 3)).astype(np.float32)
    tmod = torch.nn.Embedding.from_pretrained(torch.tensor(w), freeze=False, sparse=True)
    lmod = tl.nn.Embedding.from_pretrained(tl.tensor(w, device=device), freeze=False, sparse=True)
    to, lo = torch.optim.SGD(tmod.parameters(), lr=0.3), tl.optim.SGD(lmod.parameters(), lr=0.3)
    for idx in ([1, 2, 2, 5], [0, 1, 1, 1]):
        for opt, mod, lib in ((to, tmod, torch), (lo, lmod, tl)):
            opt.zero_grad()
            (mod(lib.tensor(idx, device=device) if lib is tl else lib.tensor(idx)) ** 2).sum().backward()
            opt.step()
        np.testing.assert_allclose(_np(lmod.weight), tmod.weight.detach().numpy(), rtol=1e-6, atol=1e-6)
    to = torch.optim.SGD(tmod.parameters(), lr=0.1, momentum=0.9, nesterov=True)
    lo = tl.optim.SGD(lmod.parameters(), lr=0.1, momentum=0.9, nesterov=True)
    for idx in ([1, 2, 2, 5], [0, 1, 1, 1], [3]):
        for opt, mod, lib in ((to, tmod, torch), (lo, lmod, tl)):
            opt.zero_grad()
            (mod(lib.tensor(idx, device=device) if lib is tl else lib.tensor(idx)) ** 2).sum().backward()
            opt.step()
        np.testing.assert_allclose(_np(lmod.weight), tmod.weight.detach().numpy(), rtol=1e-6, atol=1e-6)
    with pytest.raises(RuntimeError, match="add\\(sparse, dense\\) is not supported"):
        tl.optim.SGD(lmod.parameters(), lr=0.1, weight_decay=0.1).step()


def test_gcn_script_runs_unchanged_under_compat():
    """A torch GCN script (sparse adjacency, torch.sparse.mm, Embedding(sparse=True) + SparseAdam) prints torch's
    losses under `python -m tensorlab.compat`."""
    import os
    from test_compat_runner import SCRIPTS, _compare_with_torch, _run, _split
    script = os.path.join(SCRIPTS, "gcn_sparse.py")
    res = _run([script])
    assert res.returncode == 0, res.stderr
    losses, rest = _split(res.stdout)
    assert len(losses) == 8 and losses[-1] < losses[0]
    assert rest[-1] == "nnz 346 True (2, 346)"
    _compare_with_torch(script, [], res)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_sparse_gradient(device, torch, mode):
    w = RNG.standard_normal((8, 3))
    idx = np.array([1, 2, 4, 4, 3, 0, 7, 1])
    offsets = np.array([0, 3, 3, 6])
    tw = torch.tensor(w, requires_grad=True)
    if mode == "max":  # torch refuses it
        with pytest.raises(ValueError, match="max mode does not support sparse weights"):
            tl.nn.functional.embedding_bag(tl.tensor(idx, device=device), tl.tensor(w, device=device),
                                           tl.tensor(offsets, device=device), mode=mode, sparse=True)
        return
    out_t = torch.nn.functional.embedding_bag(torch.tensor(idx), tw, torch.tensor(offsets), mode=mode, sparse=True,
                                              padding_idx=0)
    (out_t * torch.arange(12.0, dtype=torch.float64).reshape(4, 3)).sum().backward()
    lw = tl.tensor(w, device=device, requires_grad=True)
    out_l = tl.nn.functional.embedding_bag(tl.tensor(idx, device=device), lw, tl.tensor(offsets, device=device),
                                           mode=mode, sparse=True, padding_idx=0)
    (out_l * tl.arange(12.0, dtype=tl.float64, device=device).reshape(4, 3)).sum().backward()
    np.testing.assert_allclose(_np(out_l), out_t.detach().numpy(), rtol=1e-12)
    assert lw.grad.is_sparse and tw.grad.is_sparse
    np.testing.assert_allclose(_np(lw.grad.to_dense()), tw.grad.to_dense().numpy(), rtol=1e-12)


def test_checkpoints_interoperate_with_torch(device, torch, tmp_path):
    s = _coo(device)
    tl.save({"coo": s, "csr": s.to_sparse_csr()}, tmp_path / "ours.pt")
    theirs = torch.load(tmp_path / "ours.pt", weights_only=True, map_location="cpu")
    assert theirs["coo"].layout == torch.sparse_coo and theirs["csr"].layout == torch.sparse_csr
    np.testing.assert_allclose(theirs["coo"].to_dense().numpy(), _np(s.to_dense()))
    np.testing.assert_allclose(theirs["csr"].to_dense().numpy(), _np(s.to_dense()))
    ts = _torch_coo(torch)
    torch.save({"coo": ts, "csr": ts.to_sparse_csr()}, tmp_path / "theirs.pt")
    back = tl.load(tmp_path / "theirs.pt")
    _same_sparse(back["coo"], ts)
    _same_sparse(back["csr"], ts.to_sparse_csr())
    with tl.sparse.check_sparse_tensor_invariants():
        with pytest.raises(RuntimeError, match="size is inconsistent"):
            tl.sparse_coo_tensor(tl.tensor([[5]], device=device), tl.ones(1, device=device), (3,))


@pytest.mark.cuda
def test_cuda_mm_of_a_coalesced_matrix_never_waits_for_the_device(torch):
    import os
    if os.environ.get("TENSORLAB_CUDA_EMULATION") != "1" and not tl.cuda.is_available():
        pytest.skip("needs the CUDA backend")
    s = _coo("cuda", tl.float32).coalesce()
    csr = s.to_sparse_csr()
    d = tl.ones(5, 3, device="cuda", requires_grad=True)
    with tl.cuda.set_sync_debug_mode("error"):  # the forward product (the backward gathers rows: index_select's
        for a in (s, csr):                      # bounds check waits, as every CUDA gather of tensorlab's)
            out = tl.sparse.mm(a, d)
    out.sum().backward()
    assert tuple(d.grad.shape) == (5, 3)


@pytest.mark.parametrize("steps", [0, 1])
def test_sparse_adam_fault_sweep_leaves_everything_unchanged(device, steps):
    from tensorlab.testing import InjectedFault, assert_unchanged, fault_points, inject_fault, snapshot

    def setup():
        w = tl.tensor(np.arange(12.0).reshape(6, 2) / 7, dtype=tl.float32, device=device, requires_grad=True)
        opt = tl.optim.SparseAdam([w], lr=0.1)
        for k in range(steps + 1):
            w.grad = None
            tl.nn.functional.embedding(tl.tensor([1, 4, 1, k], device=device), w, sparse=True).pow(2).sum().backward()
            if k < steps:
                opt.step()
        return w, opt

    def objs(w, opt):
        return [w] + [v for v in opt.state.get(w, {}).values() if isinstance(v, tl.Tensor)]

    points = fault_points(lambda: setup()[1].step())
    assert points
    for kind, n in points[::3]:
        w, opt = setup()
        snap = snapshot(*objs(w, opt))
        state_before = dict(opt.state.get(w, {}))
        with inject_fault(kind, n) as plan:
            try:
                opt.step()
            except InjectedFault:
                pass
        if not plan.fired:
            continue
        assert_unchanged(snap)
        assert opt.state.get(w, {}).get("step") == state_before.get("step"), (kind, n)
        ref_w, ref_opt = setup()
        ref_opt.step()
        opt.step()
        assert _np(w).tobytes() == _np(ref_w).tobytes(), (kind, n)


def test_sparse_mask(device, torch):
    x = RNG.standard_normal((4, 5))
    ts = _torch_coo(torch).coalesce()
    got = tl.tensor(x, device=device).sparse_mask(_coo(device).coalesce())
    _same_sparse(got, torch.tensor(x).sparse_mask(ts))
    np.testing.assert_allclose(_np(tl.tensor(x, device=device).sparse_mask(_coo(device).to_sparse_csr()).to_dense()),
                               torch.tensor(x).sparse_mask(ts.to_sparse_csr()).to_dense().numpy())


def test_zero_grad_keeps_an_empty_sparse_gradient(device, torch):
    e = tl.nn.Embedding(5, 2, sparse=True).to(device)
    opt = tl.optim.SparseAdam(e.parameters())
    e(tl.tensor([1, 2], device=device)).sum().backward()
    opt.zero_grad(set_to_none=False)
    te = torch.nn.Embedding(5, 2, sparse=True)
    te(torch.tensor([1, 2])).sum().backward()
    te.zero_grad(set_to_none=False)
    _same_sparse(e.weight.grad, te.weight.grad)
    e(tl.tensor([1, 2], device=device)).sum().backward()
    assert e.weight.grad._nnz() == 2
    e.zero_grad(set_to_none=False)
    assert e.weight.grad._nnz() == 0 and e.weight.grad.is_sparse


def test_gradients_of_sum_softmax_and_to_sparse_match_torch(device, torch):
    w = RNG.standard_normal((4, 5))
    for fn in (lambda lib, s: lib.sparse.sum(s, 1).to_dense(), lambda lib, s: lib.sparse.softmax(s, 1).to_dense(),
               lambda lib, s: lib.sparse.log_softmax(s, 0).to_dense(), lambda lib, s: s.to_dense()):
        ts = _torch_coo(torch).coalesce().detach().requires_grad_()
        out_t = fn(torch, ts)
        (out_t * torch.tensor(w[:, :out_t.shape[-1]] if out_t.dim() == 2 else w[:, 0])).sum().backward()
        s = _coo(device).coalesce().detach().requires_grad_()
        out_l = fn(tl, s)
        (out_l * tl.tensor(w[:, :out_l.shape[-1]] if out_l.dim() == 2 else w[:, 0], device=device)).sum().backward()
        np.testing.assert_allclose(_np(out_l), out_t.detach().numpy(), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(_np(s.grad.to_dense()), ts.grad.to_dense().numpy(), rtol=1e-10, atol=1e-12)
    x = RNG.standard_normal((4, 5))
    x[x < 0] = 0
    d = RNG.standard_normal((5, 2))
    tx = torch.tensor(x, requires_grad=True)
    torch.sparse.mm(tx.to_sparse(), torch.tensor(d)).pow(2).sum().backward()
    lx = tl.tensor(x, device=device, requires_grad=True)
    tl.sparse.mm(lx.to_sparse(), tl.tensor(d, device=device)).pow(2).sum().backward()
    np.testing.assert_allclose(_np(lx.grad), tx.grad.to_dense().numpy(), rtol=1e-12, atol=1e-12)


def test_adagrad_takes_sparse_gradients(device, torch):
    w = RNG.standard_normal((6, 3)).astype(np.float32)
    tmod = torch.nn.Embedding.from_pretrained(torch.tensor(w), freeze=False, sparse=True)
    lmod = tl.nn.Embedding.from_pretrained(tl.tensor(w, device=device), freeze=False, sparse=True)
    to = torch.optim.Adagrad(tmod.parameters(), lr=0.3, lr_decay=0.1)
    lo = tl.optim.Adagrad(lmod.parameters(), lr=0.3, lr_decay=0.1)
    for idx in ([1, 2, 2, 5], [0, 1, 1, 1], [5, 4]):
        for opt, mod, lib in ((to, tmod, torch), (lo, lmod, tl)):
            opt.zero_grad()
            (mod(lib.tensor(idx, device=device) if lib is tl else lib.tensor(idx)) ** 2).sum().backward()
            opt.step()
        np.testing.assert_allclose(_np(lmod.weight), tmod.weight.detach().numpy(), rtol=1e-6, atol=1e-6)
    with pytest.raises(RuntimeError, match="weight_decay option is not compatible with sparse gradients"):
        tl.optim.Adagrad(lmod.parameters(), weight_decay=0.1).step()


def test_spdiags(device, torch):
    d = np.arange(1.0, 13.0).reshape(3, 4)
    for offs, shape in (([0, -1, 2], (3, 4)), ([1, -3, 0], (5, 4)), ([1, -1, 0], (4, 5))):
        want = torch.sparse.spdiags(torch.tensor(d), torch.tensor(offs), shape)
        got = tl.sparse.spdiags(tl.tensor(d, device=device), tl.tensor(offs, device=device), shape)
        _same_sparse(got, want)
        want = torch.sparse.spdiags(torch.tensor(d), torch.tensor(offs), shape, layout=torch.sparse_csr)
        got = tl.sparse.spdiags(tl.tensor(d, device=device), tl.tensor(offs, device=device), shape, layout=tl.sparse_csr)
        np.testing.assert_allclose(_np(got.to_dense()), want.to_dense().numpy())
    with pytest.raises(RuntimeError, match="duplicate"):
        tl.sparse.spdiags(tl.tensor(d, device=device), tl.tensor([0, 0, 1], device=device), (3, 4))
