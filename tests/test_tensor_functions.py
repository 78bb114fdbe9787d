"""The tensor functions real torch code calls (new_*, repeat/tile/repeat_interleave, meshgrid,
diag/diag_embed/trace, take_along_dim, isclose/allclose/equal, index_add/index_copy/masked_scatter,
searchsorted/bucketize, unique/unique_consecutive, bincount, histc, multinomial, cdist) against
torch on every device: values, dtypes, shapes, errors, and gradients in float64."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import tensorlab as tl
from device_waits import settle_all
from tensorlab.autograd import gradcheck


def T(a, device, **kw):
    return tl.tensor(np.asarray(a), device=device, **kw)


def same(ours, ref, torch, exact=True):
    """ours (a tensorlab tensor) equals ref (a torch tensor): shape, dtype and values."""
    assert tuple(ours.shape) == tuple(ref.shape), (ours.shape, ref.shape)
    assert ours.dtype.torch_name == str(ref.dtype).replace("torch.", "").capitalize() or \
        str(ours.dtype).split(".")[-1] == str(ref.dtype).split(".")[-1], (ours.dtype, ref.dtype)
    a, b = ours.detach().cpu().numpy(), ref.detach().numpy()
    if exact:
        np.testing.assert_array_equal(a, b)
    else:
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def both_raise(fn_ours, fn_torch, exc=RuntimeError, match=None):
    """torch raises `exc` (any exception when None); ours raises the same type, matching `match`
    (torch's own message when `match` is None)."""
    with pytest.raises(exc or Exception) as e_t:
        fn_torch()
    with pytest.raises(type(e_t.value)) as e_o:
        fn_ours()
        settle_all()  # a check done on a CUDA device raises at the next host wait
    if match is not None:
        assert e_o.match(match)
    else:
        assert str(e_o.value).startswith(str(e_t.value).rstrip(".")[:60]), (str(e_o.value), str(e_t.value))


# -- new_* constructors ----------------------------------------------------------------------------
def test_new_constructors(device, torch):
    x = tl.ones(2, 3, dtype=tl.float64, device=device)
    tx = torch.ones(2, 3, dtype=torch.float64)
    same(x.new_zeros(4, 2), tx.new_zeros(4, 2), torch)
    same(x.new_zeros((4, 2)), tx.new_zeros((4, 2)), torch)
    same(x.new_ones(3), tx.new_ones(3), torch)
    same(x.new_full((2, 2), 7), tx.new_full((2, 2), 7), torch)
    same(x.new_ones(2, dtype=tl.int32), tx.new_ones(2, dtype=torch.int32), torch)
    same(x.new_tensor([1, 2, 3]), tx.new_tensor([1, 2, 3]), torch)
    e = x.new_empty(5, 1)
    assert e.shape == (5, 1) and e.dtype is tl.float64 and e.device == x.device
    r = x.new_zeros(2, requires_grad=True)
    assert r.requires_grad and r.is_leaf
    with pytest.warns(UserWarning, match="clone"):
        c = x.new_tensor(tl.ones(2, dtype=tl.int64, device=device))
    assert c.dtype is tl.float64  # the tensor's dtype wins over the data's, as torch


# -- repeat / tile / repeat_interleave ----------------------------------------------------------------
@pytest.mark.parametrize("shape,reps", [((3,), (2,)), ((2, 3), (2, 1)), ((2, 3), (1, 2, 2)), ((), (3, 2)),
                                        ((2, 0), (2, 3)), ((2, 3), (0, 1))])
def test_repeat(device, torch, shape, reps):
    a = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    same(T(a, device).repeat(*reps), torch.tensor(a).repeat(*reps), torch)
    same(T(a, device).repeat(reps), torch.tensor(a).repeat(reps), torch)


def test_repeat_errors(device, torch):
    both_raise(lambda: tl.ones(2, 3, device=device).repeat(2), lambda: torch.ones(2, 3).repeat(2),
               match="Number of dimensions of repeat dims")
    both_raise(lambda: tl.ones(2, device=device).repeat(-1), lambda: torch.ones(2).repeat(-1))


@pytest.mark.parametrize("shape,reps", [((2, 3), (2,)), ((2, 3), (2, 2, 2)), ((3,), (1, 2)), ((2, 3), ())])
def test_tile(device, torch, shape, reps):
    a = np.arange(6, dtype=np.int64).reshape(shape) if shape != (3,) else np.arange(3)
    same(tl.tile(T(a, device), reps), torch.tile(torch.tensor(a), reps), torch)
    same(T(a, device).tile(reps), torch.tensor(a).tile(reps), torch)


def test_repeat_and_tile_gradients(device):
    x = tl.tensor(np.random.rand(2, 3), dtype=tl.float64, device=device, requires_grad=True)
    assert gradcheck(lambda t: t.repeat(2, 1, 3), (x,))
    assert gradcheck(lambda t: t.tile((2,)), (x,))
    assert gradcheck(lambda t: tl.repeat_interleave(t, 2, dim=1), (x,))
    assert gradcheck(lambda t: tl.repeat_interleave(t, tl.tensor([2, 0], device=device), dim=0), (x,))


def test_repeat_interleave(device, torch):
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    x, tx = T(a, device), torch.tensor(a)
    same(tl.repeat_interleave(x, 2), torch.repeat_interleave(tx, 2), torch)
    same(x.repeat_interleave(3, dim=0), tx.repeat_interleave(3, dim=0), torch)
    same(x.repeat_interleave(2, dim=-1), tx.repeat_interleave(2, dim=-1), torch)
    r = np.array([1, 0, 3])
    same(tl.repeat_interleave(x, T(r, device), dim=1), torch.repeat_interleave(tx, torch.tensor(r), dim=1), torch)
    same(tl.repeat_interleave(x, T(r, device), dim=1, output_size=4),
         torch.repeat_interleave(tx, torch.tensor(r), dim=1, output_size=4), torch)
    same(tl.repeat_interleave(T([2, 0, 1], device)), torch.repeat_interleave(torch.tensor([2, 0, 1])), torch)
    same(tl.repeat_interleave(x, T(2, device), dim=0), torch.repeat_interleave(tx, torch.tensor(2), dim=0), torch)
    same(tl.repeat_interleave(T(5, device), 3), torch.repeat_interleave(torch.tensor(5), 3), torch)
    if device == "cpu":  # torch checks output_size where that costs no device wait
        both_raise(lambda: tl.repeat_interleave(x, T(r, device), dim=1, output_size=5),
                   lambda: torch.repeat_interleave(tx, torch.tensor(r), dim=1, output_size=5), match="allocated size")
    both_raise(lambda: tl.repeat_interleave(x, T([1, 2], device), dim=1),
               lambda: torch.repeat_interleave(tx, torch.tensor([1, 2]), dim=1), match="same size as input along dim")
    both_raise(lambda: tl.repeat_interleave(x, T([1, -2, 1], device), dim=1),
               lambda: torch.repeat_interleave(tx, torch.tensor([1, -2, 1]), dim=1), match="negative")
    both_raise(lambda: tl.repeat_interleave(x, T([[1, 2]], device)),
               lambda: torch.repeat_interleave(tx, torch.tensor([[1, 2]])), match="0-dim or 1-dim")


# -- meshgrid / diag / diag_embed / trace ------------------------------------------------------------
@pytest.mark.parametrize("indexing", ["ij", "xy"])
def test_meshgrid(device, torch, indexing):
    a, b, c = np.arange(2), np.arange(3) * 10, np.arange(4) * 100
    ours = tl.meshgrid(T(a, device), T(b, device), T(c, device), indexing=indexing)
    ref = torch.meshgrid(torch.tensor(a), torch.tensor(b), torch.tensor(c), indexing=indexing)
    for o, r in zip(ours, ref):
        same(o, r, torch)
    ours = tl.meshgrid([T(a, device), T(b, device)], indexing=indexing)
    ref = torch.meshgrid([torch.tensor(a), torch.tensor(b)], indexing=indexing)
    for o, r in zip(ours, ref):
        same(o, r, torch)


def test_meshgrid_default_warns_and_is_ij(device, torch):
    with pytest.warns(UserWarning, match="required to pass the indexing argument"):
        ours = tl.meshgrid(T([1, 2], device), T([3, 4, 5], device))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = torch.meshgrid(torch.tensor([1, 2]), torch.tensor([3, 4, 5]))
    for o, r in zip(ours, ref):
        same(o, r, torch)
    both_raise(lambda: tl.meshgrid(T([1], device), indexing="ab"),
               lambda: torch.meshgrid(torch.tensor([1]), indexing="ab"), match="indexing must be one of")
    both_raise(lambda: tl.meshgrid(tl.ones(2, 2, device=device), indexing="ij"),
               lambda: torch.meshgrid(torch.ones(2, 2), indexing="ij"), match="0D or 1D")


def test_diag_diag_embed_trace(device, torch):
    v = np.array([1.0, 2.0, 3.0], dtype=np.float32)
    m = np.arange(12, dtype=np.float32).reshape(3, 4)
    for k in (-2, 0, 1):
        same(tl.diag(T(v, device), k), torch.diag(torch.tensor(v), k), torch)
        same(T(m, device).diag(k), torch.tensor(m).diag(k), torch)
    b = np.random.rand(2, 3).astype(np.float32)
    for args in ((0, -2, -1), (1, 0, 2), (-1, 2, 0)):
        same(tl.diag_embed(T(b, device), *args), torch.diag_embed(torch.tensor(b), *args), torch)
    same(tl.trace(T(m, device)), torch.trace(torch.tensor(m)), torch)
    mi = np.arange(9, dtype=np.int32).reshape(3, 3)
    same(T(mi, device).trace(), torch.tensor(mi).trace(), torch)  # int32 sums in int64
    both_raise(lambda: tl.trace(tl.ones(2, 2, 2, device=device)), lambda: torch.trace(torch.ones(2, 2, 2)),
               match="expected a matrix")
    both_raise(lambda: tl.diag(tl.ones(2, 2, 2, device=device)), lambda: torch.diag(torch.ones(2, 2, 2)))
    both_raise(lambda: tl.diag_embed(tl.ones(2, device=device), 0, 0, 0), lambda: torch.diag_embed(torch.ones(2), 0, 0, 0),
               match="diagonal dimensions cannot be identical")


def test_diag_gradients(device):
    x = tl.tensor(np.random.rand(2, 3), dtype=tl.float64, device=device, requires_grad=True)
    assert gradcheck(lambda t: tl.diag_embed(t, 1), (x,))
    assert gradcheck(lambda t: tl.diag(t[0], -1), (x,))
    assert gradcheck(lambda t: tl.diag(t, 1), (x,))
    assert gradcheck(lambda t: tl.trace(t), (x,))


def test_take_along_dim(device, torch):
    a = np.random.rand(3, 4).astype(np.float32)
    idx = np.argsort(a, axis=1)
    same(tl.take_along_dim(T(a, device), T(idx, device), 1), torch.take_along_dim(torch.tensor(a), torch.tensor(idx), 1),
         torch)
    same(T(a, device).take_along_dim(T([[0], [2], [1]], device), dim=1),
         torch.tensor(a).take_along_dim(torch.tensor([[0], [2], [1]]), dim=1), torch)
    flat = np.array([0, 11, 5])
    same(tl.take_along_dim(T(a, device), T(flat, device)), torch.take_along_dim(torch.tensor(a), torch.tensor(flat)),
         torch)
    # broadcast outside `dim`
    i2 = np.array([[0, 1]])
    same(tl.take_along_dim(T(a, device), T(i2, device), dim=1),
         torch.take_along_dim(torch.tensor(a), torch.tensor(i2), dim=1), torch)
    both_raise(lambda: tl.take_along_dim(T(a, device), T([0.0], device), 0),
               lambda: torch.take_along_dim(torch.tensor(a), torch.tensor([0.0]), 0), match="dtype of indices")
    x = tl.tensor(a, dtype=tl.float64, device=device, requires_grad=True)
    assert gradcheck(lambda t: tl.take_along_dim(t, T(idx, device), 1), (x,))


# -- closeness ---------------------------------------------------------------------------------------
def test_isclose_allclose_equal(device, torch):
    inf, nan = float("inf"), float("nan")
    a = np.array([1.0, 1e10, 1e-8, inf, -inf, nan, nan, 0.0, 1.0], dtype=np.float32)
    b = np.array([1.0 + 1e-6, 1.00001e10, 1e-9, inf, inf, nan, 1.0, 1e-9, 1.1], dtype=np.float32)
    for kw in ({}, {"equal_nan": True}, {"rtol": 0, "atol": 0}, {"rtol": 0.2, "atol": 0.0}):
        same(tl.isclose(T(a, device), T(b, device), **kw), torch.isclose(torch.tensor(a), torch.tensor(b), **kw), torch)
        assert tl.allclose(T(a, device), T(a, device), **kw) == torch.allclose(torch.tensor(a), torch.tensor(a), **kw)
    ai, bi = np.array([1, 5, 100]), np.array([1, 6, 101])
    for kw in ({}, {"atol": 1}, {"rtol": 0.01}):
        same(tl.isclose(T(ai, device), T(bi, device), **kw), torch.isclose(torch.tensor(ai), torch.tensor(bi), **kw),
             torch)
    assert T(a[:5], device).allclose(T(a[:5], device))
    assert tl.equal(T(ai, device), T(ai, device)) and not tl.equal(T(ai, device), T(bi, device))
    assert not tl.equal(T(ai, device), T(ai[:2], device))
    assert not tl.equal(T([nan], device), T([nan], device))
    assert T(ai, device).equal(T(ai, device))
    both_raise(lambda: tl.isclose(T([1], device), T([1.0], device)),
               lambda: torch.isclose(torch.tensor([1]), torch.tensor([1.0])), match="did not match")


# -- index_add / index_copy / masked_scatter --------------------------------------------------------
def test_index_add_and_copy(device, torch):
    base = np.random.rand(4, 3).astype(np.float32)
    src = np.random.rand(3, 3).astype(np.float32)
    idx = np.array([0, 2, 0])
    x, tx = T(base, device), torch.tensor(base)
    same(x.index_add(0, T(idx, device), T(src, device)), tx.index_add(0, torch.tensor(idx), torch.tensor(src)), torch,
         exact=False)
    same(tl.index_add(x, 0, T(idx, device), T(src, device), alpha=-2),
         torch.index_add(tx, 0, torch.tensor(idx), torch.tensor(src), alpha=-2), torch, exact=False)
    y, ty = x.clone(), tx.clone()
    src2 = np.random.rand(4, 3).astype(np.float32)
    r = y.index_add_(1, T([2, 1, 0], device), T(src2, device))
    assert r is y
    ty.index_add_(1, torch.tensor([2, 1, 0]), torch.tensor(src2))
    same(y, ty, torch, exact=False)
    uidx = np.array([3, 1, 0])
    same(x.index_copy(0, T(uidx, device), T(src, device)), tx.index_copy(0, torch.tensor(uidx), torch.tensor(src)), torch)
    z, tz = x.clone(), tx.clone()
    z.index_copy_(1, T([1], device), T(src[:, :1].repeat(4, 0)[:4], device))
    tz.index_copy_(1, torch.tensor([1]), torch.tensor(src[:, :1].repeat(4, 0)[:4]))
    same(z, tz, torch)
    xi = T([1, 2, 3], device)
    same(xi.index_add(0, T([0, 0], device), T([5, 5], device), alpha=2),
         torch.tensor([1, 2, 3]).index_add(0, torch.tensor([0, 0]), torch.tensor([5, 5]), alpha=2), torch)
    both_raise(lambda: x.index_add(0, T(idx, device), T(src, device).double()),
               lambda: tx.index_add(0, torch.tensor(idx), torch.tensor(src).double()), match="same scalar type")
    both_raise(lambda: x.index_add(0, T(idx, device), T(src[:, :2], device)),
               lambda: tx.index_add(0, torch.tensor(idx), torch.tensor(src[:, :2])), match="source tensor shape")
    fidx = np.array([0.0, 1.0, 2.0], np.float32)
    both_raise(lambda: x.index_add(0, T(fidx, device), T(src, device)),
               lambda: tx.index_add(0, torch.tensor(fidx), torch.tensor(src)))
    both_raise(lambda: x.index_add(0, T([0, 9, 1], device), T(src, device)),
               lambda: tx.index_add(0, torch.tensor([0, 9, 1]), torch.tensor(src)), match="index 9 is out of bounds")
    both_raise(lambda: x.index_copy(0, T([0, 9, 1], device), T(src, device)),
               lambda: tx.index_copy(0, torch.tensor([0, 9, 1]), torch.tensor(src)), exc=IndexError,
               match="index 9 is out of bounds")
    for bad in (np.ones((1, 3, 1), np.float32), np.ones((2, 3), np.float32), np.ones((1, 2), np.float32)):
        both_raise(lambda: x.index_copy(0, T([0], device), T(bad, device)),
                   lambda: tx.index_copy(0, torch.tensor([0]), torch.tensor(bad)), exc=None)
        both_raise(lambda: x.index_add(0, T([0], device), T(bad, device)),
                   lambda: tx.index_add(0, torch.tensor([0]), torch.tensor(bad)), exc=None)
    # torch truncates alpha for integer tensors
    same(xi.index_add(0, T([0], device), T([3], device), alpha=2.7),
         torch.tensor([1, 2, 3]).index_add(0, torch.tensor([0]), torch.tensor([3]), alpha=2.7), torch)


def test_index_add_copy_gradients(device):
    x = tl.tensor(np.random.rand(4, 3), dtype=tl.float64, device=device, requires_grad=True)
    s = tl.tensor(np.random.rand(3, 3), dtype=tl.float64, device=device, requires_grad=True)
    assert gradcheck(lambda a, b: a.index_add(0, T([0, 2, 0], device), b, alpha=3), (x, s))
    assert gradcheck(lambda a, b: a.index_copy(0, T([3, 1, 0], device), b), (x, s))


def test_masked_scatter(device, torch):
    base = np.zeros((2, 4), dtype=np.float32)
    mask = np.array([[True, False, True, True], [False, True, False, False]])
    src = np.arange(10, dtype=np.float32).reshape(2, 5)
    same(T(base, device).masked_scatter(T(mask, device), T(src, device)),
         torch.tensor(base).masked_scatter(torch.tensor(mask), torch.tensor(src)), torch)
    rowmask = np.array([True, False, False, True])  # broadcast over rows
    same(tl.masked_scatter(T(base, device), T(rowmask, device), T(src, device)),
         torch.masked_scatter(torch.tensor(base), torch.tensor(rowmask), torch.tensor(src)), torch)
    y, ty = T(base, device), torch.tensor(base)
    assert y.masked_scatter_(T(mask, device), T(src, device)) is y
    ty.masked_scatter_(torch.tensor(mask), torch.tensor(src))
    same(y, ty, torch)
    both_raise(lambda: T(base, device).masked_scatter(T(mask.astype(np.uint8), device), T(src, device)),
               lambda: torch.tensor(base).masked_scatter(torch.tensor(mask.astype(np.uint8)), torch.tensor(src)),
               match="boolean masks")
    with pytest.raises(RuntimeError, match="Number of elements of source < number of ones in mask"):
        T(base, device).masked_scatter(T(mask, device), T(np.array([1.0, 2.0], np.float32), device))
    x = tl.tensor(np.random.rand(2, 4), dtype=tl.float64, device=device, requires_grad=True)
    s = tl.tensor(np.random.rand(6), dtype=tl.float64, device=device, requires_grad=True)
    assert gradcheck(lambda a, b: a.masked_scatter(T(mask, device), b), (x, s))


# -- searchsorted / bucketize ------------------------------------------------------------------------
def test_searchsorted(device, torch):
    seq = np.array([1, 3, 5, 7, 9])
    vals = np.array([[3, 6, 9], [0, 10, 5]])
    for right in (False, True):
        same(tl.searchsorted(T(seq, device), T(vals, device), right=right),
             torch.searchsorted(torch.tensor(seq), torch.tensor(vals), right=right), torch)
    same(tl.searchsorted(T(seq, device), T(vals, device), side="right", out_int32=True),
         torch.searchsorted(torch.tensor(seq), torch.tensor(vals), side="right", out_int32=True), torch)
    nd = np.sort(np.random.rand(2, 3, 6).astype(np.float32), -1)
    v = np.random.rand(2, 3, 4).astype(np.float32)
    v[0, 0, :2] = nd[0, 0, 2]  # exact ties
    v[1, 2, 3] = float("nan")
    for side in ("left", "right"):
        same(tl.searchsorted(T(nd, device), T(v, device), side=side),
             torch.searchsorted(torch.tensor(nd), torch.tensor(v), side=side), torch)
    unsorted = np.array([5.0, 1.0, 3.0, 2.0])
    sorter = np.argsort(unsorted)
    same(tl.searchsorted(T(unsorted, device), T([2.5, 0.0, 6.0], device), sorter=T(sorter, device)),
         torch.searchsorted(torch.tensor(unsorted), torch.tensor([2.5, 0.0, 6.0]), sorter=torch.tensor(sorter)), torch)
    same(tl.searchsorted(T(seq, device), 4), torch.searchsorted(torch.tensor(seq), 4), torch)
    same(tl.searchsorted(T(seq, device), T([2.5, 3.0], device)),
         torch.searchsorted(torch.tensor(seq), torch.tensor([2.5, 3.0])), torch)  # promoted
    same(tl.searchsorted(T(seq, device), T(np.zeros((0,), np.int64), device)),
         torch.searchsorted(torch.tensor(seq), torch.tensor(np.zeros((0,), np.int64))), torch)
    both_raise(lambda: tl.searchsorted(T([[1.0, 2.0]], device), T([1.0, 2.0], device)),
               lambda: torch.searchsorted(torch.tensor([[1.0, 2.0]]), torch.tensor([1.0, 2.0])),
               match="boundaries tensor should be 1 dimension")
    both_raise(lambda: tl.searchsorted(T(seq, device), T(vals, device), right=True, side="left"),
               lambda: torch.searchsorted(torch.tensor(seq), torch.tensor(vals), right=True, side="left"),
               match="opposites")


def test_bucketize(device, torch):
    b = np.array([1.0, 2.0, 4.0])
    x = np.array([[0.5, 1.0, 3.0], [4.0, 5.0, 2.0]])
    for right in (False, True):
        same(tl.bucketize(T(x, device), T(b, device), right=right),
             torch.bucketize(torch.tensor(x), torch.tensor(b), right=right), torch)
    same(tl.bucketize(T(x, device), T(b, device), out_int32=True),
         torch.bucketize(torch.tensor(x), torch.tensor(b), out_int32=True), torch)
    same(tl.bucketize(3, T(b, device)), torch.bucketize(3, torch.tensor(b)), torch)
    both_raise(lambda: tl.bucketize(T(x, device), T([b], device)),
               lambda: torch.bucketize(torch.tensor(x), torch.tensor([b])), match="boundaries tensor must be 1 dimension")


# -- unique ------------------------------------------------------------------------------------------
def _same_all(ours, ref, torch):
    if not isinstance(ref, tuple):
        ours, ref = (ours,), (ref,)
    assert len(ours) == len(ref)
    for o, r in zip(ours, ref):
        same(o, r, torch)


@pytest.mark.parametrize("inv", [False, True])
@pytest.mark.parametrize("cnt", [False, True])
def test_unique(device, torch, inv, cnt):
    a = np.array([[3, 1, 2], [1, 3, 3], [0, 2, 1]])
    _same_all(tl.unique(T(a, device), return_inverse=inv, return_counts=cnt),
              torch.unique(torch.tensor(a), return_inverse=inv, return_counts=cnt), torch)
    _same_all(T(a, device).unique(sorted=False, return_inverse=inv, return_counts=cnt),
              torch.tensor(a).unique(sorted=False, return_inverse=inv, return_counts=cnt), torch)
    rows = np.array([[1, 2], [0, 5], [1, 2], [0, 4], [1, 2]])
    for dim in (0, 1):
        _same_all(tl.unique(T(rows, device), dim=dim, return_inverse=inv, return_counts=cnt),
                  torch.unique(torch.tensor(rows), dim=dim, return_inverse=inv, return_counts=cnt), torch)
    c = np.array([1, 1, 2, 2, 3, 1, 1, 2])
    _same_all(tl.unique_consecutive(T(c, device), return_inverse=inv, return_counts=cnt),
              torch.unique_consecutive(torch.tensor(c), return_inverse=inv, return_counts=cnt), torch)
    _same_all(T(rows, device).unique_consecutive(dim=0, return_inverse=inv, return_counts=cnt),
              torch.tensor(rows).unique_consecutive(dim=0, return_inverse=inv, return_counts=cnt), torch)


def test_unique_floats_and_empty(device, torch):
    f = np.array([2.5, -1.0, 2.5, 0.0, -0.0, 7.0], dtype=np.float32)
    _same_all(tl.unique(T(f, device), return_counts=True), torch.unique(torch.tensor(f), return_counts=True), torch)
    b = np.array([True, False, True])
    _same_all(tl.unique(T(b, device), return_inverse=True), torch.unique(torch.tensor(b), return_inverse=True), torch)
    e = np.zeros((0,), np.int64)
    _same_all(tl.unique(T(e, device), return_inverse=True, return_counts=True),
              torch.unique(torch.tensor(e), return_inverse=True, return_counts=True), torch)


# -- bincount / histc --------------------------------------------------------------------------------
def test_bincount(device, torch):
    x = np.array([4, 1, 1, 0, 4, 4])
    w = np.array([0.5, 1.0, 2.0, 0.25, 1.0, 3.0])
    same(tl.bincount(T(x, device)), torch.bincount(torch.tensor(x)), torch)
    same(T(x, device).bincount(minlength=8), torch.tensor(x).bincount(minlength=8), torch)
    same(tl.bincount(T(x, device), T(w.astype(np.float32), device)),
         torch.bincount(torch.tensor(x), torch.tensor(w.astype(np.float32))), torch)
    same(tl.bincount(T(x, device), T(w, device)), torch.bincount(torch.tensor(x), torch.tensor(w)), torch)
    same(tl.bincount(T(x, device), T(x, device)), torch.bincount(torch.tensor(x), torch.tensor(x)), torch)
    same(tl.bincount(T(np.zeros(0, np.int64), device), minlength=3),
         torch.bincount(torch.tensor(np.zeros(0, np.int64)), minlength=3), torch)
    both_raise(lambda: tl.bincount(T([-1, 2], device)), lambda: torch.bincount(torch.tensor([-1, 2])),
               match="non-negative")
    both_raise(lambda: tl.bincount(T([[1, 2]], device)), lambda: torch.bincount(torch.tensor([[1, 2]])),
               match="non-negative")
    both_raise(lambda: tl.bincount(T(np.ones(1, np.float32), device)), lambda: torch.bincount(torch.ones(1)),
               exc=NotImplementedError)
    both_raise(lambda: tl.bincount(T([1, 2], device), T([1.0], device)),
               lambda: torch.bincount(torch.tensor([1, 2]), torch.tensor([1.0])), match="same length")


def test_histc(device, torch):
    x = np.random.randn(200).astype(np.float32)
    same(tl.histc(T(x, device), bins=10), torch.histc(torch.tensor(x), bins=10), torch)
    same(T(x, device).histc(bins=7, min=-1, max=1), torch.tensor(x).histc(bins=7, min=-1, max=1), torch)
    edges = np.array([0.0, 1.0, 2.0, 3.0, 2.999, 1.5, -0.1, 3.1], dtype=np.float64)
    same(tl.histc(T(edges, device), bins=3, min=0, max=3), torch.histc(torch.tensor(edges), bins=3, min=0, max=3),
         torch)
    two = np.array([2.0, 2.0], np.float32)
    same(tl.histc(T(two, device), bins=4), torch.histc(torch.tensor(two), bins=4), torch)
    both_raise(lambda: tl.histc(T([1, 2], device)), lambda: torch.histc(torch.tensor([1, 2])),
               exc=NotImplementedError)
    both_raise(lambda: tl.histc(T([1.0], device), bins=0), lambda: torch.histc(torch.tensor([1.0]), bins=0),
               match="bins must be > 0")
    both_raise(lambda: tl.histc(T([1.0], device), min=3, max=1), lambda: torch.histc(torch.tensor([1.0]), min=3, max=1),
               match="max must be larger than min")


# -- multinomial -------------------------------------------------------------------------------------
def test_multinomial_without_replacement(device):
    p = T([[0.0, 1.0, 2.0, 0.0, 5.0], [1.0, 1.0, 1.0, 1.0, 1.0]], device)
    g = tl.Generator(device=device).manual_seed(3) if device == "cpu" else None
    r = tl.multinomial(p, 3, generator=g)
    assert r.shape == (2, 3) and r.dtype is tl.int64
    rows = r.cpu().numpy()
    assert set(rows[0]) == {1, 2, 4}  # the three nonzero categories, each once
    assert all(len(set(row)) == 3 for row in rows)
    one = p[0].multinomial(1)
    assert one.shape == (1,) and one.item() in (1, 2, 4)


def test_multinomial_is_seeded_and_distributed(device):
    p = T([0.1, 0.0, 0.6, 0.3], device)
    tl.manual_seed(7)
    a = tl.multinomial(p, 4000, replacement=True)
    tl.manual_seed(7)
    b = tl.multinomial(p, 4000, replacement=True)
    assert tl.equal(a, b)
    freq = np.bincount(a.cpu().numpy(), minlength=4) / 4000
    assert freq[1] == 0
    np.testing.assert_allclose(freq, [0.1, 0.0, 0.6, 0.3], atol=0.04)
    # without replacement, the first draw follows p too
    firsts = tl.multinomial(p.expand(3000, 4), 1).cpu().numpy().ravel()
    np.testing.assert_allclose(np.bincount(firsts, minlength=4) / 3000, [0.1, 0.0, 0.6, 0.3], atol=0.04)


def test_multinomial_errors(device, torch):
    both_raise(lambda: tl.multinomial(T([1, 2], device), 1), lambda: torch.multinomial(torch.tensor([1, 2]), 1),
               match="floating-point dtypes")
    both_raise(lambda: tl.multinomial(T([1.0, 2.0], device), 3), lambda: torch.multinomial(torch.tensor([1.0, 2.0]), 3),
               match="without replacement")
    both_raise(lambda: tl.multinomial(T([1.0, -2.0], device), 1),
               lambda: torch.multinomial(torch.tensor([1.0, -2.0]), 1), match="element < 0")
    both_raise(lambda: tl.multinomial(T([0.0, 0.0], device), 1, True),
               lambda: torch.multinomial(torch.tensor([0.0, 0.0]), 1, True), match="sum of probabilities")
    both_raise(lambda: tl.multinomial(T([1.0], device), 0), lambda: torch.multinomial(torch.tensor([1.0]), 0),
               match="n_sample <= 0")
    both_raise(lambda: tl.multinomial(tl.ones(1, 1, 1, device=device), 1),
               lambda: torch.multinomial(torch.ones(1, 1, 1), 1), match="1 or 2 dim")


# -- cdist -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("p", [2.0, 1.0, 0.0, 3.0, float("inf")])
def test_cdist(device, torch, p):
    a = np.random.rand(2, 5, 3)
    b = np.random.rand(4, 3)
    same(tl.cdist(T(a, device), T(b, device), p=p), torch.cdist(torch.tensor(a), torch.tensor(b), p=p), torch,
         exact=False)


def test_cdist_mm_modes_and_errors(device, torch):
    a = np.random.rand(30, 4)
    b = np.random.rand(6, 4)
    for mode in ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist", "donot_use_mm_for_euclid_dist"):
        same(tl.cdist(T(a, device), T(b, device), compute_mode=mode),
             torch.cdist(torch.tensor(a), torch.tensor(b), compute_mode=mode), torch, exact=False)
    both_raise(lambda: tl.cdist(T(a, device), T(b[:, :3], device)),
               lambda: torch.cdist(torch.tensor(a), torch.tensor(b[:, :3])), match="same number of columns")
    both_raise(lambda: tl.cdist(T([[1, 2]], device), T([[1, 2]], device)),
               lambda: torch.cdist(torch.tensor([[1, 2]]), torch.tensor([[1, 2]])), match="floating-point")
    both_raise(lambda: tl.cdist(T(a, device), T(b, device), p=-1), lambda: torch.cdist(torch.tensor(a), torch.tensor(b), p=-1),
               match="non-negative")
    x = tl.tensor(a[:4], device=device, requires_grad=True)
    y = tl.tensor(b[:3], device=device, requires_grad=True)
    for p, mode in ((2.0, "donot_use_mm_for_euclid_dist"), (2.0, "use_mm_for_euclid_dist"), (1.5, None)):
        kw = {"compute_mode": mode} if mode else {}
        assert gradcheck(lambda u, v: tl.cdist(u, v, p=p, **kw), (x, y))


@pytest.mark.parametrize("p", [0.0, 1.0, 2.0, 3.0, float("inf")])
def test_cdist_gradient_at_ties_and_zero_distance(device, torch, p):
    a = np.array([[1.0, 2.0], [0.0, 0.0], [3.0, -1.0]])
    b = np.array([[1.0, 2.0], [1.0, 1.0]])
    x = tl.tensor(a, device=device, requires_grad=True)
    tx = torch.tensor(a, requires_grad=True)
    r = tl.cdist(x, tl.tensor(b, device=device), p=p)
    tr = torch.cdist(tx, torch.tensor(b), p=p)
    same(r, tr, torch, exact=False)
    r.sum().backward()
    tr.sum().backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), tx.grad.numpy(), rtol=1e-12)


