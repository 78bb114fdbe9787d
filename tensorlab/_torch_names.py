"""Top-level torch names that scripts call for their settings or test for capabilities, and that
change nothing in a tensorlab run, each with torch's signature and answer (re-exported by
tensorlab/__init__.py): the default device, capability flags, warning and debug modes, thread
settings, typename, the legacy default-tensor-type switch, the Tensor predicates as functions."""
from __future__ import annotations

import threading

from . import _tensor_names
from .default_device import get_default_device, set_default_device  # noqa: F401  (re-exported)
from .nn._grad import typename  # noqa: F401  (torch.typename)
from .cuda.errors import OutOfMemoryError  # noqa: F401  (torch.OutOfMemoryError is torch.cuda.OutOfMemoryError)
from .func import vmap  # noqa: F401  (torch.vmap is torch.func.vmap)
from .window_functions import bartlett_window, blackman_window, hamming_window, hann_window  # noqa: F401

__all__ = ["set_default_device", "get_default_device", "is_vulkan_available", "compiled_with_cxx11_abi",
           "has_mkl", "has_lapack", "has_openmp", "has_spectral", "has_mkldnn", "has_cuda", "has_cudnn", "newaxis",
           "typename", "is_storage", "set_warn_always", "is_warn_always_enabled", "get_num_interop_threads",
           "set_num_interop_threads", "init_num_threads", "set_flush_denormal", "set_deterministic_debug_mode",
           "get_deterministic_debug_mode", "set_anomaly_enabled", "is_anomaly_enabled",
           "is_anomaly_check_nan_enabled", "set_default_tensor_type", "get_device_module", "is_nonzero",
           "is_same_size", "is_neg", "is_distributed", "OutOfMemoryError", "vmap",
           "bartlett_window", "blackman_window", "hamming_window", "hann_window"]



def _install_op_aliases():
    """torch's alias names of ops tensorlab has (torch.absolute is torch.abs, torch.fix_ is torch.trunc_, ...),
    taken from the package namespace the ops were installed in before this module is imported."""
    import sys

    from .tensor import Tensor
    _tensor_names.install_aliases(Tensor)
    package = sys.modules[__package__]
    for alias, base in _tensor_names.OP_ALIASES.items():
        for suffix in ("", "_"):
            fn = getattr(package, base + suffix, None)
            if fn is not None and not hasattr(package, alias + suffix):
                globals()[alias + suffix] = fn
                __all__.append(alias + suffix)


_install_op_aliases()

# capability flags (torch.has_*: deprecated module attributes torch still answers)
has_mkl = False       # tensorlab's CPU backend is NumPy (its BLAS), not MKL
has_lapack = True     # linalg solvers through NumPy/SciPy LAPACK
has_openmp = False
has_spectral = True   # tl.fft
has_mkldnn = False
has_cuda = True       # the CUDA backend is built in (CuPy decides at run time: tl.cuda.is_available())
has_cudnn = False
newaxis = None        # torch.newaxis (x[:, torch.newaxis])


def is_vulkan_available():
    """False: tensorlab has no Vulkan backend."""
    return False


def compiled_with_cxx11_abi():
    """True, as torch's wheels answer (tensorlab's kernels are compiled at run time; nothing links to libtorch)."""
    return True


def is_storage(obj):
    """Whether obj is a storage (tl.UntypedStorage)."""
    from .storage import UntypedStorage
    return isinstance(obj, UntypedStorage)


_warn_always = [False]


def set_warn_always(b):
    """torch.set_warn_always: remembered and reported; tensorlab's warnings go through Python's
    warnings module, whose filters decide repetition."""
    _warn_always[0] = bool(b)


def is_warn_always_enabled():
    """Whether set_warn_always(True) was called."""
    return _warn_always[0]


_interop = {"threads": None, "used": False}
_interop_lock = threading.Lock()


def get_num_interop_threads():
    """The inter-op thread count torch reports (tensorlab runs ops one after another on the calling thread:
    the value is remembered, never used)."""
    from .backends.cpu.parallel import get_num_threads
    return _interop["threads"] if _interop["threads"] is not None else get_num_threads()


def set_num_interop_threads(num):
    """Remember the inter-op thread count (a positive int; tensorlab has no inter-op pool)."""
    if isinstance(num, bool) or not isinstance(num, int):
        raise TypeError(f"set_num_interop_threads(): argument 'num' (position 1) must be int, not "
                        f"{type(num).__name__}")
    if num <= 0:
        raise RuntimeError("Expected positive number of threads")
    with _interop_lock:
        _interop["threads"] = num


