"""The fused batch norm (ops/batch_norm_fused.py: the batch_norm_fwd / batch_norm_bwd primitives,
kernels/batch_norm.cu) against torch and against the composite of nn/functional_norm.py: outputs, running
statistics, gradients of input / weight / bias, in training and evaluation, for (N, C), (N, C, L),
(N, C, H, W), channels_last, non-contiguous and channels-innermost inputs, batch of one, zero-size batch,
float16/bfloat16 (with float32 or same-dtype parameters), momentum None through the module, double
backward, determinism, and injected faults that must leave the running statistics unchanged."""
from __future__ import annotations

import numpy as np
import pytest

import tensorlab as tl
import tensorlab.nn.functional as F
from tensorlab.ops import batch_norm_fused

# (input dtype, parameter/running-stat dtype)
PAIRS = {"f32": (tl.float32, tl.float32), "f16": (tl.float16, tl.float16), "bf16": (tl.bfloat16, tl.bfloat16),
         "f16-f32": (tl.float16, tl.float32), "bf16-f32": (tl.bfloat16, tl.float32)}
TOL = {tl.float32: 1e-4, tl.float16: 1e-2, tl.bfloat16: 6e-2}


def _rand(shape, seed, scale=1.0, shift=0.0):
    return (np.random.default_rng(seed).standard_normal(shape) * scale + shift).astype(np.float32)


def _np(t):
    return t.detach().float().cpu().numpy()


def _layout(lib, x, kind):
    """x (contiguous) in the layout `kind`; the values stay x's."""
    if kind == "channels_last":
        return x.contiguous(memory_format=lib.channels_last)
    if kind == "channels_last_3d":
        return x.contiguous(memory_format=lib.channels_last_3d)
    if kind == "noncontig":  # a strided slice of a larger tensor
        big = lib.zeros(x.shape[:-1] + (2 * x.shape[-1],), dtype=x.dtype, device=x.device)
        big[..., ::2] = x
        return big[..., ::2]
    if kind == "channels_inner":  # (N, L, C) storage seen as (N, C, L)
        return x.transpose(1, 2).contiguous().transpose(1, 2)
    if kind == "transposed2d":  # (C, N) storage seen as (N, C)
        return x.t().contiguous().t()
    return x


CASES = {"2d": ((6, 3), "plain"), "2d-t": ((5, 4), "transposed2d"), "3d": ((4, 3, 7), "plain"),
         "3d-cinner": ((3, 5, 6), "channels_inner"), "4d": ((2, 3, 4, 5), "plain"),
         "4d-cl": ((2, 35, 3, 3), "channels_last"), "4d-noncontig": ((2, 3, 4, 3), "noncontig"),
         "batch1": ((1, 3, 6), "plain"), "5d-cl3d": ((2, 3, 2, 3, 4), "channels_last_3d"),
         "5d": ((2, 3, 2, 1, 4), "plain")}


def _run(lib, dev, shape, kind, pair, training, seed=0, affine=True, momentum=0.1):
    """One forward + backward of batch_norm; returns (y, running mean, running var, grads, y's strides)."""
    c = shape[1]
    if lib is tl:
        dt, pdt = PAIRS[pair]
        mk = lambda a, d: tl.tensor(a, device=dev).to(d)  # noqa: E731
    else:
        dt = pdt = lib.float32
        mk = lambda a, d: lib.tensor(a)  # noqa: E731  torch in float32: the oracle
    x = _layout(lib, mk(_rand(shape, seed, 2.0, 0.5), dt), kind).detach().requires_grad_(True)
    w = mk(_rand(c, seed + 1), pdt).requires_grad_(True) if affine else None
    b = mk(_rand(c, seed + 2), pdt).requires_grad_(True) if affine else None
    rm = mk(_rand(c, seed + 3, 0.3), pdt)
    rv = mk(np.abs(_rand(c, seed + 4)) + 0.5, pdt)
    y = lib.nn.functional.batch_norm(x, rm, rv, w, b, training=training, momentum=momentum, eps=1e-5)
    g = mk(_rand(shape, seed + 5), dt)
    y.backward(g)
    grads = [x.grad] + ([w.grad, b.grad] if affine else [])
    return y, rm, rv, grads, tuple(y.stride())