# -- bad input: the exception torch raises, with torch's words (tensorlab may add context after them) --
ERRORS = {
    "repeat_neg": lambda m, d: m.ones(2, device=d).repeat(-1),
    "repeat_few": lambda m, d: m.ones(2, 2, device=d).repeat(2),
    "tile_neg": lambda m, d: m.tile(m.ones(2, device=d), (-1,)),
    "ri_float_repeats": lambda m, d: m.repeat_interleave(m.ones(2, device=d), m.ones(2, device=d)),
    "ri_neg_int": lambda m, d: m.repeat_interleave(m.ones(2, device=d), -1),
    "ri_dim": lambda m, d: m.repeat_interleave(m.ones(2, device=d), 2, dim=3),
    "meshgrid_none": lambda m, d: m.meshgrid(indexing="ij"),
    "ri_output_size_int": lambda m, d: m.repeat_interleave(m.ones(2, device=d), 2, output_size=3),
    "index_add_idx2d": lambda m, d: m.ones(2, 2, device=d).index_add(0, m.zeros(1, 1, dtype=m.int64, device=d),
                                                                      m.ones(1, 2, device=d)),
    "index_add_count": lambda m, d: m.ones(2, 2, device=d).index_add(0, m.zeros(1, dtype=m.int64, device=d),
                                                                      m.ones(2, 2, device=d)),
    "index_copy_count": lambda m, d: m.ones(2, 2, device=d).index_copy(0, m.zeros(1, dtype=m.int64, device=d),
                                                                        m.ones(2, 2, device=d)),
    "index_copy_dims": lambda m, d: m.ones(2, 2, device=d).index_copy(0, m.zeros(1, dtype=m.int64, device=d),
                                                                       m.ones(1, 2, 1, device=d)),
    "masked_scatter_shape": lambda m, d: m.ones(2, device=d).masked_scatter(m.ones(3, dtype=m.bool, device=d),
                                                                            m.ones(3, device=d)),
    "masked_scatter_few": lambda m, d: m.ones(3, device=d).masked_scatter(m.ones(3, dtype=m.bool, device=d),
                                                                          m.ones(2, device=d)),
    "masked_scatter_dtype": lambda m, d: m.ones(2, device=d).masked_scatter(m.ones(2, dtype=m.bool, device=d),
                                                                            m.ones(2, dtype=m.float64, device=d)),
    "ss_sorter_shape": lambda m, d: m.searchsorted(m.ones(3, device=d), m.ones(1, device=d),
                                                   sorter=m.zeros(2, dtype=m.int64, device=d)),
    "ss_side": lambda m, d: m.searchsorted(m.ones(3, device=d), m.ones(1, device=d), side="middle"),
    "ss_scalar_nd": lambda m, d: m.searchsorted(m.ones(1, 3, device=d), 2),
    "unique_dim": lambda m, d: m.unique(m.ones(2, device=d), dim=1),
    "unique_consecutive_dim": lambda m, d: m.unique_consecutive(m.ones(2, device=d), dim=2),
    "bincount_weights_2d": lambda m, d: m.bincount(m.ones(1, dtype=m.int64, device=d), m.ones(1, 1, device=d)),
    "bincount_minlength": lambda m, d: m.bincount(m.ones(1, dtype=m.int64, device=d), minlength=-1),
    "histc_inf": lambda m, d: m.histc(m.full((2,), float("inf"), device=d), min=1),
    "take_along_dim_bcast": lambda m, d: m.take_along_dim(m.ones(2, 3, device=d),
                                                          m.zeros(3, 3, dtype=m.int64, device=d), 1),
    "take_along_dim_ndim": lambda m, d: m.take_along_dim(m.ones(2, 3, device=d), m.zeros(3, dtype=m.int64, device=d), 1),
    "cdist_batch": lambda m, d: m.cdist(m.ones(2, 3, 4, device=d), m.ones(3, 3, 4, device=d)),
    "cdist_1d": lambda m, d: m.cdist(m.ones(3, device=d), m.ones(3, device=d)),
    "cdist_dtypes": lambda m, d: m.cdist(m.ones(2, 3, device=d), m.ones(2, 3, dtype=m.float64, device=d)),
    "diag_3d": lambda m, d: m.diag(m.ones(2, 2, 2, device=d)),
    "diag_embed_dims": lambda m, d: m.diag_embed(m.ones(2, device=d), 0, 0, 5),
    "trace_1d": lambda m, d: m.trace(m.ones(3, device=d)),
    "isclose_dtypes": lambda m, d: m.isclose(m.ones(2, device=d), m.ones(2, dtype=m.float64, device=d)),
    "isclose_rtol": lambda m, d: m.isclose(m.ones(2, device=d), m.ones(2, device=d), rtol=-1),
    "meshgrid_dtypes": lambda m, d: m.meshgrid(m.ones(2, device=d), m.ones(2, dtype=m.float64, device=d),
                                               indexing="ij"),
    "multinomial_few_categories": lambda m, d: m.multinomial(m.ones(2, device=d), 3),
    "new_full_size": lambda m, d: m.ones(2, device=d).new_full(2, 1),
    "vector_norm_str": lambda m, d: m.linalg.vector_norm(m.ones(2, device=d), "fro"),
    "vector_norm_int": lambda m, d: m.linalg.vector_norm(m.ones(2, dtype=m.int64, device=d)),
    "matrix_norm_1d": lambda m, d: m.linalg.matrix_norm(m.ones(2, device=d)),
    "matrix_norm_ord": lambda m, d: m.linalg.matrix_norm(m.ones(2, 2, device=d), 3),
    "norm_3d_ord": lambda m, d: m.linalg.norm(m.ones(2, 2, 2, device=d), "fro"),
    "matrix_power_float": lambda m, d: m.linalg.matrix_power(m.eye(2, device=d), 1.5),
    "matrix_power_rect": lambda m, d: m.linalg.matrix_power(m.ones(2, 3, device=d), 2),
}


