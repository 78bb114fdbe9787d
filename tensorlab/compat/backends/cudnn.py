"""torch.backends.cudnn: accepted settings (tensorlab does not use cuDNN: its convolutions and RNNs
are its own kernels, deterministic and without autotuning, so no flag changes a result).
is_available() is False and version() None, as torch answers without cuDNN."""
import sys as _sys
import types as _types

from . import _flags

enabled = True
benchmark = False
benchmark_limit = 10
deterministic = False
allow_tf32 = True
fp32_precision = "none"
depthwise_kernel = "auto"
conv = _types.SimpleNamespace(fp32_precision="tf32")
rnn = _types.SimpleNamespace(fp32_precision="tf32")


class _CudnnModule(_flags.FlagModule):
    BOOLS = {"enabled": "set_enabled_cudnn", "benchmark": "set_benchmark_cudnn",
             "deterministic": "set_deterministic_cudnn", "allow_tf32": "set_allow_tf32_cublas"}
    FLAGS = ("enabled", "benchmark", "benchmark_limit", "deterministic", "allow_tf32", "fp32_precision",
             "depthwise_kernel")


def is_available():
    return False


def version():
    return None


def is_acceptable(tensor):
    """Whether cuDNN would take this tensor: never (tensorlab has no cuDNN)."""
    return False


def set_flags(_enabled=None, _benchmark=None, _benchmark_limit=None, _deterministic=None, _allow_tf32=None,
              _fp32_precision="none", _depthwise_kernel=None):
    """Set the given flags; returns the previous values (torch's tuple order)."""
    mod = _sys.modules[__name__]
    prev = (mod.enabled, mod.benchmark, mod.benchmark_limit, mod.deterministic, mod.allow_tf32, mod.fp32_precision,
            mod.depthwise_kernel)
    with _flags.allow_mutation():
        for name, value in (("enabled", _enabled), ("benchmark", _benchmark), ("benchmark_limit", _benchmark_limit),
                            ("deterministic", _deterministic), ("allow_tf32", _allow_tf32),
                            ("fp32_precision", _fp32_precision), ("depthwise_kernel", _depthwise_kernel)):
            if value is not None:
                setattr(mod, name, value)
    return prev


def flags(enabled=False, benchmark=False, benchmark_limit=10, deterministic=False, allow_tf32=True,
          fp32_precision="none", depthwise_kernel="auto"):
    """A context manager setting the cuDNN flags for its block, restoring them after."""
    return _flags.flags_context(_sys.modules[__name__], enabled=enabled, benchmark=benchmark,
                                benchmark_limit=benchmark_limit, deterministic=deterministic, allow_tf32=allow_tf32,
                                fp32_precision=fp32_precision, depthwise_kernel=depthwise_kernel)


_flags.install(__name__, _CudnnModule)
