"""torch's matmul switches on CUDA products: set_float32_matmul_precision / backends.cuda.matmul.allow_tf32
(TF32 tensor cores for float32), allow_fp16_accumulation (float16 accumulation),
allow_fp16/bf16_reduced_precision_reduction (cuBLAS's math mode), read as torch reads them; the compute type
and math mode each reaches cuBLAS with (the emulation's stand-in, and the CuPy driver on a fake cuBLAS); the
TF32 result against an independent rounding of the inputs; linear's float16/bfloat16 bias added before the
one rounding (BLAS's beta 1) on every device, against torch."""
from __future__ import annotations

import contextlib
import ctypes
import sys
import types

import numpy as np
import pytest

import tensorlab as tl
from tensorlab import global_settings
from tensorlab.compat import backends as compat_backends

SWITCHES = ("allow_tf32", "allow_fp16_reduced_precision_reduction", "allow_bf16_reduced_precision_reduction",
            "allow_fp16_accumulation")


@pytest.fixture
def restore():
    saved = dict(global_settings._state)
    yield
    global_settings._state.clear()
    global_settings._state.update(saved)


def _tf32_by_frexp(x):
    """float32 -> TF32 (10 stored mantissa bits, to nearest, ties away from zero), by arithmetic on the
    significand (independent of the emulation's bit manipulation)."""
    x = np.asarray(x, np.float64)
    m, e = np.frexp(x)  # x = m 2^e, 0.5 <= |m| < 1: 11 significant bits are m scaled by 2^11
    q = np.sign(m) * np.floor(np.abs(m) * 2.0 ** 11 + 0.5)
    return np.ldexp(q, e - 11).astype(np.float32)


def test_tf32_rounding_reference_is_what_the_emulation_does():
    from tensorlab.backends.cuda.emulation import driver as emu
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(10000) * 10.0 ** rng.integers(-30, 30, 10000)).astype(np.float32)
    ties = np.array([1 + 2 ** -11, -(1 + 2 ** -11), 1 + 3 * 2 ** -11, 1 + 2 ** -12], np.float32)
    for v in (x, ties):
        assert np.array_equal(emu._tf32(v), _tf32_by_frexp(v))
    assert _tf32_by_frexp(ties).tolist() == [1 + 2 ** -10, -(1 + 2 ** -10), 1 + 2 ** -9, 1.0]


@pytest.mark.torch_oracle
def test_switches_read_as_torchs(torch, restore):
    ours, theirs = compat_backends.cuda.matmul, torch.backends.cuda.matmul
    before = {n: getattr(theirs, n) for n in SWITCHES}, torch.get_float32_matmul_precision()
    try:
        for p in ("high", "medium", "highest"):
            tl.set_float32_matmul_precision(p)
            torch.set_float32_matmul_precision(p)
            assert ours.allow_tf32 == theirs.allow_tf32
        for v in (True, False):
            ours.allow_tf32 = theirs.allow_tf32 = v
            assert tl.get_float32_matmul_precision() == torch.get_float32_matmul_precision()
        for n in SWITCHES[1:]:
            assert getattr(ours, n) == getattr(theirs, n)  # the defaults
            for v in (False, True):
                setattr(ours, n, v)
                setattr(theirs, n, v)
                assert getattr(ours, n) == getattr(theirs, n) == v
    finally:
        for n, v in before[0].items():
            setattr(theirs, n, v)
        torch.set_float32_matmul_precision(before[1])


def test_cuda_gemm_mode_follows_the_switches(restore):
    m = compat_backends.cuda.matmul
    assert global_settings.cuda_gemm_mode("float32") == ("32F", False)
    assert global_settings.cuda_gemm_mode("float16") == ("32F", True)
    assert global_settings.cuda_gemm_mode("bfloat16") == ("32F", True)
    assert global_settings.cuda_gemm_mode("float64") == ("64F", False)
    tl.set_float32_matmul_precision("medium")
    assert global_settings.cuda_gemm_mode("float32")[0] == global_settings.cuda_gemm_mode("complex64")[0] == \
        "32F_FAST_TF32"
    m.fp32_precision = "ieee"  # the newer switch overrides the precision
    assert global_settings.cuda_gemm_mode("float32")[0] == "32F"
    m.fp32_precision = "none"
    m.allow_tf32 = False
    assert global_settings.cuda_gemm_mode("float32")[0] == "32F"
    m.fp32_precision = "tf32"
    assert global_settings.cuda_gemm_mode("float32")[0] == "32F_FAST_TF32"
    m.fp32_precision = "none"
    m.allow_fp16_accumulation = True
    m.allow_fp16_reduced_precision_reduction = False
    m.allow_bf16_reduced_precision_reduction = False
    assert global_settings.cuda_gemm_mode("float16") == ("16F", False)
    assert global_settings.cuda_gemm_mode("bfloat16") == ("32F", False)
    with pytest.raises(RuntimeError, match="set_allow_fp16_accumulation_cublas expects a bool"):
        m.allow_fp16_accumulation = 1


