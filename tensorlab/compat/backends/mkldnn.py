"""torch.backends.mkldnn (oneDNN): tensorlab's CPU backend is NumPy, so is_available() is False;
the flags are accepted and remembered."""
import sys as _sys

from . import _flags

enabled = True
deterministic = False
allow_tf32 = None
fp32_precision = "none"
VERBOSE_OFF, VERBOSE_ON, VERBOSE_ON_CREATION = 0, 1, 2


class _MkldnnModule(_flags.FlagModule):
    BOOLS = {"enabled": "set_enabled_mkldnn", "deterministic": "set_deterministic_mkldnn"}
    FLAGS = ("enabled", "deterministic", "allow_tf32", "fp32_precision")
    PRECISION_BACKEND = "mkldnn"
    PRECISION_EXTRA = ("bf16",)


def is_available():
    return False


def set_flags(_enabled=None, _deterministic=None, _allow_tf32=None, _fp32_precision="none"):
    mod = _sys.modules[__name__]
    prev = (mod.enabled, mod.deterministic, mod.allow_tf32, mod.fp32_precision)
    with _flags.allow_mutation():
        for name, value in (("enabled", _enabled), ("deterministic", _deterministic), ("allow_tf32", _allow_tf32),
                            ("fp32_precision", _fp32_precision)):
            if value is not None:
                setattr(mod, name, value)
    return prev


def flags(enabled=False, deterministic=False, allow_tf32=True, fp32_precision="none"):
    """A context manager setting the oneDNN flags for its block."""
    return _flags.flags_context(_sys.modules[__name__], enabled=enabled, deterministic=deterministic,
                                allow_tf32=allow_tf32, fp32_precision=fp32_precision)


class verbose:
    """torch.backends.mkldnn.verbose(level): accepted; tensorlab has no oneDNN to make verbose."""

    def __init__(self, enable):
        self.enable = enable

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


_flags.install(__name__, _MkldnnModule)
