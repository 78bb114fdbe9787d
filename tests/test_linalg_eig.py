"""tl.linalg.eig / eigvals (ops/eig.py) on every device against torch and NumPy: float and complex
inputs, batches, empty batches, torch's errors, out=, gradients (torch's and finite differences on
phase-invariant functions), and the cuSOLVER Xgeev call path (the emulated stand-in's argument
checks; the CuPy driver's calls on a fake library)."""
from __future__ import annotations

import numpy as np
import pytest

import tensorlab as tl
from tensorlab.autograd import gradcheck

DTYPES = ["float32", "float64", "complex64", "complex128"]
SHAPES = [(3, 3), (2, 4, 4), (2, 1, 5, 5), (1, 1), (0, 3, 3), (2, 0, 0)]


def rnd(shape, dtype="float64", seed=0):
    g = np.random.default_rng(seed)
    a = g.standard_normal(shape)
    if dtype.startswith("complex"):
        a = a + 1j * g.standard_normal(shape)
    return a.astype(dtype)


def phase_fixed(v, ref):
    """v's columns each times the unit factor that makes the entry where ref's column is largest real
    and positive (an eigenvector is defined up to such a factor; ref's index for both sides)."""
    if not v.size:
        return v
    idx = np.abs(ref).argmax(axis=-2)[..., None, :]
    p = np.take_along_axis(v, idx, axis=-2)
    return v * (np.abs(p) / np.where(p == 0, 1, p))


def tol(dtype):
    return 2e-4 if dtype in ("float32", "complex64") else 1e-10


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_eig_matches_torch_and_numpy(device, torch, dtype, shape):
    a = rnd(shape, dtype)
    w, V = tl.linalg.eig(tl.tensor(a, device=device))
    tw, tV = torch.linalg.eig(torch.tensor(a))
    cdt = "complex128" if dtype in ("float64", "complex128") else "complex64"
    assert (str(w.dtype), str(V.dtype)) == (f"tensorlab.{cdt}",) * 2 and w.device.type == device
    assert tuple(w.shape) == tuple(tw.shape) and tuple(V.shape) == tuple(tV.shape)
    w, V = w.cpu().numpy(), V.cpu().numpy()
    np.testing.assert_allclose(w, tw.numpy(), rtol=tol(dtype), atol=tol(dtype))
    np.testing.assert_allclose(phase_fixed(V, tV.numpy()), phase_fixed(tV.numpy(), tV.numpy()), rtol=tol(dtype),
                               atol=tol(dtype))
    if a.size:
        np.testing.assert_allclose(np.sort_complex(w.reshape(-1, shape[-1])),
                                   np.sort_complex(np.linalg.eigvals(a).reshape(-1, shape[-1])), rtol=tol(dtype),
                                   atol=tol(dtype))
        np.testing.assert_allclose(a.astype(cdt) @ V, V * w[..., None, :], rtol=10 * tol(dtype), atol=10 * tol(dtype))
        np.testing.assert_allclose(np.linalg.norm(V, axis=-2), 1, rtol=tol(dtype))
    ev = tl.linalg.eigvals(tl.tensor(a, device=device))
    np.testing.assert_allclose(ev.cpu().numpy(), torch.linalg.eigvals(torch.tensor(a)).numpy(), rtol=tol(dtype),
                               atol=tol(dtype))


def test_real_input_conjugate_pairs_unpacked(device, torch):
    # a rotation block (eigenvalues +-i) beside a real one: geev's packed vectors as complex ones
    a = np.array([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 2.0]])
    w, V = tl.linalg.eig(tl.tensor(a, device=device))
    tw, tV = torch.linalg.eig(torch.tensor(a))
    np.testing.assert_allclose(w.cpu().numpy(), tw.numpy(), atol=1e-12)
    np.testing.assert_allclose(V.cpu().numpy(), tV.numpy(), atol=1e-12)
    assert np.allclose(V.cpu().numpy()[:, 1], V.cpu().numpy()[:, 0].conj())


