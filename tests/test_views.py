"""View ops: values against NumPy, layouts and errors against torch's documented behaviour (and
torch itself where installed), aliasing of storage and version counter."""
import re

import numpy as np
import pytest

import tensorlab as tl

VIEW_HINT = "Use .reshape(...) instead."


def arange(shape, device, dtype=tl.int64):
    return tl.arange(int(np.prod(shape)), dtype=dtype, device=device).reshape(shape)


def npa(t):
    return np.asarray(t)


def shares(a, b):
    return a.untyped_storage() is b.untyped_storage()


# -- the seed examples --------------------------------------------------------------------------
def test_slice_view_offset_and_strides(device):
    x = tl.arange(12, device=device).reshape(3, 4)
    y = x[1:, 1:3]
    assert y.storage_offset() == 5
    assert y.stride() == (4, 1)
    assert shares(x, y)
    np.testing.assert_array_equal(npa(y), np.arange(12).reshape(3, 4)[1:, 1:3])


def test_view_refuses_incompatible_strides_and_reshape_copies(device):
    x = tl.arange(12, device=device).reshape(3, 4)
    with pytest.raises(RuntimeError, match=r"view size is not compatible .* spans across two contiguous subspaces"):
        x[:, :2].view(-1)
    with pytest.raises(RuntimeError, match=r"Use \.reshape\(\.\.\.\) instead\."):
        x[:, :2].view(6)
    y = x[:, :2].reshape(-1)
    assert not shares(x, y)
    assert y.data_ptr() != x.data_ptr()
    np.testing.assert_array_equal(npa(y), np.arange(12).reshape(3, 4)[:, :2].reshape(-1))
    assert y.is_contiguous()


def test_expand_stride_zero_and_writes_refused(device):
    e = tl.arange(3, device=device).reshape(3, 1).expand(3, 4)
    assert e.stride()[1] == 0
    assert e.shape == (3, 4)
    np.testing.assert_array_equal(npa(e), np.broadcast_to(np.arange(3).reshape(3, 1), (3, 4)))
    v = e._version
    for write in (lambda: e.__setitem__(0, 5), lambda: e.__setitem__(Ellipsis, 1),
                  lambda: e.copy_(tl.zeros(3, 4, dtype=tl.int64, device=device)),
                  lambda: e.__setitem__((tl.tensor([0], device=device),), 9)):
        with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
            write()
    assert e._version == v
    np.testing.assert_array_equal(npa(e), np.broadcast_to(np.arange(3).reshape(3, 1), (3, 4)))
    e[:, 0] = 7  # one column of an expanded tensor has no overlap (torch allows it too)
    np.testing.assert_array_equal(npa(e)[:, 0], [7, 7, 7])


# -- view / reshape -----------------------------------------------------------------------------
def test_view_infers_and_shares_version_counter(device):
    x = arange((2, 3, 4), device)
    y = x.view(4, -1)
    assert y.shape == (4, 6) and shares(x, y)
    assert x.view(24).stride() == (1,)
    assert x.view((2, 12)).shape == (2, 12)
    assert x.view(tl.Size([6, 4])).shape == (6, 4)
    v = x._version
    y[0, 0] = 100
    assert x._version == v + 1 == y._version
    assert x[0, 0, 0].item() == 100
    with pytest.raises(RuntimeError, match="only one dimension can be inferred"):
        x.view(-1, -1)
    with pytest.raises(RuntimeError, match=r"shape '\[5, -1\]' is invalid for input of size 24"):
        x.view(5, -1)
    with pytest.raises(RuntimeError, match=r"shape '\[5\]' is invalid for input of size 24"):
        x.view(5)


def test_view_of_noncontiguous_when_strides_allow(device):
    x = arange((4, 6), device)[:, ::2]          # (4, 3) strides (6, 2)
    y = x.unsqueeze(1).view(4, 3)
    assert y.stride() == (6, 2) and shares(x, y)
    z = arange((2, 3, 4), device).permute(2, 0, 1).view(4, 6)  # merging dims 0,1 of (2,3): contiguous pair
    assert z.stride() == (1, 4)
    np.testing.assert_array_equal(npa(z), np.arange(24).reshape(2, 3, 4).transpose(2, 0, 1).reshape(4, 6))
    with pytest.raises(RuntimeError, match=re.escape(VIEW_HINT)):
        arange((2, 3, 4), device).permute(2, 0, 1).view(24)


def test_view_of_zero_dim_and_empty(device):
    s = tl.tensor(5, device=device)
    assert s.view(1).shape == (1,) and s.view(()).shape == () and s.view(1, 1).shape == (1, 1)
    e = tl.empty(0, 3, device=device)
    assert e.view(3, 0).shape == (3, 0)
    assert e.view(-1, 3).shape == (0, 3)
    with pytest.raises(RuntimeError, match="invalid for input of size 0"):
        e.view(-1, 0)


def test_reshape_views_when_possible_else_copies(device):
    x = arange((2, 3, 4), device)
    r = x.reshape(6, 4)
    assert shares(x, r)
    t = x.transpose(0, 2)
    c = t.reshape(-1)
    assert not shares(x, c)
    np.testing.assert_array_equal(npa(c), np.arange(24).reshape(2, 3, 4).transpose(2, 1, 0).reshape(-1))
    assert x.view_as(r).shape == r.shape and x.reshape_as(r).shape == r.shape
    assert tl.reshape(x, (4, 6)).shape == (4, 6)


