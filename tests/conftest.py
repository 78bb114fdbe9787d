"""Every test that takes `device` runs once per available device: "cpu" always, "cuda" when a
GPU (or, later, the CUDA emulation driver) is present, skipped otherwise."""
from __future__ import annotations

import os

import numpy as np
import pytest

import tensorlab as tl


def _cuda_params():
    reason = None
    try:
        from tensorlab import backends
        reason = backends.cuda_unavailable_reason()
    except Exception as e:  # pragma: no cover
        reason = str(e)
    marks = [pytest.mark.cuda]
    if reason is not None and os.environ.get("TENSORLAB_CUDA_EMULATION") != "1":
        marks.append(pytest.mark.skip(reason=f"no CUDA: {reason}"))
    return pytest.param("cuda", marks=marks, id="cuda")


DEVICES = ["cpu", _cuda_params()]


def pytest_configure(config):
    config.addinivalue_line("markers", "cuda: runs on the CUDA backend")
    config.addinivalue_line("markers", "run_last: runs after every other test (tests/test_kernel_coverage.py)")


def pytest_collection_modifyitems(config, items):
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
