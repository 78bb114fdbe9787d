"""cuBLASLt's epilogues (issue 37, item 1): linear's bias added in the GEMM (EPILOGUE_BIAS), its bias
gradient reduced while the weight gradient is computed (EPILOGUE_BGRADB), `_addmm_activation`'s ReLU
(RELU_BIAS): values and gradients against torch and against the composed path (LT_EPILOGUES off), the
one library call per product on CUDA (emulation: the driver's NumPy stand-in checking the arguments), the
stand-in's checks, and the ctypes binding (backends/cuda/cublaslt.py) driven against a fake library that
computes on host memory, so the sequence of cuBLASLt calls a GPU would get is checked here."""
from __future__ import annotations

import ctypes

import numpy as np
import pytest

import tensorlab as tl
from tensorlab.backends.cuda import cublaslt

F = tl.nn.functional
DTYPES = ["float32", "float16", "bfloat16", "float64"]
TOL = {"float32": 1e-5, "float64": 1e-12, "float16": 2e-3, "bfloat16": 1.6e-2}


def _lt_calls(device):
    if device != "cuda":
        return None
    from tensorlab.backends.cuda import linalg
    return dict(linalg.LT_CALLS)


def _np(t):
    return t.detach().double().cpu().numpy()


def _data(rng, shape, dt):
    return tl.tensor(rng.standard_normal(shape).astype(np.float32)).to(getattr(tl, dt))


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("xs", [(6, 5), (2, 3, 5)], ids=str)
def test_linear_bias_and_its_gradient_in_the_gemm(device, dt, xs):
    """linear with a bias: the forward one matmul_bias call (cuBLASLt BIAS on CUDA for 16-bit/float32),
    the backward's weight and bias gradients one matmul_bias_grad call (BGRADB): the same values as the
    composition x @ W.T + b and its autograd, within the dtype's rounding."""
    rng = np.random.default_rng(7)
    x0, w0, b0, g0 = _data(rng, xs, dt), _data(rng, (4, 5), dt), _data(rng, (4,), dt), _data(rng, xs[:-1] + (4,), dt)
    res = {}
    for fused in (True, False):
        x, w, b = (t.to(device).detach().clone().requires_grad_() for t in (x0, w0, b0))
        before = _lt_calls(device)
        if fused:
            y = F.linear(x, w, b)
        else:
            y = x.matmul(w.t()) + b
        y.backward(g0.to(device))
        after = _lt_calls(device)
        if device == "cuda" and fused and dt != "float64":
            assert after.get("bias", 0) == before.get("bias", 0) + 1
            assert after.get("bgradb", 0) == before.get("bgradb", 0) + 1
        res[fused] = [_np(t) for t in (y, x.grad, w.grad, b.grad)]
    for got, ref in zip(res[True], res[False]):
        np.testing.assert_allclose(got, ref, rtol=TOL[dt], atol=TOL[dt] * 4)


@pytest.mark.torch_oracle
@pytest.mark.parametrize("dt", DTYPES)
def test_linear_bias_gradient_matches_torch(device, dt, torch):
    rng = np.random.default_rng(3)
    xn, wn, bn, gn = (rng.standard_normal(s).astype(np.float32) for s in ((9, 6), (5, 6), (5,), (9, 5)))
    out = {}
    for lib, dev in ((tl, device), (torch, "cpu")):
        d = getattr(lib, dt)
        x, w, b = (lib.tensor(a).to(d).to(dev).requires_grad_() for a in (xn, wn, bn))
        y = lib.nn.functional.linear(x, w, b)
        y.backward(lib.tensor(gn).to(d).to(dev))
        out[lib] = [t.detach().double().cpu().numpy() for t in (y, x.grad, w.grad, b.grad)]
    for got, ref in zip(out[tl], out[torch]):
        np.testing.assert_allclose(got, ref, rtol=TOL[dt], atol=TOL[dt] * 8)


@pytest.mark.torch_oracle
@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("use_gelu", [False, True])
def test_addmm_activation_matches_torch(device, dt, use_gelu, torch):
    """torch._addmm_activation: ReLU through RELU_BIAS (one call), GELU exact as torch's CPU (the BIAS
    epilogue, then the GELU kernel: cuBLASLt's GELU is the tanh approximation)."""
    rng = np.random.default_rng(11 + use_gelu)
    bn, an, cn = (rng.standard_normal(s).astype(np.float32) for s in ((7,), (5, 3), (3, 7)))
    d = getattr(tl, dt)
    before = _lt_calls(device)
    got = tl._addmm_activation(*(tl.tensor(v).to(d).to(device) for v in (bn, an, cn)), use_gelu=use_gelu)
    after = _lt_calls(device)
    td = getattr(torch, dt)
    ref = torch._addmm_activation(*(torch.tensor(v).to(td) for v in (bn, an, cn)), use_gelu=use_gelu)
    assert got.dtype is d and tuple(got.shape) == (5, 7)
    np.testing.assert_allclose(_np(got), ref.double().numpy(), rtol=TOL[dt], atol=TOL[dt] * 4)
    if device == "cuda" and dt != "float64":
        key = "bias" if use_gelu else "relu_bias"
        assert after.get(key, 0) == before.get(key, 0) + 1
    # the composite path (a gradient to record) agrees and differentiates
    args = [tl.tensor(v).to(d).to(device).requires_grad_() for v in (bn, an, cn)]
    r = tl._addmm_activation(*args, use_gelu=use_gelu)
    np.testing.assert_allclose(_np(r), _np(got), rtol=TOL[dt], atol=TOL[dt] * 4)
    r.sum().backward()
    assert all(a.grad is not None for a in args)


