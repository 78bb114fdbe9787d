"""The CUDA side of the `lapack` primitive (backends/cpu/lapack.py). tensorlab has no dense
factorization kernels on CUDA yet (no cuSOLVER binding); the primitive exists under the same
name so the backends stay in parity, and refuses with the fix: move the tensor to the CPU."""
from __future__ import annotations

__all__ = ("lapack",)


def lapack(op, outs, ins, params):
    name = params.get("name", f"linalg.{op}")
    dev = ins[0].device if ins else "cuda"
    raise RuntimeError(f"{name}: not implemented on CUDA in tensorlab yet (input on {dev}); move the tensor to the "
                       f"CPU with .cpu()")
