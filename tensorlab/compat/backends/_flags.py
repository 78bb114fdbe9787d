"""The module type of torch.backends' flag modules (cudnn, mkldnn, ...): flag writes are checked as
torch checks them (a bool flag refuses anything but a bool with torch's RuntimeError, a precision
must be one torch knows), then remembered; tensorlab computes the same either way."""
from __future__ import annotations

import contextlib
import sys
import types

_PRECISIONS = ("ieee", "tf32", "none")
_mutation = {"allowed": True}  # torch.backends.disable_global_flags() turns plain assignments off


def disable_global_flags():
    _mutation["allowed"] = False


def flags_frozen():
    return not _mutation["allowed"]


@contextlib.contextmanager
def allow_mutation():
    old = _mutation["allowed"]
    _mutation["allowed"] = True
    try:
        yield
    finally:
        _mutation["allowed"] = old


def check_bool(setter, value):
    if not isinstance(value, bool):
        raise RuntimeError(f"{setter} expects a bool, but got {type(value).__name__}")


def check_precision(value, backend="cuda", extra=()):
    if value not in _PRECISIONS + tuple(extra):
        if value == "bf16":
            raise RuntimeError(f"backend '{backend}' does not support precision 'bf16'")
        raise RuntimeError(f"Unknown precision: {value}")


class FlagModule(types.ModuleType):
    """BOOLS: flag name -> torch's setter name (its error message); PRECISION_EXTRA: precisions
    accepted beyond ieee/tf32/none."""

    BOOLS = {}
    FLAGS = ()  # every flag name (frozen by disable_global_flags outside a flags() block)
    PRECISION_BACKEND = "cuda"
    PRECISION_EXTRA = ()

    def __setattr__(self, name, value):
        if name in self.FLAGS and not _mutation["allowed"]:
            raise RuntimeError(f"not allowed to set {self.__name__.replace('tensorlab.compat', 'torch')} flags after "
                               "disable_global_flags; please use flags() context manager instead")
        if name in self.BOOLS:
            check_bool(self.BOOLS[name], value)
        elif name == "fp32_precision":
            check_precision(value, self.PRECISION_BACKEND, self.PRECISION_EXTRA)
        super().__setattr__(name, value)


def install(module_name, cls):
    sys.modules[module_name].__class__ = cls


@contextlib.contextmanager
def flags_context(module, **values):
    """Set `values` on `module` for a `with` block, then restore the previous values."""
    saved = {k: getattr(module, k) for k in values}
    try:
        with allow_mutation():
            for k, v in values.items():
                setattr(module, k, v)
        yield
    finally:
        for k, v in saved.items():
            module.__dict__[k] = v
