"""native_batch_norm, native_layer_norm, native_group_norm (the three outputs: values, shapes,
dtypes), the running-statistics update, native_dropout_backward, float64 gradients against torch,
and torch's errors, on every device."""
from __future__ import annotations

import numpy as np
import pytest

import tensorlab as tl

pytestmark = pytest.mark.torch_oracle


def _pair(torch, device, a, dt="float64", grad=False):
    return (torch.tensor(a).to(getattr(torch, dt)).requires_grad_(grad),
            tl.tensor(a, device=device).to(getattr(tl, dt)).requires_grad_(grad))


def _same(got, want, tol=1e-6):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert tuple(g.shape) == tuple(w.shape), (g.shape, w.shape)
        assert str(g.dtype).split(".")[-1] == str(w.dtype).split(".")[-1]
        np.testing.assert_allclose(g.detach().float().cpu().numpy(), w.detach().float().numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("shape", [(4, 3), (4, 3, 5), (2, 3, 4, 2)], ids=str)
@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("stats", [True, False])
def test_native_batch_norm(device, torch, shape, training, affine, stats):
    if not training and not stats:
        return  # torch itself crashes here (no running statistics to use); ours raises (test_errors)
    g = np.random.default_rng(0)
    a, w, b = g.standard_normal(shape), g.standard_normal(3), g.standard_normal(3)
    rm, rv = g.standard_normal(3), g.random(3) + 0.5
    ta, x = _pair(torch, device, a, grad=True)
    tw, xw = _pair(torch, device, w) if affine else (None, None)
    tb, xb = _pair(torch, device, b) if affine else (None, None)
    trm, xrm = _pair(torch, device, rm) if stats else (None, None)
    trv, xrv = _pair(torch, device, rv) if stats else (None, None)
    want = torch.native_batch_norm(ta, tw, tb, trm, trv, training, 0.3, 1e-3)
    got = tl.native_batch_norm(x, xw, xb, xrm, xrv, training, 0.3, 1e-3)
    _same(got, want, 1e-10)
    if stats:
        _same((xrm, xrv), (trm, trv), 1e-12)
    gw = np.random.default_rng(1).standard_normal(shape)
    (want[0] * torch.tensor(gw)).sum().backward()
    (got[0] * tl.tensor(gw, device=device)).sum().backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), ta.grad.numpy(), rtol=1e-8, atol=1e-10)


def test_native_batch_norm_half_keeps_float_statistics(device, torch):
    a = np.random.default_rng(2).standard_normal((4, 2, 3))
    ta, x = _pair(torch, device, a, "float16")
    want = torch.native_batch_norm(ta, None, None, torch.zeros(2), torch.ones(2), True, 0.1, 1e-5)
    got = tl.native_batch_norm(x, None, None, tl.zeros(2, device=device), tl.ones(2, device=device), True, 0.1, 1e-5)
    _same(got, want, 2e-3)


@pytest.mark.parametrize("ns", [(4,), (3, 4), (2, 3, 4)], ids=str)
@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("dt", ["float64", "float32", "bfloat16"])
def test_native_layer_norm(device, torch, ns, affine, dt):
    g = np.random.default_rng(3)
    a, w, b = g.standard_normal((2, 3, 4)), g.standard_normal(ns), g.standard_normal(ns)
    ta, x = _pair(torch, device, a, dt, grad=dt == "float64")
    tw, xw = _pair(torch, device, w, dt) if affine else (None, None)
    tb, xb = _pair(torch, device, b, dt) if affine else (None, None)
    want = torch.native_layer_norm(ta, ns, tw, tb, 1e-5)
    got = tl.native_layer_norm(x, ns, xw, xb, 1e-5)
    _same(got, want, {"float64": 1e-10, "float32": 1e-5, "bfloat16": 2e-2}[dt])
    if dt == "float64":
        gw = g.standard_normal((2, 3, 4))
        (want[0] * torch.tensor(gw)).sum().backward()
        (got[0] * tl.tensor(gw, device=device)).sum().backward()
        np.testing.assert_allclose(x.grad.cpu().numpy(), ta.grad.numpy(), rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("shape,group", [((2, 6, 3), 1), ((2, 6, 3), 3), ((3, 4, 2, 2), 2), ((1, 6), 6)], ids=str)
@pytest.mark.parametrize("affine", [True, False])
def test_native_group_norm(device, torch, shape, group, affine):
    g = np.random.default_rng(4)
    a, w, b = g.standard_normal(shape), g.standard_normal(shape[1]), g.standard_normal(shape[1])
    ta, x = _pair(torch, device, a, grad=True)
    tw, xw = _pair(torch, device, w) if affine else (None, None)
    tb, xb = _pair(torch, device, b) if affine else (None, None)
    n, c = shape[:2]
    hxw = int(np.prod(shape[2:]))
    want = torch.native_group_norm(ta, tw, tb, n, c, hxw, group, 1e-5)
    got = tl.native_group_norm(x, xw, xb, n, c, hxw, group, 1e-5)
    _same(got, want, 1e-10)
    gw = g.standard_normal(shape)
    (want[0] * torch.tensor(gw)).sum().backward()
    (got[0] * tl.tensor(gw, device=device)).sum().backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), ta.grad.numpy(), rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("dt", ["float32", "float16", "int64", "bool"])