def test_strided_input_and_out(device, torch):
    a = rnd((4, 6), "float64")
    A = tl.tensor(a, device=device)[:, ::2][:3]  # non-contiguous 3 x 3
    tA = torch.tensor(a)[:, ::2][:3]
    w0 = tl.empty(0, dtype=tl.complex128, device=device)
    v0 = tl.empty(0, dtype=tl.complex128, device=device)
    r = tl.linalg.eig(A, out=(w0, v0))
    assert r.eigenvalues is w0 and r.eigenvectors is v0
    np.testing.assert_allclose(w0.cpu().numpy(), torch.linalg.eig(tA).eigenvalues.numpy(), atol=1e-12)
    e = tl.empty(0, dtype=tl.complex64, device=device)  # complex128 -> complex64 out: torch casts
    tl.linalg.eigvals(A, out=e)
    np.testing.assert_allclose(e.cpu().numpy(), torch.linalg.eigvals(tA).numpy(), rtol=1e-5)
    np.testing.assert_array_equal(A.cpu().numpy(), tA.numpy())  # the input is not written


def test_errors_as_torch(device, torch):
    def both(fn):
        with pytest.raises(Exception) as ours:
            fn(tl)
        with pytest.raises(Exception) as theirs:
            fn(torch)
        return ours.value, theirs.value

    cases = [lambda m: m.linalg.eig(m.zeros(2, 3, dtype=m.float64)),
             lambda m: m.linalg.eigvals(m.zeros(3, dtype=m.float64)),
             lambda m: m.linalg.eig(m.ones(3, 3, dtype=m.int64)),
             lambda m: m.linalg.eig(m.full((3, 3), float("nan"), dtype=m.float64)),
             lambda m: m.linalg.eig(m.eye(3, dtype=m.float64), out=(m.empty(0), m.empty(0)))]
    for fn in cases:
        o, t = both(fn)
        assert type(o) is type(t) or isinstance(o, type(t)), (o, t)
        assert "eig" in str(o)
    if device == "cpu":  # torch's CPU kernel has no half: NotImplementedError
        o, t = both(lambda m: m.linalg.eig(m.ones(3, 3, dtype=m.float16)))
        assert isinstance(o, NotImplementedError) and isinstance(t, NotImplementedError)
    with pytest.raises(RuntimeError, match="2 by 3"):
        tl.linalg.eig(tl.zeros(2, 3, device=device))
    with pytest.raises(TypeError, match="must be Tensor"):
        tl.linalg.eigvals([[1.0]])
    # nothing half-changed: a failing out= call leaves out as it was
    w0 = tl.full((3,), 7.0, dtype=tl.complex128, device=device)
    with pytest.raises(RuntimeError):
        tl.linalg.eig(tl.zeros(2, 3, dtype=tl.float64, device=device), out=(w0, tl.empty(0, dtype=tl.complex128)))
    assert w0.cpu().numpy().tolist() == [7.0] * 3


def _phase_free(lib, w, V, g1, g2):
    """A real loss that does not depend on the eigenvectors' phases (as torch's OpInfo takes |V|)."""
    return (w.real * g1).sum() + (w.imag * g1).sum() * 3 + (V.abs() * g2).sum() + \
        ((V * V.conj()).real * g2).sum()


@pytest.mark.parametrize("dtype", ["float64", "complex128"])
def test_gradients_match_torch(device, torch, dtype):
    a = rnd((2, 4, 4), dtype, seed=3)
    g1, g2 = rnd((2, 4), seed=4), rnd((2, 4, 4), seed=5)
    A = tl.tensor(a, device=device, requires_grad=True)
    tA = torch.tensor(a, requires_grad=True)
    w, V = tl.linalg.eig(A)
    _phase_free(tl, w, V, tl.tensor(g1, device=device), tl.tensor(g2, device=device)).backward()
    tw, tV = torch.linalg.eig(tA)
    _phase_free(torch, tw, tV, torch.tensor(g1), torch.tensor(g2)).backward()
    assert A.grad.dtype == A.dtype
    np.testing.assert_allclose(A.grad.cpu().numpy(), tA.grad.numpy(), rtol=1e-9, atol=1e-9)
    # eigvals: the vectors computed for the backward only
    B = tl.tensor(a, device=device, requires_grad=True)
    tB = torch.tensor(a, requires_grad=True)
    (tl.linalg.eigvals(B).imag * tl.tensor(g1, device=device)).sum().backward()
    (torch.linalg.eigvals(tB).imag * torch.tensor(g1)).sum().backward()
    np.testing.assert_allclose(B.grad.cpu().numpy(), tB.grad.numpy(), rtol=1e-9, atol=1e-9)


