"""tl.profiler: one context manager, one timeline, a report that names the pitfalls.

torch.profiler's names: `profile`, `record_function`, `ProfilerActivity` (CPU, CUDA),
`supported_activities`, `schedule` with `ProfilerAction` and `profile.step()`.

Files: `_records` (what is kept), `_recording` (where it is heard: op dispatch, fault points, the
CUDA driver, host waits), `cuda_events` (CUDA event pairs on the host clock), `profile` (the user
API), `key_averages` (torch's table), `chrome_trace` (trace-event JSON), `pitfalls` (the report),
`plot` (matplotlib timeline)."""
from .profile import ProfilerAction, ProfilerActivity, profile, record_function, schedule, supported_activities
from .tensorboard import tensorboard_trace_handler  # issue 34: traces for TensorBoard's profiler plugin

__all__ = ("ProfilerAction", "ProfilerActivity", "profile", "record_function", "schedule", "supported_activities",
           "tensorboard_trace_handler")
