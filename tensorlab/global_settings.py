"""Process-wide settings torch scripts set: deterministic algorithms and the matmul precision
switches. tensorlab's CPU backend is deterministic and computes float32 matmuls in float32 (NumPy has
no TF32, so the switches change nothing there); on CUDA the switches choose cuBLAS's compute type and
math mode for every product sent to the library (`cuda_gemm_mode`): float32 on TF32 tensor cores when
`set_float32_matmul_precision("high"/"medium")` or torch.backends.cuda.matmul.allow_tf32 asks for it,
float16 with float16 accumulation when allow_fp16_accumulation does, and split-K reductions in reduced
precision only while allow_fp16/bf16_reduced_precision_reduction allow it (torch's defaults). On CUDA the run-to-run nondeterminism is in kernels that combine floats with atomics
(index_put_/scatter_add_ accumulation: the only ones when this was written): they call
alert_not_deterministic, which refuses (or warns, with warn_only=True) in deterministic mode as
torch's nondeterministic ops do."""
from __future__ import annotations

import threading

from . import _warn

_lock = threading.Lock()
_state = {"deterministic": False, "warn_only": False, "matmul_precision": "highest",
          # torch.backends.cuda.matmul's switches (torch's defaults); allow_tf32 is not stored: it reads
          # the precision ("highest" is off), as torch's legacy switch does; fp32_precision "tf32"/"ieee"
          # overrides both, "none" defers to them
          "fp16_reduction": True, "bf16_reduction": True, "fp16_accumulation": False, "fp32_precision": "none"}


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
    """'highest', 'high' or 'medium'. On CUDA 'high' and 'medium' let float32 products run on TF32
    tensor cores (cuBLAS's CUBLAS_COMPUTE_32F_FAST_TF32, as torch does for both); 'highest' keeps them
    in float32. The CPU computes float32 in float32 whatever the setting."""
    if not isinstance(precision, str):
        raise RuntimeError(f"set_float32_matmul_precision expects a str, but got {type(precision).__name__}")
    if precision not in ("highest", "high", "medium"):
        _warn.warn(f"{precision} is not one of 'highest', 'high', or 'medium'; the current "
                   f"setFloat32MatmulPrecision call has no effect.")
        return
    _state["matmul_precision"] = precision


def get_float32_matmul_precision():
    return _state["matmul_precision"]


def set_matmul_switch(name, value):
    """torch.backends.cuda.matmul's switches, stored here (the caller checks the value as torch does):
    allow_tf32 sets the precision ("high" / "highest"), the others are kept as given."""
    with _lock:
        if name == "allow_tf32":
            _state["matmul_precision"] = "high" if value else "highest"
        else:
            _state[name] = value


def matmul_switch(name):
    if name == "allow_tf32":
        return _state["matmul_precision"] != "highest"
    return _state[name]


def cuda_gemm_mode(dtype_name):
    """(compute, reduced_reduction): the cuBLAS compute type for a product of `dtype_name` operands
    under the current switches ("32F", "32F_FAST_TF32", "16F", "64F"), and whether split-K partial
    sums may be reduced in the operands' 16-bit type (cuBLAS's math mode without
    CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)."""
    st = _state
    if dtype_name in ("float32", "complex64"):
        fp32 = st["fp32_precision"]
        tf32 = fp32 == "tf32" or (fp32 == "none" and st["matmul_precision"] != "highest")
        return ("32F_FAST_TF32" if tf32 else "32F"), False
    if dtype_name == "float16":
        return ("16F" if st["fp16_accumulation"] else "32F"), st["fp16_reduction"]
    if dtype_name == "bfloat16":
        return "32F", st["bf16_reduction"]
    return "64F", False


__all__ = ["are_deterministic_algorithms_enabled", "get_float32_matmul_precision",
           "is_deterministic_algorithms_warn_only_enabled", "set_float32_matmul_precision",
           "use_deterministic_algorithms"]
