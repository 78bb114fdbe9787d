"""Every public callable has a docstring (editors show it on completion; the stubs carry it): tensorlab's
functions, Tensor's methods and properties, nn.functional, nn, linalg, special and optim. tensorlab/_docs.py
holds the docstrings of generated ops; every key of its table names an object that exists."""
from __future__ import annotations

import inspect
import types

import tensorlab as tl
from tensorlab import _docs

NAMESPACES = {"tl": tl, "F": tl.nn.functional, "nn": tl.nn, "linalg": tl.linalg, "special": tl.special,
              "optim": tl.optim}
for _extra in ("fft", "masked", "onnx"):  # namespaces other branches of the op surface add
    if hasattr(tl, _extra):
        NAMESPACES[_extra] = getattr(tl, _extra)


def _undocumented():
    missing = []
    for prefix, ns in NAMESPACES.items():
        for name in dir(ns):
            if name.startswith("_"):
                continue
            obj = getattr(ns, name)
            if isinstance(obj, (types.ModuleType, tl.DType)) or not callable(obj):
                continue
            if not (inspect.getdoc(obj) or "").strip():
                missing.append(f"{prefix}.{name}")
    for name in dir(tl.Tensor):
        if name.startswith("_"):
            continue
        attr = inspect.getattr_static(tl.Tensor, name)
        if isinstance(attr, property) or callable(attr):
            doc = attr.__doc__ if isinstance(attr, property) else inspect.getdoc(attr)
            if not (doc or "").strip():
                missing.append(f"Tensor.{name}")
    return sorted(missing)


def test_every_public_callable_has_a_docstring():
    missing = _undocumented()
    assert not missing, (f"{len(missing)} public callables without a docstring (write one, or add a line to "
                         f"tensorlab/_docs.py for generated ones): {missing}")


def test_the_docstring_table_names_only_what_exists():
    assert _docs.apply() == []
