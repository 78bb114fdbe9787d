"""The fused scaled_dot_product_attention (ops/attention.py: kernels/attention.cu on CUDA, the blocked
NumPy primitives on the CPU) against the composite (nn/functional_attention.py's matmul/softmax path,
the reference) and torch: outputs and gradients of q, k, v and a float mask, for sequence lengths
that are not multiples of the 16-row tiles, causal, bool and float masks (broadcast), GQA, head dims
8/64/128, random small geometries, float16/bfloat16/float64, transposed inputs; the cases that fall
back to the composite; double backward; determinism; no host waits; injected faults; and peak
memory that grows linearly, not quadratically, with the sequence length on CUDA."""
from __future__ import annotations

import numpy as np
import pytest

import tensorlab as tl
import tensorlab.nn.functional as F
from tensorlab.ops import attention as A


def _rand(shape, seed, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def _launches(name):
    from tensorlab.backends.cuda import launch
    return sum(n for (src, expr), n in launch.LAUNCHES.items() if src == "attention.cu" and expr.startswith(name))


def _np(t):
    return t.detach().cpu().float().numpy()


def _run(device, arrays, mask, grad_mask, dtype, path, **kw):
    """(output, [grads of q, k, v(, mask)]) through `path`: "fused" (the primitives on this device)
    or "composite"."""
    q, k, v = (tl.tensor(a, device=device).to(dtype).requires_grad_() for a in arrays[:3])
    m = None
    if mask is not None:
        m = tl.tensor(mask, device=device)
        if m.dtype is not tl.bool:
            m = m.to(dtype).requires_grad_(grad_mask)
    enable_gqa = kw.pop("enable_gqa", False)
    if path == "fused":
        assert A.fused_supported(q, k, v, m, 0.0, enable_gqa, devices=(device,))
        if device == "cuda":
            before = _launches("attention_fwd")
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=m, enable_gqa=enable_gqa, **kw)
            assert _launches("attention_fwd") == before + 1, "F.scaled_dot_product_attention did not run the kernel"
        else:  # the CPU's F.scaled_dot_product_attention stays the composite: call the fused path itself
            out = A.attention(q, k, v, m, kw.get("is_causal", False), kw.get("scale"), enable_gqa)
    else:
        import tensorlab.nn.functional_attention as FA
        saved, A.fused_supported = A.fused_supported, lambda *a, **k: False
        try:
            out = FA.scaled_dot_product_attention(q, k, v, attn_mask=m, enable_gqa=enable_gqa, **kw)
        finally:
            A.fused_supported = saved
    out.backward(tl.tensor(arrays[3], device=device).to(dtype))
    grads = [q.grad, k.grad, v.grad] + ([m.grad] if grad_mask else [])
    return out, grads


def _torch_run(torch, arrays, mask, grad_mask, **kw):
    q, k, v = (torch.tensor(a, requires_grad=True) for a in arrays[:3])
    m = None if mask is None else torch.tensor(mask, requires_grad=grad_mask)
    out = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=m, **kw)
    out.backward(torch.tensor(arrays[3]))
    return out, [q.grad, k.grad, v.grad] + ([m.grad] if grad_mask else [])


def _to_np(x):
    return _np(x) if isinstance(x, tl.Tensor) else x.detach().float().numpy()


def _compare(a, b, rtol, atol, what):
    for x, y, name in zip(a, b, ("out", "dq", "dk", "dv", "dmask")):
        np.testing.assert_allclose(_to_np(x), _to_np(y), rtol=rtol, atol=atol, err_msg=f"{what}: {name}")


def _case(qs, ks, vs, mask=None):
    L, S = qs[-2], ks[-2]
    arrays = [_rand(qs, 0), _rand(ks, 1), _rand(vs, 2), _rand(qs[:-1] + vs[-1:], 3)]
    return arrays, mask


_BOOL = np.random.default_rng(7).random((19, 23)) > 0.4
_BOOL[4] = False  # a query row that keeps no key: zeros, as the composite's _safe_softmax

