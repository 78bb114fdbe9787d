"""torch.ops under tensorlab.compat (tensorlab.ops is the package of op front ends, so torch's name maps
here): `torch.ops.<ns>.<name>` calls an operator defined through torch.library (tensorlab/library.py),
`torch.ops.aten.<name>` tensorlab's function of that name (compat/aten.py's for aten-only operators such as
slice and _safe_softmax; its overloads, `.default`, `.Tensor`,
`.Scalar`, `.out`, ..., all name the same function: tensorlab's functions take every form), and
`torch.ops.load_library(path)` refuses a C++ operator library: it is built against libtorch, which
tensorlab does not provide (OSError, as torch raises for a library it cannot load)."""
from __future__ import annotations

import os

from . import library

__all__ = ["load_library", "loaded_libraries"]

loaded_libraries = set()


def load_library(path):
    """C++ operator libraries need libtorch: OSError naming the library (packages such as torchvision
    catch it and go on without their compiled ops)."""
    path = os.fspath(path)
    raise OSError(f"tensorlab cannot load the C++ operator library {path!r}: it is built against libtorch, which "
                  f"tensorlab does not provide; define Python operators with torch.library.custom_op instead")


class OpOverload:
    """One overload of an operator (`torch.ops.ns.name.default`): callable."""

    def __init__(self, packet, overload):
        self._packet, self._overloadname = packet, overload
        self.__name__ = f"{packet.__name__}.{overload}"

    def __call__(self, *args, **kwargs):
        return self._packet(*args, **kwargs)

    @property
    def _qualname(self):
        return self._packet._qualname

    def name(self):
        return f"{self._packet._qualname}.{self._overloadname}"

    def __repr__(self):
        return f"<OpOverload(op='{self._packet._qualname}', overload='{self._overloadname}')>"


class OpOverloadPacket:
    """`torch.ops.ns.name`: callable; its attributes are overloads."""

    def __init__(self, ns, name, fn):
        self._ns, self.__name__, self._fn = ns, name, fn
        self._qualname = f"{ns}::{name}"

    def __call__(self, *args, **kwargs):
        return self._fn(*args, **kwargs)

    def __getattr__(self, overload):
        if overload.startswith("__"):
            raise AttributeError(overload)
        return OpOverload(self, overload)

    def overloads(self):
        return ["default"]

    def __repr__(self):
        return f"<OpOverloadPacket(op='{self._ns}.{self.__name__}')>"


def _aten(name):
    import tensorlab as tl
    from tensorlab.compat import aten as aten_only
    from tensorlab.nn import functional as F
    for owner in (aten_only, tl, F, tl.linalg, tl.special, tl.fft):
        fn = getattr(owner, name, None)
        if callable(fn) and not isinstance(fn, type):
            return fn
    method = getattr(tl.Tensor, name, None)
    if callable(method):
        return method
    return None


class OpNamespace:
    """`torch.ops.<ns>`: its operators as attributes."""

    def __init__(self, ns):
        self.name = ns

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        if self.name == "aten":
            fn = _aten(name)
        else:
            op = library._REGISTRY.get(f"{self.name}::{name}")
            fn = op
        if fn is None:
            raise AttributeError(f"'_OpNamespace' 'torch.ops.{self.name}' object has no attribute '{name}'")
        return OpOverloadPacket(self.name, name, fn)

    def __repr__(self):
        return f"<OpNamespace 'torch.ops.{self.name}'>"


_namespaces = {}


def __getattr__(ns):
    if ns.startswith("__"):
        raise AttributeError(ns)
    space = _namespaces.get(ns)
    if space is None:
        space = _namespaces.setdefault(ns, OpNamespace(ns))
    return space
