"""The tensor-core attention kernels (kernels/tensorlab/flash_attention.cuh, float16/bfloat16 per
head-dim bucket) and dropout inside the fused attention: the warp-level mma.sync the emulation runs
(tests/kernels/mma_probe.cu against NumPy: ldmatrix fragment loads on sm_80+ and in the emulation,
plain loads on the shuffle path), outputs and gradients against the float32 composite and torch's
CPU SDPA on the same rounded inputs (head dims 16..256, odd sequence lengths, causal, bool padding
and float masks, GQA, scale), and dropout with a fixed seed: the same mask as the composite's
`bernoulli_` on the CPU, in the kernels, the CPU's blocked primitives and the backward."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import tensorlab as tl
import tensorlab.nn.functional as F
from tensorlab.kernels_path import kernel_dir
from tensorlab.ops import attention as A

PROBE = Path(__file__).parent / "kernels" / "mma_probe.cu"
PROBE_NAMES = ("mma_probe<__half>", "mma_probe<__nv_bfloat16>")
HALF = [pytest.param(tl.float16, 2e-3, id="float16"), pytest.param(tl.bfloat16, 1.6e-2, id="bfloat16")]


def _rand(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _np(t):
    return t.detach().cpu().float().numpy()


def _rounded(a, dtype):
    return tl.tensor(a).to(dtype).float().numpy()


def _launched(prefix):
    from tensorlab.backends.cuda import launch
    return {expr for (src, expr), n in launch.LAUNCHES.items() if src == "attention.cu" and expr.startswith(prefix)}


# -- the warp-level matrix multiply-accumulate ---------------------------------------------------------
@pytest.mark.parametrize("path", ["mma.sync", "shuffles"])
@pytest.mark.parametrize("ctype,dtype", [("__half", tl.float16), ("__nv_bfloat16", tl.bfloat16)])
def test_mma_fragments_multiply_as_numpy(cuda, ctype, dtype, path):
    """A B through both B loaders, and the accumulators fed back as an A fragment, equal NumPy's
    products of the same 16-bit values (products exact in float; only the summation order differs);
    also by the pre-sm_80 path that exchanges the fragments with warp shuffles."""
    from tensorlab.backends.cuda.active import driver
    from tensorlab.backends.cuda.driver import Pointer
    opts = ("-std=c++17", f"-I{kernel_dir()}") + (("-DTL_MMA_BY_SHUFFLES",) if path == "shuffles" else ())
    mod = driver.load_module(PROBE, PROBE_NAMES, opts, 0)
    a, b = _rounded(_rand((16, 16), 1), dtype), _rounded(_rand((16, 8), 2), dtype)
    np_dt = tl.tensor([0.0], dtype=dtype).numpy().dtype
    stream = driver.current_stream(0)
    bufs = []
    for arr in (a.astype(np_dt), b.astype(np_dt), np.ascontiguousarray(b.T).astype(np_dt)):
        p = driver.malloc(arr.nbytes, 0, stream)
        driver.memcpy_htod(Pointer(p), arr, arr.nbytes, stream, False)
        bufs.append(p)
    out = driver.malloc(3 * 128 * 4, 0, stream)
    driver.launch(mod.get_function(f"mma_probe<{ctype}>"), (1,), (32,), tuple(Pointer(p) for p in bufs)
                  + (Pointer(out),), 0, stream)
    got = np.empty((3, 16, 8), np.float32)
    driver.memcpy_dtoh(got, Pointer(out), got.nbytes, stream, False)
    for p in bufs + [out]:
        driver.free(p, stream)
    ab = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(got[0], ab, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(got[0], got[1])
    d = _rounded(got[0], dtype).astype(np.float64)
    np.testing.assert_allclose(got[2], d @ b[:8] + d @ b[8:], rtol=1e-5, atol=1e-4)


# -- outputs and gradients ---------------------------------------------------------------------------
FLASH_CASES = {
    # name: (q shape, k shape, v shape, mask kind, kwargs)
    "odd_lengths_e16": ((2, 2, 19, 16), (2, 2, 37, 16), (2, 2, 37, 16), None, {}),
    "causal_e64": ((1, 2, 70, 64), (1, 2, 70, 64), (1, 2, 70, 64), None, dict(is_causal=True)),
    "padding_bool_e64": ((2, 1, 21, 64), (2, 1, 67, 64), (2, 1, 67, 64), "padding", {}),
    "float_mask_e32": ((1, 2, 9, 32), (1, 2, 23, 32), (1, 2, 23, 32), "float", {}),
    "e128_scale": ((1, 1, 33, 128), (1, 1, 41, 128), (1, 1, 41, 128), None, dict(scale=0.07)),
    "e100_ev72_gqa_causal": ((1, 4, 17, 100), (1, 2, 17, 100), (1, 2, 17, 72), None,
                             dict(is_causal=True, enable_gqa=True)),
    "e20_ev40_two_dims": ((5, 20), (70, 20), (70, 40), None, {}),
    # the 256 bucket (Q / dO fragments from shared memory, dK and dV in two passes)
    "e160_gqa_causal": ((1, 4, 19, 160), (1, 2, 19, 160), (1, 2, 19, 160), None,
                        dict(is_causal=True, enable_gqa=True)),
    "e192_float_mask": ((1, 1, 9, 192), (1, 1, 23, 192), (1, 1, 23, 192), "float", {}),
    "e256_padding_bool": ((2, 1, 7, 256), (2, 1, 30, 256), (2, 1, 30, 256), "padding", {}),
    "e256_ev136_scale": ((1, 1, 70, 256), (1, 1, 17, 256), (1, 1, 17, 136), None, dict(scale=0.05)),
}


def _mask(kind, qs, ks):
    if kind == "padding":  # batch b keeps its first S - 9 b keys (key padding), broadcast over heads and rows
        keep = np.arange(ks[-2])[None, :] < (ks[-2] - 9 * np.arange(qs[0]))[:, None]
        return keep[:, None, None, :]
    if kind == "float":
        return _rand((qs[-2], ks[-2]), 5)
    return None


def _attention(device, arrays, mask, dtype, path, **kw):
    """(out, [dq, dk, dv(, dmask)]) through "fused" (F.scaled_dot_product_attention on CUDA, the
    blocked primitives on the CPU) or "composite"."""
    q, k, v = (tl.tensor(a, device=device).to(dtype).requires_grad_() for a in arrays[:3])
    m = None
    if mask is not None:
        m = tl.tensor(mask, device=device)
        if m.dtype is not tl.bool:
            m = m.to(dtype).requires_grad_()
    drop = kw.pop("dropout_p", 0.0)
    if path == "fused":
        assert A.fused_supported(q, k, v, m, drop, kw.get("enable_gqa", False), devices=(device,))
        if device == "cuda":
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=m, dropout_p=drop, **kw)
        else:
            out = A.attention(q, k, v, m, kw.get("is_causal", False), kw.get("scale"), kw.get("enable_gqa", False),
                              drop)
    else:
        import tensorlab.nn.functional_attention as FA
        saved, A.fused_supported = A.fused_supported, lambda *a, **k: False
        try:
            out = FA.scaled_dot_product_attention(q, k, v, attn_mask=m, dropout_p=drop, **kw)
        finally:
            A.fused_supported = saved
    out.backward(tl.tensor(arrays[3], device=device).to(dtype))
    return out, [q.grad, k.grad, v.grad] + ([m.grad] if m is not None and m.dtype is not tl.bool else [])


def _compare(a, b, rtol, atol, what):
    for x, y, name in zip(a, b, ("out", "dq", "dk", "dv", "dmask")):
        x = _np(x) if isinstance(x, tl.Tensor) else x.detach().float().numpy()
        y = _np(y) if isinstance(y, tl.Tensor) else y.detach().float().numpy()
        np.testing.assert_allclose(x, y, rtol=rtol, atol=atol, err_msg=f"{what}: {name}")


def _flash_arrays(name, dtype):
    qs, ks, vs, kind, kw = FLASH_CASES[name]
    arrays = [_rand(qs, 0), _rand(ks, 1), _rand(vs, 2), _rand(qs[:-1] + vs[-1:], 3)]
    arrays = [_rounded(x, dtype) for x in arrays]
    mask = _mask(kind, qs, ks)
    if mask is not None and mask.dtype != np.bool_:
        mask = _rounded(mask, dtype)
    return arrays, mask, dict(kw)


@pytest.mark.parametrize("dtype,tol", HALF)
@pytest.mark.parametrize("name", list(FLASH_CASES))
def test_flash_matches_the_float32_composite(device, name, dtype, tol):
    """16-bit operands, float32 accumulation: within the dtype's rounding of the float32 composite
    on the same rounded inputs; on CUDA the tensor-core kernel of the head dim's bucket runs."""
    arrays, mask, kw = _flash_arrays(name, dtype)
    before = _launched("attention_fwd") if device == "cuda" else set()
    fused = _attention(device, arrays, mask, dtype, "fused", **kw)
    assert fused[0].dtype is dtype and all(g.dtype is dtype for g in fused[1])
    if device == "cuda":
        E = max(arrays[0].shape[-1], arrays[2].shape[-1])
        bucket = next(d for d in (32, 64, 128, 256) if E <= d)
        ct = "__half" if dtype is tl.float16 else "__nv_bfloat16"
        want = f"attention_fwd<{ct}>" if bucket == 128 else f"attention_fwd<{ct}, {bucket}>"
        assert want in _launched("attention_fwd") or want in before
    ref = _attention("cpu", arrays, mask, tl.float32, "composite", **kw)
    _compare([fused[0]] + fused[1], [ref[0]] + ref[1], tol, 4 * tol, f"{name} {dtype}")