@pytest.mark.cuda
def test_the_library_call_gets_the_compute_type_and_math_mode(cuda, restore, monkeypatch):
    from tensorlab.backends.cuda.active import driver
    seen = []
    real = driver.gemm

    def spy(*args, **kw):
        seen.append((args[15], kw.get("compute"), kw.get("reduced_reduction"), kw.get("beta")))
        return real(*args, **kw)

    monkeypatch.setattr(driver, "gemm", spy)
    a = tl.ones(4, 4, device=cuda)
    (a @ a).sum().item()
    tl.set_float32_matmul_precision("high")
    (a @ a).sum().item()
    (a.half() @ a.half()).sum().item()
    compat_backends.cuda.matmul.allow_fp16_accumulation = True
    compat_backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False
    (a.half() @ a.half()).sum().item()
    (a.bfloat16() @ a.bfloat16()).sum().item()
    assert seen == [("float32", "32F", False, 0.0), ("float32", "32F_FAST_TF32", False, 0.0),
                    ("float16", "32F", True, 0.0), ("float16", "16F", True, 0.0), ("bfloat16", "32F", False, 0.0)]


@pytest.mark.cuda
def test_tf32_products_round_the_inputs(cuda, restore):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((3, 17, 40)).astype(np.float32)
    b = rng.standard_normal((3, 40, 9)).astype(np.float32)
    x, y = tl.tensor(a, device=cuda), tl.tensor(b, device=cuda)
    exact = np.matmul(a.astype(np.float64), b.astype(np.float64))
    full = (x @ y).cpu().numpy()
    tl.set_float32_matmul_precision("high")
    tf32 = (x @ y).cpu().numpy()
    ref = np.matmul(_tf32_by_frexp(a).astype(np.float64), _tf32_by_frexp(b).astype(np.float64))
    np.testing.assert_allclose(tf32, ref, rtol=1e-5, atol=1e-5)
    assert np.abs(full - exact).max() < 1e-5 < np.abs(tf32 - exact).max()  # TF32 is visibly coarser
    cpu = (tl.tensor(a) @ tl.tensor(b)).numpy()  # the CPU keeps float32 whatever the switch
    assert np.abs(cpu - exact).max() < 1e-5


@pytest.mark.cuda
def test_float16_accumulation_rounds_every_step(cuda, restore):
    k = 4096  # a sum of 4096 ones: float32 accumulation counts them all, float16 stops at 2048
    x = tl.ones(1, k, device=cuda, dtype=tl.float16)
    y = tl.ones(k, 1, device=cuda, dtype=tl.float16)
    assert (x @ y).item() == 4096.0
    compat_backends.cuda.matmul.allow_fp16_accumulation = True
    assert (x @ y).item() == 2048.0  # 2048 + 1 rounds back to 2048 (2049 is not a float16)
    assert (x.float() @ y.float()).item() == 4096.0  # float32 products keep float32 accumulation


@pytest.mark.parametrize("dt", ["float16", "bfloat16"])
@pytest.mark.torch_oracle
def test_linear_half_bias_is_added_before_the_one_rounding(device, torch, dt):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 7, 64)).astype(np.float32)
    w = rng.standard_normal((24, 64)).astype(np.float32)
    b = (rng.standard_normal(24) * 50).astype(np.float32)
    ours = tl.nn.functional.linear(*(tl.tensor(v, device=device).to(getattr(tl, dt)) for v in (x, w, b)))
    theirs = torch.nn.functional.linear(*(torch.tensor(v).to(getattr(torch, dt)) for v in (x, w, b)))
    got, want = ours.float().cpu().numpy(), theirs.float().numpy()
    # float32 sums in another order may round to a neighbouring half at a tie: at most one ulp, rarely
    ulp = np.spacing(np.abs(want).astype(np.float32)) * (2 ** 13 if dt == "float16" else 2 ** 16)
    assert np.all(np.abs(got - want) <= ulp) and np.mean(got == want) > 0.97


