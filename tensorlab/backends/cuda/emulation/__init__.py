"""The CUDA emulation driver: the real kernels and the CUDA backend's launch path on the CPU, for CI
(docs/cuda-emulation.md). Switched on with TENSORLAB_CUDA_EMULATION=1; run a command under it with
    python -m tensorlab.backends.cuda.emulation -m pytest tests -m cuda
which also preloads AddressSanitizer so out-of-bounds kernel accesses fail the launch."""
from __future__ import annotations

import os

ENV = "TENSORLAB_CUDA_EMULATION"


def enabled():
    return os.environ.get(ENV) == "1"
