"""The fused layer norm / RMSNorm and embedding-gradient paths (ops/norm_fused.py: the layer_norm_fwd,
layer_norm_bwd and embedding_bwd primitives, kernels/norm.cu and kernels/embedding.cu) against the
composites of nn/functional_norm.py (norm_fused.ENABLED = False) and torch: outputs and gradients,
odd row lengths, reduced precision, empty batches, padding_idx, repeated indices (bit-identical from
run to run), double backward, and no host wait on CUDA."""
from __future__ import annotations

import numpy as np
import pytest

import tensorlab as tl
from device_waits import settle
import tensorlab.nn.functional as F
from tensorlab.ops import norm_fused

DTYPES = {"float32": tl.float32, "float16": tl.float16, "bfloat16": tl.bfloat16}
TOL = {tl.float32: 2e-5, tl.float16: 2e-3, tl.bfloat16: 2e-2, tl.float64: 1e-12}


@pytest.fixture
def composite(monkeypatch):
    """Run a callable with the fused path off (the composites of nn/functional_norm.py)."""
    def run(fn, *args, **kw):
        with monkeypatch.context() as m:
            m.setattr(norm_fused, "ENABLED", False)
            return fn(*args, **kw)
    return run


def _np(t):
    return t.detach().float().cpu().numpy() if t.dtype in (tl.float16, tl.bfloat16) else t.detach().cpu().numpy()


def _close(a, b, dtype, scale=1.0):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    tol = TOL[dtype] * scale
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def _leaves(device, dtype, shape, nshape, affine, seed=0):
    rng = np.random.default_rng(seed)
    x = tl.tensor(rng.standard_normal(shape).astype(np.float32) * 2 + 0.5, device=device).to(dtype)
    w = tl.tensor(rng.standard_normal(nshape).astype(np.float32), device=device).to(dtype) if affine else None
    b = tl.tensor(rng.standard_normal(nshape).astype(np.float32), device=device).to(dtype) if affine else None
    gy = tl.tensor(rng.standard_normal(shape).astype(np.float32), device=device).to(dtype)
    return x, w, b, gy


def _run_norm(fn, x, w, b, gy, nshape, rms=False):
    ts = [t.detach().clone().requires_grad_(True) if t is not None else None for t in (x, w, b)]
    if rms:
        y = fn(ts[0], nshape, ts[1], eps=1e-5)
    else:
        y = fn(ts[0], nshape, ts[1], ts[2])
    y.backward(gy)
    return y, [t.grad if t is not None else None for t in ts], y.grad_fn


CASES = [((4, 7), (7,)), ((2, 3, 5), (3, 5)), ((3, 300), (300,)), ((1, 513), (513,))]


@pytest.mark.parametrize("dtype", list(DTYPES), ids=list(DTYPES))
@pytest.mark.parametrize("shape,nshape", CASES, ids=[str(c[0]) for c in CASES])
def test_layer_norm_fused_matches_composite(device, index, dtype, shape, nshape, composite):
    dt = DTYPES[dtype]
    x, w, b, gy = _leaves(device, dt, shape, nshape, True)
    y, grads, fn = _run_norm(F.layer_norm, x, w, b, gy, nshape)
    assert fn.name() == "NativeLayerNormBackward0"
    yc, gc, fnc = composite(_run_norm, F.layer_norm, x, w, b, gy, nshape)
    assert fnc.name() != "NativeLayerNormBackward0"
    assert y.dtype is dt and all(g.dtype is dt for g in grads)
    _close(_np(y), _np(yc), dt)
    for g, r in zip(grads, gc):
        _close(_np(g), _np(r), dt, scale=10 if dt is not tl.float32 else 20)


@pytest.mark.parametrize("dtype", list(DTYPES), ids=list(DTYPES))
@pytest.mark.parametrize("affine", [True, False])
def test_rms_norm_fused_matches_composite(device, index, dtype, affine, composite):
    dt = DTYPES[dtype]
    x, w, b, gy = _leaves(device, dt, (5, 9), (9,), affine)
    y, grads, fn = _run_norm(F.rms_norm, x, w, None, gy, (9,), rms=True)
    yc, gc, _ = composite(_run_norm, F.rms_norm, x, w, None, gy, (9,), rms=True)
    _close(_np(y), _np(yc), dt)
    for g, r in zip(grads, gc):
        if r is None:
            assert g is None
        else:
            _close(_np(g), _np(r), dt, scale=10 if dt is not tl.float32 else 20)


