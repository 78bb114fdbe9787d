"""tl.fx (torch.fx): only `wrap`, which libraries call at import time to keep a function whole under FX
symbolic tracing. tensorlab has no FX tracer (symbolic_trace, Graph, GraphModule are not here: under the
compat runner they report "tensorlab does not implement torch.fx.X yet"), so a wrapped function is
remembered (`wrapped()`) and otherwise runs as it is."""
from __future__ import annotations

import sys

__all__ = ["wrap"]

_WRAPPED = set()


def wrap(fn_or_name):
    """Record fn_or_name (a function, or the name of a function global to the caller's module) as an FX leaf;
    returns it unchanged, as torch.fx.wrap does."""
    if callable(fn_or_name):
        name = fn_or_name.__name__
    elif isinstance(fn_or_name, str):
        name = fn_or_name
    else:
        raise RuntimeError("Unsupported type for global function! Expected a function or the name of one, got "
                           f"{type(fn_or_name).__name__}")
    caller = sys._getframe(1).f_globals.get("__name__", "?")
    _WRAPPED.add((caller, name))
    return fn_or_name


def wrapped():
    """The (module, function name) pairs recorded by wrap()."""
    return set(_WRAPPED)