@pytest.mark.cuda
def test_composed_path_when_the_epilogues_are_off(cuda, monkeypatch):
    from tensorlab.backends.cuda import linalg
    rng = np.random.default_rng(5)
    x, w, b = (_data(rng, s, "float32").to(cuda) for s in ((6, 5), (4, 5), (4,)))
    fused = F.linear(x, w, b)
    monkeypatch.setattr(linalg, "LT_EPILOGUES", False)
    before = dict(linalg.LT_CALLS)
    composed = F.linear(x, w, b)
    assert linalg.LT_CALLS == before
    np.testing.assert_allclose(_np(composed), _np(fused), rtol=1e-6, atol=1e-6)


@pytest.mark.cuda
def test_the_stand_in_checks_the_arguments(cuda):
    from tensorlab.backends.cuda import launch as K
    from tensorlab.backends.cuda.driver import Pointer
    drv = K.driver
    a = tl.zeros(12, device=cuda)
    p = Pointer(a._meta.storage._buf, 0)
    stream = drv.current_stream(a.device.index or 0)
    with pytest.raises(RuntimeError, match="ld=1 < rows=2"):
        drv.gemm_epilogue(False, False, 2, 2, 2, p, 1, p, 2, p, 2, p, "bias", "float32", stream)
        drv.device_synchronize(a.device.index or 0)
    with pytest.raises(RuntimeError, match="epilogue 'gelu_bias'"):
        drv.gemm_epilogue(False, False, 2, 2, 2, p, 2, p, 2, p, 2, p, "gelu_bias", "float32", stream)
        drv.device_synchronize(a.device.index or 0)
    with pytest.raises(RuntimeError, match="dtype 'float64'"):
        drv.gemm_epilogue(False, False, 2, 2, 2, p, 2, p, 2, p, 2, p, "bias", "float64", stream)
        drv.device_synchronize(a.device.index or 0)


# -- the ctypes binding against a fake libcublasLt --------------------------------------------------

_NP = {0: np.float32, 2: np.float16}


class _FakeLt:
    """The cuBLASLt entry points cublaslt.Lt calls, over host memory: descriptors and layouts are Python
    records behind integer handles, cublasLtMatmul computes D in NumPy from the recorded attributes, so
    a wrong attribute, transpose, leading dimension, bias or alpha/beta shows up in the result."""

    def __init__(self):
        self.objects, self.next, self.live, self.calls = {}, 1, set(), []

    def _new(self, out, record):
        h = self.next
        self.next += 1
        self.objects[h] = record
        self.live.add(h)
        out._obj.value = h
        return 0

    @staticmethod
    def _h(p):
        return p.value if isinstance(p, ctypes.c_void_p) else p

    def cublasLtCreate(self, out):
        return self._new(out, {"kind": "handle"})

    def cublasLtMatmulDescCreate(self, out, compute, scale):
        return self._new(out, {"kind": "desc", "compute": compute, "scale": scale})

    def cublasLtMatmulDescSetAttribute(self, desc, attr, value, size):
        self.objects[self._h(desc)][attr] = value._obj.value
        return 0

    def cublasLtMatrixLayoutCreate(self, out, dtype, rows, cols, ld):
        return self._new(out, {"kind": "layout", "dtype": dtype, "rows": rows.value, "cols": cols.value,
                               "ld": ld.value})

    def cublasLtMatmulPreferenceCreate(self, out):
        return self._new(out, {"kind": "pref"})

    def cublasLtMatmulPreferenceSetAttribute(self, pref, attr, value, size):
        self.objects[self._h(pref)][attr] = value._obj.value
        return 0

    def cublasLtMatmulAlgoGetHeuristic(self, handle, desc, la, lb, lc, ld, pref, requested, result, found):
        self.calls.append(("heuristic", dict(self.objects[self._h(pref)])))
        found._obj.value = 1
        return 0

    def _destroy(self, h):
        self.live.discard(self._h(h))
        return 0

    cublasLtMatmulPreferenceDestroy = cublasLtMatrixLayoutDestroy = cublasLtMatmulDescDestroy = _destroy

    def _matrix(self, ptr, layout):
        t = _NP[layout["dtype"]]
        rows, cols, ld = layout["rows"], layout["cols"], layout["ld"]
        n = (cols - 1) * ld + rows
        flat = np.frombuffer((ctypes.c_char * (n * np.dtype(t).itemsize)).from_address(ptr.value), t)
        return np.lib.stride_tricks.as_strided(flat, (rows, cols), (t().itemsize, ld * t().itemsize))

    def cublasLtMatmul(self, handle, desc, alpha, a, la, b, lb, beta, c, lc, d, ld, algo, ws, wsize, stream):
        dsc = self.objects[self._h(desc)]
        self.calls.append(("matmul", dict(dsc)))
        assert alpha._obj.value == 1 and beta._obj.value == 0 and c.value == d.value and wsize.value > 0
        A = self._matrix(a, self.objects[self._h(la)]).astype(np.float64)
        B = self._matrix(b, self.objects[self._h(lb)]).astype(np.float64)
        D = self._matrix(d, self.objects[self._h(ld)])
        A = A.T if dsc[cublaslt.DESC_TRANSA] == cublaslt.OP_T else A
        B = B.T if dsc[cublaslt.DESC_TRANSB] == cublaslt.OP_T else B
        prod = A @ B
        epi = dsc[cublaslt.DESC_EPILOGUE]
        bias_ptr = dsc[cublaslt.DESC_BIAS_POINTER]
        if epi == cublaslt.EPILOGUES["bgradb"]:
            vec = np.frombuffer((ctypes.c_char * (B.shape[1] * D.itemsize)).from_address(bias_ptr), D.dtype)
            vec[...] = B.sum(axis=0)
        else:
            vec = np.frombuffer((ctypes.c_char * (D.shape[0] * D.itemsize)).from_address(bias_ptr), D.dtype)
            prod = prod + vec[:, None]
            if epi == cublaslt.EPILOGUES["relu_bias"]:
                prod = np.maximum(prod, 0)
        D[...] = prod
        return 0


