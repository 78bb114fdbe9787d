"""tl.compile: tensorlab runs eagerly, so the only backend is "eager": the model or function comes
back unchanged (a note says so once per process). Any other backend (torch's default "inductor",
"cudagraphs", ...) is refused with a RuntimeError rather than silently run eagerly."""
from __future__ import annotations

from . import _warn

_noted = False


def compile(model=None, *, fullgraph=False, dynamic=None, backend="eager", mode=None, options=None,  # noqa: A001
            disable=False):
    if mode is not None and options is not None:
        raise RuntimeError("Either mode or options can be specified, but both can't be specified at the same time.")
    if backend != "eager":
        name = backend if isinstance(backend, str) else getattr(backend, "__name__", repr(backend))
        raise RuntimeError(f"tensorlab.compile: backend {name!r} is not available: tensorlab runs every op eagerly and "
                           f"has no graph compiler. Use backend='eager' (the model is returned unchanged) or remove "
                           f"the compile call.")
    if model is None:
        def decorate(fn):
            return compile(fn, fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode, options=options,
                           disable=disable)
        return decorate
    if not callable(model):
        raise RuntimeError(f"tensorlab.compile: expected a callable (a Module or a function), got "
                           f"{type(model).__name__}")
    global _noted
    if not disable and not _noted:
        _noted = True
        _warn.warn("tensorlab.compile: tensorlab runs eagerly; the model is returned unchanged (backend='eager').")
    return model
