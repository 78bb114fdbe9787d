"""tensorlab._dynamo (torch._dynamo): the calls scripts make around compilation. tensorlab runs
eagerly: optimize() is tl.compile (backend "eager" returns the function unchanged, other backends
are refused as tl.compile refuses them), disable/reset/mark_dynamic change nothing, and
is_dynamo_supported() is False so scripts that ask skip compiling."""
from __future__ import annotations

from .. import compiler as _compiler
from .._compile import compile as _compile
from . import config  # noqa: F401

disable = _compiler.disable
allow_in_graph = _compiler.allow_in_graph
assume_constant_result = _compiler.assume_constant_result
is_compiling = _compiler.is_compiling
list_backends = _compiler.list_backends

__all__ = ["config", "reset", "disable", "optimize", "is_compiling", "is_dynamo_supported", "is_inductor_supported",
           "mark_dynamic", "maybe_mark_dynamic", "mark_static", "mark_static_address", "allow_in_graph",
           "disallow_in_graph", "graph_break", "assume_constant_result", "list_backends", "reset_code_caches"]


def reset():
    """Nothing to clear: there are no compiled frames."""


def reset_code_caches():
    """Nothing to clear."""


def optimize(backend="eager", *, nopython=False, guard_export_fn=None, guard_fail_fn=None, guard_filter_fn=None,
             disable=False, dynamic=None, rebuild_ctx=None, package=None):
    """A decorator compiling with tl.compile(backend=...): "eager" returns the function unchanged."""
    def decorate(fn):
        return _compile(fn, backend=backend, disable=disable, dynamic=dynamic, fullgraph=nopython)
    return decorate


def is_dynamo_supported():
    """False: tensorlab has no frame compiler."""
    return False


def is_inductor_supported():
    return False


def mark_dynamic(t, index, *, min=None, max=None, specialize_on=None):  # noqa: A002
    """Nothing to mark (no shape specialization happens)."""


def maybe_mark_dynamic(t, index):
    """Nothing to mark."""


def mark_static(t, index=None):
    """Nothing to mark."""


def mark_static_address(t, guard=True):
    """Nothing to mark."""


def disallow_in_graph(fn):
    return fn


def graph_break(msg=""):
    """No graph to break."""
