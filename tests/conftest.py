"""Every test that takes `device` runs once per available device: "cpu" always, "cuda" when a
GPU (or, later, the CUDA emulation driver) is present, skipped otherwise."""
from __future__ import annotations

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
    if reason is not None:
        marks.append(pytest.mark.skip(reason=f"no CUDA: {reason}"))
    return pytest.param("cuda", marks=marks, id="cuda")


DEVICES = ["cpu", _cuda_params()]


def pytest_configure(config):
    config.addinivalue_line("markers", "cuda: runs on the CUDA backend")


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