@pytest.mark.parametrize("case", sorted(ERRORS))
def test_errors_word_as_torch(device, torch, case):
    call = ERRORS[case]
    with pytest.raises(Exception) as te:
        call(torch, "cpu")
    with pytest.raises(type(te.value)) as oe:
        call(tl, device)
    want = str(te.value).split(" (Triggered internally")[0].rstrip(".")
    squeeze = "".join  # compared without whitespace: torch words one of these "but gotFloat"
    assert squeeze(str(oe.value).split()).startswith(squeeze(want.split())), (str(oe.value), want)


@pytest.mark.parametrize("replacement", [False, True])
def test_multinomial_generator_reproducible(device, replacement):
    p = T(np.array([[0.2, 0.0, 1.0, 3.0, 0.5], [1.0, 1.0, 0.0, 1.0, 2.0]], np.float32), device)

    def draw(dev):
        g = tl.Generator(device=dev).manual_seed(11)
        return tl.multinomial(p.to(dev), 3, replacement, generator=g).cpu().numpy()
    a, b = draw(device), draw(device)
    np.testing.assert_array_equal(a, b)
    # Philox gives the CPU and CUDA the same stream, so both devices draw the same samples
    np.testing.assert_array_equal(a, draw("cpu"))
    g = tl.Generator(device=device).manual_seed(11)
    first = tl.multinomial(p, 64, True, generator=g).cpu().numpy()
    second = tl.multinomial(p, 64, True, generator=g).cpu().numpy()
    assert not np.array_equal(first, second)  # the generator moved on


