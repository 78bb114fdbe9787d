"""tl.random (torch.random): the default generator's seeding and state (the same functions as tl.*)
and fork_rng, which restores the CPU and CUDA generators' states after its block."""
from __future__ import annotations

import contextlib

from .ops.random import (Generator, default_generator, get_rng_state, initial_seed, manual_seed, seed,  # noqa: F401
                         set_rng_state)

__all__ = ["Generator", "default_generator", "fork_rng", "get_rng_state", "initial_seed", "manual_seed", "seed", "set_rng_state"]


@contextlib.contextmanager
def fork_rng(devices=None, enabled=True, _caller="fork_rng", _devices_kw="devices", device_type="cuda"):
    """Run the block with the CPU generator's state (and the states of `devices` of device_type,
    default: every visible CUDA device) saved, and put them back after it, so random draws inside
    do not change the draws after it. enabled=False: a plain block."""
    if not enabled:
        yield
        return
    if device_type not in ("cuda", "cpu"):
        raise RuntimeError(f"{_caller}: tensorlab has no {device_type} backend; use device_type='cuda'")
    from . import cuda
    if devices is None:
        devices = list(range(cuda.device_count())) if device_type == "cuda" else []
    else:
        from .device import Device
        devices = [d if isinstance(d, int) else (Device(d).index or 0) for d in devices]
    cpu_state = get_rng_state()
    device_states = [cuda.get_rng_state(d) for d in devices]
    try:
        yield
    finally:
        set_rng_state(cpu_state)
        for d, s in zip(devices, device_states):
            cuda.set_rng_state(s, d)