CASES = {
    "plain": (dict(qs=(2, 2, 19, 8), ks=(2, 2, 23, 8), vs=(2, 2, 23, 8)), {}),
    "causal": (dict(qs=(1, 2, 21, 16), ks=(1, 2, 21, 16), vs=(1, 2, 21, 16)), dict(is_causal=True)),
    "causal_short_q": (dict(qs=(1, 1, 13, 8), ks=(1, 1, 29, 8), vs=(1, 1, 29, 8)), dict(is_causal=True)),
    "causal_long_q": (dict(qs=(1, 1, 29, 8), ks=(1, 1, 13, 8), vs=(1, 1, 13, 8)), dict(is_causal=True)),
    "bool_mask": (dict(qs=(2, 2, 19, 8), ks=(2, 2, 23, 8), vs=(2, 2, 23, 8), mask=_BOOL), {}),
    "float_mask_heads": (dict(qs=(2, 2, 17, 8), ks=(2, 2, 20, 8), vs=(2, 2, 20, 8),
                              mask=_rand((1, 2, 17, 20), 9)), {}),
    "float_mask_2d": (dict(qs=(2, 2, 17, 8), ks=(2, 2, 20, 8), vs=(2, 2, 20, 8), mask=_rand((17, 20), 10)), {}),
    "gqa_causal": (dict(qs=(2, 4, 18, 8), ks=(2, 2, 18, 8), vs=(2, 2, 18, 8)), dict(enable_gqa=True,
                                                                                     is_causal=True)),
    "gqa_mask": (dict(qs=(1, 6, 9, 8), ks=(1, 2, 11, 8), vs=(1, 2, 11, 8), mask=_rand((6, 1, 11), 11)),
                 dict(enable_gqa=True)),
    "head_dim_64": (dict(qs=(1, 1, 17, 64), ks=(1, 1, 9, 64), vs=(1, 1, 9, 64)), {}),
    "head_dim_128": (dict(qs=(1, 1, 5, 128), ks=(1, 1, 7, 128), vs=(1, 1, 7, 128)), dict(scale=0.05)),
    "value_dim_differs": (dict(qs=(1, 2, 9, 8), ks=(1, 2, 10, 8), vs=(1, 2, 10, 24)), {}),
    "negative_scale": (dict(qs=(2, 11, 8), ks=(2, 13, 8), vs=(2, 13, 8)), dict(scale=-0.4)),
    "two_dims": (dict(qs=(7, 8), ks=(33, 8), vs=(33, 8)), {}),
    "long_keys": (dict(qs=(1, 2, 20, 8), ks=(1, 2, 300, 8), vs=(1, 2, 300, 8), mask=_rand((20, 300), 13)), {}),
    "causal_long": (dict(qs=(1, 1, 150, 8), ks=(1, 1, 150, 8), vs=(1, 1, 150, 8)), dict(is_causal=True)),
    "batch_dims": (dict(qs=(2, 1, 2, 5, 8), ks=(2, 1, 2, 6, 8), vs=(2, 1, 2, 6, 8), mask=_rand((2, 1, 1, 5, 6), 12)),
                   {}),
}


@pytest.mark.parametrize("name", list(CASES))
def test_fused_matches_composite_and_torch(device, name, request):
    spec, kw = CASES[name]
    arrays, mask = _case(**spec)
    grad_mask = mask is not None and mask.dtype != np.bool_
    fused = _run(device, arrays, mask, grad_mask, tl.float32, "fused", **kw)
    comp = _run(device, arrays, mask, grad_mask, tl.float32, "composite", **kw)
    _compare([fused[0]] + fused[1], [comp[0]] + comp[1], 2e-5, 2e-5, f"{name} fused vs composite")
    if name == "bool_mask":  # the row that keeps no key: zeros and no gradient through it
        assert not _np(fused[0])[:, :, 4].any() and not _np(fused[1][0])[:, :, 4].any()
    try:
        torch = request.getfixturevalue("torch")
    except pytest.skip.Exception:
        return
    ref = _torch_run(torch, arrays, mask, grad_mask, **kw)
    _compare([fused[0]] + fused[1], [ref[0]] + ref[1], 2e-5, 2e-5, f"{name} fused vs torch")