@pytest.mark.parametrize("dt", ["float16", "bfloat16", "float32", "float64", "int32", "int64", "uint8", "bool"])
def test_result_dtypes_and_refusals_match_torch(device, torch, dt):
    """Each op over each dtype: the result dtype torch gives, or the exception type it raises."""
    ops = {
        "histc": lambda m, x: m.histc(x, bins=3),
        "bincount": lambda m, x: m.bincount(x),
        "cdist": lambda m, x: m.cdist(x.reshape(2, 2), x.reshape(2, 2)),
        "cdist_mm": lambda m, x: m.cdist(x.reshape(4, 1).expand(4, 2).repeat(8, 1), x.reshape(2, 2)),
        "searchsorted": lambda m, x: m.searchsorted(x, x),
        "unique_counts": lambda m, x: m.unique(x, return_counts=True)[1],
        "unique": lambda m, x: m.unique(x),
        "isclose": lambda m, x: m.isclose(x, x),
        "trace": lambda m, x: m.trace(x.reshape(2, 2)),
        "diag_embed": lambda m, x: m.diag_embed(x),
        "repeat_interleave": lambda m, x: m.repeat_interleave(x, 2),
        "multinomial": lambda m, x: m.multinomial(x, 1),
        "einsum": lambda m, x: m.einsum("ij,jk", x.reshape(2, 2), x.reshape(2, 2)),
        "einsum_sum": lambda m, x: m.einsum("ij->i", x.reshape(2, 2)),
        "index_add": lambda m, x: x.index_add(0, m.tensor([0], device=x.device), x[:1]),
        "masked_scatter": lambda m, x: x.masked_scatter(x != x, x),
        "vector_norm": lambda m, x: m.linalg.vector_norm(x),
        "matrix_norm": lambda m, x: m.linalg.matrix_norm(x.reshape(2, 2)),
        "take_along_dim": lambda m, x: m.take_along_dim(x, m.tensor([0, 1], device=x.device)),
        "meshgrid": lambda m, x: m.meshgrid(x, x, indexing="ij")[0],
        "tile": lambda m, x: x.tile((2,)),
    }

    def run(m, fn, dev):
        x = m.tensor([1, 0, 1, 1], device=dev).to(getattr(m, dt))
        try:
            return str(fn(m, x).dtype).split(".")[-1]
        except Exception as e:  # noqa: BLE001 (the type is the answer)
            return type(e).__name__
    for name, fn in ops.items():
        assert run(tl, fn, device) == run(torch, fn, "cpu"), name


