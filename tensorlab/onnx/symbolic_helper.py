"""torch.onnx.symbolic_helper's parse_args for custom-op symbolics (custom_symbolics.py): each argument
after g is converted as its descriptor says: "v" a graph value (kept), "i" int, "f" float, "b" bool,
"s" str, "is" list of ints, "fs" list of floats, "none" as given. A descriptor asking for a constant
that got a graph value raises, naming the argument."""
from __future__ import annotations

import functools

__all__ = ["parse_args"]

_CONVERT = {"i": int, "f": float, "b": bool, "s": str, "is": lambda v: [int(x) for x in v],
            "fs": lambda v: [float(x) for x in v]}


def parse_args(*descriptors):
    for d in descriptors:
        if d not in _CONVERT and d not in ("v", "none", "t"):
            raise ValueError(f"parse_args: unknown descriptor {d!r}")

    def decorate(fn):
        @functools.wraps(fn)
        def wrapper(g, *args, **kwargs):
            if len(args) != len(descriptors):
                raise TypeError(f"{fn.__name__}: parse_args declares {len(descriptors)} arguments, got {len(args)}")
            out = []
            for i, (d, a) in enumerate(zip(descriptors, args)):
                if d in _CONVERT:
                    if isinstance(a, str):  # a graph value where a constant is declared
                        raise RuntimeError(f"{fn.__name__}: argument {i} is declared {d!r} (a constant) but is a graph "
                                           f"value ({a})")
                    a = None if a is None else _CONVERT[d](a)
                out.append(a)
            return fn(g, *out, **kwargs)
        return wrapper
    return decorate