def test_flatten_and_unflatten(device):
    x = arange((2, 3, 4, 5), device)
    ref = np.arange(120).reshape(2, 3, 4, 5)
    np.testing.assert_array_equal(npa(x.flatten()), ref.reshape(-1))
    np.testing.assert_array_equal(npa(x.flatten(1, 2)), ref.reshape(2, 12, 5))
    np.testing.assert_array_equal(npa(tl.flatten(x, -2)), ref.reshape(2, 3, 20))
    assert x.flatten(1, 1) is x
    assert tl.tensor(3, device=device).flatten().shape == (1,)
    assert shares(x, x.flatten(1, 2))
    p = x.permute(0, 2, 1, 3)
    f = p.flatten(1, 2)
    assert not shares(x, f)
    np.testing.assert_array_equal(npa(f), ref.transpose(0, 2, 1, 3).reshape(2, 12, 5))
    with pytest.raises(RuntimeError, match="start_dim cannot come after end_dim"):
        x.flatten(2, 1)
    u = x.unflatten(1, (3, 1))
    assert u.shape == (2, 3, 1, 4, 5) and shares(x, u)
    assert x.unflatten(-1, (-1, 5)).shape == (2, 3, 4, 1, 5)
    assert tl.unflatten(x.flatten(), 0, (2, 60)).shape == (2, 60)
    with pytest.raises(RuntimeError, match=r"Provided sizes \[2, 2\] don't multiply up to the size of dim 1 \(3\)"):
        x.unflatten(1, (2, 2))
    with pytest.raises(RuntimeError, match="sizes must be non-empty"):
        x.unflatten(1, ())


# -- view(dtype) --------------------------------------------------------------------------------
def test_view_dtype_same_itemsize_reinterprets_bits(device):
    vals = np.array([[1.5, -2.0, 3.25], [0.0, 1e-3, -7.0]], dtype=np.float32)
    x = tl.tensor(vals, device=device)
    y = x.view(tl.int32)
    assert y.dtype is tl.int32 and shares(x, y)
    np.testing.assert_array_equal(npa(y), vals.view(np.int32))
    np.testing.assert_array_equal(npa(x.t().view(tl.int32)), vals.T.view(np.int32))  # any layout when sizes match
    assert x.view(dtype=tl.float32).dtype is tl.float32


def test_view_dtype_resizes_last_dim(device):
    x = arange((2, 4), device, tl.int32)
    base = np.arange(8, dtype=np.int32).reshape(2, 4)
    up = x.view(tl.int64)
    assert up.shape == (2, 2) and up.stride() == (2, 1)
    np.testing.assert_array_equal(npa(up), base.view(np.int64))
    down = x.view(tl.int16)
    assert down.shape == (2, 8) and down.stride() == (8, 1)
    np.testing.assert_array_equal(npa(down), base.view(np.int16))
    s = x[:, 2:]
    up2 = s.view(tl.int64)
    assert up2.storage_offset() == 1 and up2.stride() == (2, 1)
    np.testing.assert_array_equal(npa(up2), np.ascontiguousarray(base[:, 2:]).view(np.int64))
    b = tl.tensor([0, 1, 255], dtype=tl.uint8, device=device).view(tl.int8)
    assert b.tolist() == [0, 1, -1]
    assert tl.tensor([1, 0], dtype=tl.uint8, device=device).view(tl.bool).tolist() == [True, False]


@pytest.mark.parametrize("make,dt,msg", [
    (lambda d: tl.tensor(1, device=d), tl.int32, r"self.dim\(\) cannot be 0 to view Long as Int"),
    (lambda d: tl.arange(3, dtype=tl.int32, device=d), tl.int64, r"self.size\(-1\) must be divisible by 2"),
    (lambda d: tl.arange(4, dtype=tl.int32, device=d)[1:3], tl.int64, r"self.storage_offset\(\) must be divisible"),
    (lambda d: tl.arange(4, dtype=tl.int32, device=d).reshape(2, 2).t(), tl.int64, r"self.stride\(-1\) must be 1"),
    (lambda d: tl.arange(4, dtype=tl.int32, device=d).reshape(2, 2).t(), tl.int16, r"self.stride\(-1\) must be 1"),
    (lambda d: tl.arange(8, dtype=tl.int32, device=d).reshape(2, 4)[::1, :2].as_strided((2, 2), (3, 1)),
     tl.int64, r"self.stride\(0\) must be divisible by 2"),
])
def test_view_dtype_errors(device, make, dt, msg):
    with pytest.raises(RuntimeError, match=msg):
        make(device).view(dt)


def test_view_dtype_matches_torch(device, torch):
    cases = [((2, 4), None, "int64"), ((2, 4), None, "int16"), ((2, 4), None, "uint8"),
             ((3, 8), (slice(1, 3), slice(2, 6)), "int64"), ((2, 1), None, "int8"),
             ((4, 2), (slice(None, None, 2),), "int64")]
    for shape, idx, dt in cases:
        x = arange(shape, device, tl.int32)
        tx = torch.arange(int(np.prod(shape)), dtype=torch.int32).reshape(shape)
        if idx is not None:
            x, tx = x[idx], tx[idx]
        y, ty = x.view(getattr(tl, dt)), tx.view(getattr(torch, dt))
        assert (tuple(y.shape), y.stride(), y.storage_offset()) == (tuple(ty.shape), ty.stride(), ty.storage_offset())
        np.testing.assert_array_equal(npa(y), ty.numpy())


