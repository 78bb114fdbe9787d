"""The one function through which the host waits for a device. Every sync point names its reason
(`item`, `tolist`, `cpu`, `nonzero`, ...) so that tl.cuda's sync debug mode and sync trace can
report it. On the CPU nothing is asynchronous and the call returns at once."""
from __future__ import annotations

_hooks = []  # callables(reason, device, phase) installed by tensorlab.cuda (debug mode, tracing)


def host_wait(reason, device):
    if device.type == "cpu":
        return
    from . import backends
    be = backends.get(device)
    for h in _hooks:
        h(reason, device, "before")
    be.synchronize(device)
    for h in _hooks:
        h(reason, device, "after")
