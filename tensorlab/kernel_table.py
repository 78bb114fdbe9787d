"""Which template instantiations each kernel source provides: one row per source file, listing the
C++ name expressions the CUDA backend passes to RawModule(name_expressions=...). CI compiles every
row with NVRTC for sm_80 and sm_90."""
from __future__ import annotations

from . import dtypes

INDEX_TYPES = ("int", "long long")


def _per_dtype(*templates):
    return tuple(f"{t}<{d.ctype}, {ix}>" for t in templates for d in dtypes.ALL for ix in INDEX_TYPES)


KERNELS = {
    "fill.cu": _per_dtype("fill_contiguous", "fill_strided"),
}
