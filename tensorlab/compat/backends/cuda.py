"""torch.backends.cuda: accepted settings; tensorlab never uses TF32 or reduced-precision reductions."""
import types as _types

from ... import cuda as _cuda

matmul = _types.SimpleNamespace(allow_tf32=False, allow_fp16_reduced_precision_reduction=True,
                                allow_bf16_reduced_precision_reduction=True)
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