def _random_cases(n, seed):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        L, S = (int(x) for x in rng.integers(1, 41, 2))
        E, Ev = int(rng.choice([1, 3, 8, 16, 33])), int(rng.choice([1, 5, 8, 24]))
        hk = int(rng.integers(1, 3))
        hq = hk * int(rng.integers(1, 3))
        b = int(rng.integers(1, 3))
        kind = str(rng.choice(["none", "causal", "bool", "float"]))
        out.append(pytest.param((b, hq, hk, L, S, E, Ev, kind, int(rng.integers(1 << 30))),
                                id=f"b{b}h{hq}/{hk}L{L}S{S}E{E}Ev{Ev}-{kind}"))
    return out


@pytest.mark.parametrize("case", _random_cases(12, 2024))
def test_fused_random_shapes(device, case):
    """Random small geometries (sequence lengths 1..40, head dims 1..33, GQA, every mask kind):
    fused and composite agree on outputs and every gradient."""
    b, hq, hk, L, S, E, Ev, kind, seed = case
    arrays = [_rand((b, hq, L, E), seed), _rand((b, hk, S, E), seed + 1), _rand((b, hk, S, Ev), seed + 2),
              _rand((b, hq, L, Ev), seed + 3)]
    rng = np.random.default_rng(seed)
    mask = {"bool": rng.random((hq, 1, S)) > 0.3, "float": _rand((L, S), seed + 4)}.get(kind)
    kw = dict(is_causal=kind == "causal", enable_gqa=hq != hk)
    grad_mask = kind == "float"
    fused = _run(device, arrays, mask, grad_mask, tl.float32, "fused", **kw)
    comp = _run(device, arrays, mask, grad_mask, tl.float32, "composite", **kw)
    _compare([fused[0]] + fused[1], [comp[0]] + comp[1], 3e-5, 3e-5, str(case))


@pytest.mark.parametrize("dtype,tol", [(tl.float16, 2e-3), (tl.bfloat16, 2e-2)])
@pytest.mark.parametrize("name", ["causal", "float_mask_heads", "gqa_causal"])
def test_fused_half_precision(device, name, dtype, tol):
    """float16/bfloat16 accumulate in float32: within the dtype's rounding of the composite in float32
    on the same (rounded) inputs."""
    spec, kw = CASES[name]
    arrays, mask = _case(**spec)
    np_dt = tl.tensor([0.0], dtype=dtype).numpy().dtype
    arrays = [a.astype(np_dt).astype(np.float32) for a in arrays]
    if mask is not None:
        mask = mask.astype(np_dt).astype(np.float32)
    grad_mask = mask is not None
    fused = _run(device, arrays, mask, grad_mask, dtype, "fused", **kw)
    assert fused[0].dtype is dtype and all(g.dtype is dtype for g in fused[1])
    ref = _run("cpu", arrays, mask, grad_mask, tl.float32, "composite", **kw)
    _compare([fused[0]] + fused[1], [ref[0]] + ref[1], tol, 4 * tol, f"{name} {dtype}")


def test_noncontiguous_inputs_and_partial_requires_grad(device):
    """q, k, v as transposed views of (B, L, H, E) tensors (how models split heads), a transposed mask,
    and only v and k requiring grad."""
    arrays = [_rand((2, 13, 2, 8), s) for s in range(3)] + [_rand((2, 2, 13, 8), 3)]
    mask = _rand((13, 13), 4)
    outs = []
    for path in ("fused", "composite"):
        q0, k0, v0 = (tl.tensor(a, device=device) for a in arrays[:3])
        k0.requires_grad_()
        v0.requires_grad_()
        q, k, v = (t.transpose(1, 2) for t in (q0, k0, v0))
        m = tl.tensor(mask, device=device).t()
        assert not q.is_contiguous() and not m.is_contiguous()
        if path == "fused":
            assert A.fused_supported(q, k, v, m, devices=(device,))
            out = A.attention(q, k, v, m) if device == "cpu" else F.scaled_dot_product_attention(q, k, v, m)
        else:
            saved, A.fused_supported = A.fused_supported, lambda *a, **k: False
            try:
                out = F.scaled_dot_product_attention(q, k, v, m)
            finally:
                A.fused_supported = saved
        out.backward(tl.tensor(arrays[3], device=device))
        outs.append([out, k0.grad, v0.grad])
    _compare(outs[0], outs[1], 2e-5, 2e-5, "transposed")