@pytest.mark.torch_oracle
@pytest.mark.parametrize("dtype,tol", HALF)
@pytest.mark.parametrize("name", ["causal_e64", "padding_bool_e64", "e128_scale", "float_mask_e32",
                                  "e192_float_mask", "e160_gqa_causal"])
def test_flash_matches_torch_sdpa(device, name, dtype, tol):
    """Against torch's CPU scaled_dot_product_attention in float32 on the same rounded inputs."""
    torch = pytest.importorskip("torch")
    arrays, mask, kw = _flash_arrays(name, dtype)
    fused = _attention(device, arrays, mask, dtype, "fused", **kw)
    q, k, v = (torch.tensor(a, requires_grad=True) for a in arrays[:3])
    m = None if mask is None else torch.tensor(mask, requires_grad=mask.dtype != np.bool_)
    out = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=m, **kw)
    out.backward(torch.tensor(arrays[3]))
    ref = [out, q.grad, k.grad, v.grad] + ([m.grad] if m is not None and m.requires_grad else [])
    _compare([fused[0]] + fused[1], ref, tol, 4 * tol, f"{name} {dtype} vs torch")


# -- dropout ---------------------------------------------------------------------------------------------
def _seed_all(seed):
    tl.manual_seed(seed)  # every device's default generator: (seed, offset 0)