class _Buf:
    def __init__(self, nbytes):
        self.array = np.zeros(nbytes, np.uint8)
        self.ptr = self.array.ctypes.data


@pytest.mark.parametrize("epilogue", ["bias", "relu_bias", "bgradb"])
@pytest.mark.parametrize("transa,transb", [(False, False), (True, False), (False, True), (True, True)])
def test_the_binding_drives_cublaslt_as_documented(epilogue, transa, transb):
    """Lt.matmul's calls (descriptor attributes, layouts of op(A) and op(B) as stored, D, the bias pointer,
    alpha 1 / beta 0, a workspace, one heuristic per problem) reproduce D = epilogue(op(A) op(B))."""
    fake = _FakeLt()
    lt = cublaslt.Lt(fake, lambda nbytes, device, stream: _Buf(nbytes))
    rng = np.random.default_rng(1)
    m, n, k = 4, 3, 5
    a = np.asfortranarray(rng.standard_normal((k, m) if transa else (m, k)).astype(np.float32))
    b = np.asfortranarray(rng.standard_normal((n, k) if transb else (k, n)).astype(np.float32))
    d = np.asfortranarray(np.zeros((m, n), np.float32))
    vec = rng.standard_normal(n if epilogue == "bgradb" else m).astype(np.float32)
    for _ in range(2):
        lt.matmul(0, 7, transa, transb, m, n, k, a.ctypes.data, a.shape[0], b.ctypes.data, b.shape[0],
                  d.ctypes.data, m, vec.ctypes.data, epilogue, "float32", "32F", False)
    opa, opb = (a.T if transa else a), (b.T if transb else b)
    ref = opa.astype(np.float64) @ opb
    if epilogue == "bgradb":
        np.testing.assert_allclose(vec, opb.sum(axis=0), rtol=1e-5)
    else:
        ref = ref + vec[:, None]
        if epilogue == "relu_bias":
            ref = np.maximum(ref, 0)
    np.testing.assert_allclose(d, ref, rtol=1e-5, atol=1e-5)
    heur = [c for c in fake.calls if c[0] == "heuristic"]
    assert len(heur) == 1  # the second call reuses the cached algorithm
    assert heur[0][1][cublaslt.PREF_REDUCTION_SCHEME_MASK] == cublaslt.REDUCTION_SCHEME_COMPUTE_TYPE
    assert heur[0][1][cublaslt.PREF_MAX_WORKSPACE_BYTES] == cublaslt.WORKSPACE_BYTES
    mm = [c[1] for c in fake.calls if c[0] == "matmul"]
    assert len(mm) == 2 and mm[0]["compute"] == cublaslt.COMPUTE_TYPES["32F"]
    assert fake.live == {1}  # every descriptor, layout and preference destroyed; the handle kept


def test_the_binding_reports_a_library_error():
    fake = _FakeLt()
    fake.cublasLtMatmul = lambda *args: 7  # CUBLAS_STATUS_INVALID_VALUE
    lt = cublaslt.Lt(fake, lambda nbytes, device, stream: _Buf(nbytes))
    x = np.zeros((2, 2), np.float32, order="F")
    with pytest.raises(RuntimeError, match="cublasLtMatmul failed with cublasStatus_t 7"):
        lt.matmul(0, 0, False, False, 2, 2, 2, x.ctypes.data, 2, x.ctypes.data, 2, x.ctypes.data, 2,
                  x.ctypes.data, "bias", "float32", "32F", True)
    assert fake.live == {1}
