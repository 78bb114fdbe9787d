"""torch._dynamo.utils: is_compile_supported(device_type), which libraries ask before wrapping a Python
fallback in torch.compile. tl.compile runs every function (backend "eager"), on every device tensorlab
has, so the answer is True for "cpu" and "cuda"."""
from __future__ import annotations

__all__ = ["is_compile_supported"]


def is_compile_supported(device_type):
    """Whether tl.compile can be used for code running on device_type ("cpu", "cuda")."""
    return str(device_type) in ("cpu", "cuda")