def _check_against_torch(torch, device, shape, kind, pair, training, affine=True):
    dt = PAIRS[pair][0]
    y, rm, rv, grads, strides = _run(tl, device, shape, kind, pair, training, affine=affine)
    ty, trm, trv, tgrads, tstrides = _run(torch, None, shape, kind, pair, training, affine=affine)
    assert y.grad_fn.name() == "NativeBatchNormBackward0"
    assert y.dtype is dt and rm.dtype is PAIRS[pair][1]
    tol = TOL[dt]
    np.testing.assert_allclose(_np(y), ty.detach().numpy(), rtol=tol, atol=tol)
    if kind in ("channels_last", "channels_last_3d", "channels_inner", "transposed2d", "plain"):
        assert strides == tstrides  # the output keeps the input's (dense) layout, as torch's
    for a, b in ((rm, trm), (rv, trv)):
        np.testing.assert_allclose(_np(a), b.numpy(), rtol=tol, atol=tol)
    for a, b in zip(grads, tgrads):
        assert a.dtype is (dt if a is grads[0] else PAIRS[pair][1])
        np.testing.assert_allclose(_np(a), b.numpy(), rtol=4 * tol, atol=4 * tol)


@pytest.mark.parametrize("training", [True, False], ids=["train", "eval"])
@pytest.mark.parametrize("case", list(CASES))
def test_batch_norm_matches_torch_float32(device, torch, case, training):
    shape, kind = CASES[case]
    _check_against_torch(torch, device, shape, kind, "f32", training)


@pytest.mark.parametrize("pair", ["f16", "bf16", "f16-f32", "bf16-f32"])
@pytest.mark.parametrize("case", ["3d", "4d-cl", "2d"])
@pytest.mark.parametrize("training", [True, False], ids=["train", "eval"])
def test_batch_norm_half_precision_matches_torch(device, torch, pair, case, training):
    shape, kind = CASES[case]
    _check_against_torch(torch, device, shape, kind, pair, training)


@pytest.mark.parametrize("pair", list(PAIRS))
@pytest.mark.parametrize("case", ["4d", "4d-cl"])
def test_batch_norm_index_types(device, index, torch, pair, case):
    """Both index instantiations of every kernel (the long long ones through wide_indexing)."""
    shape, kind = CASES[case]
    _check_against_torch(torch, device, shape, kind, pair, True)


def test_batch_norm_no_affine_and_no_running_stats(device, torch):
    _check_against_torch(torch, device, (4, 3, 5), "plain", "f32", True, affine=False)
    x = _rand((4, 3, 5), 7)
    y = F.batch_norm(tl.tensor(x, device=device), None, None, training=True)
    ty = torch.nn.functional.batch_norm(torch.tensor(x), None, None, training=True)
    assert y.grad_fn is None
    np.testing.assert_allclose(_np(y), ty.numpy(), rtol=1e-5, atol=1e-5)


def test_batch_norm_long_channel_many_chunks(device, torch):
    """A channel long enough to be split into several chunks (merged in order), in both layouts."""
    for kind, shape in (("plain", (3, 2, 40, 40)), ("channels_last", (3, 40, 21, 20))):
        _check_against_torch(torch, device, shape, kind, "f32", True)


def test_batch_norm_fused_matches_composite(device, monkeypatch):
    y1, rm1, rv1, g1, _ = _run(tl, device, (3, 4, 5), "plain", "f32", True)
    with monkeypatch.context() as m:
        m.setattr(batch_norm_fused, "ENABLED", False)
        y2, rm2, rv2, g2, _ = _run(tl, device, (3, 4, 5), "plain", "f32", True)
    assert y2.grad_fn.name() != "NativeBatchNormBackward0"
    for a, b in zip([y1, rm1, rv1] + g1, [y2, rm2, rv2] + g2):
        np.testing.assert_allclose(_np(a), _np(b), rtol=1e-5, atol=1e-5)


