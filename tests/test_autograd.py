"""Autograd semantics: leaves and grad_fn, backward / autograd.grad, accumulation, hooks,
retain_grad, the version counter, freed graphs, .data / detach, in-place ops on non-leaves and
on views, custom Functions. Expected values come from the chain rule by hand (NumPy) or from
torch (the `torch` fixture)."""
from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

import tensorlab as tl

from op_table import to_numpy


def leaf(values, device, dtype=tl.float32):
    return tl.tensor(values, dtype=dtype, device=device, requires_grad=True)


def npg(t):
    return to_numpy(t.grad)


# -- leaves, grad_fn, backward ---------------------------------------------------------------------
def test_leaf_and_grad_fn_metadata(device):
    x = leaf([1.0, 2.0, 3.0], device)
    assert x.requires_grad and x.is_leaf and x.grad_fn is None and x.grad is None
    y = x * 2
    assert y.requires_grad and not y.is_leaf
    assert y.grad_fn.name() == "MulBackward0"
    (acc, nr), = y.grad_fn.next_functions
    assert acc.name() == "AccumulateGrad" and acc.variable is x and nr == 0
    z = y + tl.ones(3, device=device)
    assert z.grad_fn.name() == "AddBackward0"
    assert z.grad_fn.next_functions[0][0] is y.grad_fn
    assert z.grad_fn.next_functions[1] == (None, 0)  # an input that needs no gradient
    assert "grad_fn=<AddBackward0>" in repr(z)
    plain = tl.ones(3, device=device)
    assert not plain.requires_grad and plain.is_leaf and (plain * 2).grad_fn is None


@pytest.mark.parametrize("expr,name", [
    (lambda x: x.sum(), "SumBackward0"), (lambda x: x.view(2, 2).sum(0), "SumBackward1"),
    (lambda x: x - 1, "SubBackward0"),
    (lambda x: 1 - x, "RsubBackward1"), (lambda x: x / 2, "DivBackward0"), (lambda x: x ** 2, "PowBackward0"),
    (lambda x: 2 ** x, "PowBackward2"), (lambda x: x ** x, "PowBackward1"), (lambda x: x.exp(), "ExpBackward0"),
    (lambda x: x[0], "SelectBackward0"), (lambda x: x[1:], "SliceBackward0"), (lambda x: x.view(2, 2),
                                                                              "ViewBackward0"),
    (lambda x: x.clone(), "CloneBackward0"), (lambda x: x.double(), "ToCopyBackward0"), (lambda x: x.max(),
                                                                                       "MaxBackward1"),
    (lambda x: x.max(0)[0], "MaxBackward0"), (lambda x: x.relu(), "ReluBackward0"),
    (lambda x: x.view(2, 2) @ x.view(2, 2), "MmBackward0"), (lambda x: x @ x, "DotBackward0"),
    (lambda x: x.softmax(0), "SoftmaxBackward0"), (lambda x: x.norm(), "LinalgVectorNormBackward0"),
    (lambda x: x.clamp(0, 1), "ClampBackward1"), (lambda x: x.expand(2, 4), "ExpandBackward0"),
    (lambda x: x[tl.tensor([0, 1])], "IndexBackward0"), (lambda x: tl.cat([x, x]), "CatBackward0"),
])
def test_grad_fn_names_follow_torch(expr, name, device):
    x = leaf([1.0, 2.0, 3.0, 4.0], device)
    assert expr(x).grad_fn.name() == name


def test_backward_scalar_and_gradient_argument(device):
    x = leaf([1.0, 2.0, 3.0], device)
    (x * x).sum().backward()
    np.testing.assert_allclose(npg(x), [2.0, 4.0, 6.0])
    y = leaf([1.0, -1.0], device)
    (y * 3).backward(tl.tensor([1.0, 10.0], device=device))
    np.testing.assert_allclose(npg(y), [3.0, 30.0])


def test_non_scalar_backward_needs_a_gradient(device):
    x = leaf([1.0, 2.0], device)
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar outputs"):
        (x * 2).backward()
    with pytest.raises(RuntimeError, match=r"Mismatch in shape: grad_output\[0\] has a shape of"):
        (x * 2).backward(tl.ones(3, device=device))
    with pytest.raises(RuntimeError, match="element 0 of tensors does not require grad and does not have a grad_fn"):
        tl.ones(2, device=device).sum().backward()


