"""Backend lookup: a device type maps to a module exposing the same primitive names.
The CUDA backend is imported lazily, so `import tensorlab` never needs CuPy."""
from __future__ import annotations

import os

from . import cpu

_cuda = None


def cuda_diagnosis():
    """Why CUDA cannot be used here (a diagnosis.Diagnosis: case, what, action), or None when it can."""
    from .diagnosis import diagnose
    return diagnose()


def cuda_unavailable_reason():
    """Why CUDA cannot be used here and what to do, in one line, or None when it can."""
    d = cuda_diagnosis()
    return None if d is None else str(d)


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
