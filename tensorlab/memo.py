"""One bounded memo for the pure functions that every op asks about the few layouts, shapes and
scalars a program uses (layout math, NumPy view arguments, packed kernel arguments)."""
from __future__ import annotations

LIMIT = 4096  # entries per function; a full memo starts again (programs use few distinct layouts)
_MISSING = object()


def memoized(fn):
    """Memoize `fn`, keyed on its positional arguments (hashable tuples, Layouts, ints). Unhashable arguments (lists) are computed;
    a call that raises is not remembered. Results must be immutable (they are shared)."""
    cache = {}

    def wrapper(*args):
        try:
            r = cache.get(args, _MISSING)
        except TypeError:
            return fn(*args)
        if r is _MISSING:
            r = fn(*args)
            if len(cache) >= LIMIT:
                cache.clear()
            cache[args] = r
        return r

    wrapper.__name__, wrapper.__qualname__, wrapper.__doc__ = fn.__name__, fn.__qualname__, fn.__doc__
    wrapper.cache = cache
    return wrapper