def test_gradients_accumulate_into_leaves(device):
    x = leaf([1.0, 2.0], device)
    y = (x * x).sum()
    y.backward(retain_graph=True)
    g = x.grad
    y.backward()
    assert x.grad is g  # accumulated in place, as torch
    np.testing.assert_allclose(npg(x), [4.0, 8.0])
    (x * 5).sum().backward()
    np.testing.assert_allclose(npg(x), [9.0, 13.0])


def test_a_leaf_used_twice_gets_the_sum(device):
    x = leaf([2.0, 3.0], device)
    (x * x + x.exp() + x).sum().backward()
    v = np.array([2.0, 3.0])
    np.testing.assert_allclose(npg(x), 2 * v + np.exp(v) + 1, rtol=1e-6)


def test_broadcast_gradients_are_summed_to_the_input_shape(device):
    a = leaf(np.arange(3.0).reshape(3, 1), device)
    b = leaf([1.0, 2.0, 3.0, 4.0], device)
    c = leaf(2.0, device)  # 0-dim
    (a * b + c).sum().backward()
    assert a.grad.shape == (3, 1) and b.grad.shape == (4,) and c.grad.shape == ()
    np.testing.assert_allclose(npg(a), [[10.0]] * 3)
    np.testing.assert_allclose(npg(b), [3.0] * 4)
    assert c.grad.item() == 12.0


def test_dtype_and_promotion_gradients_keep_each_inputs_dtype(device):
    a = leaf([1.0, 2.0], device, tl.float32)
    b = leaf([3.0, 4.0], device, tl.float64)
    out = a * b
    assert out.dtype is tl.float64
    out.sum().backward()
    assert a.grad.dtype is tl.float32 and b.grad.dtype is tl.float64
    np.testing.assert_allclose(npg(a), [3.0, 4.0])
    h = leaf([1.5, 2.5], device, tl.float32)
    (h.double() * 2).sum().backward()
    assert h.grad.dtype is tl.float32
    np.testing.assert_allclose(npg(h), [2.0, 2.0])


def test_non_differentiable_outputs_have_no_grad_fn(device):
    x = leaf([1.0, -2.0, 3.0], device)
    for out in (x > 0, x == x, x.argmax(), x.isnan(), x.sign().long(), x.max(0).indices, x.sort().indices):
        assert out.grad_fn is None and not out.requires_grad
    assert (x.floor()).requires_grad  # torch: zero gradient, but a grad_fn
    x.floor().sum().backward()
    np.testing.assert_allclose(npg(x), [0.0, 0.0, 0.0])


# -- autograd.grad / autograd.backward --------------------------------------------------------------
def test_autograd_grad(device):
    x = leaf([1.0, 2.0], device)
    w = leaf([3.0, 4.0], device)
    y = (x * w).sum()
    gx, gw = tl.autograd.grad(y, (x, w), retain_graph=True)
    np.testing.assert_allclose(to_numpy(gx), [3.0, 4.0])
    np.testing.assert_allclose(to_numpy(gw), [1.0, 2.0])
    assert x.grad is None and w.grad is None  # grad() accumulates nothing
    (gx2,) = tl.autograd.grad([x * 2], [x], grad_outputs=[tl.tensor([1.0, -1.0], device=device)])
    np.testing.assert_allclose(to_numpy(gx2), [2.0, -2.0])


def test_autograd_grad_unused_inputs(device):
    x = leaf([1.0], device)
    unused = leaf([1.0], device)
    y = (x * 2).sum()
    with pytest.raises(RuntimeError, match="appears to not have been used in the graph. Set allow_unused=True"):
        tl.autograd.grad(y, [x, unused], retain_graph=True)
    gx, gu = tl.autograd.grad(y, [x, unused], allow_unused=True, retain_graph=True)
    assert gu is None and gx.item() == 2.0
    gx, gu = tl.autograd.grad(y, [x, unused], materialize_grads=True)
    assert gu.tolist() == [0.0]


