"""torch.backends.cuda: the matmul switches choose cuBLAS's compute type for CUDA products
(tensorlab.global_settings.cuda_gemm_mode); the attention switches are accepted and read back."""

from ... import cuda as _cuda
from ... import global_settings as _settings
from . import _flags


class _Matmul:
    """torch.backends.cuda.matmul: its attributes, each checked as torch checks it and kept in
    tensorlab.global_settings (allow_tf32 is the float32 matmul precision seen as a bool, as torch's
    legacy switch is)."""

    _BOOLS = {"allow_tf32": "set_allow_tf32_cublas",
              "allow_fp16_reduced_precision_reduction": "set_allow_fp16_reduction_cublas",
              "allow_bf16_reduced_precision_reduction": "set_allow_bf16_reduction_cublas",
              "allow_fp16_accumulation": "set_allow_fp16_accumulation_cublas"}
    _KEYS = {"allow_tf32": "allow_tf32", "allow_fp16_reduced_precision_reduction": "fp16_reduction",
             "allow_bf16_reduced_precision_reduction": "bf16_reduction",
             "allow_fp16_accumulation": "fp16_accumulation", "fp32_precision": "fp32_precision"}

    def __getattr__(self, name):
        key = self._KEYS.get(name)
        if key is None:
            raise AttributeError(f"Unknown attribute {name}")
        return _settings.matmul_switch(key)

    def __setattr__(self, name, value):
        if name in self._BOOLS:
            _flags.check_bool(self._BOOLS[name], value)
        elif name == "fp32_precision":
            _flags.check_precision(value)
        else:
            raise AttributeError(f"Unknown attribute {name}")
        _settings.set_matmul_switch(self._KEYS[name], value)


matmul = _Matmul()
_sdp = {"flash": True, "mem_efficient": True, "math": True, "cudnn": True}


def is_built():
    return True


def is_available():
    return _cuda.is_available()


def enable_flash_sdp(enabled):
    _sdp["flash"] = bool(enabled)


def flash_sdp_enabled():
    return _sdp["flash"]


def enable_mem_efficient_sdp(enabled):
    _sdp["mem_efficient"] = bool(enabled)


def mem_efficient_sdp_enabled():
    return _sdp["mem_efficient"]


def enable_math_sdp(enabled):
    _sdp["math"] = bool(enabled)


def math_sdp_enabled():
    return _sdp["math"]


def enable_cudnn_sdp(enabled):
    _sdp["cudnn"] = bool(enabled)


def cudnn_sdp_enabled():
    return _sdp["cudnn"]


def is_flash_attention_available():
    """False: tensorlab's attention is its own kernel, not FlashAttention."""
    return False


def can_use_flash_attention(params=None, debug=False):
    return False


def can_use_efficient_attention(params=None, debug=False):
    return False


def can_use_cudnn_attention(params=None, debug=False):
    return False


class sdp_kernel:
    """The deprecated context manager choosing scaled_dot_product_attention backends: sets the
    enable_*_sdp switches for its block (tensorlab computes attention one way either way)."""

    def __init__(self, enable_flash=True, enable_math=True, enable_mem_efficient=True, enable_cudnn=True):
        self._want = {"flash": enable_flash, "math": enable_math, "mem_efficient": enable_mem_efficient,
                      "cudnn": enable_cudnn}

    def __enter__(self):
        self._saved = dict(_sdp)
        _sdp.update({k: bool(v) for k, v in self._want.items()})
        return self

    def __exit__(self, *exc):
        _sdp.update(self._saved)
        return False


_linalg = ["default"]
_blas = ["cublas"]


def preferred_linalg_library(backend=None):
    """Accepted: 'default', 'cusolver' or 'magma' (tensorlab's linalg goes through cuSOLVER); returns the choice."""
    if backend is not None:
        name = str(backend).rpartition(".")[2].lower()
        if name not in ("default", "cusolver", "magma"):
            raise RuntimeError(f"Unknown input value. Choose from: default, cusolver, magma; got {backend!r}")
        _linalg[0] = name
    return _linalg[0]


def preferred_blas_library(backend=None):
    """Accepted: 'cublas', 'cublaslt' or 'ck'; returns the choice (tensorlab calls cuBLAS)."""
    if backend is not None:
        name = str(backend).rpartition(".")[2].lower()
        if name not in ("cublas", "cublaslt", "ck", "default"):
            raise RuntimeError(f"Unknown input value. Choose from: cublas, cublaslt, ck; got {backend!r}")
        _blas[0] = "cublas" if name == "default" else name
    return _blas[0]


class _PlanCache:
    """cufft_plan_cache: tensorlab leaves cuFFT plan caching to CuPy; max_size is remembered."""

    def __init__(self):
        self.max_size = 4096
        self.size = 0

    def clear(self):
        self.size = 0

    def __getitem__(self, device):
        return self


cufft_plan_cache = _PlanCache()
