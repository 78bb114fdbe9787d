"""torch.version under tensorlab.compat: __version__ is the torch release whose semantics tensorlab
follows, with tensorlab's own version as the local label ("2.13.0+tensorlab0.1.0"), so version
checks in scripts (`>= 2.0`) see the API they expect and a printed version says what runs. cuda
is the CUDA runtime CuPy was built for when CUDA can run (None otherwise, as a CPU torch build)."""
from __future__ import annotations

from .. import __version__ as _tl_version

TORCH_API_VERSION = "2.13.0"


def _release(v):
    """(2, 13, 0) from "2.13.0+local", "2.13", (2, 13): the numeric release, zero-padded."""
    if isinstance(v, tuple):
        parts = [int(x) for x in v]
    else:
        head = str(v).split("+")[0]
        parts = []
        for piece in head.split("."):
            digits = ""
            for ch in piece:
                if not ch.isdigit():
                    break
                digits += ch
            if not digits:
                break
            parts.append(int(digits))
            if digits != piece:
                break
    return tuple(parts + [0] * (3 - len(parts)))


class TorchVersion(str):
    """A str that compares as a version, as torch's TorchVersion: against strings ("2.9" < "2.13")
    and tuples ((2, 0)); with `packaging` installed, by its full rules (pre-releases, local labels)."""

    def _key(self, other):
        if isinstance(other, tuple):
            other = ".".join(str(int(x)) for x in other)
        if not isinstance(other, str):
            return None
        try:
            from packaging.version import Version
            return Version(str(self)), Version(str(other))
        except Exception:  # no packaging, or a string it cannot parse
            return _release(self), _release(other)

    def _cmp(self, other, op):
        keys = self._key(other)
        if keys is None:
            return NotImplemented
        return op(*keys)

    def __lt__(self, other):
        return self._cmp(other, lambda a, b: a < b)

    def __le__(self, other):
        return self._cmp(other, lambda a, b: a <= b)

    def __gt__(self, other):
        return self._cmp(other, lambda a, b: a > b)

    def __ge__(self, other):
        return self._cmp(other, lambda a, b: a >= b)

    def __eq__(self, other):
        r = self._cmp(other, lambda a, b: a == b)
        return str.__eq__(self, other) if r is NotImplemented else r

    def __ne__(self, other):
        r = self.__eq__(other)
        return r if r is NotImplemented else not r

    __hash__ = str.__hash__


__version__ = TorchVersion(f"{TORCH_API_VERSION}+tensorlab{_tl_version}")
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