def test_autograd_grad_of_an_intermediate(device):
    x = leaf([1.0, 2.0, 3.0], device)
    h = x * x
    y = (h * 3).sum()
    (gh,) = tl.autograd.grad(y, h)
    np.testing.assert_allclose(to_numpy(gh), [3.0, 3.0, 3.0])


def test_double_backward_with_create_graph(device):
    x = leaf([1.0, 2.0, 3.0], device, tl.float64)
    y = (x ** 3).sum()
    (g,) = tl.autograd.grad(y, x, create_graph=True)
    assert g.requires_grad and g.grad_fn is not None
    np.testing.assert_allclose(to_numpy(g.detach()), 3 * np.array([1.0, 4.0, 9.0]))
    g.sum().backward()
    np.testing.assert_allclose(npg(x), 6 * np.array([1.0, 2.0, 3.0]))


def test_double_backward_through_exp_sigmoid_and_matmul(device, torch):
    rng = np.random.default_rng(0)
    a, m = rng.normal(size=(3,)), rng.normal(size=(3, 3))
    x = leaf(a, device, tl.float64)
    w = tl.tensor(m, dtype=tl.float64, device=device)
    y = ((w @ x).sigmoid() * x.exp()).sum()
    (g,) = tl.autograd.grad(y, x, create_graph=True)
    (g * g).sum().backward()
    tx = torch.tensor(a, requires_grad=True)
    ty = ((torch.tensor(m) @ tx).sigmoid() * tx.exp()).sum()
    (tg,) = torch.autograd.grad(ty, tx, create_graph=True)
    (tg * tg).sum().backward()
    np.testing.assert_allclose(npg(x), tx.grad.numpy(), rtol=1e-10)


def _many_ops(m, x):
    return ((x.softmax(1) * x.log_softmax(0)).sum() + x.norm() + x.var(1).sum() + x.prod(1).sum()
            + x.cumprod(1).sum() + x[:, 1:].sum() * x.amax() + (x @ x.t()).sum() + x.unfold(1, 2, 1).pow(2).sum()
            + x.diagonal().exp().sum() + x.as_strided((2, 2), (1, 2), 1).sum() ** 2 + x[[0, 2]].pow(3).sum()
            + m.where(x > 0, x, x * x).sum() + x.clamp(-0.5, 0.5).sin().sum() + x.logsumexp(0).sum())


def test_double_backward_matches_torch_across_ops(device, torch):
    v = np.random.default_rng(3).normal(size=(3, 4))
    x = leaf(v, device, tl.float64)
    tx = torch.tensor(v, requires_grad=True)
    for m, t, grad in ((tl, x, tl.autograd.grad), (torch, tx, torch.autograd.grad)):
        (g,) = grad(_many_ops(m, t), t, create_graph=True)
        (g * g).sum().backward()
    np.testing.assert_allclose(npg(x), tx.grad.numpy(), rtol=1e-9, atol=1e-12)