@pytest.mark.parametrize("shape,dim", [((3, 0), 1), ((3, 0), 0), ((0, 0, 2), 1), ((4, 0, 0), 0), ((0,), 0), ((0, 2), 0)])
def test_unique_dim_on_empty_tensors(device, torch, shape, dim):
    a = np.zeros(shape, np.int64)
    for fn in ("unique", "unique_consecutive"):
        kw = {"dim": dim, "return_inverse": True, "return_counts": True}
        try:
            want = getattr(torch, fn)(torch.tensor(a), **kw)
        except RuntimeError as e:
            with pytest.raises(RuntimeError) as oe:
                getattr(tl, fn)(T(a, device), **kw)
            assert str(oe.value) == str(e)
            continue
        _same_all(getattr(tl, fn)(T(a, device), **kw), want, torch)


@pytest.mark.parametrize("seq_shape,val_shape", [((3, 0), (3, 4)), ((2, 3), (2, 0)), ((0,), (2, 3)), ((4,), (0,)),
                                                 ((2, 1, 0), (2, 1, 3))])
def test_searchsorted_empty(device, torch, seq_shape, val_shape):
    seq = np.zeros(seq_shape, np.float32)
    val = np.ones(val_shape, np.float32)
    for side in ("left", "right"):
        same(tl.searchsorted(T(seq, device), T(val, device), side=side),
             torch.searchsorted(torch.tensor(seq), torch.tensor(val), side=side), torch)