DROP_CASES = {
    "plain_e64": ((2, 2, 19, 64), (2, 2, 37, 64), (2, 2, 37, 64), None, {}),
    "causal_e16_odd": ((1, 3, 33, 16), (1, 3, 33, 16), (1, 3, 33, 16), None, dict(is_causal=True)),
    "padding_e128": ((2, 1, 9, 128), (2, 1, 67, 128), (2, 1, 67, 128), "padding", {}),
    "gqa_e256": ((1, 2, 9, 256), (1, 1, 21, 256), (1, 1, 21, 256), None, dict(enable_gqa=True)),  # 16-bit only
}
DROP_PARAMS = [pytest.param(name, *dt.values, id=f"{name}-{dt.id}")
               for name in DROP_CASES for dt in HALF + [pytest.param(tl.float32, 2e-5, id="float32")]
               if not (name.endswith("e256") and dt.id == "float32")]


@pytest.mark.parametrize("name,dtype,tol", DROP_PARAMS)
def test_dropout_matches_the_cpu_composite_with_the_same_seed(device, name, dtype, tol):
    """dropout_p = 0.3 with one seed: the fused path (the kernels on CUDA, the blocked primitives on
    the CPU) drops what the CPU composite's bernoulli_ drops, in the output and every gradient, and
    leaves the generator where the composite leaves it."""
    qs, ks, vs, kind, kw = DROP_CASES[name]
    arrays = [_rounded(x, dtype) for x in (_rand(qs, 0), _rand(ks, 1), _rand(vs, 2), _rand(qs[:-1] + vs[-1:], 3))]
    mask = _mask(kind, qs, ks)
    _seed_all(1234)
    fused = _attention(device, arrays, mask, dtype, "fused", dropout_p=0.3, **kw)
    after_fused = tl.rand(3, device=device)
    _seed_all(1234)
    ref = _attention("cpu", arrays, mask, tl.float32, "composite", dropout_p=0.3, **kw)
    after_ref = tl.rand(3)
    _compare([fused[0]] + fused[1], [ref[0]] + ref[1], tol, 4 * tol, f"dropout {name} {dtype}")
    np.testing.assert_array_equal(_np(after_fused), _np(after_ref))
    # the dropout really dropped: without it the output differs far beyond the tolerance
    _seed_all(1234)
    plain = _attention(device, arrays, mask, dtype, "fused", **kw)
    assert np.abs(_np(plain[0]) - _np(fused[0])).max() > 0.1