def test_gradcheck_phase_invariant(device):
    a = rnd((3, 3), seed=7)
    A = tl.tensor(a, device=device, requires_grad=True)
    assert gradcheck(lambda t: tl.linalg.eigvals(t).real, (A,))
    assert gradcheck(lambda t: tl.linalg.eigvals(t).imag, (A,))
    assert gradcheck(lambda t: tl.linalg.eig(t).eigenvectors.abs(), (A,))
    b = rnd((2, 3, 3), seed=8)
    assert gradcheck(lambda t: tl.linalg.eig(t).eigenvalues.real * 2 + tl.linalg.eig(t).eigenvalues.imag,
                     (tl.tensor(b, device=device, requires_grad=True),))


def test_phase_dependent_loss_raises(device, torch):
    a = rnd((3, 3), "complex128", seed=9)
    A = tl.tensor(a, device=device, requires_grad=True)
    with pytest.raises(RuntimeError, match="e\\^\\{i phi\\}"):
        tl.linalg.eig(A).eigenvectors.sum().abs().backward()
    tA = torch.tensor(a, requires_grad=True)
    with pytest.raises(RuntimeError, match="e\\^\\{i phi\\}"):
        torch.linalg.eig(tA).eigenvectors.sum().abs().backward()


def test_emulated_geev_checks_arguments(device):
    if device == "cpu":
        pytest.skip("the stand-in belongs to the emulated CUDA driver")
    from tensorlab.backends.cuda import launch as K
    drv = K.driver
    if type(drv).__name__ != "EmulationDriver":
        pytest.skip("a real GPU: the library itself checks")
    from tensorlab.backends.cuda.driver import Pointer
    a = rnd((3, 3), seed=1)
    A = tl.tensor(a.T.copy(), device=device)  # column-major a
    W = tl.zeros(3, dtype=tl.complex128, device=device)
    VR = tl.zeros(3, 3, dtype=tl.float64, device=device)
    info = tl.full((1,), 5, dtype=tl.int32, device=device)
    P = lambda t: Pointer(K.operand(t).buffer, 0)  # noqa: E731
    stream = drv.current_stream(0)
    dbytes, hbytes = drv.geev_buffer_size(True, 3, P(A), 3, P(W), P(VR), 3, "float64", stream)
    work = P(tl.zeros(dbytes, dtype=tl.uint8, device=device))
    with pytest.raises(RuntimeError, match="ld=2 < max"):
        drv.geev(True, 3, P(A), 2, 9, P(W), 3, P(VR), 3, 9, P(info), 1, work, dbytes, hbytes, "float64", stream)
    with pytest.raises(RuntimeError, match="lwork"):
        drv.geev(True, 3, P(A), 3, 9, P(W), 3, P(VR), 3, 9, P(info), 1, work, dbytes - 1, hbytes, "float64", stream)
    with pytest.raises(RuntimeError, match="host workspace"):
        drv.geev(True, 3, P(A), 3, 9, P(W), 3, P(VR), 3, 9, P(info), 1, work, dbytes, 0, "float64", stream)
    with pytest.raises(RuntimeError, match="dtype"):
        drv.geev(True, 3, P(A), 3, 9, P(W), 3, P(VR), 3, 9, P(info), 1, work, dbytes, hbytes, "float16", stream)
    with pytest.raises(RuntimeError, match="bytes at offset"):  # a batch of 2 reads past A's 9 elements
        drv.geev(True, 3, P(A), 3, 9, P(W), 3, P(VR), 3, 9, P(info), 2, work, dbytes, hbytes, "float64", stream)
    drv.geev(True, 3, P(A), 3, 9, P(W), 3, P(VR), 3, 9, P(info), 1, work, dbytes, hbytes, "float64", stream)
    assert info.item() == 0
    np.testing.assert_allclose(np.sort_complex(W.cpu().numpy()), np.sort_complex(np.linalg.eigvals(a)), atol=1e-12)