# -- host/device waits: the composites whose output size is known wait for nothing ------------------
def test_composites_with_known_sizes_do_not_wait(device):
    x = tl.tensor(np.random.rand(3, 4).astype(np.float32), device=device)
    seq = tl.tensor(np.sort(np.random.rand(5)).astype(np.float32), device=device)
    calls = [  # (take_along_dim / index_add check the user's indices: the index primitives wait for that)
        lambda: x.repeat(2, 1), lambda: x.tile((2,)), lambda: tl.repeat_interleave(x, 2, dim=0),
        lambda: tl.meshgrid(seq, seq, indexing="ij"), lambda: tl.diag_embed(x), lambda: tl.trace(x),
        lambda: tl.isclose(x, x), lambda: tl.cdist(x, x),
        lambda: tl.searchsorted(seq, x), lambda: tl.bucketize(x, seq, right=True),  # sorts only
        lambda: tl.einsum("ij,kj->ik", x, x), lambda: tl.einsum("ii->i", x[:, :3]),
        lambda: tl.linalg.vector_norm(x), lambda: tl.linalg.matrix_norm(x, 1), lambda: tl.kron(x, x),
        lambda: tl.tensordot(x, x.mT, 1), lambda: tl.linalg.multi_dot([x, x.mT, x]),
        lambda: tl.linalg.cross(x[:, :3], x[:, 1:]), lambda: tl.cartesian_prod(seq, seq),
    ]
    with tl.cuda.sync_trace() as trace:
        for call in calls:
            call()
    assert trace.reasons() == []


