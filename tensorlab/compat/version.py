"""torch.version under tensorlab.compat: __version__ is the torch release whose semantics tensorlab
follows, with tensorlab's own version as the local label ("2.13.0+tensorlab0.1.0"), so version
checks in scripts (`>= 2.0`) see the API they expect and a printed version says what runs. cuda
is the CUDA runtime CuPy was built for when CUDA can run (None otherwise, as a CPU torch build)."""
from __future__ import annotations

from .. import __version__ as _tl_version

TORCH_API_VERSION = "2.13.0"
__version__ = f"{TORCH_API_VERSION}+tensorlab{_tl_version}"
git_version = "unknown"
hip = None
debug = False


def __getattr__(name):
    if name == "cuda":
        from .. import cuda
        if not cuda.is_available():
            return None
        try:
            import cupy
            v = cupy.cuda.runtime.runtimeGetVersion()
            return f"{v // 1000}.{v % 1000 // 10}"
        except Exception:
            return None
    raise AttributeError(f"tensorlab does not implement torch.version.{name} yet")
