"""Device times from CUDA events, on the host's clock.

Each kernel and copy gets a pair of timing events recorded on its own stream, before and after it;
nothing waits while the program runs. Per device, one origin event is recorded right after a single
device synchronize (the first time the profile sees that device), at a known host time; when the
profile ends, one synchronize per device, and every pair is read as elapsed times from the origin:
device start/end on the same clock as the host records (time.perf_counter). Under the emulation
driver the events are the emulated stream's."""
from __future__ import annotations

import time

_clock = time.perf_counter


class DeviceClock:
    def __init__(self):
        self.origins = {}  # device index -> (origin event, host time)
        self.pending = []  # records whose .events pair is still unread

    def __bool__(self):
        return bool(self.origins)

    def begin(self, drv, device, stream):
        """The start event of a pair on `stream` (after the device's origin exists)."""
        if device not in self.origins:
            drv.device_synchronize(device)  # once per device and profile: the origin's host time is exact
            e = drv.create_event(True, False)
            drv.event_record(e, stream)
            self.origins[device] = (e, _clock())
        e0 = drv.create_event(True, False)
        drv.event_record(e0, stream)
        return e0

    def end(self, drv, stream, e0, rec):
        e1 = drv.create_event(True, False)
        drv.event_record(e1, stream)
        rec.events = (e0, e1)
        self.pending.append(rec)

    def resolve(self, drv):
        """Wait once per device, then fill dev_start/dev_end of every record from its pair."""
        if drv is None or not self.origins:
            return
        for dev in self.origins:
            drv.device_synchronize(dev)
        for rec in self.pending:
            e, t = self.origins[rec.device]
            e0, e1 = rec.events
            rec.dev_start = t + drv.event_elapsed_ms(e, e0) / 1e3
            rec.dev_end = t + drv.event_elapsed_ms(e, e1) / 1e3
            rec.events = None
        self.pending = []
