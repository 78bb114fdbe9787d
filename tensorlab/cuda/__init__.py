"""tl.cuda: the user API for CUDA devices, with torch.cuda's names - devices, streams, events,
memory statistics, seeding - plus tensorlab's sync debugging (set_sync_debug_mode, sync_trace).

`is_available()` and `device_count()` never raise; every other call that needs a device raises
RuntimeError naming what to install when CUDA cannot be used. Under the CUDA emulation driver
(TENSORLAB_CUDA_EMULATION=1) everything works on emulated devices but is_available() stays False.
"""
from __future__ import annotations

from ..sync import SyncRecord, SyncTrace, get_sync_debug_mode, set_sync_debug_mode, sync_trace
from ._devices import (current_device, device, device_count, device_of, get_device_capability, get_device_name,
                       get_device_properties, is_available, set_device, synchronize)
from .errors import OutOfMemoryError
from .graphs import CUDAGraph, graph, graph_pool_handle, make_graphed_callables
from .memory import (empty_cache, max_memory_allocated, max_memory_reserved, mem_get_info, memory_allocated,
                     memory_reserved, memory_stats, reset_peak_memory_stats)
from .random import (get_rng_state, get_rng_state_all, initial_seed, manual_seed, manual_seed_all, seed, seed_all,
                     set_rng_state, set_rng_state_all)
from .streams import Event, Stream, StreamContext, current_stream, default_stream, set_stream, stream


def set_check_mode(mode):
    """How device-side checks of device data (index bounds in gather/scatter/index_select/indexing/
    embedding/nll_loss) report a failure: "deferred" (the default) raises at the next point where
    the host waits anyway (synchronize, item, tolist, a copy to the host), naming the op, the value,
    the bound and the call that launched it, with nothing written; "eager" waits for each check and
    raises at the failing call, as CUDA_LAUNCH_BLOCKING=1 (which selects it at startup) does in torch.
    Returns the previous mode."""
    from ..backends.cuda import device_checks
    return device_checks.set_check_mode(mode)


def get_check_mode():
    """The current device check mode, "deferred" or "eager" (see set_check_mode)."""
    from ..backends.cuda import device_checks
    return device_checks.get_check_mode()

__all__ = ["CUDAGraph", "Event", "OutOfMemoryError", "Stream", "StreamContext", "SyncRecord", "SyncTrace", "current_device",
           "current_stream", "default_stream", "device", "device_count", "device_of", "empty_cache",
           "get_device_capability", "get_device_name", "get_device_properties", "get_rng_state",
           "get_rng_state_all", "get_check_mode", "get_sync_debug_mode", "graph", "graph_pool_handle", "initial_seed", "is_available", "make_graphed_callables", "manual_seed",
           "manual_seed_all", "max_memory_allocated", "max_memory_reserved", "mem_get_info", "memory_allocated",
           "memory_reserved", "memory_stats", "reset_peak_memory_stats", "seed", "seed_all", "set_device",
           "set_check_mode", "set_rng_state", "set_rng_state_all", "set_stream", "set_sync_debug_mode", "stream", "sync_trace",
           "synchronize"]
