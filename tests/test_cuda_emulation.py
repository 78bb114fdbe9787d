"""The CUDA emulation's built-ins behave as on a GPU: barriers, static and dynamic shared memory,
warp shuffles and votes, atomics, 16-bit floats, built-in index variables; and its failures are
reported with the kernel's name: an out-of-bounds write (AddressSanitizer), a deadlock, a failed
device assertion, an argument of the wrong C type. The probe kernels (tests/kernels/) are plain
CUDA, checked with NVRTC too.

Under TENSORLAB_CUDA_EMULATION=1 the tests use the active driver (ASan loaded); in a plain run
they build their own emulation driver without ASan (the bounds-check test then runs in a child
process started through the launcher). Skipped where no C++ compiler is installed."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from tensorlab.backends.cuda.driver import Pointer
from tensorlab.backends.cuda.emulation import build, enabled

PROBE = Path(__file__).parent / "kernels" / "emulation_probe.cu"
NAMES = ("block_sum<float>", "block_sum<int>", "block_sum<__half>", "reverse_dynamic", "warp_ops", "atomics",
         "barrier_votes", "half_roundtrip", "indices", "oob_write", "deadlock", "failing_assert", "shared_read<float>")
ROOT = Path(__file__).resolve().parents[1]

pytestmark = [pytest.mark.cuda,
              pytest.mark.skipif(shutil.which(build.cxx()) is None, reason=f"no C++ compiler ({build.cxx()})")]


@pytest.fixture(scope="module")
def drv():
    if enabled():
        from tensorlab.backends.cuda.active import driver
        return driver
    from tensorlab.backends.cuda.emulation.driver import EmulationDriver, asan_loaded
    return EmulationDriver(asan=asan_loaded())


@pytest.fixture(scope="module")
def probe(drv):
    return drv.load_module(PROBE, NAMES, ("-std=c++17",), 0)


class Dev:
    """Device arrays for one test: upload / download NumPy arrays through the driver."""

    def __init__(self, drv):
        self.drv = drv
        self.stream = drv.current_stream(0)

    def put(self, arr):
        arr = np.ascontiguousarray(arr)
        buf = self.drv.malloc(arr.nbytes, 0, self.stream)
        self.drv.memcpy_htod(Pointer(buf), arr, arr.nbytes, self.stream, False)
        return buf

    def get(self, buf, dtype, shape):
        out = np.empty(shape, dtype)
        self.drv.memcpy_dtoh(out, Pointer(buf), out.nbytes, self.stream, False)
        return out

    def run(self, probe, name, grid, block, *args, shared=0):
        self.drv.launch(probe.get_function(name), grid, block, args, shared, self.stream)


@pytest.fixture
def dev(drv):
    return Dev(drv)


@pytest.mark.parametrize("dtype, name", [(np.float32, "block_sum<float>"), (np.int32, "block_sum<int>"),
                                          (np.float16, "block_sum<__half>")])
def test_shared_memory_tree_reduction_needs_real_barriers(dev, probe, dtype, name):
    n = 1000
    x = (np.arange(n) % 7).astype(dtype)
    out = dev.put(np.zeros(4, dtype))
    dev.run(probe, name, (4,), (256,), Pointer(dev.put(x)), Pointer(out), np.int32(n))
    want = [x[i * 256:(i + 1) * 256].astype(np.float64).sum() for i in range(4)]
    np.testing.assert_array_equal(dev.get(out, dtype, 4).astype(np.float64), want)


def test_dynamic_shared_memory(dev, probe):
    x = np.arange(3 * 64, dtype=np.float32)
    out = dev.put(np.zeros_like(x))
    dev.run(probe, "reverse_dynamic", (3,), (64,), Pointer(dev.put(x)), Pointer(out), shared=64 * 4)
    np.testing.assert_array_equal(dev.get(out, np.float32, x.shape), x.reshape(3, 64)[:, ::-1].ravel())


def test_warp_shuffles_and_votes(dev, probe):
    x = np.random.RandomState(0).randint(1, 40, size=64).astype(np.int32)
    out = dev.put(np.zeros(64 * 8, np.int32))
    dev.run(probe, "warp_ops", (1,), (64,), Pointer(dev.put(x)), Pointer(out))
    got = dev.get(out, np.int32, (64, 8))
    for w in range(2):
        v = x[w * 32:(w + 1) * 32]
        lanes = np.arange(32)
        r = got[w * 32:(w + 1) * 32]
        # shfl_down tree: lane 0 holds the warp sum (lanes past the end keep their own value)
        assert r[0, 0] == v.sum()
        assert (r[:, 1] == v.max()).all()
        assert (r[:, 2] == v[3]).all()
        np.testing.assert_array_equal(r[:, 3], np.concatenate([[v[0]], v[:-1]]))
        ballot = sum(1 << int(k) for k in lanes if k % 3 == 0)
        assert (r[:, 4].view(np.uint32) == ballot).all()
        assert (r[:, 5] == 1).all()
        assert (r[:, 6] == int((v > 30).any())).all()
        assert (r[:, 7] == v.sum()).all()


def test_atomics_from_every_thread(dev, probe):
    n = 4 * 128
    x = np.full(n, 0.5, np.float32)
    vals = np.random.RandomState(1).randint(-1000, 1000, size=n).astype(np.int32)
    counter, fsum = dev.put(np.zeros(1, np.int32)), dev.put(np.zeros(1, np.float32))
    imax, first = dev.put(np.array([-10 ** 6], np.int32)), dev.put(np.array([-1], np.int32))
    dev.run(probe, "atomics", (4,), (128,), Pointer(counter), Pointer(fsum), Pointer(imax), Pointer(first),
            Pointer(dev.put(x)), Pointer(dev.put(vals)))
    assert dev.get(counter, np.int32, 1)[0] == n
    assert dev.get(fsum, np.float32, 1)[0] == n * 0.5
    assert dev.get(imax, np.int32, 1)[0] == vals.max()
    assert 0 <= dev.get(first, np.int32, 1)[0] < n


@pytest.mark.parametrize("k, want", [(0, (0, 0, 0)), (37, (37, 0, 1)), (100, (100, 1, 1))])
def test_syncthreads_count_and_or(dev, probe, k, want):
    out = dev.put(np.zeros(3, np.int32))
    dev.run(probe, "barrier_votes", (1,), (100,), Pointer(out), np.int32(k))
    assert tuple(dev.get(out, np.int32, 3)) == want


def test_half_and_bfloat16_conversions_round_like_numpy(dev, probe):
    x = np.concatenate([np.linspace(-70000, 70000, 101), [1 + 2 ** -11, 1 + 3 * 2 ** -11, 1e-8, -0.0, np.inf,
                                                           1 + 2 ** -8, 1 + 3 * 2 ** -8, 3.4e38]]).astype(np.float32)
    n = x.size
    bufs = [dev.put(np.zeros(n, np.float32)) for _ in range(4)]
    dev.run(probe, "half_roundtrip", (1,), (256,), Pointer(dev.put(x)), *map(Pointer, bufs), np.int32(n))
    h, b, hsum, bsum = (dev.get(buf, np.float32, n) for buf in bufs)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(h, x.astype(np.float16).astype(np.float32))
        np.testing.assert_array_equal(b, x.astype(ml_dtypes.bfloat16).astype(np.float32))
        np.testing.assert_array_equal(hsum, (x.astype(np.float16) + np.float16(1)).astype(np.float32))
        np.testing.assert_array_equal(
            bsum, (x.astype(ml_dtypes.bfloat16).astype(np.float32) + 1).astype(ml_dtypes.bfloat16).astype(np.float32))


def test_builtin_index_variables_in_3d_blocks(dev, probe):
    grid, block = (3, 2), (4, 2, 3)
    nthreads = 4 * 2 * 3
    out = dev.put(np.zeros(6 * nthreads * 4, np.int32))
    dev.run(probe, "indices", grid, block, Pointer(out))
    got = dev.get(out, np.int32, (2, 3, 3, 2, 4, 4))  # (by, bx, tz, ty, tx, field)
    by, bx, tz, ty, tx = np.meshgrid(*map(np.arange, (2, 3, 3, 2, 4)), indexing="ij")
    np.testing.assert_array_equal(got[..., 0], tx + 10 * ty + 100 * tz)
    np.testing.assert_array_equal(got[..., 1], bx + 10 * by)
    assert (got[..., 2] == nthreads).all() and (got[..., 3] == 6).all()


def test_deadlock_is_reported_not_hung(dev, probe):
    with pytest.raises(RuntimeError, match=r"kernel deadlock .*deadlock in block \(0,0,0\)"):
        dev.run(probe, "deadlock", (1,), (32,), Pointer(dev.put(np.zeros(32, np.int32))))


def test_failed_device_assertion_names_the_kernel(dev, probe):
    x = np.zeros(64, np.int32)
    x[37] = -1
    with pytest.raises(RuntimeError, match=r"failing_assert.*device-side assertion .in\[threadIdx.x\] >= 0. failed"
                                           r".*thread \(37,0,0\)"):
        dev.run(probe, "failing_assert", (1,), (64,), Pointer(dev.put(x)))


def test_wrong_argument_types_are_refused(dev, probe):
    out = dev.put(np.zeros(3, np.int32))
    with pytest.raises(TypeError, match=r"barrier_votes: argument 1 is numpy.int64 \(8 bytes\) but the parameter is "
                                        r"a signed integer of 4 bytes"):
        dev.run(probe, "barrier_votes", (1,), (32,), Pointer(out), np.int64(3))
    with pytest.raises(TypeError, match="argument 1 is a Python int"):
        dev.run(probe, "barrier_votes", (1,), (32,), Pointer(out), 3)
    with pytest.raises(TypeError, match="argument 0 is numpy.int32 .* parameter is a pointer"):
        dev.run(probe, "barrier_votes", (1,), (32,), np.int32(0), np.int32(3))
    with pytest.raises(TypeError, match="takes 2 arguments, got 1"):
        dev.run(probe, "barrier_votes", (1,), (32,), Pointer(out))


def test_bad_launch_configuration_is_refused(dev, probe):
    out = dev.put(np.zeros(3, np.int32))
    with pytest.raises(RuntimeError, match="invalid configuration argument"):
        dev.run(probe, "barrier_votes", (1,), (2048,), Pointer(out), np.int32(3))
    with pytest.raises(RuntimeError, match="too many resources requested"):
        dev.run(probe, "barrier_votes", (1,), (32,), Pointer(out), np.int32(3), shared=200 * 1024)  # past the emulated sm_80 opt-in (163 KiB)


# case -> (kernel, buffer elements, an in-bounds index argument, an out-of-bounds one, the error it gives)
_OOB_CASES = {
    "global": ("oob_write", 100, 99, 100, r"(?s)CUDA error in kernel oob_write .*argument 0 .*400-byte buffer\) was "
               r"accessed 0 bytes past the end.*invalid memory access \(AddressSanitizer\).*WRITE of size 4.*oob_write"),
    "shared": ("shared_read<float>", 1, 63, 64, r"(?s)CUDA error in kernel shared_read<float> .*invalid memory access "
               r"\(AddressSanitizer\).*global-buffer-overflow.*READ of size 4.*variable 's'"),
}


def _oob_case(dev, probe, case):
    """Runs the case's out-of-bounds launch (returns the error), then the in-bounds one."""
    name, n, good, bad, _ = _OOB_CASES[case]
    out = dev.put(np.zeros(n, np.float32))
    block = 128 if case == "global" else 64
    try:
        dev.run(probe, name, (1,), (block,), Pointer(out), np.int32(bad))
        err = None
    except RuntimeError as e:
        err = str(e)
    dev.run(probe, name, (1,), (block,), Pointer(out), np.int32(good))  # the process goes on
    return err, dev.get(out, np.float32, n)


