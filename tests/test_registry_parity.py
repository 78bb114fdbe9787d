"""The op registry and the backends agree: every primitive a registered op needs exists on the CPU
backend (and, when it can be imported, on the CUDA backend under the same name), and every kernel
name an op launches through a generic primitive (unary/binary/ternary, ...) is one that primitive
provides. Written over the whole registry, so each family's rows are covered once registered."""
from __future__ import annotations

import importlib

import pytest

import tensorlab  # noqa: F401  (importing registers every family's rows)
from tensorlab.backends import cpu
from tensorlab.ops import FAMILIES, registry


def _cuda_backend():
    from tensorlab import backends
    d = backends.cuda_diagnosis()
    if d is not None and not backends.cuda_emulated():
        pytest.skip(f"no CUDA backend here: {d.what}")
    return importlib.import_module("tensorlab.backends.cuda")


def _missing_primitives(backend):
    return sorted(p for p in registry.primitives() if not callable(getattr(backend, p, None)))


def _missing_kernels(backend):
    missing = []
    for prim, names in sorted(registry.kernels().items()):
        provided = getattr(getattr(backend, prim, None), "kernels", None)
        if provided is None:
            missing.append(f"{prim}: launched with kernel names {sorted(names)} but lists none (.kernels)")
        elif not names <= provided:
            missing.append(f"{prim}: {sorted(names - provided)}")
    return missing


def test_registry_is_not_empty_and_rows_name_real_families():
    assert registry.REGISTRY, "no op registered"
    for d in registry.REGISTRY.values():
        assert d.family in FAMILIES, f"{d.name}: unknown family {d.family!r}"
        assert d.primitive, f"{d.name}: no primitive"


def test_cpu_backend_implements_every_registered_primitive():
    assert _missing_primitives(cpu) == []


def test_cpu_generic_primitives_provide_every_registered_kernel():
    assert _missing_kernels(cpu) == []


def test_cpu_backend_exports_only_callables():
    for name in dir(cpu):
        if name.startswith("_"):
            continue
        obj = getattr(cpu, name)
        if callable(obj) and getattr(obj, "__module__", "").startswith("tensorlab.backends.cpu"):
            assert name in _all_exports(), f"{name} is public on the CPU backend but in no family's __all__"


def _all_exports():
    names = set()
    import pkgutil
    for mod in sorted(i.name for i in pkgutil.iter_modules(cpu.__path__)):  # every family file
        m = importlib.import_module(f"tensorlab.backends.cpu.{mod}")
        for n in m.__all__:
            assert callable(getattr(m, n)), f"cpu.{mod}.{n} is listed in __all__ but is not callable"
            names.add(n)
    return names


def test_cuda_backend_matches_the_cpu_primitive_names():
    cuda = _cuda_backend()
    assert _missing_primitives(cuda) == []
    assert _missing_kernels(cuda) == []