# -- reordering dims ----------------------------------------------------------------------------
def test_permute_transpose_movedim_match_numpy(device):
    x = arange((2, 3, 4), device)
    ref = np.arange(24).reshape(2, 3, 4)
    np.testing.assert_array_equal(npa(x.permute(2, 0, 1)), ref.transpose(2, 0, 1))
    np.testing.assert_array_equal(npa(x.permute((1, -1, 0))), ref.transpose(1, 2, 0))
    np.testing.assert_array_equal(npa(tl.permute(x, [2, 1, 0])), ref.transpose(2, 1, 0))
    for f in (lambda t: t.transpose(0, 2), lambda t: t.swapaxes(0, 2), lambda t: t.swapdims(-1, 0),
              lambda t: tl.transpose(t, 2, 0), lambda t: tl.swapaxes(t, 0, -1), lambda t: tl.swapdims(t, 0, 2)):
        y = f(x)
        np.testing.assert_array_equal(npa(y), ref.swapaxes(0, 2))
        assert y.stride() == (1, 4, 12) and shares(x, y)
    np.testing.assert_array_equal(npa(x.movedim(0, -1)), np.moveaxis(ref, 0, -1))
    np.testing.assert_array_equal(npa(x.moveaxis((0, 1), (2, 0))), np.moveaxis(ref, (0, 1), (2, 0)))
    np.testing.assert_array_equal(npa(tl.movedim(x, [2], [0])), np.moveaxis(ref, 2, 0))
    np.testing.assert_array_equal(npa(tl.moveaxis(x, -1, 1)), np.moveaxis(ref, -1, 1))


def test_reorder_errors(device):
    x = arange((3, 4), device)
    with pytest.raises(RuntimeError, match=r"input.dim\(\) = 2 is not equal to len\(dims\) = 3"):
        x.permute(0, 1, 2)
    with pytest.raises(RuntimeError, match="duplicate dims are not allowed"):
        x.permute(0, 0)
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of \[-2, 1\], but got 2\)"):
        x.transpose(0, 2)
    with pytest.raises(RuntimeError, match="should contain the same number of dims as destination"):
        x.movedim((0, 1), (0,))
    with pytest.raises(RuntimeError, match=r"repeated dim in `source` \(\[0, 0\]\)"):
        x.movedim((0, 0), (0, 1))


def test_t_T_mT_H_mH(device):
    x = arange((2, 3), device)
    ref = np.arange(6).reshape(2, 3)
    for y in (x.t(), tl.t(x), x.T, x.H, x.mT, x.mH, x.adjoint(), tl.adjoint(x)):
        np.testing.assert_array_equal(npa(y), ref.T)
        assert shares(x, y)
    v = tl.arange(3, device=device)
    assert v.t().shape == (3,)
    with pytest.warns(UserWarning, match="deprecated"):
        assert v.T.shape == (3,)
    assert tl.tensor(2.0, device=device).t().shape == ()
    with pytest.raises(RuntimeError, match="t\\(\\) expects a tensor with <= 2 dimensions, but self is 3D"):
        arange((2, 2, 2), device).t()
    b = arange((2, 3, 4), device)
    np.testing.assert_array_equal(npa(b.mT), np.arange(24).reshape(2, 3, 4).swapaxes(-1, -2))
    with pytest.warns(UserWarning, match="x.T` on tensors of dimension other than 2"):
        r = b.T
    np.testing.assert_array_equal(npa(r), np.arange(24).reshape(2, 3, 4).T)
    with pytest.raises(RuntimeError, match="tensor.mT is only supported on matrices or batches of matrices. Got 1-D"):
        v.mT
    with pytest.raises(RuntimeError, match="tensor.H is only supported on matrices"):
        v.H
    with pytest.raises(RuntimeError, match="mH is only supported"):
        v.mH


# -- adding and removing dims -------------------------------------------------------------------
def test_squeeze_unsqueeze(device):
    x = arange((1, 3, 1, 2), device)
    ref = np.arange(6).reshape(1, 3, 1, 2)
    assert x.squeeze().shape == (3, 2)
    assert x.squeeze(0).shape == (3, 1, 2)
    assert x.squeeze(1).shape == (1, 3, 1, 2)  # not size 1: unchanged
    assert x.squeeze((0, 2)).shape == (3, 2)
    assert tl.squeeze(x, [-2, 1]).shape == (1, 3, 2)
    np.testing.assert_array_equal(npa(x.squeeze()), ref.squeeze())
    assert tl.tensor(1, device=device).squeeze(0).shape == ()
    with pytest.raises(IndexError, match="Dimension out of range"):
        x.squeeze(4)
    y = arange((2, 3), device)
    for d, shape in ((0, (1, 2, 3)), (1, (2, 1, 3)), (2, (2, 3, 1)), (-1, (2, 3, 1)), (-3, (1, 2, 3))):
        u = y.unsqueeze(d)
        assert u.shape == shape and shares(u, y)
        np.testing.assert_array_equal(npa(u), np.expand_dims(np.arange(6).reshape(2, 3), d))
    assert y.unsqueeze(1).stride() == (3, 3, 1)
    assert y.unsqueeze(2).stride() == (3, 1, 1)
    assert tl.unsqueeze(y, 0).stride() == (6, 3, 1)
    with pytest.raises(IndexError, match=r"range of \[-3, 2\], but got 3"):
        y.unsqueeze(3)