@pytest.mark.parametrize("affine", ["both", "weight", "none"])
def test_layer_norm_matches_torch(device, torch, affine):
    x, w, b, gy = _leaves(device, tl.float32, (6, 11), (11,), True)
    if affine != "both":
        b = None
    if affine == "none":
        w = None
    y, grads, _ = _run_norm(F.layer_norm, x, w, b, gy, (11,))
    tt = [torch.tensor(_np(t), requires_grad=True) if t is not None else None for t in (x, w, b)]
    ty = torch.nn.functional.layer_norm(tt[0], (11,), tt[1], tt[2])
    ty.backward(torch.tensor(_np(gy)))
    _close(_np(y), ty.detach().numpy(), tl.float32)
    for g, t in zip(grads, tt):
        if t is None:
            continue
        _close(_np(g), t.grad.numpy(), tl.float32, scale=5)


def test_rms_norm_matches_torch(device, torch):
    x, w, _, gy = _leaves(device, tl.float32, (4, 13), (13,), True)
    y, grads, _ = _run_norm(F.rms_norm, x, w, None, gy, (13,), rms=True)
    tx, tw = (torch.tensor(_np(t), requires_grad=True) for t in (x, w))
    ty = torch.nn.functional.rms_norm(tx, (13,), tw, eps=1e-5)
    ty.backward(torch.tensor(_np(gy)))
    _close(_np(y), ty.detach().numpy(), tl.float32)
    _close(_np(grads[0]), tx.grad.numpy(), tl.float32, scale=5)
    _close(_np(grads[1]), tw.grad.numpy(), tl.float32, scale=5)