@pytest.mark.parametrize("name", ["float_mask_heads", "gqa_causal", "long_keys"])
def test_fused_float64(device, name):
    """float64 accumulates in double (head dims up to 64): the composite's results to double rounding."""
    spec, kw = CASES[name]
    arrays, mask = _case(**spec)
    grad_mask = mask is not None
    fused = _run(device, arrays, mask, grad_mask, tl.float64, "fused", **kw)
    assert fused[0].dtype is tl.float64
    comp = _run(device, arrays, mask, grad_mask, tl.float64, "composite", **kw)
    for x, y in zip([fused[0]] + fused[1], [comp[0]] + comp[1]):
        np.testing.assert_allclose(x.detach().cpu().numpy(), y.detach().cpu().numpy(), rtol=1e-11, atol=1e-12)


def test_fused_path_does_not_wait_for_the_device(device):
    """Forward and backward queue their kernels without a host wait (causal, float mask, GQA)."""
    arrays = [_rand((1, 4, 9, 8), 0), _rand((1, 2, 11, 8), 1), _rand((1, 2, 11, 8), 2)]
    q, k, v = (tl.tensor(a, device=device, requires_grad=True) for a in arrays)
    m = tl.tensor(_rand((9, 11), 3), device=device, requires_grad=True)
    fn = F.scaled_dot_product_attention if device == "cuda" else A.attention
    fn(q, k, v, m, enable_gqa=True).sum().backward()  # first use: module loads
    with tl.cuda.sync_trace() as trace:
        fn(q, k, v, m, enable_gqa=True).sum().backward()
        fn(q, k[:, :, :9], v[:, :, :9], is_causal=True, enable_gqa=True).sum().backward()
    assert len(trace) == 0, str(trace)


def test_fused_is_deterministic(device):
    spec, kw = CASES["gqa_causal"]
    arrays, mask = _case(**spec)
    a = _run(device, arrays, mask, False, tl.float32, "fused", **kw)
    b = _run(device, arrays, mask, False, tl.float32, "fused", **kw)
    for x, y in zip([a[0]] + a[1], [b[0]] + b[1]):
        assert np.array_equal(_np(x), _np(y))


def test_fully_masked_and_empty(device):
    """A float mask of all -inf gives zeros (no NaN) and zero gradients, as the composite; an empty key
    sequence gives zeros; an empty query sequence an empty output."""
    q = tl.tensor(_rand((1, 2, 5, 8), 0), device=device, requires_grad=True)
    k = tl.tensor(_rand((1, 2, 6, 8), 1), device=device, requires_grad=True)
    v = tl.tensor(_rand((1, 2, 6, 8), 2), device=device, requires_grad=True)
    m = tl.full((5, 6), float("-inf"), device=device)
    if device == "cuda":
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=m)
    else:
        out = A.attention(q, k, v, m)
    out.sum().backward()
    assert np.array_equal(_np(out), np.zeros((1, 2, 5, 8), np.float32))
    for g in (q.grad, k.grad, v.grad):
        assert np.array_equal(_np(g), np.zeros(tuple(g.shape), np.float32))
    e = A.attention(q, k[:, :, :0], v[:, :, :0])
    assert tuple(e.shape) == (1, 2, 5, 8) and not _np(e).any()
    e = A.attention(q[:, :, :0], k, v)
    assert tuple(e.shape) == (1, 2, 0, 8)


