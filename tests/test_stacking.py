"""hstack, vstack/row_stack, dstack, column_stack, atleast_1d/2d/3d and rot90 against torch: values,
shapes, views (atleast_*d) or new tensors (the rest), gradients and torch's errors, on every device."""
from __future__ import annotations

import numpy as np
import pytest

import tensorlab as tl

pytestmark = pytest.mark.torch_oracle

SHAPES = [(), (3,), (2, 3), (2, 3, 4)]
STACKS = ("hstack", "vstack", "row_stack", "dstack", "column_stack")


def _pair(shape, seed):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(shape), rng.standard_normal(shape)


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("name", STACKS)
def test_stacks_match_torch_with_gradients(device, torch, name, shape):
    a, b = _pair(shape, len(shape))
    ta, tb = (torch.tensor(v, requires_grad=True) for v in (a, b))
    x, y = (tl.tensor(v, device=device, requires_grad=True) for v in (a, b))
    want = getattr(torch, name)([ta, tb])
    got = getattr(tl, name)([x, y])
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_array_equal(got.detach().cpu().numpy(), want.detach().numpy())
    w = np.arange(want.numel(), dtype=np.float64).reshape(tuple(want.shape))
    want.backward(torch.tensor(w))
    got.backward(tl.tensor(w, device=device))
    np.testing.assert_array_equal(x.grad.cpu().numpy(), ta.grad.numpy())
    np.testing.assert_array_equal(y.grad.cpu().numpy(), tb.grad.numpy())


@pytest.mark.parametrize("name", ("atleast_1d", "atleast_2d", "atleast_3d"))
def test_atleast_shapes_views_and_tuples(device, torch, name):
    for shape in SHAPES + [(2, 3, 4, 5)]:
        v = np.zeros(shape)
        x = tl.tensor(v, device=device)
        r = getattr(tl, name)(x)
        assert tuple(r.shape) == tuple(getattr(torch, name)(torch.tensor(v)).shape)
        assert r.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()  # a view, as torch's
    one, two = tl.zeros((), device=device), tl.zeros(3, device=device)
    for args in ((one, two), ([one, two],)):
        got = getattr(tl, name)(*args)
        want = getattr(torch, name)(*[[torch.zeros(()), torch.zeros(3)] if isinstance(a, list) else
                                      (torch.zeros(()) if a is one else torch.zeros(3)) for a in args])
        assert isinstance(got, tuple) and [tuple(g.shape) for g in got] == [tuple(w.shape) for w in want]


@pytest.mark.parametrize("shape", [(2, 3), (2, 3, 4)], ids=str)
def test_rot90_matches_torch_for_every_k_and_plane(device, torch, shape):
    a = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    for k in range(-5, 6):
        for dims in ((0, 1), (1, 0), (-1, 0), (0, -1)):
            got, want = tl.rot90(tl.tensor(a, device=device), k, dims), torch.rot90(torch.tensor(a), k, dims)
            assert tuple(got.shape) == tuple(want.shape)
            np.testing.assert_array_equal(got.cpu().numpy(), want.numpy())
    x = tl.tensor(a, device=device)
    r = x.rot90(0)  # k = 0: a new tensor, as torch's (a clone)
    assert r.untyped_storage().data_ptr() != x.untyped_storage().data_ptr()
    t = tl.tensor(a.astype(np.float64), device=device, requires_grad=True)
    tt = torch.tensor(a.astype(np.float64), requires_grad=True)
    (tl.rot90(t, 1, (0, 1)) * tl.arange(float(np.prod(shape)), device=device).reshape(
        tl.rot90(t, 1, (0, 1)).shape)).sum().backward()
    (torch.rot90(tt, 1, (0, 1)) * torch.arange(float(np.prod(shape))).reshape(
        torch.rot90(tt, 1, (0, 1)).shape)).sum().backward()
    np.testing.assert_array_equal(t.grad.cpu().numpy(), tt.grad.numpy())


