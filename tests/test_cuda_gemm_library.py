"""Float products through the vendor library (cuBLAS's strided batched GEMM, through CuPy; on the
emulation driver a NumPy stand-in that checks the arguments as cuBLAS does): every transpose
combination, size-1 dims, broadcast and merged batch dims, offsets into a storage, against float64
NumPy; what stays on our kernels (integers, batches that do not merge, matrices with no unit stride);
the stand-in's checks; a library call fails atomically like a launch."""
from __future__ import annotations

import numpy as np
import pytest

import tensorlab as tl
from tensorlab.testing import InjectedFault, inject_fault
from tensorlab.backends.cuda import linalg

FLOATS = [tl.float16, tl.bfloat16, tl.float32, tl.float64]
TOL = {"float16": 2e-2, "bfloat16": 6e-2, "float32": 2e-5, "float64": 1e-12}


def _calls():
    return sum(linalg.GEMM_CALLS.values())


def _tensor(x, dt, layout, cuda):
    """x on CUDA in dtype dt: "c" contiguous, "t" the transpose of a contiguous copy (column-major),
    "o" a contiguous block at an offset into a bigger storage."""
    if layout == "t":
        return tl.tensor(np.ascontiguousarray(np.swapaxes(x, -1, -2)), device=cuda).to(dt).mT
    if layout == "o":
        big = tl.zeros((x.size + 7,), device=cuda).to(dt)
        big[7:] = tl.tensor(x.ravel(), device=cuda).to(dt)
        return big[7:].view(x.shape)
    return tl.tensor(x, device=cuda).to(dt)


def _check(got, a, b, dt):
    ref = np.matmul(a.double().cpu().numpy(), b.double().cpu().numpy())
    out = got.double().cpu().numpy()
    assert got.dtype is dt and out.shape == ref.shape
    tol = TOL[dt.name]
    np.testing.assert_allclose(out, ref, rtol=tol, atol=tol * max(1.0, np.abs(ref).max()))


@pytest.mark.parametrize("dt", FLOATS, ids=lambda d: d.name)
@pytest.mark.parametrize("mnk", [(1, 1, 1), (5, 7, 3), (1, 9, 4), (8, 1, 1), (33, 17, 65)], ids=str)
def test_every_transpose_and_size_through_the_library(cuda, dt, mnk):
    m, n, k = mnk
    rng = np.random.default_rng(m * 100 + n * 10 + k)
    a, b = rng.standard_normal((2, m, k)).astype(np.float32), rng.standard_normal((2, k, n)).astype(np.float32)
    for la in "cto":
        for lb in "cto":
            before = _calls()
            x, y = _tensor(a, dt, la, cuda), _tensor(b, dt, lb, cuda)
            _check(x @ y, x, y, dt)
            assert _calls() == before + 1, (la, lb)


@pytest.mark.parametrize("dt", [tl.bfloat16, tl.float32], ids=lambda d: d.name)
def test_batches_broadcast_and_merged(cuda, dt):
    rng = np.random.default_rng(3)
    w = _tensor(rng.standard_normal((6, 4)).astype(np.float32), dt, "c", cuda)
    x = _tensor(rng.standard_normal((3, 5, 2, 6)).astype(np.float32), dt, "c", cuda)
    before = _calls()
    _check(x @ w, x, w, dt)  # (3, 5) batch dims merge into one; w's batch stride is 0
    _check(tl.matmul(w.mT, x.mT[0, 0]), w.mT, x.mT[0, 0], dt)
    _check(tl.nn.functional.linear(x, w.mT), x, w, dt)
    assert _calls() >= before + 3


def test_what_stays_on_our_kernels(cuda):
    rng = np.random.default_rng(4)
    before = _calls()
    ai = tl.tensor(rng.integers(-5, 5, (4, 3)), device=cuda)
    assert (ai @ ai.T).tolist() == (ai.cpu().numpy() @ ai.cpu().numpy().T).tolist()  # integers
    x = tl.tensor(rng.standard_normal((4, 3, 5, 6)).astype(np.float32), device=cuda)
    y = tl.tensor(rng.standard_normal((4, 3, 6, 2)).astype(np.float32), device=cuda)
    _check(x.permute(1, 0, 2, 3) @ y.permute(1, 0, 2, 3), x.permute(1, 0, 2, 3), y.permute(1, 0, 2, 3),
           tl.float32)  # batch dims that do not merge
    s = tl.tensor(rng.standard_normal((10, 12)).astype(np.float32), device=cuda)[::2, ::2]
    _check(s @ s.mT, s, s.mT, tl.float32)  # no unit stride
    assert _calls() == before


def test_library_and_kernel_agree_in_float32(cuda, monkeypatch):
    rng = np.random.default_rng(5)
    a = tl.tensor(rng.standard_normal((70, 90)).astype(np.float32), device=cuda)
    b = tl.tensor(rng.standard_normal((90, 40)).astype(np.float32), device=cuda)
    lib = (a @ b).cpu().numpy()
    monkeypatch.setattr(linalg, "VENDOR_GEMM", False)
    ours = (a @ b).cpu().numpy()
    np.testing.assert_allclose(lib, ours, rtol=1e-5, atol=1e-5)


def test_a_failing_library_call_changes_nothing(cuda):
    x = tl.ones((4, 4), device=cuda)
    out = tl.full((4, 4), 7.0, device=cuda)
    with inject_fault("launch", 1), pytest.raises(InjectedFault):
        tl.matmul(x, x, out=out)
    assert out.tolist() == [[7.0] * 4] * 4


def test_the_emulated_library_checks_its_arguments(cuda):
    from tensorlab import backends
    if not backends.cuda_emulated():
        pytest.skip("the stand-in is the emulation driver's (a real GPU runs cuBLAS itself)")
    from tensorlab.backends.cuda.active import driver
    from tensorlab.backends.cuda.driver import Pointer
    buf = driver.malloc(64 * 4, 0, driver.current_stream(0))
    p, s = Pointer(buf, 0), driver.current_stream(0)
    with pytest.raises(RuntimeError, match="ld=2 < rows=4"):
        driver.gemm(False, False, 4, 4, 4, p, 2, 0, p, 4, 0, p, 4, 0, 1, "float32", s)
    with pytest.raises(RuntimeError, match="bytes at offset"):
        driver.gemm(False, False, 9, 9, 9, p, 9, 0, p, 9, 0, p, 9, 0, 1, "float32", s)  # 81 floats in a 64-float buffer
    with pytest.raises(RuntimeError, match="is not one of"):
        driver.gemm(False, False, 2, 2, 2, p, 2, 0, p, 2, 0, p, 2, 0, 1, "int32", s)
    driver.free(buf, s)