def test_double_backward_matches_composite(device):
    """Under create_graph the derivative is written with differentiable ops: second derivatives
    agree with the composite's."""
    spec, kw = CASES["gqa_mask"]
    arrays, mask = _case(**spec)
    results = []
    for path in ("fused", "composite"):
        q, k, v = (tl.tensor(a, device=device, requires_grad=True) for a in arrays[:3])
        m = tl.tensor(mask, device=device)
        if path == "fused" and device == "cpu":
            out = A.attention(q, k, v, m, enable_gqa=True)
        elif path == "fused":
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=m, enable_gqa=True)
        else:
            saved, A.fused_supported = A.fused_supported, lambda *a, **k: False
            try:
                out = F.scaled_dot_product_attention(q, k, v, attn_mask=m, enable_gqa=True)
            finally:
                A.fused_supported = saved
        dq, dk = tl.autograd.grad(out, (q, k), tl.tensor(arrays[3], device=device), create_graph=True)
        (dq.square().sum() + (dk * dk).sum()).backward()
        results.append([dq, dk, q.grad, k.grad, v.grad])
    for x, y in zip(*results):
        np.testing.assert_allclose(_np(x), _np(y), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("why", ["dropout", "float64_head_dim_96", "head_dim_160", "broadcast_batch", "gqa_off"])
def test_fallback_to_composite(device, why, request):
    """What the kernels do not support runs the composite, with its (torch's) result."""
    qs, ks, dtype, kw = (1, 2, 5, 8), (1, 2, 6, 8), tl.float32, {}
    if why == "head_dim_160":
        qs, ks = (1, 1, 5, 160), (1, 1, 6, 160)
    elif why == "broadcast_batch":
        ks = (1, 6, 8)
        qs = (3, 5, 8)
    elif why == "gqa_off":
        qs = (1, 4, 5, 8)
    elif why == "float64_head_dim_96":
        qs, ks, dtype = (1, 1, 5, 96), (1, 1, 6, 96), tl.float64
    q = tl.tensor(_rand(qs, 0), device=device, dtype=dtype)
    k = tl.tensor(_rand(ks, 1), device=device, dtype=dtype)
    v = tl.tensor(_rand(ks, 2), device=device, dtype=dtype)
    if why == "dropout":
        assert not A.fused_supported(q, k, v, None, 1.0, devices=(device,))  # 0 < p < 1: test_attention_flash
        out = F.scaled_dot_product_attention(q, k, v, dropout_p=1.0)  # every weight dropped: zeros
        assert np.array_equal(_np(out), np.zeros((1, 2, 5, 8), np.float32))
        return
    if why == "gqa_off":  # 4 query heads, 2 key heads, no enable_gqa: the composite's error
        assert not A.fused_supported(q, k, v, devices=(device,))
        with pytest.raises(RuntimeError):
            F.scaled_dot_product_attention(q, k, v)
        return
    assert not A.fused_supported(q, k, v, devices=(device,))
    before = _launches("attention_fwd") if device == "cuda" else 0
    out = F.scaled_dot_product_attention(q, k, v, **kw)
    if device == "cuda":
        assert _launches("attention_fwd") == before
    try:
        torch = request.getfixturevalue("torch")
    except pytest.skip.Exception:
        return
    tq, tk, tv = (torch.tensor(_np(t).astype(np.float64 if dtype is tl.float64 else np.float32))
                  for t in (q, k, v))
    ref = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv)
    np.testing.assert_allclose(_np(out), ref.float().numpy(), rtol=1e-5, atol=1e-5)


def test_cpu_keeps_the_composite(monkeypatch):
    """On the CPU F.scaled_dot_product_attention is the composite: the fused primitive is not called."""
    from tensorlab.backends import cpu

    def refuse(*a, **k):
        raise AssertionError("the CPU ran the fused primitive")
    monkeypatch.setattr(cpu, "attention_fwd", refuse)
    q = tl.tensor(_rand((1, 2, 5, 8), 0))
    assert A.fused_supported(q, q, q, devices=("cpu",)) and not A.fused_supported(q, q, q)
    assert tuple(F.scaled_dot_product_attention(q, q, q).shape) == (1, 2, 5, 8)


