"""Where the CUDA C sources live: inside the installed package (tensorlab/kernels, shipped by the
wheel from the top-level kernels/ folder) or, in a source checkout, the repository's kernels/."""
from __future__ import annotations

from pathlib import Path


def kernel_dir() -> Path:
    here = Path(__file__).resolve().parent
    for cand in (here / "kernels", here.parent / "kernels"):
        if (cand / "tensorlab" / "common.cuh").is_file():
            return cand
    raise RuntimeError(f"tensorlab's CUDA kernel sources were not found next to {here}; reinstall tensorlab "
                       "(the wheel ships them as tensorlab/kernels)")


def kernel_sources():
    """Every kernel translation unit (kernels/*.cu), sorted by name."""
    return sorted(kernel_dir().glob("*.cu"))