@pytest.mark.parametrize("scale", [0.0, 0.5, 2.0])
def test_native_dropout_backward(device, torch, dt, scale):
    g = np.random.default_rng(5)
    a, m = g.integers(-3, 4, (3, 5)), g.random((3, 5)) > 0.5
    ta, x = _pair(torch, device, a, dt)
    want = torch.ops.aten.native_dropout_backward(ta, torch.tensor(m), scale)
    got = tl.native_dropout_backward(x, tl.tensor(m, device=device), scale)
    _same((got,), (want,), 1e-3)


def test_errors(device):
    x = tl.ones((3, 2, 4), device=device)
    with pytest.raises(RuntimeError, match="running_mean"):
        tl.native_batch_norm(x, None, None, None, None, False, 0.1, 1e-5)
    with pytest.raises(RuntimeError, match="weight"):
        tl.native_batch_norm(x, tl.ones(3, device=device), None, None, None, True, 0.1, 1e-5)
    with pytest.raises(RuntimeError, match="normalized_shape"):
        tl.native_layer_norm(x, (3,), None, None, 1e-5)
    with pytest.raises(RuntimeError, match="divisible by num_groups"):
        tl.native_group_norm(x, None, None, 3, 2, 4, 3, 1e-5)
    with pytest.raises(RuntimeError, match="numel"):
        tl.native_group_norm(x, None, None, 3, 2, 5, 1, 1e-5)
    with pytest.raises(RuntimeError, match="floating point"):
        tl.native_layer_norm(tl.ones((2, 3), dtype=tl.int64, device=device), (3,), None, None, 1e-5)
    rm, rv = tl.zeros(2, device=device), tl.ones(2, device=device)
    with pytest.raises(RuntimeError):
        tl.native_batch_norm(x, None, None, rm, tl.ones(3, device=device), True, 0.1, 1e-5)
    assert rm.tolist() == [0.0, 0.0] and rv.tolist() == [1.0, 1.0]  # a failed call changes nothing


def test_batch_norm_running_stats_change_together_or_not_at_all(device):
    """Every alloc/copy/launch of the call failed in turn: the input is untouched and the running
    statistics keep their values (a failed running_var write restores running_mean: its version
    counter moves, its values do not)."""
    from tensorlab.testing import KINDS, InjectedFault, assert_unchanged, count_events, inject_fault, snapshot

    def setup():
        x = tl.tensor(np.random.default_rng(6).standard_normal((4, 2)), device=device)
        rm, rv = tl.zeros(2, device=device, dtype=tl.float64), tl.ones(2, device=device, dtype=tl.float64)
        return (lambda: tl.native_batch_norm(x, None, None, rm, rv, True, 0.1, 1e-5)), x, rm, rv
    fn, x, rm, rv = setup()
    with count_events() as counts:
        fn()
    assert rm.tolist() != [0.0, 0.0]
    for kind in KINDS:
        for n in range(1, getattr(counts, kind) + 1):
            fn, x, rm, rv = setup()
            snap = snapshot(x)
            with inject_fault(kind, n) as plan, pytest.raises(InjectedFault):
                fn()
            assert plan.fired
            assert_unchanged(snap)
            assert rm.tolist() == [0.0, 0.0] and rv.tolist() == [1.0, 1.0]