def test_double_backward_through_inplace_and_views_matches_torch(device, torch):
    rng = np.random.default_rng(3)
    xv, wv = rng.normal(size=(3, 4)), rng.normal(size=(4,))
    x, w = leaf(xv, device, tl.float64), leaf(wv, device, tl.float64)
    tx, tw = (torch.tensor(v, requires_grad=True) for v in (xv, wv))
    for m, a, b, grad in ((tl, x, w, tl.autograd.grad), (torch, tx, tw, torch.autograd.grad)):
        ga, gb = grad(_view_program(m, a, b), (a, b), create_graph=True)
        ((ga * ga).sum() + gb.sin().sum()).backward()
    np.testing.assert_allclose(npg(x), tx.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(npg(w), tw.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_backward_inputs_accumulates_only_there(device):
    x = leaf([1.0], device)
    w = leaf([2.0], device)
    h = x * w
    y = (h * h).sum()
    tl.autograd.backward(y, inputs=[w, h])
    assert x.grad is None
    assert w.grad.item() == pytest.approx(2 * 2.0 * 1.0)
    assert h.grad.item() == pytest.approx(4.0)
    with pytest.raises(RuntimeError, match="cannot be empty"):
        tl.autograd.backward((x * 1).sum(), inputs=[])


def test_autograd_backward_several_roots(device):
    x = leaf([1.0, 2.0], device)
    tl.autograd.backward([(x * 2).sum(), x * 3], [None, tl.tensor([1.0, 2.0], device=device)])
    np.testing.assert_allclose(npg(x), [5.0, 8.0])


# -- hooks and retain_grad --------------------------------------------------------------------------
def test_tensor_hooks(device):
    x = leaf([1.0, 2.0], device)
    seen = []
    h = x * 3
    handle = h.register_hook(lambda g: seen.append(g.tolist()) or g * 10)
    leaf_handle = x.register_hook(lambda g: g + 1)
    h.sum().backward(retain_graph=True)
    assert seen == [[1.0, 1.0]]
    np.testing.assert_allclose(npg(x), [31.0, 31.0])
    handle.remove()
    leaf_handle.remove()
    x.grad = None
    h.sum().backward()
    np.testing.assert_allclose(npg(x), [3.0, 3.0])
    assert seen == [[1.0, 1.0]]
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        tl.ones(2, device=device).register_hook(lambda g: g)


def test_retain_grad(device):
    x = leaf([1.0, 2.0], device)
    h = x * x
    assert not h.retains_grad
    h.retain_grad()
    assert h.retains_grad and not x.retains_grad
    (h * 3).sum().backward()
    np.testing.assert_allclose(to_numpy(h.grad), [3.0, 3.0])
    other = x * 2
    with pytest.warns(UserWarning, match="not a leaf Tensor is being accessed"):
        assert other.grad is None
    with pytest.raises(RuntimeError, match="can't retain_grad on Tensor that has requires_grad=False"):
        tl.ones(1, device=device).retain_grad()


def test_stored_grad_is_not_the_callers_gradient(device):
    x = leaf([1.0, 2.0], device)
    g = tl.tensor([5.0, 6.0], device=device)
    (x + 0).backward(g)
    assert x.grad is not g and x.grad.untyped_storage().data_ptr() != g.untyped_storage().data_ptr()
    x.grad.zero_()
    assert g.tolist() == [5.0, 6.0]


# -- graph lifetime -----------------------------------------------------------------------------------
def test_second_backward_through_a_freed_graph(device):
    x = leaf([1.0, 2.0], device)
    y = (x * x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match=r"Trying to backward through the graph a second time .*"
                                           r"Specify retain_graph=True if you need to backward through the graph"):
        y.backward()
    z = (x * x).sum()
    z.backward(retain_graph=True)
    z.backward()
    np.testing.assert_allclose(npg(x), [2.0 + 4.0, 4.0 + 8.0])
    s = (x + 1).sum()  # nothing saved: torch runs it again too
    s.backward()
    s.backward()


def test_graph_is_freed_with_its_outputs(device):
    """No reference cycles: a graph goes away (saved tensors included) as soon as its outputs do,
    without waiting for the cycle collector."""
    x = leaf([1.0, 2.0], device)
    gc.disable()
    try:
        h = x.exp()           # saves its result
        y = (h * x).sigmoid()  # saves inputs and result
        refs = [weakref.ref(y.grad_fn), weakref.ref(h.grad_fn)]
        saved = weakref.ref(h.grad_fn._result.tensor.untyped_storage())
        del h, y
        assert all(r() is None for r in refs) and saved() is None
    finally:
        gc.enable()


# -- version counter ----------------------------------------------------------------------------------
def test_modified_saved_tensor_is_detected(device):
    x = leaf([1.0, 2.0, 3.0], device)
    y = x.exp()
    y.add_(1)
    with pytest.raises(RuntimeError) as e:
        y.sum().backward()
    msg = str(e.value)
    assert ("one of the variables needed for gradient computation has been modified by an inplace operation: "
            "[tensorlab.FloatTensor [3]], which is output 0 of ExpBackward0, is at version 1; expected version 0 "
            "instead. Hint:") in msg


def test_modified_saved_input_is_detected(device):
    x = leaf([1.0, 2.0], device)
    h = x * 1
    y = h.sin()
    h.mul_(2)
    with pytest.raises(RuntimeError, match=r"\[tensorlab.FloatTensor \[2\]\], which is output 0 of MulBackward0, is "
                                           r"at version 1; expected version 0"):
        y.sum().backward()


def test_unsaved_inputs_may_change(device):
    x = leaf([1.0, 2.0], device)
    h = x * 1
    y = h + 1  # add saves nothing
    h.mul_(2)
    y.sum().backward()
    np.testing.assert_allclose(npg(x), [1.0, 1.0])  # y = (old h) + 1: slope 1
    x.grad = None
    y2 = h * 1
    y2.sum().backward()
    np.testing.assert_allclose(npg(x), [2.0, 2.0])


# -- in-place ------------------------------------------------------------------------------------------
def test_inplace_on_a_leaf_is_refused_but_allowed_under_no_grad(device):
    x = leaf([1.0, 2.0], device)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"):
        x.mul_(2)
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad is being used"):
        x[0].mul_(2)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad is being used in an in-place"):
        x[0] = 3.0
    assert x._version == 0
    with tl.no_grad():
        x.mul_(2)
        x[0] = 7.0
    assert x.tolist() == [7.0, 4.0] and x.is_leaf and x.grad_fn is None


def test_views_made_under_no_grad(device):
    x = leaf([1.0, 2.0, 3.0], device)
    h = x * 1
    with tl.no_grad():
        v = h[1:]
        wv = x[1:]
    assert not v.requires_grad
    v.mul_(2)  # still changes h: its gradient follows
    h.sum().backward()
    np.testing.assert_allclose(npg(x), [1.0, 2.0, 2.0])
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad"):
        wv.mul_(2)
    assert x.is_leaf


def test_inplace_on_non_leaf_gives_correct_gradients(device, torch):
    vals = [0.5, -1.0, 2.0]

    def run(m, x, w):
        h = x * 2
        h.mul_(w)
        h.sin_()
        h.add_(x, alpha=3)
        h.clamp_(min=-0.5)
        return (h * h).sum()
    x, w = leaf(vals, device, tl.float64), leaf([1.5, 2.0, -0.5], device, tl.float64)
    tx, tw = torch.tensor(vals, requires_grad=True, dtype=torch.float64), \
        torch.tensor([1.5, 2.0, -0.5], requires_grad=True, dtype=torch.float64)
    run(tl, x, w).backward()
    run(torch, tx, tw).backward()
    np.testing.assert_allclose(npg(x), tx.grad.numpy(), rtol=1e-10)
    np.testing.assert_allclose(npg(w), tw.grad.numpy(), rtol=1e-10)


def test_inplace_into_a_plain_tensor_makes_it_require_grad(device):
    w = leaf([1.0, 2.0, 3.0], device)
    buf = tl.ones(3, device=device)
    buf.mul_(w)
    assert buf.requires_grad and buf.grad_fn.name() == "MulBackward0"
    buf.sum().backward()
    np.testing.assert_allclose(npg(w), [1.0, 1.0, 1.0])
    w.grad = None
    out = tl.zeros(2, 3, device=device)
    out[0] = w
    out[1] = w * 2
    out.sum().backward()
    np.testing.assert_allclose(npg(w), [3.0, 3.0, 3.0])


def test_self_times_self_in_place_is_refused_like_torch(device):
    x = leaf([1.0, 2.0], device)
    a = x.clone()
    a.mul_(a)  # mul saves both operands; the old value of `a` is gone
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        a.sum().backward()
    b = x.clone()
    b.add_(b)  # add saves nothing: fine
    b.sum().backward()
    np.testing.assert_allclose(npg(x), [2.0, 2.0])


def _view_program(m, x, w):
    h = x * 1
    h[0] = w[0] * 3           # setitem through a basic index (copy_ into a view)
    h[1:, 1].mul_(w[1:3])     # in-place on a view of a non-leaf
    row = h[2]
    row.add_(w.sum())         # in-place through another view
    h[m.tensor([0, 2]), 0] += w[:2]  # advanced-index setitem with accumulate semantics of +=
    return (h * h).sum() + (row * 2).sum()


def test_inplace_on_views_of_non_leaves_matches_torch(device, torch):
    rng = np.random.default_rng(3)
    xv, wv = rng.normal(size=(3, 4)), rng.normal(size=(4,))
    x, w = leaf(xv, device, tl.float64), leaf(wv, device, tl.float64)
    tx, tw = (torch.tensor(v, requires_grad=True) for v in (xv, wv))
    _view_program(tl, x, w).backward()
    _view_program(torch, tx, tw).backward()
    np.testing.assert_allclose(npg(x), tx.grad.numpy(), rtol=1e-10)
    np.testing.assert_allclose(npg(w), tw.grad.numpy(), rtol=1e-10)


def test_inplace_on_views_gradcheck(device):
    rng = np.random.default_rng(4)
    x = leaf(rng.normal(size=(3, 4)), device, tl.float64)
    w = leaf(rng.normal(size=(4,)), device, tl.float64)
    assert tl.autograd.gradcheck(lambda a, b: _view_program(tl, a, b), (x, w))


def test_other_views_see_an_inplace_write_through_one_view(device, torch):
    def run(m, x):
        h = x * 1
        u = h[0]        # made before the write
        v = h[:, 0]
        v.mul_(5)       # changes h[0, 0], which u also covers
        return (u * u).sum() + h.sum()
    xv = [[1.0, 2.0], [3.0, 4.0]]
    x = leaf(xv, device, tl.float64)
    tx = torch.tensor(xv, dtype=torch.float64, requires_grad=True)
    run(tl, x).backward()
    run(torch, tx).backward()
    np.testing.assert_allclose(npg(x), tx.grad.numpy())


def test_view_grad_fn_after_inplace(device):
    x = leaf([1.0, 2.0, 3.0], device)
    h = x.clone()
    v = h[1:]
    v.mul_(2)
    assert h.grad_fn.name() == "CopySlices"
    assert v.grad_fn.name() == "AsStridedBackward0"
    v.sum().backward()
    np.testing.assert_allclose(npg(x), [0.0, 2.0, 2.0])


def test_copy_into_a_view_of_a_plain_buffer(device):
    w = leaf([1.0, 2.0], device)
    buf = tl.zeros(4, device=device)
    buf[1:3].copy_(w)
    assert buf.requires_grad and buf.grad_fn.name() == "CopySlices"
    (buf * tl.tensor([1.0, 2.0, 3.0, 4.0], device=device)).sum().backward()
    np.testing.assert_allclose(npg(w), [2.0, 3.0])


def test_inplace_through_a_view_of_an_overlapping_base_is_a_clear_error(device):
    w = leaf([1.0, 2.0], device)
    base = tl.empty_strided((3, 2), (0, 1), device=device)  # every row is the same memory
    with pytest.raises(RuntimeError, match="whose own elements overlap .* clone\\(\\) the base first"):
        base[0].copy_(w)


# -- .data and detach -----------------------------------------------------------------------------------
def test_data_shares_storage_but_not_the_version_counter(device):
    x = leaf([1.0, 2.0], device)
    d = x.data
    assert not d.requires_grad and d.is_leaf
    assert d.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()
    y = x.exp()
    d.mul_(2)  # invisible to autograd: no version error (the pitfall torch documents)
    assert x._version == 0 and d._version == 1
    assert x.tolist() == [2.0, 4.0]
    y.sum().backward()  # uses the exp computed before the write
    np.testing.assert_allclose(npg(x), np.exp([1.0, 2.0]), rtol=1e-6)
    x.data = tl.tensor([9.0, 8.0, 7.0], device=device)
    assert x.shape == (3,) and x.tolist() == [9.0, 8.0, 7.0] and x.requires_grad and x.is_leaf


def test_detach_shares_storage_and_version_counter(device):
    x = leaf([1.0, 2.0], device)
    y = x.exp()
    d = y.detach()
    assert not d.requires_grad and d.grad_fn is None
    assert d.untyped_storage().data_ptr() == y.untyped_storage().data_ptr()
    d.add_(1)
    assert y._version == 1
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_detach_in_place(device):
    x = leaf([1.0], device)
    y = x * 2
    y.detach_()
    assert not y.requires_grad and y.grad_fn is None and y.is_leaf


def test_grad_setter_validates(device):
    x = leaf([1.0, 2.0], device)
    x.grad = tl.ones(2, device=device)
    with pytest.raises(RuntimeError, match="assigned grad has data of a different size"):
        x.grad = tl.ones(3, device=device)
    with pytest.raises(RuntimeError, match="assigned grad has data of a different type"):
        x.grad = tl.ones(2, dtype=tl.float64, device=device)
    x.grad = None


def test_backward_in_several_threads_shares_leaves(device):
    import threading
    w = leaf([1.0, 2.0], device)
    errors = []

    def worker(k):
        try:
            for _ in range(20):
                (w * k).sum().backward()
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)
    threads = [threading.Thread(target=worker, args=(k,)) for k in (1.0, 2.0, 3.0)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    np.testing.assert_allclose(npg(w), [120.0, 120.0])


# -- custom Function ------------------------------------------------------------------------------------
class _Cube(tl.autograd.Function):
    @staticmethod
    def forward(ctx, x, k):
        ctx.save_for_backward(x)
        ctx.k = k
        return x * x * x * k

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 3 * x * x * ctx.k, None


class _SplitSigns(tl.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.relu(), (-x).relu()

    @staticmethod
    def backward(ctx, gpos, gneg):
        (x,) = ctx.saved_tensors
        return tl.where(x > 0, gpos, -gneg)


def test_custom_function(device):
    x = leaf([1.0, 2.0], device, tl.float64)
    y = _Cube.apply(x, 2.0)
    assert y.grad_fn.name() == "_CubeBackward"
    y.sum().backward()
    np.testing.assert_allclose(npg(x), [6.0, 24.0])
    assert tl.autograd.gradcheck(lambda t: _Cube.apply(t, 0.5), (x,))
    with tl.no_grad():
        assert not _Cube.apply(x, 1.0).requires_grad


def test_custom_function_with_two_outputs(device):
    x = leaf([1.0, -2.0, 3.0], device, tl.float64)
    pos, neg = _SplitSigns.apply(x)
    assert pos.grad_fn is neg.grad_fn and neg.output_nr == 1
    (pos * 2).sum().backward(retain_graph=True)
    np.testing.assert_allclose(npg(x), [2.0, 0.0, 2.0])  # neg got no gradient: zeros were passed
    x.grad = None
    (pos + 3 * neg).sum().backward()
    np.testing.assert_allclose(npg(x), [1.0, -3.0, 1.0])


# -- an end-to-end step against torch --------------------------------------------------------------------
def test_mlp_training_step_matches_torch(device, torch):
    rng = np.random.default_rng(7)
    xs, ys = rng.normal(size=(8, 5)), rng.integers(0, 3, size=8)
    w1, b1, w2 = rng.normal(size=(5, 6)) * 0.5, rng.normal(size=(6,)), rng.normal(size=(6, 3)) * 0.5

    def step(m, params, x, y):
        a, b, c = params
        h = (x @ a + b).tanh()
        logits = h @ c
        logp = logits.log_softmax(1)
        loss = -logp.gather(1, y.unsqueeze(1)).mean() + 1e-2 * (a * a).sum()
        loss.backward()
        return loss

    p_tl = [leaf(v, device, tl.float64) for v in (w1, b1, w2)]
    p_t = [torch.tensor(v, requires_grad=True) for v in (w1, b1, w2)]
    l_tl = step(tl, p_tl, tl.tensor(xs, device=device), tl.tensor(ys, device=device))
    l_t = step(torch, p_t, torch.tensor(xs), torch.tensor(ys))
    assert l_tl.item() == pytest.approx(l_t.item(), rel=1e-12)
    for a, b in zip(p_tl, p_t):
        np.testing.assert_allclose(npg(a), b.grad.numpy(), rtol=1e-10)


# -- median / nanmedian / kthvalue, var_mean / std_mean, tensor_split, in-place metadata ops ------
_NAN = float("nan")
NEW_OP_PROGRAMS = {
    "median": lambda m, x: m.median(x) * 3,
    "median_dim": lambda m, x: m.median(x, 1).values.sin().sum(),
    "median_dim0_keepdim": lambda m, x: (m.median(x, 0, keepdim=True)[0] * x).sum(),
    "nanmedian_dim": lambda m, x: m.nanmedian(x, -1).values.exp().sum(),
    "kthvalue": lambda m, x: (m.kthvalue(x, 3, 1).values ** 2).sum(),
    "kthvalue_keepdim": lambda m, x: (x.kthvalue(2, 0, True).values * x).sum(),
    "var_mean": lambda m, x: sum((r * r).sum() for r in m.var_mean(x, 1)),
    "std_mean": lambda m, x: sum(r.sum() for r in m.std_mean(x, 0, correction=0, keepdim=True)),
    "tensor_split": lambda m, x: sum((p * (i + 1)).pow(2).sum() for i, p in enumerate(x.tensor_split([1, 3], 1))),
    "tensor_split_sections": lambda m, x: m.tensor_split(x, 2)[1].exp().sum(),
    "squeeze_": lambda m, x: (x * 2).unsqueeze(1).squeeze_(1).sin().sum(),
    "unsqueeze_": lambda m, x: (x * 2).unsqueeze_(0).expand(2, 3, 4).pow(2).sum(),
    "t_": lambda m, x: ((x + 1).t_() @ x).sum(),
    "transpose_view": lambda m, x: _transpose_view_program(x),
}


def _transpose_view_program(x):
    h = x * 1
    v = h[1:]          # a view of a non-leaf
    v.transpose_(0, 1)  # metadata only: h and its graph are unchanged
    v.mul_(2)           # a write through the re-laid-out view reaches h
    return (h * h).sum() + v.sum()


@pytest.mark.parametrize("name", sorted(NEW_OP_PROGRAMS))
def test_new_op_gradients_match_torch(device, torch, name):
    f = NEW_OP_PROGRAMS[name]
    v = np.random.default_rng(5).normal(size=(3, 4))  # no ties: the selected element is unique
    x = leaf(v, device, tl.float64)
    tx = torch.tensor(v, requires_grad=True)
    f(tl, x).backward()
    f(torch, tx).backward()
    np.testing.assert_allclose(npg(x), tx.grad.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", sorted(NEW_OP_PROGRAMS))
def test_new_op_gradcheck(device, name):
    v = np.random.default_rng(6).normal(size=(3, 4))
    x = leaf(v, device, tl.float64)
    assert tl.autograd.gradcheck(lambda a: NEW_OP_PROGRAMS[name](tl, a), (x,))


def test_median_gradients_with_ties_and_nan_match_torch(device, torch):
    """median() without a dim splits the gradient evenly between the elements equal to the
    result (the NaNs when it is NaN), as torch's evenly_distribute_backward; max() too."""
    for vals in ([[1.0, 2.0, 2.0, 3.0]], [[1.0, _NAN, 2.0, _NAN]], [[_NAN, _NAN, 1.0, 4.0]]):
        for f in (lambda m, x: m.median(x), lambda m, x: m.nanmedian(x), lambda m, x: x.max(), lambda m, x: x.min()):
            x = leaf(vals, device, tl.float64)
            tx = torch.tensor(vals, dtype=torch.float64, requires_grad=True)
            f(tl, x).backward()
            f(torch, tx).backward()
            np.testing.assert_allclose(npg(x), tx.grad.numpy())


@pytest.mark.parametrize("expr,name", [
    (lambda x: x.median(), "MedianBackward0"), (lambda x: x.median(0).values, "MedianBackward1"),
    (lambda x: x.nanmedian(), "NanmedianBackward0"), (lambda x: x.nanmedian(0)[0], "NanmedianBackward1"),
    (lambda x: x.kthvalue(2).values, "KthvalueBackward0"), (lambda x: x.tensor_split(2)[1], "SliceBackward0"),
])
def test_new_op_grad_fn_names_follow_torch(expr, name, device):
    assert expr(leaf([1.0, 2.0, 3.0, 4.0], device)).grad_fn.name() == name


def test_inplace_metadata_op_moves_the_tensor_in_the_graph(device):
    x = leaf([[1.0, 2.0, 3.0]], device)
    h = x * 2
    before = h.grad_fn
    assert h.squeeze_(0) is h and h.shape == (3,) and h._version == 1
    assert h.grad_fn is not before and h.grad_fn.next_functions[0][0] is before
    (h * tl.tensor([1.0, 2.0, 3.0], device=device)).sum().backward()
    np.testing.assert_allclose(npg(x), [[2.0, 4.0, 6.0]])
    with tl.no_grad():
        g = x * 2
    assert g.t_().grad_fn is None and g.shape == (3, 1)
