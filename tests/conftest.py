"""Every test that takes `device` runs once per available device: "cpu" always, "cuda" when a
GPU (or, later, the CUDA emulation driver) is present, skipped otherwise."""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

import tensorlab as tl


def _cuda_skip_reason():
    """One short line for ~3,700 skips: what is wrong, not the whole remedy (backends.cuda_unavailable_reason()
    and `python -m tensorlab.bench` print that)."""
    try:
        from tensorlab import backends
        d = backends.cuda_diagnosis()
    except Exception as e:  # pragma: no cover
        return f"no CUDA: {type(e).__name__}: {e}"
    return None if d is None else f"no CUDA: {d.what}"


def _cuda_params():
    reason = _cuda_skip_reason()
    marks = [pytest.mark.cuda]
    if reason is not None and os.environ.get("TENSORLAB_CUDA_EMULATION") != "1":
        marks.append(pytest.mark.skip(reason=reason))
    return pytest.param("cuda", marks=marks, id="cuda")


DEVICES = ["cpu", _cuda_params()]


def pytest_configure(config):
    config.addinivalue_line("markers", "cuda: runs on the CUDA backend")
    config.addinivalue_line("markers", "run_last: runs after every other test (tests/test_kernel_coverage.py)")
    config.addinivalue_line("markers", "torch_oracle: compares with torch (.ci/run reruns these under every "
                                       "ATEN_CPU_CAPABILITY, so a path-dependent torch answer is found here)")


@pytest.hookimpl(tryfirst=True)  # before `-m cuda` selects: tests that take the `cuda` fixture run there too
def pytest_collection_modifyitems(config, items):
    for item in items:
        if "cuda" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.cuda)
        if "torch" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.torch_oracle)
    last = [item for item in items if item.get_closest_marker("run_last")]
    if last:
        items[:] = [item for item in items if not item.get_closest_marker("run_last")] + last


@pytest.fixture(params=DEVICES)
def device(request):
    return request.param


@pytest.fixture
def torch():
    """PyTorch as an optional oracle: the test is skipped when torch is not installed."""
    return pytest.importorskip("torch")


@pytest.fixture(autouse=True)
def _seed():
    np.random.seed(0)
    yield
    tl.set_default_dtype(tl.float32)


@pytest.fixture(autouse=True)
def _device_errors_stay_in_their_test():
    """A bad index found on a CUDA device is raised at the next host wait (backends/cuda/
    device_checks.py): one the test never waited for would surface in a later test. Report it here,
    as this test's error."""
    yield
    checks = sys.modules.get("tensorlab.backends.cuda.device_checks")
    if checks is not None and checks.unread():
        try:
            tl.cuda.synchronize()
        except (IndexError, RuntimeError) as e:
            pytest.fail(f"a device-side check failed in this test and nothing waited for the device after it "
                        f"(call device_waits.settle(device) where the error is expected): {e}")


@pytest.fixture(params=["int", "long long"])
def index(request, device):
    """CUDA kernels come in 32- and 64-bit index instantiations: the "long long" parameter forces the
    64-bit ones (tensors of 2**31 elements are out of reach in tests)."""
    if request.param == "long long":
        if device == "cpu":
            pytest.skip("index types are a CUDA kernel choice")
        from tensorlab.backends.cuda import launch
        with launch.wide_indexing():
            yield request.param
        return
    yield request.param


@pytest.fixture
def cuda():
    """A CUDA device, real or emulated (TENSORLAB_CUDA_EMULATION=1); skipped when there is none."""
    from tensorlab import backends
    if not backends.cuda_emulated():
        reason = _cuda_skip_reason()
        if reason is not None:
            pytest.skip(f"{reason} (TENSORLAB_CUDA_EMULATION=1 emulates one)")
    return "cuda"