def test_expand_and_broadcast(device):
    x = arange((3, 1), device)
    ref = np.arange(3).reshape(3, 1)
    y = x.expand(2, 3, 4)
    assert y.stride() == (0, 1, 0)
    np.testing.assert_array_equal(npa(y), np.broadcast_to(ref, (2, 3, 4)))
    assert x.expand(-1, 5).shape == (3, 5)
    assert x.expand((3, 2)).shape == (3, 2)
    assert x.expand_as(tl.empty(4, 3, 7, device=device)).shape == (4, 3, 7)
    assert tl.broadcast_to(x, (3, 6)).shape == (3, 6)
    a, b = tl.broadcast_tensors(x, tl.arange(4, device=device))
    assert a.shape == b.shape == (3, 4) and b.stride() == (0, 1)
    np.testing.assert_array_equal(npa(b), np.broadcast_to(np.arange(4), (3, 4)))
    with pytest.raises(RuntimeError, match=r"The expanded size of the tensor \(4\) must match the existing size \(3\) "
                                           r"at non-singleton dimension 0"):
        x.expand(4, 4)
    with pytest.raises(RuntimeError, match="must be greater or equal to the number of dimensions"):
        x.expand(3)
    with pytest.raises(RuntimeError, match="isn't allowed in a leading, non-existing dimension 0"):
        x.expand(-1, 3, 1)
    with pytest.raises(RuntimeError, match="must match the size of tensor b"):
        tl.broadcast_tensors(x, tl.arange(2, device=device).reshape(2, 1, 1).expand(2, 2, 2))


def test_as_strided_is_bounds_checked(device):
    x = tl.arange(12, device=device)
    ref = np.arange(12)
    y = x.as_strided((3, 3), (3, 1), 1)
    np.testing.assert_array_equal(npa(y), np.lib.stride_tricks.as_strided(ref[1:], (3, 3), (24, 8)))
    z = tl.as_strided(x[2:], (2, 2), (1, 1))  # default offset: the input's own
    assert z.storage_offset() == 2
    np.testing.assert_array_equal(npa(z), [[2, 3], [3, 4]])
    assert x.as_strided((0, 5), (100, 100), 12).shape == (0, 5)  # empty: reaches nothing
    with pytest.raises(RuntimeError, match=r"as_strided: sizes \[3, 4\], strides \[4, 1\], storage offset 1, and "
                                           r"itemsize 8 requiring a storage size of 104 are out of bounds for storage "
                                           r"of size 96"):
        x.as_strided((3, 4), (4, 1), 1)
    with pytest.raises(RuntimeError, match="Negative strides are not supported"):
        x.as_strided((3,), (-1,), 5)
    with pytest.raises(RuntimeError, match="mismatch in length of strides and shape"):
        x.as_strided((3, 4), (1,))
    with pytest.raises(RuntimeError, match="invalid storage offset -1"):
        x.as_strided((1,), (1,), -1)


# -- sub-ranges ---------------------------------------------------------------------------------
def test_narrow_and_select(device):
    x = arange((3, 4), device)
    ref = np.arange(12).reshape(3, 4)
    np.testing.assert_array_equal(npa(x.narrow(1, 1, 2)), ref[:, 1:3])
    np.testing.assert_array_equal(npa(tl.narrow(x, 0, -2, 2)), ref[1:3])
    np.testing.assert_array_equal(npa(x.narrow(0, tl.tensor(1, device=device), 1)), ref[1:2])
    assert x.narrow(1, 4, 0).shape == (3, 0)
    assert shares(x, x.narrow(1, 1, 2)) and x.narrow(1, 1, 2).storage_offset() == 1
    with pytest.raises(IndexError, match=r"start out of range \(expected to be in range of \[-3, 3\], but got 5\)"):
        x.narrow(0, 5, 1)
    with pytest.raises(RuntimeError, match=r"start \(2\) \+ length \(2\) exceeds dimension size \(3\)"):
        x.narrow(0, 2, 2)
    with pytest.raises(RuntimeError, match="length must be non-negative"):
        x.narrow(0, 0, -1)
    with pytest.raises(RuntimeError, match="cannot be applied to a 0-dim tensor"):
        tl.tensor(1, device=device).narrow(0, 0, 1)
    np.testing.assert_array_equal(npa(x.select(1, -1)), ref[:, -1])
    np.testing.assert_array_equal(npa(tl.select(x, 0, 2)), ref[2])
    assert x.select(1, 2).storage_offset() == 2 and x.select(1, 2).stride() == (4,)
    with pytest.raises(IndexError, match=r"select\(\): index 3 out of range for tensor of size \[3, 4\] at "
                                         r"dimension 0"):
        x.select(0, 3)
    with pytest.raises(IndexError, match=r"index -5 out of range"):
        x.select(1, -5)
    with pytest.raises(IndexError, match="select\\(\\) cannot be applied to a 0-dim tensor"):
        tl.tensor(1, device=device).select(0, 0)