def _message(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001
        return type(e).__name__, str(e)
    return None


@pytest.mark.parametrize("call", [
    lambda m, d: m.hstack([]), lambda m, d: m.vstack([]), lambda m, d: m.dstack([]),
    lambda m, d: m.column_stack([]),
    lambda m, d: m.rot90(m.zeros(3, device=d)), lambda m, d: m.rot90(m.zeros(2, 2, device=d), 1, (0, 0)),
    lambda m, d: m.rot90(m.zeros(2, 2, device=d), 1, (0,)), lambda m, d: m.rot90(m.zeros(2, 2, device=d), 1, (0, 2)),
    lambda m, d: m.vstack([m.zeros(2, device=d), m.zeros(3, device=d)]),
], ids=["hstack_empty", "vstack_empty", "dstack_empty", "column_stack_empty", "rot90_1d", "rot90_same_dims",
        "rot90_one_dim", "rot90_dim_range", "vstack_mismatch"])
def test_errors_match_torch(device, torch, call):
    want = _message(lambda: call(torch, "cpu"))
    got = _message(lambda: call(tl, device))
    assert want is not None and got is not None
    assert got[0] == want[0], (got, want)
    if "Sizes of tensors must match" not in want[1]:
        assert got[1] == want[1], (got, want)


# -- stack/cat of many small inputs (the DataLoader's collate): the CPU backend joins the inputs' bytes
# when every input is C-contiguous and of the output's dtype; anything else takes NumPy's copy
def _many(kind, n=64):
    rng = np.random.default_rng(n)
    base = rng.standard_normal((n, 6, 4)).astype(np.float32)
    if kind == "plain":
        return [base[i, 0] for i in range(n)]
    if kind == "rows of one tensor":  # views at offsets of one storage
        return [base[i, 1] for i in range(n)]
    if kind == "strided":  # the join refuses them: NumPy's copy
        return [base[i, :, 1] for i in range(n)]
    if kind == "mixed dtype":  # promoted: the join's dtype check falls back
        return [base[i, 0].astype(np.float64 if i == n // 2 else np.float32) for i in range(n)]
    return [base[i, 0] > 0 for i in range(n)]  # bool


@pytest.mark.parametrize("kind", ["plain", "rows of one tensor", "strided", "mixed dtype", "bool"])
def test_stack_and_cat_of_many_small_inputs_match_torch(device, torch, kind):
    arrays = _many(kind)
    if kind == "rows of one tensor":
        whole = tl.tensor(np.stack(arrays), device=device)
        ours = [whole[i] for i in range(len(arrays))]
    elif kind == "strided":
        whole = tl.tensor(np.stack(arrays), device=device).t()
        ours = [whole[:, i] for i in range(len(arrays))]
    else:
        ours = [tl.tensor(a, device=device) for a in arrays]
    theirs = [torch.tensor(a) for a in arrays]
    for dim in (0, 1, -1):
        want, got = torch.stack(theirs, dim), tl.stack(ours, dim)
        assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1] and tuple(got.shape) == tuple(want.shape)
        np.testing.assert_array_equal(got.cpu().numpy(), want.numpy())
    for dim in (0, -1):
        np.testing.assert_array_equal(tl.cat(ours, dim).cpu().numpy(), torch.cat(theirs, dim).numpy())


def test_stack_into_a_strided_out_and_of_mismatched_inputs(device, torch):
    xs = [tl.full((3,), float(i), device=device) for i in range(8)]
    out = tl.zeros(3, 8, device=device).t()  # not C-contiguous: NumPy's copy into its view
    assert tl.stack(xs, out=out) is out
    np.testing.assert_array_equal(out.cpu().numpy(), np.repeat(np.arange(8.0), 3).reshape(8, 3))
    with pytest.raises(RuntimeError, match=r"equal size, but got \[3\] at entry 0 and \[2\] at entry 5"):
        tl.stack(xs[:5] + [tl.ones(2, device=device)] + xs[5:])
    with pytest.raises(TypeError, match="expected Tensor as element 3"):
        tl.stack(xs[:3] + [1.0])
    with pytest.raises(TypeError, match="can't be cast to the desired output type Long"):
        tl.stack(xs, out=tl.zeros(8, 3, dtype=tl.long, device=device))


def test_cat_of_one_layout_checks_what_the_general_path_does(device, torch):
    # every input of one layout takes cat's short path: dtypes still promote, devices are still
    # compared, 0-dim inputs and all-empty 1-D inputs still follow torch's rules
    xs = [tl.full((2, 3), float(i), device=device) for i in range(5)]
    got = tl.cat(xs[:2] + [xs[2].double()] + xs[3:], 1)
    want = torch.cat([torch.full((2, 3), float(i)) for i in range(5)], 1).double()
    assert got.dtype == tl.float64
    np.testing.assert_array_equal(got.cpu().numpy(), want.numpy())
    assert tuple(tl.cat([tl.ones(0, device=device)] * 3).shape) == (0,)
    with pytest.raises(RuntimeError, match=r"zero-dimensional tensor \(at position 0\) cannot be concatenated"):
        tl.cat([tl.tensor(1.0, device=device)] * 2)
    if device != "cpu":
        with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
            tl.cat(xs[:2] + [xs[2].cpu()])
