"""tl.jit (torch.jit): the TorchScript guards and markers that model code calls while running
eagerly (torchvision-style models test torch.jit.is_scripting() in forward, decorate helpers with
@torch.jit.unused, annotate types): they answer as torch does outside scripting. tensorlab has no
TorchScript compiler: script, trace, save and load are not here (under the compat runner they
report "tensorlab does not implement torch.jit.script yet")."""
from __future__ import annotations

import builtins
import collections
import typing
from typing import Final  # noqa: F401  (torch.jit.Final)

__all__ = ["Attribute", "Final", "annotate", "export", "fork", "ignore", "interface", "is_scripting", "is_tracing",
           "isinstance", "unused", "wait", "Future"]

Attribute = collections.namedtuple("Attribute", ["value", "type"])


def is_scripting():
    """False: code never runs under the TorchScript compiler in tensorlab."""
    return False


def is_tracing():
    """False: nothing traces code in tensorlab."""
    return False


def annotate(the_type, the_value):
    """the_value (a type hint for the script compiler; eagerly a no-op)."""
    return the_value


def ignore(drop=False, **kwargs):
    """@ignore / @ignore(drop=...): the function, unchanged (it runs in Python, as torch runs it eagerly)."""
    if callable(drop):
        return drop
    return lambda fn: fn


def unused(fn):
    """@unused: the function, unchanged (eagerly it runs)."""
    return fn


def export(fn):
    """@export: the method, unchanged."""
    return fn


def interface(obj):
    """@interface: the class, unchanged."""
    return obj


def _matches(obj, hint):
    origin = typing.get_origin(hint)
    if origin is None:
        if hint is typing.Any:
            return True
        if hint is None or hint is type(None):
            return obj is None
        return builtins.isinstance(obj, hint)
    args = typing.get_args(hint)
    if origin is typing.Union:
        return any(_matches(obj, a) for a in args)
    if origin is list:
        return builtins.isinstance(obj, list) and all(_matches(x, args[0]) for x in obj)
    if origin is dict:
        return builtins.isinstance(obj, dict) and all(_matches(k, args[0]) and _matches(v, args[1])
                                                      for k, v in obj.items())
    if origin is tuple:
        if not builtins.isinstance(obj, tuple):
            return False
        if len(args) == 2 and args[1] is Ellipsis:
            return all(_matches(x, args[0]) for x in obj)
        return len(obj) == len(args) and all(_matches(x, a) for x, a in zip(obj, args))
    return builtins.isinstance(obj, origin)


def isinstance(obj, target_type):  # noqa: A001
    """torch.jit.isinstance: isinstance that also checks parameterized containers (List[int],
    Dict[str, Tensor], Tuple[int, str], Optional[T]) element by element."""
    return _matches(obj, target_type)


class Future:
    """The result of fork(): computed when forked (tensorlab runs eagerly); wait() returns it."""

    def __init__(self, value):
        self._value = value

    def wait(self):
        """The forked call's result."""
        return self._value

    def value(self):
        return self._value

    def done(self):
        return True


def fork(func, *args, **kwargs):
    """Run func(*args, **kwargs) (at once, in this thread: eager mode, as torch does outside a script)."""
    return Future(func(*args, **kwargs))


def wait(future):
    """The result of a fork()."""
    return future.wait()


def _script_if_tracing(fn):
    """torch scripts fn when a trace reaches it; tensorlab never traces, so fn runs as written."""
    return fn


def _overload(fn):
    """An overload declaration for the script compiler: eagerly the definition that follows is called, so the
    declaration is returned unchanged (never called: its body is `...`)."""
    return fn


_overload_method = _overload
