"""The ops' straight-line paths (issue 20: per-op host overhead) give exactly what the general
paths give, and every check that makes a wrong call fail still runs on them: memoized view
layouts refuse the arguments the general path refuses, fast binary / in-place / sum paths keep
versions, autograd, read-only and overlap checks, and the CUDA launch recipes still bounds-check
each operand against its buffer on every call."""
from __future__ import annotations

import numpy as np
import pytest

import tensorlab as tl


def _warm(fn, n=3):
    """Call fn a few times: the first call fills the memo, the later ones take the fast path."""
    for _ in range(n):
        r = fn()
    return r


# -- binary ---------------------------------------------------------------------------------

def test_same_layout_binary_matches_torch(device, torch):
    for name in ("add", "sub", "mul", "div", "maximum", "eq", "lt", "remainder", "minimum"):
        a = tl.tensor([1.5, -2.0, 3.0, 0.25], device=device)
        b = tl.tensor([0.5, 4.0, -3.0, 2.0], device=device)
        ta, tb = torch.tensor(a.tolist()), torch.tensor(b.tolist())
        got = _warm(lambda: getattr(tl, name)(a, b))
        want = getattr(torch, name)(ta, tb)
        assert got.tolist() == want.tolist(), name
        assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1], name


def test_same_layout_binary_integer_true_division_promotes(device, torch):
    a = tl.tensor([7, -7, 9], device=device)
    b = tl.tensor([2, 2, 4], device=device)
    got = _warm(lambda: a / b)
    assert got.dtype is tl.float32
    assert got.tolist() == (torch.tensor([7, -7, 9]) / torch.tensor([2, 2, 4])).tolist()