@pytest.mark.parametrize("parts", [4, None])
def test_layer_norm_module_and_many_rows(device, parts, monkeypatch):
    """Many rows; on CUDA also with 4 backward blocks, each summing 32 or 33 rows into its partial row."""
    if parts is not None:
        if device == "cpu":
            pytest.skip("the number of backward blocks is a CUDA launch choice")
        from tensorlab.backends.cuda import norm as cuda_norm
        monkeypatch.setattr(cuda_norm, "_PARTS", parts)
    m = tl.nn.LayerNorm(3).to(device)
    with tl.no_grad():
        m.weight.copy_(tl.tensor([1.0, -2.0, 0.5]))
    x = tl.tensor(np.arange(130 * 3, dtype=np.float32).reshape(130, 3) % 7, device=device, requires_grad=True)
    y = m(x)
    y.backward(tl.ones_like(y))
    xn = np.arange(130 * 3, dtype=np.float64).reshape(130, 3) % 7
    xh = (xn - xn.mean(1, keepdims=True)) / np.sqrt(xn.var(1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(_np(y), xh * [1.0, -2.0, 0.5], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(_np(m.weight.grad), xh.sum(0), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(_np(m.bias.grad), [130.0] * 3)


@pytest.mark.parametrize("which", ["weight_only", "bias_only", "input_only"])
def test_layer_norm_partial_gradients(device, which, composite):
    """Only some of input, weight, bias want a gradient: the backward computes just those."""
    x, w, b, gy = _leaves(device, tl.float32, (5, 6), (6,), True)

    def run():
        xx = x.detach().clone().requires_grad_(which == "input_only")
        ww = w.detach().clone().requires_grad_(which == "weight_only")
        bb = b.detach().clone().requires_grad_(which == "bias_only")
        F.layer_norm(xx, (6,), ww, bb).backward(gy)
        return xx.grad, ww.grad, bb.grad

    got, ref = run(), composite(run)
    for g, r in zip(got, ref):
        assert (g is None) == (r is None)
        if g is not None:
            _close(_np(g), _np(r), tl.float32, scale=20)


def test_layer_norm_empty_batch(device, composite):
    x = tl.zeros(0, 5, device=device, requires_grad=True)
    w = tl.ones(5, device=device, requires_grad=True)
    b = tl.zeros(5, device=device, requires_grad=True)
    y = F.layer_norm(x, (5,), w, b)
    assert tuple(y.shape) == (0, 5) and y.grad_fn.name() == "NativeLayerNormBackward0"
    y.sum().backward()
    assert tuple(x.grad.shape) == (0, 5)
    np.testing.assert_array_equal(_np(w.grad), np.zeros(5))
    np.testing.assert_array_equal(_np(b.grad), np.zeros(5))


def test_layer_norm_constant_rows_and_non_contiguous_input(device, composite):
    x = tl.tensor(np.array([[3.0] * 6, np.arange(6.0)], np.float32), device=device).t()  # (6, 2), strided
    y = F.layer_norm(x, (2,))
    yc = composite(F.layer_norm, x, (2,))
    _close(_np(y), _np(yc), tl.float32)
    z = F.layer_norm(tl.full((2, 4), 3.0, device=device), (4,))
    np.testing.assert_array_equal(_np(z), np.zeros((2, 4)))  # a constant row: var 0, y = 0 (no NaN)


def test_layer_norm_backward_is_bit_identical_across_runs(device):
    x, w, b, gy = _leaves(device, tl.float32, (37, 19), (19,), True)
    runs = [_run_norm(F.layer_norm, x, w, b, gy, (19,))[1] for _ in range(2)]
    for g0, g1 in zip(*runs):
        assert np.array_equal(_np(g0), _np(g1))


@pytest.mark.parametrize("rms", [False, True], ids=["layer_norm", "rms_norm"])
def test_layer_norm_double_backward_uses_differentiable_formulas(device, composite, rms):
    """create_graph: the fused node's backward runs the composite formulas, so second derivatives
    match the composite path's."""
    x, w, b, gy = _leaves(device, tl.float32, (3, 6), (6,), True)

    def second(fn):
        xx, ww = x.detach().clone().requires_grad_(True), w.detach().clone().requires_grad_(True)
        y = fn(xx, (6,), ww) if rms else fn(xx, (6,), ww, b)
        gx, gw = tl.autograd.grad((y * gy).sum(), (xx, ww), create_graph=True)
        return tl.autograd.grad((gx * gx).sum() + (gw * gw).sum(), (xx, ww))

    fn = F.rms_norm if rms else F.layer_norm
    fused = second(fn)
    ref = composite(second, fn)
    for a, r in zip(fused, ref):
        _close(_np(a), _np(r), tl.float32, scale=50)


def test_fused_path_falls_back_for_float64_and_mixed_dtypes(device):
    x = tl.randn(2, 4, dtype=tl.float64, device=device, requires_grad=True)
    assert type(F.layer_norm(x, (4,)).grad_fn).__name__ != "NativeLayerNormBackward0"
    xh = tl.randn(2, 4, device=device).half()
    y = F.layer_norm(xh, (4,), tl.ones(4, device=device, requires_grad=True))  # float32 weight: composite
    assert y.grad_fn.name() != "NativeLayerNormBackward0"


def test_layer_norm_forward_backward_has_no_host_wait(device):
    x, w, b, gy = _leaves(device, tl.float32, (4, 10), (10,), True)
    x.requires_grad_(True), w.requires_grad_(True), b.requires_grad_(True)
    with tl.cuda.sync_trace() as trace:
        y = F.layer_norm(x, (10,), w, b)
        y.backward(gy)
        r = F.rms_norm(x, (10,), w)
        r.backward(gy)
    assert [t.reason for t in trace] == []


# -- embedding -----------------------------------------------------------------------------------------
EMB_DTYPES = dict(DTYPES, float64=tl.float64)


def _emb_run(device, dtype, idx, n=10, dim=5, **kw):
    rng = np.random.default_rng(1)
    w = tl.tensor(rng.standard_normal((n, dim)).astype(np.float32), device=device).to(dtype).requires_grad_(True)
    ix = tl.tensor(np.asarray(idx, np.int64), device=device)
    out = F.embedding(ix, w, **kw)
    g = tl.tensor(rng.standard_normal(tuple(out.shape)).astype(np.float32), device=device).to(dtype)
    out.backward(g)
    return out, w.grad, g


def _emb_reference(idx, g, n, padding_idx=None, scale_grad_by_freq=False):
    idx = np.asarray(idx, np.int64).reshape(-1)
    g = np.asarray(g, np.float64).reshape(idx.size, -1)
    ref = np.zeros((n, g.shape[1]))
    np.add.at(ref, idx, g)
    if scale_grad_by_freq:
        counts = np.bincount(idx, minlength=n)
        ref[counts > 0] /= counts[counts > 0, None]
    if padding_idx is not None:
        ref[padding_idx] = 0
    return ref


IDX = [[[1, 2, 1, 4], [4, 3, 9, 1]], [0, 0, 0, 0, 0, 7]]


@pytest.mark.parametrize("dtype", list(EMB_DTYPES), ids=list(EMB_DTYPES))
@pytest.mark.parametrize("kw", [{}, {"padding_idx": 1}, {"padding_idx": -1, "scale_grad_by_freq": True},
                                {"scale_grad_by_freq": True}], ids=["plain", "pad", "pad-1+freq", "freq"])
def test_embedding_backward_segmented_sum(device, index, dtype, kw, composite):
    dt = EMB_DTYPES[dtype]
    for idx in IDX:
        out, gw, g = _emb_run(device, dt, idx, **kw)
        assert out.grad_fn.name() == "EmbeddingBackward0"
        assert gw.dtype is dt
        pad = kw.get("padding_idx")
        ref = _emb_reference(idx, _np(g), 10, None if pad is None else pad % 10, kw.get("scale_grad_by_freq", False))
        _close(_np(gw), ref, dt, scale=5)
        outc, gwc, _ = composite(_emb_run, device, dt, idx, **kw)
        assert np.array_equal(_np(out), _np(outc))
        _close(_np(gw), _np(gwc), dt, scale=5)


def test_embedding_matches_torch(device, torch):
    idx = [[1, 2, 1, 4], [4, 3, 9, 1]]
    out, gw, g = _emb_run(device, tl.float32, idx, padding_idx=4, scale_grad_by_freq=True)
    rng = np.random.default_rng(1)
    tw = torch.tensor(rng.standard_normal((10, 5)).astype(np.float32), requires_grad=True)
    to = torch.nn.functional.embedding(torch.tensor(idx), tw, padding_idx=4, scale_grad_by_freq=True)
    to.backward(torch.tensor(_np(g)))
    np.testing.assert_array_equal(_np(out), to.detach().numpy())
    _close(_np(gw), tw.grad.numpy(), tl.float32)


def test_embedding_backward_is_bit_identical_across_runs(device):
    rng = np.random.default_rng(3)
    idx = rng.integers(0, 4, size=(3, 41))  # heavily repeated indices
    grads = [_emb_run(device, tl.float32, idx, n=4, dim=3)[1] for _ in range(2)]
    assert np.array_equal(_np(grads[0]), _np(grads[1]))


def test_embedding_empty_indices_and_module(device):
    w = tl.randn(6, 3, device=device, requires_grad=True)
    out = F.embedding(tl.zeros(0, 2, dtype=tl.int64, device=device), w)
    assert tuple(out.shape) == (0, 2, 3)
    out.sum().backward()
    np.testing.assert_array_equal(_np(w.grad), np.zeros((6, 3)))
    m = tl.nn.Embedding(5, 2, padding_idx=0).to(device)
    y = m(tl.tensor([0, 3, 3], dtype=tl.int32, device=device))
    y.backward(tl.ones_like(y))
    np.testing.assert_array_equal(_np(m.weight.grad), [[0, 0], [0, 0], [0, 0], [2, 2], [0, 0]])


def test_embedding_double_backward(device, composite):
    """create_graph: the gradient of weight is itself differentiable in the incoming gradient."""
    w = tl.randn(6, 3, device=device, requires_grad=True)
    ix = tl.tensor([1, 1, 5, 2], device=device)
    out = F.embedding(ix, w, padding_idx=2, scale_grad_by_freq=True)
    g = tl.ones(4, 3, device=device, requires_grad=True)
    (gw,) = tl.autograd.grad(out, w, g, create_graph=True)
    (gg,) = tl.autograd.grad((gw * gw).sum(), g)
    # d/dg of sum(gw^2): 2 * gw[ix] * mask / count
    ref = np.array([[1.0] * 3, [1.0] * 3, [2.0] * 3, [0.0] * 3])
    np.testing.assert_allclose(_np(gg), ref, rtol=1e-6)


def test_embedding_forward_backward_host_waits(device):
    """Neither the forward nor the backward (sort + segmented sum) waits: on CUDA the forward's index
    bounds are checked on the device (where torch has a device-side assert)."""
    w = tl.randn(8, 4, device=device, requires_grad=True)
    ix = tl.tensor([[1, 7, 1], [0, 3, 3]], device=device)
    with tl.cuda.sync_trace() as trace:
        out = F.embedding(ix, w, padding_idx=0, scale_grad_by_freq=True)
    assert [t.reason for t in trace] == []
    with tl.cuda.sync_trace() as trace:
        out.backward(tl.ones_like(out))
    assert [t.reason for t in trace] == []
    np.testing.assert_array_equal(_np(w.grad)[:, 0], [0, 1, 0, 1, 0, 0, 0, 1])


def test_embedding_out_of_range_index_raises(device):
    w = tl.randn(4, 2, device=device, requires_grad=True)
    ix = tl.tensor([1, 4], device=device)
    with pytest.raises(IndexError, match="index 4 is out of"):
        F.embedding(ix, w)
        settle(device)


# -- group_norm over the fused statistics ------------------------------------------------------------
@pytest.mark.parametrize("dtype,affine", [("float32", True), ("float16", False), ("bfloat16", False)])
def test_group_norm_fused_statistics_match_composite(device, dtype, affine, composite):
    dt = DTYPES[dtype]
    rng = np.random.default_rng(5)
    x = tl.tensor(rng.standard_normal((2, 6, 5)).astype(np.float32), device=device).to(dt)
    w = tl.tensor(rng.standard_normal(6).astype(np.float32), device=device) if affine else None
    b = tl.tensor(rng.standard_normal(6).astype(np.float32), device=device) if affine else None
    gy = tl.tensor(rng.standard_normal((2, 6, 5)).astype(np.float32), device=device).to(dt)

    def run():
        ts = [t.detach().clone().requires_grad_(True) if t is not None else None for t in (x, w, b)]
        y = F.group_norm(ts[0], 3, ts[1], ts[2])
        y.backward(gy)
        return [y] + [t.grad for t in ts if t is not None]

    fused, ref = run(), composite(run)
    for a, r in zip(fused, ref):
        _close(_np(a), _np(r), dt, scale=10)


def test_group_norm_matches_torch(device, torch):
    rng = np.random.default_rng(6)
    x, gy = (rng.standard_normal((3, 4, 7)).astype(np.float32) for _ in range(2))
    w, b = (rng.standard_normal(4).astype(np.float32) for _ in range(2))
    ts = [tl.tensor(a, device=device, requires_grad=True) for a in (x, w, b)]
    y = F.group_norm(ts[0], 2, ts[1], ts[2])
    y.backward(tl.tensor(gy, device=device))
    tt = [torch.tensor(a, requires_grad=True) for a in (x, w, b)]
    ty = torch.nn.functional.group_norm(tt[0], 2, tt[1], tt[2])
    ty.backward(torch.tensor(gy))
    _close(_np(y), ty.detach().numpy(), tl.float32)
    for a, t in zip(ts, tt):
        _close(_np(a.grad), t.grad.numpy(), tl.float32, scale=5)


def test_fused_backwards_run_under_deterministic_algorithms(device, composite):
    """No atomics: the fused backwards never alert under tl.use_deterministic_algorithms(True), where
    the composite embedding backward (an accumulating scatter) refuses on CUDA."""
    w = tl.randn(6, 3, device=device, requires_grad=True)
    x = tl.randn(4, 3, device=device, requires_grad=True)
    ix = tl.tensor([1, 1, 5, 2], device=device)
    tl.use_deterministic_algorithms(True)
    try:
        F.embedding(ix, w).sum().backward()
        F.layer_norm(x, (3,)).sum().backward()
        np.testing.assert_array_equal(_np(w.grad)[:, 0], [0, 2, 1, 0, 0, 1])
        if device != "cpu":
            with pytest.raises(RuntimeError, match="deterministic"):
                composite(lambda: F.embedding(ix, w).sum().backward())
    finally:
        tl.use_deterministic_algorithms(False)
