"""settle(device): wait for the device, as a test must before it expects an error found on the device.

On CUDA, index bounds are checked by the device without a host wait (backends/cuda/device_checks.py):
a bad index raises at the next point where the host waits, not at the op's line. Tests written once
for every device call settle(device) inside `pytest.raises` after the op; on the CPU it does nothing
(the error came at the call). The version counter of an in-place target counts the write when it is
launched, so on CUDA it has moved although the data is unchanged."""
from __future__ import annotations

import tensorlab as tl


def settle(device):
    if str(device).startswith("cuda"):
        tl.cuda.synchronize()


def version_kept(t, before, device):
    """The version counter after a failed in-place op: unchanged on the CPU; on CUDA the launch
    counted the write (the device found the bad index later), so one bump at most per attempt."""
    return t._version == before if not str(device).startswith("cuda") else t._version >= before


def settle_all():
    """Wait for every device a device-side check ran on since the host last waited (no device named)."""
    import sys
    checks = sys.modules.get("tensorlab.backends.cuda.device_checks")
    if checks is not None and checks.unread():
        tl.cuda.synchronize()