def test_batch_norm_zero_size_batch(device, torch):
    """torch: an empty batch has no statistics; the running ones stay, and the output is empty."""
    x = tl.zeros((0, 3, 4), device=device, requires_grad=True)
    w = tl.ones(3, device=device, requires_grad=True)
    rm, rv = tl.zeros(3, device=device), tl.ones(3, device=device)
    y = F.batch_norm(x, rm, rv, w, None, training=True)
    assert y.shape == (0, 3, 4)
    y.sum().backward()
    assert x.grad.shape == (0, 3, 4) and _np(w.grad).tolist() == [0.0, 0.0, 0.0]
    assert _np(rm).tolist() == [0.0] * 3 and _np(rv).tolist() == [1.0] * 3
    trm, trv = torch.zeros(3), torch.ones(3)
    ty = torch.nn.functional.batch_norm(torch.zeros(0, 3, 4), trm, trv, torch.ones(3), None, training=True)
    assert tuple(ty.shape) == tuple(y.shape) and trm.tolist() == [0.0] * 3


@pytest.mark.parametrize("momentum", [0.1, None])
@pytest.mark.parametrize("layout", ["plain", "channels_last"])
def test_batchnorm2d_module_steps_match_torch(device, torch, momentum, layout):
    """Three training steps then eval, momentum None being torch's cumulative average; version counters."""
    m = tl.nn.BatchNorm2d(3, momentum=momentum).to(device)
    tm = torch.nn.BatchNorm2d(3, momentum=momentum)
    for step in range(3):
        x = _rand((2, 3, 4, 4), 10 + step, 1.5, step)
        xt = tl.tensor(x, device=device)
        if layout == "channels_last":
            xt = xt.contiguous(memory_format=tl.channels_last)
        v0 = m.running_mean._version
        y = m(xt)
        assert m.running_mean._version == v0 + 1
        ty = tm(torch.tensor(x))
        np.testing.assert_allclose(_np(y), ty.detach().numpy(), rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(_np(m.running_mean), tm.running_mean.numpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(_np(m.running_var), tm.running_var.numpy(), rtol=1e-5, atol=1e-6)
    m.eval()
    tm.eval()
    x = _rand((2, 3, 4, 4), 20)
    np.testing.assert_allclose(_np(m(tl.tensor(x, device=device))), tm(torch.tensor(x)).detach().numpy(),
                               rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("training", [True, False], ids=["train", "eval"])
def test_batch_norm_double_backward_matches_torch(device, torch, training):
    shape = (3, 2, 4)
    x, w, b = _rand(shape, 0), _rand(2, 1), _rand(2, 2)
    gy = _rand(shape, 3)
    out = []
    for lib, dev in ((tl, device), (torch, "cpu")):
        xs = lib.tensor(x, device=dev, requires_grad=True)
        ws = lib.tensor(w, device=dev, requires_grad=True)
        bs = lib.tensor(b, device=dev, requires_grad=True)
        rm, rv = lib.zeros(2, device=dev), lib.ones(2, device=dev)
        y = lib.nn.functional.batch_norm(xs, rm, rv, ws, bs, training=training)
        g = lib.tensor(gy, device=dev, requires_grad=True)
        gx, gw = lib.autograd.grad(y, (xs, ws), g, create_graph=True)
        (gx.square().sum() + (gw * gw).sum()).backward()
        out.append([t.detach().cpu().numpy() for t in (xs.grad, ws.grad, g.grad)])
    for a, r in zip(*out):
        np.testing.assert_allclose(a, r, rtol=1e-4, atol=1e-4)


def test_batch_norm_gradcheck_float64():
    """float64 takes the composite (the reference): first and second derivatives by finite differences."""
    from tensorlab.autograd import gradcheck
    x = tl.tensor(_rand((3, 2, 3), 0).astype(np.float64), requires_grad=True)
    w = tl.tensor(_rand(2, 1).astype(np.float64), requires_grad=True)
    b = tl.tensor(_rand(2, 2).astype(np.float64), requires_grad=True)
    g = tl.tensor(_rand((3, 2, 3), 3).astype(np.float64), requires_grad=True)
    fn = lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True)  # noqa: E731
    assert gradcheck(fn, (x, w, b))

    def first(x, w, g):
        with tl.enable_grad():
            x = x if x.requires_grad else x.detach().requires_grad_(True)
            w = w if w.requires_grad else w.detach().requires_grad_(True)
            return tl.autograd.grad(fn(x, w, b), (x, w), g, create_graph=True)
    assert gradcheck(first, (x, w, g))


def test_batch_norm_deterministic(device):
    shape = (4, 8, 33)
    outs = []
    for _ in range(2):
        y, rm, rv, grads, _ = _run(tl, device, shape, "plain", "f32", True, seed=3)
        outs.append([_np(t) for t in [y, rm, rv] + grads])
    for a, b in zip(*outs):
        np.testing.assert_array_equal(a, b)


def test_batch_norm_injected_faults_leave_running_stats_unchanged(device):
    """Every allocation and launch of the fused forward may fail: the running statistics keep their
    values and version; then the same call succeeds."""
    from tensorlab.testing import InjectedFault, assert_unchanged, fault_points, inject_fault, snapshot
    x = tl.tensor(_rand((3, 4, 5), 0), device=device)
    rm, rv = tl.zeros(4, device=device), tl.ones(4, device=device)
    w, b = tl.ones(4, device=device), tl.zeros(4, device=device)

    def fn():
        return F.batch_norm(x, rm, rv, w, b, training=True)
    base = (_np(rm).copy(), _np(rv).copy())
    points = fault_points(fn)
    rm.copy_(tl.tensor(base[0], device=device))
    rv.copy_(tl.tensor(base[1], device=device))
    assert points
    for kind, n in points:
        snap = snapshot(rm, rv, x)
        with inject_fault(kind, n) as plan, pytest.raises(InjectedFault):
            fn()
        assert plan.fired
        assert_unchanged(snap)
    fn()
    assert not np.array_equal(_np(rm), base[0])


# -- group_norm: the fused statistics for every fused dtype, with the affine in float32 --------------------
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_group_norm_half_precision_affine_takes_the_fused_statistics(device, torch, dtype):
    dt = PAIRS["f16" if dtype == "float16" else "bf16"][0]
    x, gy = _rand((2, 6, 5), 0, 2.0, 0.5), _rand((2, 6, 5), 1)
    w, b = _rand(6, 2), _rand(6, 3)
    ts = [tl.tensor(a, device=device).to(dt).requires_grad_(True) for a in (x, w, b)]
    y = F.group_norm(ts[0], 3, ts[1], ts[2])
    y.backward(tl.tensor(gy, device=device).to(dt))
    names, stack = set(), [y.grad_fn]
    while stack:
        f = stack.pop()
        if f is not None:
            names.add(f.name())
            stack.extend(n for n, _ in f.next_functions)
    assert "NativeLayerNormBackward0" in names and y.dtype is dt
    tt = [torch.tensor(a).to(getattr(torch, dtype)).float().requires_grad_(True) for a in (x, w, b)]
    ty = torch.nn.functional.group_norm(tt[0], 3, tt[1], tt[2])
    ty.backward(torch.tensor(gy).to(getattr(torch, dtype)).float())
    tol = TOL[dt]
    np.testing.assert_allclose(_np(y), ty.detach().numpy(), rtol=tol, atol=tol)
    for a, t in zip(ts, tt):
        np.testing.assert_allclose(_np(a.grad), t.grad.numpy(), rtol=4 * tol, atol=4 * tol)


def test_batch_norm_forward_backward_has_no_host_wait(device):
    x = tl.tensor(_rand((3, 4, 5, 2), 0), device=device).contiguous(memory_format=tl.channels_last)
    x.requires_grad_(True)
    w, b = tl.ones(4, device=device, requires_grad=True), tl.zeros(4, device=device, requires_grad=True)
    rm, rv = tl.zeros(4, device=device), tl.ones(4, device=device)
    with tl.cuda.sync_trace() as trace:
        y = F.batch_norm(x, rm, rv, w, b, training=True)
        y.backward(tl.ones_like(y))
        F.batch_norm(x, rm, rv, w, b, training=False).sum().backward()
    assert [t.reason for t in trace] == []