def test_cupy_driver_calls_xgeev_per_matrix(monkeypatch):
    """The CuPy driver's Xgeev calls on a fake cusolver module (no GPU needed): params created and
    destroyed, left vectors never asked for, each matrix's pointers advanced by its stride in bytes,
    W of the complex type, the host workspace the driver's own."""
    import contextlib
    import sys
    import types

    from tensorlab.backends.cuda import cupy_driver
    from tensorlab.backends.cuda.driver import Pointer

    calls = []
    lib = types.ModuleType("cusolver")
    lib.CUSOLVER_EIG_MODE_VECTOR, lib.CUSOLVER_EIG_MODE_NOVECTOR = "V", "N"
    lib.createParams = lambda: calls.append(("createParams",)) or 555
    lib.destroyParams = lambda p: calls.append(("destroyParams", p))
    lib.setStream = lambda h, s: calls.append(("setStream", h, s))
    lib.xgeev_bufferSize = lambda *a: calls.append(("xgeev_bufferSize",) + a) or (640, 32)
    lib.xgeev = lambda *a: calls.append(("xgeev",) + a)
    libs = types.ModuleType("cupy_backends.cuda.libs")
    libs.cusolver = lib
    for mod in ("cupy_backends", "cupy_backends.cuda"):
        monkeypatch.setitem(sys.modules, mod, types.ModuleType(mod))
    monkeypatch.setitem(sys.modules, "cupy_backends.cuda.libs", libs)
    monkeypatch.setitem(sys.modules, "cupy_backends.cuda.libs.cusolver", lib)
    fake_cp = types.SimpleNamespace(cuda=types.SimpleNamespace(
        Device=lambda d: contextlib.nullcontext(),
        device=types.SimpleNamespace(get_cusolver_handle=lambda: "hs")))
    monkeypatch.setattr(cupy_driver, "_cp", fake_cp)
    d = cupy_driver.CupyDriver()
    kept = []
    monkeypatch.setattr(d, "_keep_until_done", lambda stream, obj, *a: kept.append(obj))
    stream = types.SimpleNamespace(device=0, ptr=4242)

    def ptr(base, off=0):
        return Pointer(types.SimpleNamespace(ptr=base), off)

    a, w, vr, info, work = ptr(10000, 8), ptr(20000), ptr(30000), ptr(40000), ptr(50000)
    assert d.geev_buffer_size(True, 3, a, 3, w, vr, 3, "float64", stream) == (640, 32)
    assert calls[-1] == ("destroyParams", 555)
    assert calls[-2] == ("xgeev_bufferSize", "hs", 555, "N", "V", 3, 1, 10008, 3, 5, 20000, 1, 0, 1, 1, 30000, 3, 1)
    calls.clear()
    d.geev(True, 3, a, 3, 9, w, 3, vr, 3, 9, info, 2, work, 640, 32, "float32", stream)
    got = [c[1:] for c in calls if c[0] == "xgeev"]
    assert len(got) == 2 and calls[-1] == ("destroyParams", 555) and ("setStream", "hs", 4242) in calls
    host = kept[0]
    assert host.nbytes >= 32
    for i, g in enumerate(got):
        assert g[:10] == ("hs", 555, "N", "V", 3, 0, 10008 + i * 36, 3, 4, 20000 + i * 24)
        assert g[10:16] == (0, 0, 1, 0, 30000 + i * 36, 3)
        assert g[16:] == (0, 50000, 640, host.ctypes.data, 32, 40000 + 4 * i)
    calls.clear()
    d.geev(False, 2, a, 2, 4, w, 2, None, 2, 4, info, 1, work, 640, 32, "complex128", stream)
    (g,) = [c[1:] for c in calls if c[0] == "xgeev"]
    assert g[2:10] == ("N", "N", 2, 5, 10008, 2, 5, 20000) and g[14] == 0