_OOB_SCRIPT = """
import sys
sys.path.insert(0, {tests!r})
from test_cuda_emulation import Dev, NAMES, PROBE, _oob_case
from tensorlab.backends.cuda.emulation.driver import EmulationDriver
drv = EmulationDriver()
err, after = _oob_case(Dev(drv), drv.load_module(PROBE, NAMES, ("-std=c++17",), 0), {case!r})
print("ERROR<<", err, ">>ERROR")
print("AFTER", after.sum())
"""


@pytest.mark.parametrize("case", sorted(_OOB_CASES))
def test_out_of_bounds_access_fails_the_launch_with_the_kernel_name(dev, probe, drv, case):
    """Device buffers and static shared memory are bounds checked by AddressSanitizer (in this
    process under the emulated run; else in a child started through the launcher)."""
    pattern = _OOB_CASES[case][-1]
    want_after = 100.0 if case == "global" else 63.0
    if drv.asan:
        err, after = _oob_case(dev, probe, case)
        assert err is not None and re.search(pattern, err), err
        assert after.sum() == want_after
        return
    if build.libasan_path() is None:
        pytest.skip("the compiler has no AddressSanitizer runtime")
    env = build.asan_environment()
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    proc = subprocess.run([sys.executable, "-c", _OOB_SCRIPT.format(tests=str(Path(__file__).parent), case=case)],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    out = proc.stdout
    assert "ERROR<<" in out and re.search(pattern, out.split("ERROR<<")[1].split(">>ERROR")[0]), \
        out[-4000:] + proc.stderr[-4000:]
    assert f"AFTER {want_after}" in out


def test_emulation_is_not_a_gpu_for_users():
    import tensorlab as tl
    from tensorlab import backends
    from tensorlab.device import Device
    if not enabled():
        pytest.skip("checks the emulated run")
    assert tl.cuda.is_available() is False
    be = backends.get(Device("cuda:0"))
    assert be.__name__ == "tensorlab.backends.cuda" and be.driver.name == "emulation"
    assert tl.zeros(2, device="cuda").device == Device("cuda:0")