def test_cupy_driver_passes_compute_type_math_mode_and_scalars(monkeypatch):
    """The CuPy driver on a fake cuBLAS (no GPU): the math mode set on the handle before the call, the
    compute type named by the switch, alpha and beta as host scalars of the compute type."""
    from tensorlab.backends.cuda import cupy_driver
    from tensorlab.backends.cuda.driver import Pointer

    calls = []

    class Rec(types.ModuleType):
        def __getattr__(self, name):
            if name.isupper() or name.startswith("CU"):
                return f"<{name}>"

            def call(*a):
                if name == "gemmStridedBatchedEx":  # host pointer mode: the scalars are read at the call
                    a = a + (ctypes.c_float.from_address(a[6]).value, ctypes.c_float.from_address(a[15]).value)
                calls.append((name, a))
            return call

    libs = types.ModuleType("cupy_backends.cuda.libs")
    libs.cublas = Rec("cublas")
    for mod in ("cupy_backends", "cupy_backends.cuda"):
        monkeypatch.setitem(sys.modules, mod, types.ModuleType(mod))
    monkeypatch.setitem(sys.modules, "cupy_backends.cuda.libs", libs)
    monkeypatch.setitem(sys.modules, "cupy_backends.cuda.libs.cublas", libs.cublas)
    rt = types.SimpleNamespace(CUDA_R_16F="<R16F>", CUDA_R_16BF="<R16BF>", CUDA_R_32F="<R32F>",
                               CUDA_R_64F="<R64F>", CUDA_C_32F="<C32F>", CUDA_C_64F="<C64F>")
    fake_cp = types.SimpleNamespace(cuda=types.SimpleNamespace(
        Device=lambda d: contextlib.nullcontext(), runtime=rt,
        device=types.SimpleNamespace(get_cublas_handle=lambda: "hb")))
    monkeypatch.setattr(cupy_driver, "_cp", fake_cp)
    d = cupy_driver.CupyDriver()
    stream = types.SimpleNamespace(device=0, ptr=4242)
    p = Pointer(types.SimpleNamespace(ptr=1000), 8)
    d.gemm(False, True, 2, 3, 4, p, 2, 8, p, 3, 12, p, 2, 6, 5, "float32", stream, compute="32F_FAST_TF32",
           beta=1.0)
    d.gemm(False, False, 2, 3, 4, p, 2, 0, p, 4, 0, p, 2, 0, 1, "bfloat16", stream, reduced_reduction=True,
           alpha=2.0)
    (n1, a1), (n2, a2), (n3, a3), (n4, a4), (n5, a5), (n6, a6) = calls
    assert (n1, a1) == ("setStream", ("hb", 4242)) and (n2, a2) == (
        "setMathMode", ("hb", "<CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION>"))
    assert n3 == "gemmStridedBatchedEx" and a3[1:5] == ("<CUBLAS_OP_N>", "<CUBLAS_OP_T>", 2, 3)
    assert a3[7:12] == (1008, "<R32F>", 2, 8, 1008) and a3[-4:-2] == ("<CUBLAS_COMPUTE_32F_FAST_TF32>",
                                                                       "<CUBLAS_GEMM_DEFAULT>")
    assert a3[-2:] == (1.0, 1.0)  # alpha, beta
    assert a5 == ("hb", "<CUBLAS_DEFAULT_MATH>") and a6[8] == "<R16BF>" and a6[-4] == "<CUBLAS_COMPUTE_32F>"
    assert a6[-2:] == (2.0, 0.0)
    with pytest.raises(RuntimeError, match="compute type '16F' is not one of"):
        d.gemm(False, False, 2, 3, 4, p, 2, 0, p, 4, 0, p, 2, 0, 1, "bfloat16", stream, compute="16F")