@pytest.mark.parametrize("dtype", [tl.float16, tl.float32])
def test_dropout_primitives_cuda_equal_cpu(cuda, dtype):
    """The backends' attention_fwd / attention_bwd with the same (p, seed, offset): the CUDA kernels
    and the CPU's blocked NumPy primitives agree (a nonzero offset, keys over several CPU blocks)."""
    from tensorlab.ops._common import empty_tensor
    B, H, L, S, E = 1, 2, 21, 150, 32
    arrays = [_rounded(x, dtype) for x in (_rand((B, H, L, E), 0), _rand((B, H, S, E), 1), _rand((B, H, S, E), 2),
                                           _rand((B, H, L, E), 3))]
    drop = (0.25, 987654321, 12345)
    res = {}
    for dev in ("cpu", "cuda"):
        q, k, v, g = (tl.tensor(a, device=dev).to(dtype) for a in arrays)
        out = empty_tensor((B, H, L, E), dtype, q.device)
        lse = empty_tensor((B, H, L), tl.float32, q.device)
        q._backend.attention_fwd(out, lse, q, k, v, None, False, 0.2, drop)
        grads = [empty_tensor(tuple(t.shape), dtype, q.device) for t in (q, k, v)]
        q._backend.attention_bwd(*grads, None, g, q, k, v, out, lse, None, False, 0.2, drop)
        res[dev] = [_np(out), _np(lse)] + [_np(x) for x in grads]
    tol = 2e-3 if dtype is tl.float16 else 2e-5
    for a, b, name in zip(res["cuda"], res["cpu"], ("out", "lse", "dq", "dk", "dv")):
        np.testing.assert_allclose(a, b, rtol=tol, atol=4 * tol, err_msg=name)


def test_dropout_one_falls_back_and_gives_zeros(device):
    q = tl.tensor(_rand((1, 2, 5, 8), 0), device=device)
    assert not A.fused_supported(q, q, q, None, 1.0, devices=(device,))
    assert A.fused_supported(q, q, q, None, 0.5, devices=(device,))
    out = F.scaled_dot_product_attention(q, q, q, dropout_p=1.0)
    assert not _np(out).any()
