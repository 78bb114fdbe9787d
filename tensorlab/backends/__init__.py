"""Backend lookup: a device type maps to a module exposing the same primitive names.
The CUDA backend is imported lazily, so `import tensorlab` never needs CuPy."""
from __future__ import annotations

import os

from . import cpu

_cuda = None


def cuda_unavailable_reason():
    """Why CUDA cannot be used here, or None when it can."""
    try:
        import cupy  # noqa: F401
    except Exception as e:  # ImportError, or a CuPy that fails to load its CUDA libraries
        return (f"CuPy could not be imported ({type(e).__name__}: {e}). Install tensorlab with the extra that "
                "matches your CUDA driver: pip install 'tensorlab[cuda12]' or 'tensorlab[cuda13]'")
    try:
        import cupy
        n = cupy.cuda.runtime.getDeviceCount()
    except Exception as e:
        return (f"CuPy is installed but found no usable CUDA device ({type(e).__name__}: {e}). Check nvidia-smi; "
                "an 'insufficient driver' error means the CuPy wheel is for a newer CUDA than the driver "
                "supports: install the extra that matches the driver, 'tensorlab[cuda12]' or 'tensorlab[cuda13]'")
    if n == 0:
        return "CuPy is installed but found no CUDA device"
    try:
        from . import cuda  # noqa: F401
    except ImportError as e:
        return f"tensorlab's CUDA backend is not available in this build ({e})"
    return None


def cuda_emulated():
    """TENSORLAB_CUDA_EMULATION=1: the CUDA backend runs on the emulation driver (test
    infrastructure, docs/cuda-emulation.md); tl.cuda.is_available() still reports real GPUs only."""
    return os.environ.get("TENSORLAB_CUDA_EMULATION") == "1"


def load_cuda():
    global _cuda
    if _cuda is None:
        if not cuda_emulated():
            reason = cuda_unavailable_reason()
            if reason is not None:
                raise RuntimeError(f"CUDA was asked for but is not available: {reason}")
        from . import cuda
        _cuda = cuda
    return _cuda


def get(device):
    """The backend module for a Device."""
    if device.type == "cpu":
        return cpu
    return load_cuda()


def cuda_current_device():
    return load_cuda().current_device()
