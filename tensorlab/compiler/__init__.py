"""tl.compiler (torch.compiler): tensorlab runs every op eagerly; these are the calls scripts make
around compilation, answering as torch does for code that is not being compiled."""
from __future__ import annotations

from .._compile import compile  # noqa: F401,A004
from . import config  # noqa: F401

__all__ = ["compile", "config", "disable", "reset", "is_compiling", "is_dynamo_compiling", "is_exporting", "allow_in_graph",
           "assume_constant_result", "cudagraph_mark_step_begin", "list_backends", "set_stance", "substitute_in_graph"]


def disable(fn=None, recursive=True, *, reason=None):
    """The function unchanged (nothing is compiled); usable as @disable and @disable(...)."""
    if fn is None:
        return lambda f: f
    return fn


def reset():
    """Nothing to clear: there are no compiled graphs."""


def is_compiling():
    """False: code never runs under a compiler in tensorlab."""
    return False


def is_dynamo_compiling():
    return False


def is_exporting():
    return False


def allow_in_graph(fn):
    return fn


def assume_constant_result(fn):
    return fn


def substitute_in_graph(original_fn, *, can_constant_fold_through=False, skip_signature_check=False):
    return lambda fn: fn


def cudagraph_mark_step_begin():
    """Nothing to mark: tl.compile builds no CUDA graphs (see tl.cuda.graphs for explicit capture)."""


def list_backends(exclude_tags=("debug", "experimental")):
    """The backends tl.compile accepts."""
    return ["eager"]


class set_stance:
    """Accepted ("default", "force_eager", "eager_on_recompile", "fail_on_recompile"); every stance runs eagerly."""

    _STANCES = ("default", "force_eager", "eager_on_recompile", "fail_on_recompile", "eager_then_compile",
                "aot_eager_then_compile")

    def __init__(self, stance="default", *, skip_guard_eval_unsafe=False, force_backend=None):
        if stance not in self._STANCES:
            raise RuntimeError(f"invalid stance {stance!r}; expected one of {', '.join(self._STANCES)}")
        self.stance = stance

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def __call__(self, fn):
        return fn