def test_unfold_matches_sliding_windows(device):
    x = arange((3, 7), device)
    ref = np.arange(21).reshape(3, 7)
    for size, step in ((2, 1), (3, 2), (7, 1), (1, 3), (0, 2)):
        y = x.unfold(1, size, step)
        want = np.lib.stride_tricks.sliding_window_view(ref, size, axis=1)[:, ::step]
        assert y.shape == want.shape and shares(x, y)
        np.testing.assert_array_equal(npa(y), want)
    assert x.unfold(0, 2, 1).stride() == (7, 1, 7)
    s = tl.tensor(5, device=device).unfold(0, 1, 1)
    assert s.shape == (1,) and s.tolist() == [5]
    with pytest.raises(RuntimeError, match="maximum size for tensor at dimension 1 is 7 but size is 8"):
        x.unfold(1, 8, 1)
    with pytest.raises(RuntimeError, match="step is 0 but must be > 0"):
        x.unfold(1, 2, 0)


def test_diagonal_matches_numpy(device):
    x = arange((3, 4, 5), device)
    ref = np.arange(60).reshape(3, 4, 5)
    for offset, d1, d2 in ((0, 0, 1), (1, 0, 1), (-2, 0, 1), (2, 1, 2), (-1, 2, 0), (0, -1, -2), (9, 0, 1), (-9, 1, 2)):
        y = x.diagonal(offset, d1, d2)
        want = np.diagonal(ref, offset, d1, d2)
        assert y.shape == want.shape
        np.testing.assert_array_equal(npa(y), want)
    assert tl.diagonal(x, offset=1, dim1=1, dim2=2).storage_offset() == 1
    with pytest.raises(RuntimeError, match="diagonal dimensions cannot be identical 1, 1"):
        x.diagonal(0, 1, 1)


def test_split_chunk_unbind(device):
    x = tl.arange(11, device=device)
    assert [p.tolist() for p in x.split(4)] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10]]
    assert [len(p) for p in tl.split(x, [2, 0, 9])] == [2, 0, 9]
    assert [len(p) for p in x.split(20)] == [11]
    assert [len(p) for p in x.chunk(6)] == [2, 2, 2, 2, 2, 1]                      # torch docs example
    assert [len(p) for p in tl.arange(12, device=device).chunk(6)] == [2] * 6
    assert [len(p) for p in tl.arange(13, device=device).chunk(6)] == [3, 3, 3, 3, 1]  # fewer chunks than asked
    assert [tuple(p.shape) for p in tl.empty(0, device=device).chunk(3)] == [(0,)] * 3
    m = arange((3, 4), device)
    parts = m.split([1, 3], dim=1)
    assert isinstance(parts, tuple) and [p.shape for p in parts] == [(3, 1), (3, 3)]
    assert parts[1].storage_offset() == 1 and all(shares(p, m) for p in parts)
    y = arange((3, 4), device)
    rows = y.unbind()
    assert isinstance(rows, tuple) and len(rows) == 3 and all(shares(r, y) for r in rows)
    np.testing.assert_array_equal(npa(tl.unbind(y, 1)[2]), np.arange(12).reshape(3, 4)[:, 2])
    assert [r.tolist() for r in y] == np.arange(12).reshape(3, 4).tolist()
    with pytest.raises(RuntimeError, match="chunk expects `chunks` to be greater than 0, got: 0"):
        x.chunk(0)
    with pytest.raises(RuntimeError, match=r"split_with_sizes expects split_sizes to sum exactly to 11 \(input "
                                           r"tensor's size at dimension 0\), but got split_sizes=\[1, 1\]"):
        x.split([1, 1])
    with pytest.raises(RuntimeError, match="split_size can only be 0 if dimension size is 0"):
        x.split(0)
    with pytest.raises(RuntimeError, match="at least a 1-dimensional tensor"):
        tl.tensor(1, device=device).split(1)
    with pytest.raises(IndexError, match="Dimension specified as 0 but tensor has no dimensions"):
        tl.tensor(1, device=device).unbind()


def test_detach_shares_storage_and_version(device):
    x = tl.ones(3, device=device, requires_grad=True)
    d = x.detach()
    assert not d.requires_grad and shares(x, d) and d.data_ptr() == x.data_ptr()
    assert tl.detach(x).shape == (3,)
    v = x._version
    d[0] = 5
    assert x._version == v + 1
    assert x.detach()[0].item() == 5


def test_views_share_version_counter_both_ways(device):
    x = arange((4, 4), device)
    views = [x.t(), x[1:], x.view(16), x.unsqueeze(0), x.diagonal(), x.as_strided((2,), (5,)), x.narrow(0, 1, 1),
             x.unfold(0, 2, 2), x.expand(2, 4, 4), x.movedim(0, 1), x.split(2)[1], x.detach()]
    v = x._version
    x.t()[0, 0] = 1
    assert all(w._version == v + 1 for w in views)


