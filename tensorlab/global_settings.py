"""Process-wide settings torch scripts set: deterministic algorithms and the float32 matmul
precision. tensorlab's CPU backend is deterministic and computes float32 matmuls in float32 (NumPy,
no TF32); on CUDA the run-to-run nondeterminism is in kernels that combine floats with atomics
(index_put_/scatter_add_ accumulation: the only ones when this was written): they call
alert_not_deterministic, which refuses (or warns, with warn_only=True) in deterministic mode as
torch's nondeterministic ops do."""
from __future__ import annotations

import threading

from . import _warn

_lock = threading.Lock()
_state = {"deterministic": False, "warn_only": False, "matmul_precision": "highest"}


def use_deterministic_algorithms(mode, *, warn_only=False):
    if not isinstance(mode, bool):
        raise TypeError(f"_set_deterministic_algorithms(): argument 'mode' (position 1) must be bool, not "
                        f"{type(mode).__name__}")
    if not isinstance(warn_only, bool):
        raise TypeError(f"_set_deterministic_algorithms(): argument 'warn_only' must be bool, not "
                        f"{type(warn_only).__name__}")
    with _lock:
        _state["deterministic"], _state["warn_only"] = mode, warn_only


def are_deterministic_algorithms_enabled():
    return _state["deterministic"]


def is_deterministic_algorithms_warn_only_enabled():
    return _state["warn_only"]


def alert_not_deterministic(caller):
    """Called by an op whose result can vary between runs: raises (or warns with warn_only)
    when deterministic algorithms were requested, with torch's message."""
    if not _state["deterministic"]:
        return
    msg = (f"{caller} does not have a deterministic implementation, but you set "
           f"'torch.use_deterministic_algorithms(True)'. You can turn off determinism just for this operation, or "
           f"you can use the 'warn_only=True' option, if that's acceptable for your application.")
    if _state["warn_only"]:
        _warn.warn(msg)
        return
    raise RuntimeError(msg)


def set_float32_matmul_precision(precision):
    """'highest', 'high' or 'medium'. Accepted and reported by get_float32_matmul_precision();
    tensorlab's float32 matmuls always compute in float32 (what 'highest' asks for)."""
    if not isinstance(precision, str):
        raise RuntimeError(f"set_float32_matmul_precision expects a str, but got {type(precision).__name__}")
    if precision not in ("highest", "high", "medium"):
        _warn.warn(f"{precision} is not one of 'highest', 'high', or 'medium'; the current "
                   f"setFloat32MatmulPrecision call has no effect.")
        return
    _state["matmul_precision"] = precision


def get_float32_matmul_precision():
    return _state["matmul_precision"]


__all__ = ["are_deterministic_algorithms_enabled", "get_float32_matmul_precision",
           "is_deterministic_algorithms_warn_only_enabled", "set_float32_matmul_precision",
           "use_deterministic_algorithms"]
