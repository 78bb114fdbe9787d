"""torch's underscore functions (ops/private_ops.py: _chunk_cat, segment_reduce, _unsafe_masked_index(_put_accumulate),
_native_batch_norm_legit) and the torch.ops.aten-only operators (tensorlab/compat/aten.py: slice, _safe_softmax,
_softmax_backward_data, _batch_norm_with_update, _upsample_bilinear2d_aa) on every device against torch,
with gradients and torch's errors. (tests/test_opinfo_db.py runs torch's own samples of them too.)"""
from __future__ import annotations

import numpy as np
import pytest

import tensorlab as tl
from tensorlab.compat import aten


def rnd(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def close(ours, ref, **tol):
    np.testing.assert_allclose(ours.detach().cpu().numpy(), ref.detach().numpy(), **(tol or {"rtol": 1e-6,
                                                                                            "atol": 1e-6}))


def test_chunk_cat(device, torch):
    a, b = rnd(2, 3, 7), rnd(2, 3, 2, seed=1)
    for dim, n in ((2, 3), (-1, 5), (1, 2), (0, 4)):
        got = tl._chunk_cat([tl.tensor(a, device=device), tl.tensor(b, device=device)], dim, n)
        want = torch._chunk_cat([torch.tensor(a), torch.tensor(b)], dim, n)
        assert tuple(got.shape) == tuple(want.shape)
        close(got, want)
    with pytest.raises(RuntimeError, match="same sizes"):
        tl._chunk_cat([tl.zeros(2, 3, device=device), tl.zeros(3, 3, device=device)], 1, 2)


@pytest.mark.parametrize("reduce", ["max", "min", "sum", "mean", "prod"])
def test_segment_reduce(device, torch, reduce):
    x = rnd(6, 3)
    lengths = np.array([2, 0, 3, 1])
    for initial in (None, 0.5):
        for by in ("lengths", "offsets"):
            seg = lengths if by == "lengths" else np.concatenate([[0], np.cumsum(lengths)])
            kw = {"initial": initial, by: None}
            got = tl.segment_reduce(tl.tensor(x, device=device), reduce, **{**kw, by: tl.tensor(seg, device=device)})
            want = torch.segment_reduce(torch.tensor(x), reduce, **{**kw, by: torch.tensor(seg)})
            np.testing.assert_allclose(got.cpu().numpy(), want.numpy(), rtol=1e-12, atol=1e-12)
    # a batch along axis 1, and the gradient
    x2 = rnd(3, 5, 2, seed=2)
    l2 = np.array([[1, 4], [0, 5], [3, 2]])
    X = tl.tensor(x2, device=device, requires_grad=True)
    TX = torch.tensor(x2, requires_grad=True)
    got = tl.segment_reduce(X, reduce, lengths=tl.tensor(l2, device=device), axis=1)
    want = torch.segment_reduce(TX, reduce, lengths=torch.tensor(l2), axis=1)
    close(got, want)
    w = rnd(*want.shape, seed=3)
    (got * tl.tensor(w, device=device)).sum().backward()
    (want * torch.tensor(w)).sum().backward()
    close(X.grad, TX.grad, rtol=1e-10, atol=1e-10)


def test_segment_reduce_errors(device, torch):
    x = tl.zeros(5, device=device)
    with pytest.raises(RuntimeError, match="sum to"):
        tl.segment_reduce(x, "sum", lengths=tl.tensor([1, 2], device=device))
    with pytest.raises(RuntimeError, match="Either lengths or offsets"):
        tl.segment_reduce(x, "sum")
    with pytest.raises(RuntimeError, match="reduce must be one of"):
        tl.segment_reduce(x, "median", lengths=tl.tensor([5], device=device))
    with pytest.raises(RuntimeError):
        torch.segment_reduce(torch.zeros(5), "sum", lengths=torch.tensor([1, 2]))


def test_unsafe_masked_index(device, torch):
    x = rnd(5, 5)
    mask = np.random.default_rng(4).random((6, 6)) > 0.4
    i0 = np.arange(-1, 5).reshape(6, 1) * 2  # out of range where masked off
    i1 = np.arange(6).reshape(1, 6)
    i0 = np.where(mask.any(1, keepdims=True), np.clip(i0, 0, 4), i0)
    ok = (np.clip(i0, -5, 4) == i0) & (np.clip(i1, -5, 4) == i1)
    m = mask & ok
    X = tl.tensor(x, device=device, requires_grad=True)
    TX = torch.tensor(x, requires_grad=True)
    got = tl._unsafe_masked_index(X, tl.tensor(m, device=device), [tl.tensor(i0, device=device),
                                                                     tl.tensor(i1, device=device)], -2.0)
    want = torch._unsafe_masked_index(TX, torch.tensor(m), [torch.tensor(i0), torch.tensor(i1)], -2.0)
    close(got, want)
    got.sum().backward()
    want.sum().backward()
    close(X.grad, TX.grad)
    v = rnd(6, 6, seed=5)
    got = tl._unsafe_masked_index_put_accumulate(tl.tensor(x, device=device), tl.tensor(m, device=device),
                                                 [tl.tensor(i0, device=device), tl.tensor(i1, device=device)],
                                                 tl.tensor(v, device=device))
    want = torch._unsafe_masked_index_put_accumulate(torch.tensor(x), torch.tensor(m),
                                                     [torch.tensor(i0), torch.tensor(i1)], torch.tensor(v))
    close(got, want)
    with pytest.raises(RuntimeError, match="bool"):
        tl._unsafe_masked_index(tl.tensor(x, device=device), tl.ones(6, 6, device=device), [None], 0.0)


def test_native_batch_norm_legit(device, torch):
    x, w, b = rnd(4, 3, 5), rnd(3, seed=1), rnd(3, seed=2)
    for training in (True, False):
        rm, rv = np.zeros(3), np.ones(3)
        trm, trv = torch.tensor(rm), torch.tensor(rv)
        orm, orv = tl.tensor(rm, device=device), tl.tensor(rv, device=device)
        got = tl._native_batch_norm_legit(tl.tensor(x, device=device), tl.tensor(w, device=device),
                                          tl.tensor(b, device=device), orm, orv, training, 0.1, 1e-5)
        want = torch._native_batch_norm_legit(torch.tensor(x), torch.tensor(w), torch.tensor(b), trm, trv, training,
                                              0.1, 1e-5)
        for g, t in zip(got, want):
            close(g, t, rtol=1e-10, atol=1e-10)
        close(orm, trm, rtol=1e-12, atol=1e-12)
        close(orv, trv, rtol=1e-12, atol=1e-12)
    got = tl._native_batch_norm_legit(tl.tensor(x, device=device), None, None, True, 0.1, 1e-5)  # no_stats
    want = torch._native_batch_norm_legit(torch.tensor(x), None, None, True, 0.1, 1e-5)
    for g, t in zip(got, want):
        close(g, t, rtol=1e-10, atol=1e-10)


def test_aten_slice_and_softmax_family(device, torch):
    x = rnd(4, 6, 5)
    X = tl.tensor(x, device=device)
    for kw in ({"dim": 1, "start": 1, "end": -2}, {"dim": 2, "start": None, "end": 100, "step": 2}, {"dim": 0}):
        close(aten.slice(X, **kw), torch.ops.aten.slice(torch.tensor(x), **kw))
    assert aten.slice(X, 1, 0, 3)._base is X or aten.slice(X, 1, 0, 3).data_ptr() == X.data_ptr()  # a view
    with pytest.raises(RuntimeError, match="step must be positive"):
        aten.slice(X, 0, 0, 2, 0)
    with pytest.raises(IndexError, match="out of range"):
        aten.slice(X, 3)
    m = x.copy()
    m[1] = -np.inf
    m[2, :, 1] = -np.inf
    M = tl.tensor(m, device=device, requires_grad=True)
    TM = torch.tensor(m, requires_grad=True)
    got, want = aten._safe_softmax(M, 0), torch.ops.aten._safe_softmax(TM, 0)
    close(got, want)
    got = aten._safe_softmax(M, 2)
    want = torch.ops.aten._safe_softmax(TM, 2)
    close(got, want)
    w = rnd(4, 6, 5, seed=3)
    (got * tl.tensor(w, device=device)).sum().backward()
    (want * torch.tensor(w)).sum().backward()
    close(M.grad, TM.grad)
    y = torch.softmax(torch.tensor(x), 1)
    g = rnd(4, 6, 5, seed=4)
    close(aten._softmax_backward_data(tl.tensor(g, device=device), tl.tensor(y.numpy(), device=device), 1,
                                      tl.float32),
          torch.ops.aten._softmax_backward_data(torch.tensor(g), y, 1, torch.float32), rtol=1e-6, atol=1e-6)


def test_aten_batch_norm_with_update_and_upsample_aa(device, torch):
    x, w = rnd(4, 3, 5), rnd(3, seed=1)
    orm, orv = tl.zeros(3, dtype=tl.float64, device=device), tl.ones(3, dtype=tl.float64, device=device)
    trm, trv = torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64)
    got = aten._batch_norm_with_update(tl.tensor(x, device=device), tl.tensor(w, device=device), None, orm, orv,
                                       0.3, 1e-5)
    want = torch.ops.aten._batch_norm_with_update(torch.tensor(x), torch.tensor(w), None, trm, trv, 0.3, 1e-5)
    assert len(got) == 4 and got[3].dtype == tl.uint8 and got[3].numel() == 0
    for g, t in zip(got[:3], want[:3]):
        close(g, t, rtol=1e-10, atol=1e-10)
    close(orm, trm, rtol=1e-12, atol=1e-12)
    close(orv, trv, rtol=1e-12, atol=1e-12)
    img = rnd(2, 3, 10, 14)
    I = tl.tensor(img, device=device)
    TI = torch.tensor(img)
    close(aten._upsample_bilinear2d_aa(I, (4, 5), False, None),
          torch.ops.aten._upsample_bilinear2d_aa(TI, (4, 5), False, None), rtol=1e-10, atol=1e-10)
    close(aten._upsample_bilinear2d_aa(I, None, True, [0.6, 1.3]),
          torch.ops.aten._upsample_bilinear2d_aa(TI, None, True, [0.6, 1.3]), rtol=1e-10, atol=1e-10)
    close(aten._upsample_bilinear2d_aa(I, (4, 5), False, scales_h=0.5, scales_w=0.4),
          torch.ops.aten._upsample_bilinear2d_aa(TI, (4, 5), False, 0.5, 0.4), rtol=1e-10, atol=1e-10)
    with pytest.raises(RuntimeError, match="4-D"):
        aten._upsample_bilinear2d_aa(tl.zeros(3, 4, device=device), (2, 2), False, None)


def test_reflected_operators_as_torch(device, torch):
    x = rnd(3, 4)
    X, TX = tl.tensor(x, device=device), torch.tensor(x)
    close(X.__rdiv__(2.0), TX.__rdiv__(2.0))
    close(tl.Tensor.__rsub__(X, 3.0), torch.Tensor.__rsub__(TX, 3.0))