# -- memory formats -----------------------------------------------------------------------------
def test_channels_last_views_report_contiguity(device):
    x = tl.empty(2, 3, 4, 5, device=device).to(memory_format=tl.channels_last)
    assert x.is_contiguous(memory_format=tl.channels_last) and not x.is_contiguous()
    assert x.stride() == (60, 1, 15, 3)
    p = tl.empty(2, 4, 5, 3, device=device).permute(0, 3, 1, 2)
    assert p.stride() == x.stride() and p.is_contiguous(memory_format=tl.channels_last)
    assert x[1:].is_contiguous(memory_format=tl.channels_last)         # fewer images: still NHWC
    assert not x[:, :, ::2].is_contiguous(memory_format=tl.channels_last)
    assert not x[:, :2].is_contiguous(memory_format=tl.channels_last)  # a channel slice leaves gaps
    assert not x.contiguous().is_contiguous(memory_format=tl.channels_last)
    assert not x.permute(0, 2, 3, 1).is_contiguous(memory_format=tl.channels_last)
    assert x.permute(0, 2, 3, 1).is_contiguous()                       # the NHWC view is plain contiguous
    assert x.clone().is_contiguous(memory_format=tl.channels_last)     # clone preserves the format
    c1 = tl.empty(2, 1, 4, 5, device=device)                          # C == 1: both formats hold
    assert c1.is_contiguous() and c1.is_contiguous(memory_format=tl.channels_last)
    assert not tl.empty(2, 3, 4, device=device).is_contiguous(memory_format=tl.channels_last)
    d = tl.empty(2, 3, 4, 5, 6, device=device).to(memory_format=tl.channels_last_3d)
    assert d.is_contiguous(memory_format=tl.channels_last_3d) and not d.is_contiguous(memory_format=tl.channels_last)
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        x.view(2, -1)
    assert x.reshape(2, -1).is_contiguous()


def test_channels_last_matches_torch(device, torch):
    def build(lib, mod):
        x = mod.empty(2, 3, 4, 5).to(memory_format=mod.channels_last)
        return [x, x[1:], x[:, :, 1:], x[:, :, :, ::2], x[:, 1:], x.permute(0, 1, 3, 2), mod.empty(2, 1, 4, 5),
                mod.empty(1, 3, 1, 1), mod.empty(2, 4, 5, 3).permute(0, 3, 1, 2), x.expand(2, 3, 4, 5), x[:, :1],
                mod.empty(0, 3, 4, 5), x.unsqueeze(0).squeeze(0), x.narrow(2, 1, 1)]
    for a, b in zip(build(tl, tl), build(torch, torch)):
        assert tuple(a.shape) == tuple(b.shape) and a.stride() == b.stride()
        assert a.is_contiguous() == b.is_contiguous()
        assert a.is_contiguous(memory_format=tl.channels_last) == b.is_contiguous(memory_format=torch.channels_last)


# -- torch as the oracle for layouts and errors -------------------------------------------------
CASES = [
    lambda m, x: x.view(4, 6), lambda m, x: x.t().view(-1), lambda m, x: x.reshape(3, 8),
    lambda m, x: x.t().reshape(2, 12), lambda m, x: x.permute(1, 0).flatten(), lambda m, x: x.unflatten(1, (2, 3)),
    lambda m, x: x.view(2, 2, 6).permute(2, 0, 1), lambda m, x: m.movedim(x.view(2, 3, 4), (0, 2), (1, 0)),
    lambda m, x: x.unsqueeze(1).expand(4, 5, 6), lambda m, x: x[:, None].squeeze(),
    lambda m, x: x.view(1, 4, 1, 6).squeeze((0, 2)), lambda m, x: x.narrow(1, 2, 3), lambda m, x: x.narrow(1, -2, 3),
    lambda m, x: x.select(1, -1), lambda m, x: x.select(0, 4),
    lambda m, x: x.unfold(1, 3, 2), lambda m, x: x.unfold(0, 5, 1), lambda m, x: x.unfold(0, 2, 0),
    lambda m, x: x.diagonal(1), lambda m, x: x.diagonal(-3, 1, 0), lambda m, x: x.view(2, 2, 6).diagonal(0, 2, 0),
    lambda m, x: x.diagonal(0, 1, 1), lambda m, x: x.as_strided((3, 3), (2, 5), 1),
    lambda m, x: x.as_strided((5, 5), (6, 1)),
    lambda m, x: x.split(4, 1)[1], lambda m, x: x.chunk(3, 1)[2], lambda m, x: x.unbind(1)[3], lambda m, x: x.mT,
    lambda m, x: x.expand(2, 4, 6).transpose(0, 2), lambda m, x: x[1:, ::2].t().contiguous(),
    lambda m, x: x.view(24, 1).expand(24, 3), lambda m, x: x.view(m.int32), lambda m, x: x[:, 1:5].view(m.int32),
    lambda m, x: x.t().view(m.int16), lambda m, x: x.expand(3, 4), lambda m, x: x.permute(0, 0),
    lambda m, x: x.view(5, -1), lambda m, x: x.flatten(1, 0), lambda m, x: x.narrow(1, 5, 3), lambda m, x: x.squeeze(2),
]