def test_cpu_runs_the_blocked_primitives_for_long_sequences(monkeypatch):
    """From CPU_BLOCKED_MIN_SCORES scores on, the CPU's F.scaled_dot_product_attention runs the blocked
    primitives (lowered here so that a small case gets there), with the composite's results."""
    from tensorlab.backends import cpu
    calls = []
    real = cpu.attention_fwd

    def counted(*a, **k):
        calls.append(1)
        return real(*a, **k)
    spec, kw = CASES["gqa_mask"]
    arrays, mask = _case(**spec)
    comp = _run("cpu", arrays, mask, True, tl.float32, "composite", **kw)
    monkeypatch.setattr(cpu, "attention_fwd", counted)
    monkeypatch.setattr(A, "CPU_BLOCKED_MIN_SCORES", 6 * 9 * 11)
    q, k, v = (tl.tensor(a, requires_grad=True) for a in arrays[:3])
    m = tl.tensor(mask, requires_grad=True)
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=m, enable_gqa=True)
    out.backward(tl.tensor(arrays[3]))
    assert calls == [1]
    _compare([out, q.grad, k.grad, v.grad, m.grad], [comp[0]] + comp[1], 2e-5, 2e-5, "cpu blocked")
    assert not A.fused_supported(q[..., :8, :], k, v, m[..., :8, :], enable_gqa=True)  # below the threshold


def _peak_bytes(device, n, path):
    """Peak allocation above the inputs of forward + backward at sequence length n."""
    arrays = [_rand((1, 1, n, 16), s) for s in range(4)]
    q, k, v = (tl.tensor(a, device=device, requires_grad=True) for a in arrays[:3])
    g = tl.tensor(arrays[3], device=device)
    tl.cuda.synchronize()
    base = tl.cuda.memory_allocated()
    tl.cuda.reset_peak_memory_stats()
    saved = A.fused_supported
    if path == "composite":
        A.fused_supported = lambda *a, **k: False
    try:
        F.scaled_dot_product_attention(q, k, v, is_causal=True).backward(g)
    finally:
        A.fused_supported = saved
    tl.cuda.synchronize()
    return tl.cuda.max_memory_allocated() - base


def test_fused_memory_grows_linearly_with_sequence_length(device):
    if device != "cuda":
        pytest.skip("device memory statistics are CUDA's")
    small, large = _peak_bytes(device, 48, "fused"), _peak_bytes(device, 144, "fused")
    assert 0 < small and large <= 4 * small, (small, large)  # 3x the length: ~3x (an L x S matrix: ~9x)
    # the composite holds the scores: at the longer length it needs several L x S float32 matrices
    comp = _peak_bytes(device, 144, "composite")
    assert comp > large + 2 * 144 * 144 * 4, (comp, large)


def test_injected_faults_leave_inputs_unchanged(device):
    """Every allocation, copy and launch of the fused forward + backward may fail: q, k, v and the
    mask keep their values and metadata, and the same call then succeeds with the same gradients.
    (Gradients already accumulated into other leaves' .grad when a later step fails are the
    engine's affair, as in torch.)"""
    from tensorlab.testing import InjectedFault, assert_unchanged, fault_points, inject_fault, snapshot
    q, k, v = (tl.tensor(_rand(s, i), device=device, requires_grad=True)
               for i, s in enumerate([(1, 2, 5, 8), (1, 1, 6, 8), (1, 1, 6, 8)]))
    m = tl.tensor(_rand((5, 6), 3), device=device, requires_grad=True)
    sdpa = F.scaled_dot_product_attention if device == "cuda" else A.attention

    def fn():
        for t in (q, k, v, m):
            t.grad = None
        sdpa(q, k, v, m, enable_gqa=True).sum().backward()
        return [_np(t.grad) for t in (q, k, v, m)]
    want = fn()
    points = fault_points(fn)
    assert points
    for kind, n in points:
        snap = snapshot(q, k, v, m)
        with inject_fault(kind, n) as plan, pytest.raises(InjectedFault):
            fn()
        assert plan.fired
        assert_unchanged(snap)
    for got, ref in zip(fn(), want):
        np.testing.assert_array_equal(got, ref)
