"""Which build of the hot path runs: the compiled one (Cython, from the same .py sources, built by
setup.py where Cython and a C compiler exist) or the pure-Python one (the .py files themselves).

HOT_PATH names the modules setup.py compiles, each from its .py file unchanged (no second copy of
any logic; a sibling .pxd may declare C types for it). A module is listed only where measurement
says its compiled build is faster: untyped Cython code reads attributes through the generic
PyObject_GetAttr, which CPython 3.11's specializing interpreter beats on slotted objects, so the
attribute-bound dispatch (ops/elementwise.py's fast paths, tensor.py, autograd_hooks.py, the CPU
primitives) measured 0-27% SLOWER compiled (docs/ARCHITECTURE.md, "Compiled hot path"), while the
integer shape/stride math of layout.py is 1.3-5x faster. Typed state (the tensor's fields and the
elementwise row as extension types in .pxd files, the fast paths with C-typed locals) measured no
faster either and is not built (same section).

TENSORLAB_PURE_PYTHON=1 (any value but "" and "0") makes `import tensorlab` load the .py sources
even where the compiled modules exist, so the fallback can be tested from the same installation:
this module is imported first by tensorlab/__init__.py and puts a finder ahead of the extension
finder for exactly these module names.

A compiled module older than its .py source (the checkout edited after the build) is not loaded:
the source is, and `describe()` says so (rebuild: `pip install -e .` or `python setup.py build_ext
--inplace`). `compiled` is True when every hot-path module that is imported runs compiled, `modules()` says
module by module; `describe()` is the line the benchmark header prints."""
from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys

HOT_PATH = (
    "tensorlab.layout",         # shape/stride math: 1.3-5x faster compiled (broadcast_shapes, strides, wrap_dim)
    "tensorlab.ops.indexing",   # Tensor.__getitem__'s basic-key path: not slower compiled (the view chain)
)

ENV = "TENSORLAB_PURE_PYTHON"
_ENV_VALUE = os.environ.get(ENV, "")
PURE_REQUESTED = _ENV_VALUE not in ("", "0")
# a comma-separated list of hot-path module names loads just those from source (measuring one
# module's compiled build against its source); any other value, all of them
_PURE = frozenset(n for n in _ENV_VALUE.split(",") if n in HOT_PATH) if "tensorlab." in _ENV_VALUE else \
    frozenset(HOT_PATH) if PURE_REQUESTED else frozenset()


class _SourceFirst:
    """A meta-path finder that answers for the hot-path modules with their .py source (the
    default finders try extension modules before sources): for the modules TENSORLAB_PURE_PYTHON
    names, and for any whose compiled module is older than its source (a checkout edited after
    `pip install -e .` or `setup.py build_ext --inplace`: the stale build must not run)."""

    @staticmethod
    def find_spec(name, path=None, target=None):
        if name not in _NAMES or not path:
            return None
        leaf = name.rpartition(".")[2]
        for entry in path:
            source = os.path.join(entry, leaf + ".py")
            if not os.path.isfile(source):
                continue
            if name not in _PURE:
                if not _CHECKOUT:  # an installed wheel: its files' times are the install's, not the build's
                    return None
                built = [os.path.join(entry, leaf + s) for s in importlib.machinery.EXTENSION_SUFFIXES]
                built = [b for b in built if os.path.isfile(b)]
                if not built or os.path.getmtime(built[0]) >= os.path.getmtime(source):
                    return None  # the default finders load the compiled module
                STALE.add(name)
            return importlib.util.spec_from_file_location(name, source)
        return None

    @staticmethod
    def invalidate_caches():
        pass


_NAMES = frozenset(HOT_PATH)
# running from a checkout (setup.py beside the package), where an edit can postdate the in-place build
_CHECKOUT = os.path.isfile(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "setup.py"))
STALE = set()  # hot-path modules loaded from source because their compiled module is older
if not any(isinstance(f, _SourceFirst) for f in sys.meta_path):
    sys.meta_path.insert(0, _SourceFirst())


def _is_compiled(module):
    return not (getattr(module, "__file__", None) or "").endswith(".py")


def modules():
    """{module name: True (compiled) / False (the .py source)} of the hot-path modules imported."""
    return {name: _is_compiled(sys.modules[name]) for name in HOT_PATH if name in sys.modules}


def __getattr__(name):
    if name == "compiled":  # read when asked: the modules are imported after this one
        m = modules()
        return bool(m) and all(m.values())
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def describe():
    """'compiled (14 modules, Cython)', 'pure Python (TENSORLAB_PURE_PYTHON=1)', 'pure Python (not
    built)' or 'mixed (...)': the build the benchmark header names."""
    m = modules()
    n = sum(m.values())
    if m and n == len(m):
        return f"compiled hot path ({n} modules, Cython)"
    if STALE:
        return f"mixed hot path ({', '.join(sorted(STALE))} loaded from source: older compiled build, rebuild it)"
    if n == 0:
        return f"pure-Python hot path ({ENV}=1)" if PURE_REQUESTED else "pure-Python hot path (compiled modules not built)"
    return f"mixed hot path ({n} of {len(m)} modules compiled: {', '.join(k for k, v in m.items() if not v)} not)"