@pytest.mark.parametrize("i", range(len(CASES)))
def test_layout_matches_torch(device, torch, i):
    f = CASES[i]
    x = arange((4, 6), device)
    tx = torch.arange(24).reshape(4, 6)
    try:
        want = f(torch, tx)
    except Exception as e:  # torch refuses: so must we, with the same exception type
        with pytest.raises(type(e)):
            f(tl, x)
        return
    got = f(tl, x)
    assert tuple(got.shape) == tuple(want.shape)
    assert got.stride() == want.stride()
    assert got.storage_offset() == want.storage_offset()
    assert got.is_contiguous() == want.is_contiguous()
    assert shares(got, x) == (want.untyped_storage().data_ptr() == tx.untyped_storage().data_ptr())
    np.testing.assert_array_equal(npa(got), want.numpy())


def test_function_forms_at_top_level(device):
    x = arange((2, 3, 4), device)
    ref = np.arange(24).reshape(2, 3, 4)
    for name in ("reshape", "permute", "transpose", "swapaxes", "swapdims", "t", "adjoint", "movedim", "moveaxis",
                 "squeeze", "unsqueeze", "flatten", "unflatten", "broadcast_to", "broadcast_tensors", "as_strided",
                 "narrow", "select", "unbind", "diagonal", "split", "split_with_sizes", "chunk", "detach",
                 "index_put"):
        assert callable(getattr(tl, name)), name
    assert [tuple(c.shape) for c in tl.chunk(x, 2, dim=2)] == [(2, 3, 2)] * 2
    assert [tuple(c.shape) for c in tl.split_with_sizes(x, [1, 2], 1)] == [(2, 1, 4), (2, 2, 4)]
    np.testing.assert_array_equal(npa(tl.swapdims(x, 0, 1)), ref.swapaxes(0, 1))
    np.testing.assert_array_equal(npa(tl.diagonal(x, 0, 1, 2)), np.diagonal(ref, 0, 1, 2))
    np.testing.assert_array_equal(npa(tl.select(x, -1, 3)), ref[..., 3])
    assert tl.unflatten(x, 2, (2, 2)).shape == (2, 3, 2, 2)
    assert tl.squeeze(tl.unsqueeze(x, 1)).shape == (2, 3, 4)


# -- tensor_split -------------------------------------------------------------------------------
SPLITS = [
    lambda m, x: m.tensor_split(x, 3), lambda m, x: m.tensor_split(x, 4, dim=1), lambda m, x: x.tensor_split(7, 1),
    lambda m, x: x.tensor_split(1), lambda m, x: m.tensor_split(x, [1, 3]),
    lambda m, x: m.tensor_split(x, (1, 5, 3, 9), 1), lambda m, x: x.tensor_split([-2, 8], dim=-1),
    lambda m, x: x.tensor_split([-20, 2]), lambda m, x: x.tensor_split([]),
    lambda m, x: m.tensor_split(x, m.tensor(2)), lambda m, x: m.tensor_split(x, m.tensor([1, 4]), 1),
    lambda m, x: m.tensor_split(x, sections=2, dim=1), lambda m, x: m.tensor_split(x, indices=[2], dim=0),
    lambda m, x: m.tensor_split(x, tensor_indices_or_sections=m.tensor([3])),
    lambda m, x: x.t().tensor_split(3, 1), lambda m, x: x[:, 1::2].tensor_split([1], 1),
    lambda m, x: m.tensor_split(x[:0], 3), lambda m, x: m.tensor_split(x, 0), lambda m, x: m.tensor_split(x, -1),
    lambda m, x: m.tensor_split(x[0, 0], 2), lambda m, x: m.tensor_split(x, 2, 2),
    lambda m, x: m.tensor_split(x, m.tensor([[1]])), lambda m, x: m.tensor_split(x, m.tensor([1.0])),
    lambda m, x: m.tensor_split(x, m.tensor([1], dtype=m.int32)), lambda m, x: m.tensor_split(x, 2.0),
]


@pytest.mark.parametrize("i", range(len(SPLITS)))
def test_tensor_split_matches_torch(device, torch, i):
    f = SPLITS[i]
    x = arange((4, 6), device)
    tx = torch.arange(24).reshape(4, 6)
    try:
        want = f(torch, tx)
    except Exception as e:  # torch refuses: so must we, with the same exception type
        with pytest.raises(type(e)):
            f(tl, x)
        return
    got = f(tl, x)
    assert isinstance(got, tuple) and len(got) == len(want)
    for a, b in zip(got, want):
        assert (tuple(a.shape), a.stride(), a.storage_offset()) == (tuple(b.shape), b.stride(), b.storage_offset())
        assert shares(a, x)
        np.testing.assert_array_equal(npa(a), b.numpy())


def test_tensor_split_matches_numpy_array_split(device):
    ref = np.arange(60).reshape(6, 10)
    x = arange((6, 10), device)
    for arg in (1, 3, 4, 7, 11, [2, 5], [0, 0, 9], [7, 3], [-3, 20], []):
        for axis in (0, 1, -1):
            got = tl.tensor_split(x, arg, axis)
            want = np.array_split(ref, arg, axis)
            assert len(got) == len(want)
            for a, b in zip(got, want):
                np.testing.assert_array_equal(npa(a), b)
    assert x._version == 0 and all(shares(p, x) for p in tl.tensor_split(x, 2))


def test_tensor_split_indices_tensor_must_be_on_the_cpu(cuda):
    x = arange((4,), cuda)
    with pytest.raises(RuntimeError, match="tensor_split expected tensor_indices_or_sections to be on cpu"):
        tl.tensor_split(x, tl.tensor([1], device=cuda))
    assert [tuple(p.shape) for p in tl.tensor_split(x, tl.tensor([1]))] == [(1,), (3,)]