def test_data_dependent_sizes_wait_once_per_check(device):
    if device == "cpu":
        pytest.skip("the CPU never waits")
    x = tl.tensor([3, 1, 2, 1], device=device)
    with tl.cuda.sync_trace() as trace:
        tl.bincount(x)
    assert trace.reasons() == ["tolist"]  # min and max at once; index_put's check is on the device
    with tl.cuda.sync_trace() as trace:
        tl.multinomial(tl.ones(2, 3, device=device), 2)
    assert trace.reasons() == []  # both validity checks on the device
    for kw in ({}, {"return_inverse": True, "return_counts": True}):
        with tl.cuda.sync_trace() as trace:
            tl.unique(x, **kw)
        assert len(trace.reasons()) == 1, trace.reasons()  # the number of distinct values


EDGES = {
    "index_add_0dim_two_sources": lambda m, d: m.tensor(1., device=d).index_add(0, m.tensor([0, 0], device=d),
                                                                                 m.tensor([2., 3.], device=d)),
    "index_add_0dim": lambda m, d: m.tensor(1., device=d).index_add(0, m.tensor(0, device=d), m.tensor(2., device=d)),
    "index_add_0dim_oob": lambda m, d: m.tensor(1., device=d).index_add(0, m.tensor([1], device=d),
                                                                         m.tensor(2., device=d)),
    "index_add_0dim_source_two_indices": lambda m, d: m.tensor(1., device=d).index_add(
        0, m.tensor([0, 0], device=d), m.tensor(2., device=d)),
    "index_add_1d_0dim_source": lambda m, d: m.ones(3, device=d).index_add(0, m.tensor([1], device=d),
                                                                           m.tensor(2., device=d)),
    "index_copy_0dim": lambda m, d: m.tensor(1., device=d).index_copy(0, m.tensor([0, 0], device=d),
                                                                       m.tensor([2., 3.], device=d)),
    "bincount_empty_weights": lambda m, d: m.bincount(m.ones(0, dtype=m.int64, device=d), m.ones(0, device=d),
                                                      minlength=2),
    "diag_embed_0dim": lambda m, d: m.diag_embed(m.tensor(1., device=d)),
    "meshgrid_0dim_xy": lambda m, d: m.meshgrid(m.tensor(1., device=d), m.tensor([1., 2.], device=d),
                                                indexing="xy")[0],
    "einsum_0dim": lambda m, d: m.einsum("i,->i", m.tensor([1., 2.], device=d), m.tensor(3., device=d)),
    "unique_0dim": lambda m, d: m.unique(m.tensor(3, device=d)),
    "searchsorted_0dim": lambda m, d: m.searchsorted(m.tensor([1., 2.], device=d), m.tensor(1.5, device=d)),
    "trace_empty": lambda m, d: m.trace(m.ones(0, 3, device=d)),
    "cdist_empty": lambda m, d: m.cdist(m.ones(0, 3, device=d), m.ones(2, 3, device=d)),
    "histc_empty": lambda m, d: m.histc(m.ones(0, device=d), bins=3),
    "block_diag_empty_blocks": lambda m, d: m.block_diag(m.ones(0, 2, device=d), m.ones(1, 0, device=d)),
}


@pytest.mark.parametrize("case", sorted(EDGES))
def test_edge_cases_match_torch(device, torch, case):
    call = EDGES[case]
    try:
        want = call(torch, "cpu")
    except Exception as e:  # noqa: BLE001 (torch's exception is the expected answer)
        with pytest.raises(type(e)) as oe:
            call(tl, device)
        assert str(oe.value).startswith(str(e)[:40])
        return
    same(call(tl, device), want, torch)