def init_num_threads():
    """No-op, as in torch after the first call (the CPU backend's pool starts on first use)."""


def set_flush_denormal(mode):
    """Whether flushing denormals to zero is supported and was set: False (NumPy computes with
    denormals; the CPU's FTZ/DAZ flags are not changed)."""
    return False


_DEBUG_MODES = {"default": 0, "warn": 1, "error": 2}


def set_deterministic_debug_mode(debug_mode):
    """torch's alias over use_deterministic_algorithms: 'default'/0 off, 'warn'/1 warn only, 'error'/2 on."""
    from .global_settings import use_deterministic_algorithms
    if isinstance(debug_mode, str):
        if debug_mode not in _DEBUG_MODES:
            raise RuntimeError("invalid value of debug_mode, expected one of `default`, `warn`, `error`, but got "
                               f"{debug_mode}")
        debug_mode = _DEBUG_MODES[debug_mode]
    elif isinstance(debug_mode, bool) or not isinstance(debug_mode, int):
        raise TypeError(f"debug_mode must be str or int, but got {type(debug_mode).__name__}")
    if debug_mode not in (0, 1, 2):
        raise RuntimeError(f"invalid value of debug_mode, expected 0, 1, or 2, but got {debug_mode}")
    use_deterministic_algorithms(debug_mode != 0, warn_only=debug_mode == 1)


def get_deterministic_debug_mode():
    """0 (deterministic algorithms off), 1 (warn only) or 2 (error), as torch."""
    from .global_settings import are_deterministic_algorithms_enabled, is_deterministic_algorithms_warn_only_enabled
    if not are_deterministic_algorithms_enabled():
        return 0
    return 1 if is_deterministic_algorithms_warn_only_enabled() else 2


def set_anomaly_enabled(enabled, check_nan=True):
    """torch.set_anomaly_enabled (the switch autograd.set_detect_anomaly sets)."""
    from .autograd.anomaly import set_detect_anomaly
    set_detect_anomaly(enabled, check_nan)


def is_anomaly_enabled():
    """Whether autograd anomaly detection is on."""
    from .autograd.anomaly import is_anomaly_enabled as on
    return on()


def is_anomaly_check_nan_enabled():
    """Whether anomaly detection also checks for NaN results."""
    from .autograd.anomaly import is_anomaly_check_nan_enabled as on
    return on()


def set_default_tensor_type(t):
    """torch.set_default_tensor_type (deprecated in torch): a floating tensor type or its name sets
    the default dtype (and, for torch.cuda.*Tensor, the default device)."""
    from . import dtypes
    name = t if isinstance(t, str) else getattr(t, "__name__", None)
    if isinstance(t, str) or not hasattr(t, "dtype"):
        table = {"FloatTensor": dtypes.float32, "DoubleTensor": dtypes.float64, "HalfTensor": dtypes.float16,
                 "BFloat16Tensor": dtypes.bfloat16}
        base = str(name).rpartition(".")[2]
        if base not in table:
            raise TypeError(f"invalid type: '{name}'; set_default_tensor_type takes a floating tensor type such as "
                            "torch.FloatTensor or 'torch.cuda.DoubleTensor'")
        dt, cuda = table[base], ".cuda." in str(name)
    else:
        dt, cuda = t.dtype, getattr(t, "is_cuda", False)
    if not dt.is_floating_point:
        raise TypeError("only floating-point types are supported as the default type")
    dtypes.set_default_dtype(dt)
    set_default_device("cuda" if cuda else None)


def get_device_module(device=None):
    """The module of a device type: tl.cuda for 'cuda', tl.cpu for 'cpu' (None: the default device's)."""
    from .device import Device
    if device is None:
        device = get_default_device()
    kind = device if isinstance(device, str) and ":" not in device else Device(device).type
    if kind == "cuda":
        from . import cuda
        return cuda
    if kind == "cpu":
        from . import cpu
        return cpu
    raise RuntimeError(f"Device '{kind}' does not have a corresponding module registered as 'torch.{kind}'.")


def is_nonzero(input):
    """Whether a one-element tensor is nonzero (Tensor.is_nonzero)."""
    return _tensor_names.is_nonzero(input)


def is_same_size(input, other):
    """Whether two tensors have the same shape."""
    return _tensor_names.is_same_size(input, other)


def is_neg(input):
    """False: tensorlab has no lazy negation bit."""
    return _tensor_names.is_neg(input)


def is_distributed(input):
    """False: a tensor lives on one device of one process."""
    return _tensor_names.is_distributed(input)