def test_same_layout_binary_keeps_the_checks(device):
    a = tl.tensor([True, False], device=device)
    with pytest.raises(RuntimeError, match="Subtraction, the `-` operator, with two bool tensors"):
        _warm(lambda: a - a)
    i = tl.tensor([4, 5], device=device)
    z = tl.tensor([0, 1], device=device)
    assert _warm(lambda: i // tl.tensor([2, 2], device=device)).tolist() == [2, 2]
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        i // z


def test_same_layout_binary_records_autograd(device):
    a = tl.tensor([1.0, 2.0, 3.0], device=device, requires_grad=True)
    b = tl.tensor([4.0, 5.0, 6.0], device=device)
    _warm(lambda: a * b)  # the memo is warm for this layout and dtype
    y = a * b
    assert y.requires_grad and y.grad_fn is not None
    y.sum().backward()
    assert a.grad.tolist() == [4.0, 5.0, 6.0]


def test_same_tensor_twice(device):
    a = tl.tensor([1.0, 2.0, 3.0], device=device)
    assert _warm(lambda: a * a).tolist() == [1.0, 4.0, 9.0]
    assert a._version == 0


# -- in-place with a number -----------------------------------------------------------------

def test_inplace_number_bumps_the_version_once(device):
    x = tl.tensor([1.0, 2.0], device=device)
    v = x._version
    for k in range(3):
        assert x.mul_(2.0) is x
        assert x._version == v + k + 1
    assert x.tolist() == [8.0, 16.0]


def test_inplace_number_keeps_the_cast_check(device):
    x = tl.tensor([1, 2], device=device)
    _warm(lambda: x.mul_(2))
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
        x.mul_(1.5)
    assert x.tolist() == [8, 16] and x._version == 3


def test_inplace_number_refuses_a_read_only_array():
    arr = np.arange(4, dtype=np.float32)
    arr.flags.writeable = False
    x = tl.from_numpy(arr)
    y = tl.ones(4)
    _warm(lambda: y.mul_(1.0))  # the same layout and dtype warm
    with pytest.raises(RuntimeError, match="non-writable NumPy array"):
        x.mul_(2.0)
    assert arr.tolist() == [0.0, 1.0, 2.0, 3.0]


def test_inplace_number_on_a_leaf_that_requires_grad_is_refused(device):
    x = tl.tensor([1.0, 2.0], device=device)
    _warm(lambda: x.mul_(1.0))
    w = tl.tensor([1.0, 2.0], device=device, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        w.mul_(2.0)
    assert w.tolist() == [1.0, 2.0]


def test_inplace_number_through_a_view_writes_the_base(device):
    base = tl.zeros(4, device=device)
    v = base[1:3]
    _warm(lambda: v.add_(1.0))
    assert base.tolist() == [0.0, 3.0, 3.0, 0.0]
    assert base._version == 3


def test_inplace_number_refuses_an_expanded_tensor(device):
    x = tl.tensor([1.0], device=device).expand(3)
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        x.mul_(2.0)


# -- full sum ---------------------------------------------------------------------------------

def test_full_sum_matches_torch(device, torch):
    for dtype, tdtype in ((tl.float32, torch.float32), (tl.int32, torch.int32), (tl.bool, torch.bool),
                          (tl.float16, torch.float16)):
        x = tl.tensor([1, 0, 3, 1], dtype=dtype, device=device)
        tx = torch.tensor([1, 0, 3, 1], dtype=tdtype)
        for keepdim in (False, True):
            got = _warm(lambda: x.sum() if not keepdim else x.sum(keepdim=keepdim))
            want = tx.sum() if not keepdim else tx.sum(dim=(0,), keepdim=True)
            assert got.tolist() == want.tolist()
            assert tuple(got.shape) == tuple(want.shape)
            assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]


def test_full_sum_of_a_view_and_of_an_empty_tensor(device):
    x = tl.arange(12.0, device=device).view(3, 4)
    assert _warm(lambda: x.T.sum()).item() == 66.0
    assert _warm(lambda: x[:, 1:3].sum()).item() == float(sum(r * 4 + c for r in range(3) for c in (1, 2)))
    assert _warm(lambda: tl.zeros(0, 3, device=device).sum()).item() == 0.0


def test_full_sum_records_autograd(device):
    x = tl.tensor([[1.0, 2.0], [3.0, 4.0]], device=device, requires_grad=True)
    _warm(lambda: x.detach().sum())
    x.sum().backward()
    assert x.grad.tolist() == [[1.0, 1.0], [1.0, 1.0]]


# -- memoized view layouts ----------------------------------------------------------------------

def test_view_memo_still_refuses_floats_and_bools(device):
    x = tl.arange(8.0, device=device)
    _warm(lambda: x.view(2, 4))
    with pytest.raises(TypeError):
        x.view(2.0, 4)
    with pytest.raises(TypeError):
        x.view(True, 8)
    assert x.view(np.int64(2), 4).shape == (2, 4)


def test_view_memo_refuses_incompatible_strides(device):
    x = tl.arange(8.0, device=device).view(2, 4)
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        _warm(lambda: x.T.view(8))


def test_getitem_memo_matches_torch(device, torch):
    x = tl.arange(24.0, device=device).view(2, 3, 4)
    tx = torch.arange(24.0).view(2, 3, 4)
    for index in ((1, slice(None), None), (slice(1, None), None), (Ellipsis, slice(None, None, 2)), 1, -1,
                  (0, 2, 3), (None, Ellipsis, None), slice(0, 1)):
        got = _warm(lambda: x[index])
        want = tx[index]
        assert got.tolist() == want.tolist(), index
        assert tuple(got.shape) == tuple(want.shape) and tuple(got.stride()) == tuple(want.stride()), index
        assert got.storage_offset() == want.storage_offset(), index


def test_getitem_memo_still_refuses_floats_and_keeps_bools_advanced(device):
    x = tl.arange(6.0, device=device)
    _warm(lambda: x[1])
    with pytest.raises(IndexError):
        x[1.0]
    with pytest.raises(IndexError, match="out of bounds"):
        x[6]
    t = x[True]  # a bool is an advanced index (a copy with a new dim), not x[1]
    assert t.shape == (1, 6)
    t[0, 0] = 100.0
    assert x[0].item() == 0.0


def test_memoized_views_share_storage_version_and_base(device):
    x = tl.arange(8.0, device=device)
    v = _warm(lambda: x.view(2, 4)[1:, None].T)
    assert v._base is x and v.untyped_storage() is x.untyped_storage()
    v.mul_(10.0)
    assert x.tolist() == [0.0, 1.0, 2.0, 3.0, 40.0, 50.0, 60.0, 70.0]
    assert x._version == v._version == 1


def test_memoized_view_follows_set_and_resize(device):
    x = tl.arange(8.0, device=device)
    _warm(lambda: x.view(2, 4))
    x.resize_(2, 3)
    with pytest.raises(RuntimeError, match="invalid for input of size 6"):
        x.view(2, 4)
    assert x.view(3, 2).shape == (3, 2)


def test_reshape_and_transpose_memos_are_views_and_copies_stay_copies(device, torch):
    """reshape/transpose memoize a view's layout (as view/permute do); a reshape that must copy is never
    memoized: every call returns a fresh contiguous copy."""
    x = tl.arange(24.0, device=device).view(2, 3, 4)
    tx = torch.arange(24.0).view(2, 3, 4)
    for f in (lambda t: t.reshape(6, 4), lambda t: t.reshape((4, -1)), lambda t: t.transpose(0, 2),
              lambda t: t.transpose(-1, 1)):
        v = _warm(lambda: f(x))
        assert v._base is x._base and v.untyped_storage() is x.untyped_storage()
        assert v.shape == tuple(f(tx).shape) and v.stride() == tuple(f(tx).stride())
        assert v.tolist() == f(tx).tolist()
    nc = x.transpose(0, 1)
    c1, c2 = nc.reshape(6, 4), nc.reshape(6, 4)
    assert c1.untyped_storage() is not nc.untyped_storage() and c2.untyped_storage() is not c1.untyped_storage()
    assert c1.tolist() == c2.tolist() == tx.transpose(0, 1).reshape(6, 4).tolist()
    with pytest.raises(IndexError):
        x.transpose(0, 3)
    with pytest.raises(RuntimeError, match="invalid for input of size 24"):
        x.reshape(5, 5)


VIEW_CALLS = [("unsqueeze", (1,)), ("unsqueeze", (-1,)), ("squeeze", ()), ("expand", (2, -1, 3, 4)),
              ("expand", ((2, 2, 3, 4),)), ("narrow", (2, 1, 2)), ("select", (1, -1)), ("unbind", (1,)),
              ("chunk", (3, -1)), ("split", (2, 2)), ("flatten", (1,)), ("movedim", (0, 2)),
              ("unfold", (2, 2, 1)), ("diagonal", (0, 1, 2))]


@pytest.mark.parametrize("name,args", VIEW_CALLS, ids=lambda v: str(v))
def test_memoized_view_ops_match_torch_and_stay_views(device, torch, name, args):
    """unsqueeze/squeeze/expand/narrow/select/unbind/chunk/split/flatten/movedim/unfold/diagonal remember
    their layouts: the warm call returns views of the same storage, version counter and base, with
    torch's shapes, strides and values; bools and floats still reach the general path's errors."""
    x = tl.arange(24.0, device=device).view(1, 2, 3, 4)
    tx = torch.arange(24.0).view(1, 2, 3, 4)
    want = getattr(tx, name)(*args)
    got = _warm(lambda: getattr(x, name)(*args))
    pairs = zip(got, want) if isinstance(want, tuple) else [(got, want)]
    for g, w in pairs:
        assert g.untyped_storage() is x.untyped_storage() and g._base is x._base and g._vc is x._vc
        assert tuple(g.shape) == tuple(w.shape) and g.stride() == w.stride() and g.tolist() == w.tolist()
    if name in ("unsqueeze", "select", "narrow"):
        with pytest.raises(TypeError):
            getattr(x, name)(*((True,) + args[1:]))


def test_permute_memo_with_tuple_and_varargs(device, torch):
    x = tl.arange(24.0, device=device).view(2, 3, 4)
    tx = torch.arange(24.0).view(2, 3, 4)
    a = _warm(lambda: x.permute(2, 0, 1))
    b = _warm(lambda: x.permute((2, 0, 1)))
    assert a.stride() == b.stride() == tuple(tx.permute(2, 0, 1).stride())
    with pytest.raises(RuntimeError, match="duplicate dims"):
        x.permute(0, 0, 1)
    with pytest.raises(TypeError):
        x.permute(2.0, 0, 1)


def test_views_of_a_tensor_that_requires_grad_are_recorded(device):
    x = tl.arange(8.0, device=device)
    _warm(lambda: x.view(2, 4)[1:, None])
    w = tl.arange(8.0, device=device, requires_grad=True)
    y = w.view(2, 4)[1:, None]
    assert y.grad_fn is not None
    y.sum().backward()
    assert w.grad.tolist() == [0.0] * 4 + [1.0] * 4


def test_T_of_a_3d_tensor_warns_every_time(device):
    x = tl.arange(8.0, device=device).view(2, 1, 4)
    for _ in range(2):
        with pytest.warns(UserWarning, match="x.T` on tensors of dimension other than 2"):
            y = x.T
    assert tuple(y.shape) == (4, 1, 2)


# -- devices and the CUDA launch recipes ------------------------------------------------------

def test_tensors_on_one_device_share_a_device_object(device):
    a = tl.ones(2, device=device)
    b = tl.zeros(2, device=tl.device(device))
    assert a.device is b.device and a.device.type == tl.device(device).type


def test_storage_shrunk_after_the_recipe_is_memoized_is_refused(device):
    a = tl.arange(8.0, device=device)
    b = tl.ones(8, device=device)
    _warm(lambda: a + b)
    _warm(lambda: a.sum())
    b.untyped_storage().resize_(4)
    with pytest.raises(RuntimeError, match="storage was shrunk"):
        a + b
    with pytest.raises(RuntimeError, match="storage was shrunk"):
        b.sum()


def test_broadcast_and_strided_operands_after_a_fast_one(device, torch):
    a = tl.arange(8.0, device=device).view(2, 4)
    b = tl.tensor([1.0, 2.0, 3.0, 4.0], device=device)
    ta, tb = torch.arange(8.0).view(2, 4), torch.tensor([1.0, 2.0, 3.0, 4.0])
    assert _warm(lambda: a + a).tolist() == (ta + ta).tolist()
    assert _warm(lambda: a + b).tolist() == (ta + tb).tolist()
    assert _warm(lambda: a.T + 1).tolist() == (ta.T + 1).tolist()
    assert _warm(lambda: a.T * a.T).stride() == (ta.T * ta.T).stride()


def test_wrapped_arrays_and_contiguous_views_take_the_straight_path(monkeypatch):
    """A from_numpy tensor laid out as a fresh output, and a view that is (a contiguous reshape or
    a batch element), share the contiguous Layout record op outputs use, so `a + b` and `x.mul_(2)`
    on them take the straight line (the general path's _out_stride never runs) and give its values;
    a non-contiguous view keeps its own record and the general path."""
    from tensorlab.ops import elementwise as E
    calls = []
    real = E._out_stride
    monkeypatch.setattr(E, "_out_stride", lambda *a, **k: calls.append(a[0]) or real(*a, **k))
    x = np.arange(1, 13, dtype=np.float32).reshape(3, 4)
    _warm(lambda: (tl.ones(3, 4) + tl.ones(3, 4), tl.ones(4, 3) * tl.ones(4, 3), tl.ones(4) + tl.ones(4)))
    calls.clear()  # the ops' dtype memos are warm
    a, b = tl.from_numpy(x), tl.from_numpy(x * 2)
    assert a._meta.layout is b._meta.layout  # one record for both
    np.testing.assert_array_equal((a + b).numpy(), x * 3)
    v, w = a.view(4, 3), b[1]  # a contiguous reshape; a batch element: offset 4, not a fresh layout
    np.testing.assert_array_equal((v * v).numpy(), (x * x).reshape(4, 3))
    assert calls == []
    np.testing.assert_array_equal((w + w).numpy(), x[1] * 4)  # offset 4: the general path, same values
    assert len(calls) == 1
    y = tl.from_numpy(np.ones((3, 4), np.float32))
    y.mul_(2.0)
    assert y._version == 1 and y.tolist() == [[2.0] * 4] * 3
    t = a.t()  # transposed: its own record, computed the long way
    assert t._meta.layout is not tl.empty(4, 3)._meta.layout
    np.testing.assert_array_equal((t + t).numpy(), x.T * 2)
    assert len(calls) == 2


def test_copies_of_contiguous_tensors_take_the_straight_path(device, monkeypatch):
    """x.to(device), x.to(dtype), clone() and the factories give a contiguous result the one shared
    Layout record of its shape (their strides are given explicitly, preserve_format), so `a + b` on
    them takes the straight line; a copy of a transposed tensor keeps its own strides."""
    from tensorlab.ops import elementwise as E
    calls = []
    real = E._out_stride
    monkeypatch.setattr(E, "_out_stride", lambda *a, **k: calls.append(a[0]) or real(*a, **k))
    x = np.arange(1, 13, dtype=np.float32).reshape(3, 4)
    host = tl.from_numpy(x)
    a = host.to(device)
    b = tl.tensor(x * 2, device=device)
    c = a.clone()
    d = tl.ones(3, 4, device=device).double().float()
    assert a._meta.layout is b._meta.layout is c._meta.layout is d._meta.layout is host._meta.layout
    _warm(lambda: (a + b, c * d))  # the ops' dtype memos
    calls.clear()
    np.testing.assert_array_equal((a + b).cpu().numpy(), x * 3)
    np.testing.assert_array_equal((c * d).cpu().numpy(), x)
    assert calls == []
    t = host.t().to(device)  # preserve_format keeps the transposed strides: its own record
    assert t.stride() == (1, 4) and t._meta.layout is not tl.empty(4, 3)._meta.layout
    np.testing.assert_array_equal((t + t).cpu().numpy(), x.T * 2)
    assert len(calls) == 1


def test_cuda_identity_recipes_follow_each_call(cuda):
    """The CUDA elementwise launch found by the Layout records' identity (elementwise._FAST) reads
    every call's own buffers and offsets: a view at another offset with the same strides, a
    broadcast operand, a scalar, and an output on the same shape all compute their own values."""
    from tensorlab.backends.cuda import elementwise as CE
    x = np.arange(24, dtype=np.float32)
    base = tl.tensor(x, device=cuda)
    a, b = base[:8], base[8:16]  # views at offsets 0 and 8 of one buffer
    row = tl.tensor(x[:4], device=cuda)
    m = base[:12].view(3, 4)
    for _ in range(3):
        np.testing.assert_array_equal((a + b).cpu().numpy(), x[:8] + x[8:16])
        np.testing.assert_array_equal((b + a).cpu().numpy(), x[8:16] + x[:8])
        np.testing.assert_array_equal((m + row).cpu().numpy(), x[:12].reshape(3, 4) + x[:4])
        np.testing.assert_array_equal((m * 2.5).cpu().numpy(), x[:12].reshape(3, 4) * 2.5)
    assert CE._FAST  # the calls above went through it
    CE._FAST.clear()  # dropping it only costs the next call a lookup by strides
    np.testing.assert_array_equal((a - b).cpu().numpy(), x[:8] - x[8:16])
