"""torch._C under tensorlab.compat: the few names of torch's C extension that Python packages built on
torch (torchvision, ...) use at import time or on their common paths, with what they mean in tensorlab.

- `_log_api_usage_once(event)`: torch hands the event to an API-usage logger a C++ embedder may
  install; tensorlab has none, so the events are counted here (`api_usage()`), nothing else.
- `_get_tracing_state()`: None, as in torch outside torch.jit.trace (tensorlab does not trace).
- `DispatchKey`, `DispatchKeySet`, `_ExcludeDispatchKeyGuard`: tensorlab has no dispatcher; the one
  key set that changes what an op does here is autocast's, so excluding any Autocast* key suspends
  tensorlab's autocast for the block (as torch's guard skips the autocast kernels); excluding other
  keys changes nothing.
- `DisableTorchFunctionSubclass`: tensorlab has no __torch_function__ dispatch, so there is nothing to
  disable; the block runs as it is.
- `_set_grad_enabled`, `is_grad_enabled`: tensorlab's grad mode."""
from __future__ import annotations

import collections
import enum
import threading

from .autograd import grad_mode

__all__ = ["DispatchKey", "DispatchKeySet", "DisableTorchFunctionSubclass", "api_usage"]

_usage = collections.Counter()
_usage_lock = threading.Lock()


def _log_api_usage_once(event):
    with _usage_lock:
        _usage[str(event)] += 1


def api_usage():
    """The events packages logged through torch._C._log_api_usage_once, with their counts."""
    with _usage_lock:
        return dict(_usage)


def _get_tracing_state():
    return None


def _set_grad_enabled(mode):
    grad_mode.set_grad_enabled(bool(mode))


def is_grad_enabled():
    return grad_mode.is_grad_enabled()


DispatchKey = enum.Enum("DispatchKey", [
    "Undefined", "CPU", "CUDA", "Meta", "XPU", "MPS", "HIP", "PrivateUse1", "Sparse", "SparseCPU", "SparseCUDA",
    "Python", "Functionalize", "Conjugate", "Negative", "ZeroTensor", "ADInplaceOrView", "AutogradOther",
    "AutogradCPU", "AutogradCUDA", "AutogradXPU", "AutogradMPS", "AutogradMeta", "Autograd", "Tracer",
    "AutocastCPU", "AutocastCUDA", "AutocastXPU", "AutocastMPS", "Autocast", "FuncTorchBatched", "Batched",
    "BackendSelect", "CompositeImplicitAutograd", "CompositeExplicitAutograd", "PythonTLSSnapshot",
    "PreDispatch", "PythonDispatcher"])


class DispatchKeySet:
    """A set of DispatchKeys: `|`, `&`, `-`, has(), iteration (tensorlab keeps it as a frozenset)."""

    __slots__ = ("_keys",)

    def __init__(self, key=None):
        if key is None:
            self._keys = frozenset()
        elif isinstance(key, DispatchKeySet):
            self._keys = key._keys
        elif isinstance(key, DispatchKey):
            self._keys = frozenset((key,))
        else:
            raise TypeError(f"DispatchKeySet(): expected a DispatchKey, got {type(key).__name__}")

    @classmethod
    def _of(cls, keys):
        s = cls()
        s._keys = frozenset(keys)
        return s

    def __or__(self, other):
        return DispatchKeySet._of(self._keys | DispatchKeySet(other)._keys)

    def __and__(self, other):
        return DispatchKeySet._of(self._keys & DispatchKeySet(other)._keys)

    def __sub__(self, other):
        return DispatchKeySet._of(self._keys - DispatchKeySet(other)._keys)

    def has(self, key):
        return key in self._keys

    def empty(self):
        return not self._keys

    def __iter__(self):
        return iter(sorted(self._keys, key=lambda k: k.value))

    def __eq__(self, other):
        return isinstance(other, DispatchKeySet) and self._keys == other._keys

    def __hash__(self):
        return hash(self._keys)

    def __repr__(self):
        return f"DispatchKeySet({', '.join(k.name for k in self)})"


class _ExcludeDispatchKeyGuard:
    """Within the block, the given keys are skipped: Autocast* keys suspend tensorlab's autocast."""

    def __init__(self, keyset):
        self._keyset = DispatchKeySet(keyset)
        self._autocast = any(k.name.startswith("Autocast") for k in self._keyset)

    def __enter__(self):
        if self._autocast:
            from .amp import autocast_mode
            autocast_mode._modes()
            autocast_mode._local.suspended += 1
        return self

    def __exit__(self, *exc):
        if self._autocast:
            from .amp import autocast_mode
            autocast_mode._local.suspended -= 1
        return False


class DisableTorchFunctionSubclass:
    """A block in which torch would not dispatch to Tensor subclasses' __torch_function__: tensorlab has
    no such dispatch, so the block runs unchanged."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False