# -- in-place metadata ops: squeeze_, unsqueeze_, t_, transpose_ --------------------------------
INPLACE_META = [
    lambda x: x.squeeze_(), lambda x: x.squeeze_(1), lambda x: x.squeeze_(0), lambda x: x.squeeze_((1, 3)),
    lambda x: x.squeeze_((1, 1)), lambda x: x.squeeze_(4), lambda x: x.unsqueeze_(0), lambda x: x.unsqueeze_(-1),
    lambda x: x.unsqueeze_(2), lambda x: x.unsqueeze_(6), lambda x: x.transpose_(0, 2), lambda x: x.transpose_(-1, 1),
    lambda x: x.transpose_(1, 1), lambda x: x.transpose_(0, 4), lambda x: x.swapaxes_(0, 1),
    lambda x: x.swapdims_(2, 3), lambda x: x.t_(), lambda x: x[0, :, 0, 0].t_(), lambda x: x[0, 0, 0, 0].t_(),
    lambda x: x[:, 0, :, 0].t_(), lambda x: x[0, 0].t_(), lambda x: x[0, 0, 0, 0].squeeze_(0),
    lambda x: x[0, 0, 0, 0].unsqueeze_(0), lambda x: x[0, 0, 0, 0].transpose_(0, -1),
    lambda x: x[1:, :, ::2].squeeze_(), lambda x: x.expand(2, 2, 1, 3, 1).squeeze_(2),
    lambda x: x.permute(3, 1, 0, 2).unsqueeze_(1),
]


@pytest.mark.parametrize("i", range(len(INPLACE_META)))
def test_inplace_metadata_ops_match_torch(device, torch, i):
    """The tensor itself gets the view's layout (same storage, bytes untouched), bumps the shared
    version once, and returns itself; a refused call changes nothing."""
    f = INPLACE_META[i]
    base = arange((2, 1, 3, 1), device, tl.float32)
    tbase = torch.arange(6, dtype=torch.float32).reshape(2, 1, 3, 1)
    x = base
    try:
        want = f(tbase)
    except Exception as e:
        snap = tl.testing.snapshot(x)
        with pytest.raises(type(e)):
            f(x)
        tl.testing.assert_unchanged(snap)
        return
    got = f(x)
    assert (tuple(got.shape), got.stride(), got.storage_offset()) == (tuple(want.shape), want.stride(),
                                                                       want.storage_offset())
    assert got._version == want._version == 1 and base._version == tbase._version
    assert shares(got, base) and tuple(base.shape) == tuple(tbase.shape)
    np.testing.assert_array_equal(npa(got), want.numpy())


def test_inplace_metadata_ops_keep_identity_and_other_views(device):
    x = arange((3, 1), device)
    v = x[:, 0]
    storage = x.untyped_storage()
    assert x.squeeze_() is x and x.shape == (3,) and x.untyped_storage() is storage
    assert v.shape == (3,) and v._version == 1  # other views keep their layout, share the version
    assert x.unsqueeze_(0).t_() is x and x.shape == (3, 1) and x.stride() == (1, 3)
    assert x._version == 3
    with pytest.raises(RuntimeError, match=r"t_\(\) expects a tensor with <= 2 dimensions, but self is 3D"):
        x.unsqueeze(0).t_()
    assert not hasattr(tl, "squeeze_") and not hasattr(tl, "t_")  # methods only, as in torch


def test_inplace_metadata_ops_refused_like_inplace_ops(device):
    leaf = tl.ones(3, 1, device=device, requires_grad=True)
    for f in (lambda t: t.squeeze_(), lambda t: t.unsqueeze_(0), lambda t: t.t_(), lambda t: t.transpose_(0, 1)):
        snap = tl.testing.snapshot(leaf)
        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"):
            f(leaf)
        with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad"):
            f(leaf[:])
        tl.testing.assert_unchanged(snap)
    with tl.no_grad():
        assert leaf.squeeze_().shape == (3,)  # allowed without grad mode, as in torch
    with tl.inference_mode():
        inf = tl.ones(2, 1, device=device)
    with pytest.raises(RuntimeError, match="Inplace update to inference tensor outside InferenceMode"):
        inf.squeeze_()
    assert inf.shape == (2, 1) and inf._version == 0
    d = tl.ones(2, 1, device=device, requires_grad=True).detach()
    assert d.t_().shape == (1, 2)


def test_inplace_metadata_op_loses_a_race_without_changing_anything(device):
    """Another writer that publishes between the layout computation and the publish wins: the
    in-place op raises and neither overwrites that record nor bumps the version."""
    from tensorlab.ops import views
    x = arange((3, 1), device, tl.float32)
    other = arange((2, 1, 2), device, tl.float32)

    def racing_squeeze(t, dim):
        r = views.squeeze(t, dim)
        t.set_(other)  # a concurrent set_ lands here
        return r
    v = x._version
    with pytest.raises(RuntimeError, match="another thread changed this tensor"):
        views._inplace_view(x, "squeeze_", racing_squeeze, 1)
    assert tuple(x.shape) == (2, 1, 2) and shares(x, other) and x._version == v + 1  # set_'s bump only
