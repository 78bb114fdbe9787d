"""The driver instance every part of the CUDA backend uses: the emulation driver when
TENSORLAB_CUDA_EMULATION=1 (CI without a GPU), else CuPy's. Both construct without touching a
device (CuPy is imported, and the emulation runtime built, on first use)."""
from __future__ import annotations

from . import emulation


def _select():
    if emulation.enabled():
        from .emulation import simulated
        if simulated.enabled():  # TENSORLAB_CUDA_EMULATION_ASYNC=1: a device thread, work queued (teaching)
            return simulated.SimulatedDriver()
        from .emulation.driver import EmulationDriver
        return EmulationDriver()
    from .cupy_driver import CupyDriver
    return CupyDriver()


driver = _select()
