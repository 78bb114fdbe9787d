"""The `torch` alias: a meta-path finder that answers `import torch` and `import torch.X.Y` with
modules standing for `tensorlab` and `tensorlab.X.Y`.

Each aliased module is a thin module object (`TorchAlias`) named as torch's: its attributes come
from the tensorlab module (the same functions and classes, so `torch.nn.Module is
tensorlab.nn.Module`), submodules come back as aliases too, and a name tensorlab lacks raises
`AttributeError: tensorlab does not implement torch.X yet` (an ImportError with that text for
`from torch import X`, which would otherwise hide it). A torch submodule with no tensorlab
counterpart (torch.utils.mobile_optimizer, ...) imports as a `MissingTorchModule` whose
first attribute use raises the same kind of error. A few torch paths map elsewhere than
tensorlab.<same path> (OVERRIDES), and tensorlab's internal modules whose names mean something
else in torch are not exposed (HIDDEN)."""
from __future__ import annotations

import dis
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types

# torch path -> tensorlab module standing for it
OVERRIDES = {
    "torch.backends": "tensorlab.compat.backends",
    "torch.version": "tensorlab.compat.version",
    "torch.ops": "tensorlab.op_namespaces",  # tensorlab.ops is the package of op front ends
}
# tensorlab modules that are not what torch's module of the same name is
HIDDEN = {"torch.op_namespaces", "torch.layout", "torch.compat", "torch.memo", "torch.sync", "torch.cache_dirs",
          "torch.kernel_table", "torch.kernels_path", "torch.printing", "torch.errors", "torch.gpu_check",
          "torch.bench", "torch.dtypes", "torch.autograd_hooks"}

_IMPORT_FROM = dis.opmap.get("IMPORT_FROM")


def _missing_error(what, suffix=" yet"):
    """AttributeError, or ImportError when the caller is a `from M import name` statement."""
    msg = f"tensorlab does not implement {what}{suffix}"
    try:
        frame = sys._getframe(2)
        if _IMPORT_FROM is not None and frame.f_code.co_code[frame.f_lasti] == _IMPORT_FROM:
            return ImportError(msg, name=what.rpartition(".")[0])
    except (ValueError, IndexError, AttributeError):
        pass
    return AttributeError(msg)


def _tensorlab_name(torch_name):
    if torch_name in OVERRIDES:
        return OVERRIDES[torch_name]
    for prefix, target in OVERRIDES.items():
        if torch_name.startswith(prefix + "."):
            return target + torch_name[len(prefix):]
    if torch_name in HIDDEN or any(torch_name.startswith(h + ".") for h in HIDDEN):
        return None
    return "tensorlab" + torch_name[len("torch"):]


def _torch_name(tensorlab_name):
    for prefix, target in OVERRIDES.items():
        if tensorlab_name == target or tensorlab_name.startswith(target + "."):
            return prefix + tensorlab_name[len(target):]
    return "torch" + tensorlab_name[len("tensorlab"):]


class TorchAlias(types.ModuleType):
    """`torch[.X.Y]` standing for a tensorlab module."""

    def __init__(self, name, target):
        super().__init__(name, target.__doc__)
        d = self.__dict__
        d["_tensorlab_module"] = target
        d["__file__"] = getattr(target, "__file__", None)
        if hasattr(target, "__path__"):
            d["__path__"] = []  # a package: its submodules are found by the finder, under torch's names
        if hasattr(target, "__all__"):
            d["__all__"] = list(target.__all__)
        if name == "torch":
            from .version import __version__
            d["__version__"] = __version__

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            try:
                return getattr(self.__dict__["_tensorlab_module"], name)  # __version__, __all__, ...
            except AttributeError:
                raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}") from None
        full = f"{self.__name__}.{name}"
        if full in OVERRIDES:
            return importlib.import_module(full)
        if full in HIDDEN:
            raise _missing_error(full)
        target = self.__dict__["_tensorlab_module"]
        try:
            value = getattr(target, name)
        except AttributeError:
            tl_name = _tensorlab_name(full)
            if hasattr(target, "__path__") and tl_name is not None and _find(tl_name) is not None:
                return importlib.import_module(full)
            raise _missing_error(full) from None
        if isinstance(value, types.ModuleType) and value.__name__.startswith("tensorlab."):
            return importlib.import_module(_torch_name(value.__name__))
        return value

    def __setattr__(self, name, value):
        # `torch.backends.cudnn.benchmark = True` sets the tensorlab module's flag (checked there, read
        # back by everyone); dunders and the submodule aliases the import system binds stay here
        if (name.startswith("__") and name.endswith("__")) or isinstance(value, types.ModuleType):
            return super().__setattr__(name, value)
        setattr(self.__dict__["_tensorlab_module"], name, value)

    def __dir__(self):
        target = self.__dict__["_tensorlab_module"]
        return sorted(set(dir(target)) | set(self.__dict__))

    def __repr__(self):
        return f"<module {self.__name__!r} (tensorlab alias of {self._tensorlab_module.__name__!r})>"


class MissingTorchModule(types.ModuleType):
    """A torch submodule tensorlab does not implement: importing it works (so a script gets as
    far as it can), the first attribute use raises."""

    def __init__(self, name):
        super().__init__(name, f"tensorlab does not implement {name}.")
        self.__dict__["__path__"] = []

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}")
        raise _missing_error(f"{self.__name__}.{name}", suffix=f" ({self.__name__} has no tensorlab counterpart yet)")

    def __repr__(self):
        return f"<module {self.__name__!r} (not implemented by tensorlab)>"


def _from_fromlist():
    """Whether this import was started by `from M import name` probing for a submodule `name`."""
    f = sys._getframe(2)
    for _ in range(8):
        if f is None:
            return False
        if f.f_code.co_name == "_handle_fromlist" and "importlib" in f.f_code.co_filename:
            return True
        f = f.f_back
    return False


def _find(tl_name):
    """tl_name's spec, or None when tensorlab has no such module. A tensorlab module that exists
    but fails to import raises its own error (it is not reported as missing)."""
    try:
        return importlib.util.find_spec(tl_name)
    except ModuleNotFoundError as e:
        if e.name and (tl_name == e.name or tl_name.startswith(e.name + ".")):
            return None
        raise
    except ValueError:  # in sys.modules without a spec
        return None


class TorchFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds `torch` and `torch.*` before any real torch on sys.path."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "torch" and not fullname.startswith("torch."):
            return None
        parent = sys.modules.get(fullname.rpartition(".")[0]) if "." in fullname else None
        tl_name = None if isinstance(parent, MissingTorchModule) else _tensorlab_name(fullname)
        spec = None if tl_name is None else _find(tl_name)
        if spec is None and _from_fromlist():
            return None  # `from torch.X import Name`: Name is an attribute, whose lookup reports it
        is_pkg = spec is None or spec.submodule_search_locations is not None
        return importlib.machinery.ModuleSpec(fullname, self, origin=None if spec is None else spec.origin,
                                              is_package=is_pkg, loader_state=None if spec is None else tl_name)

    def create_module(self, spec):
        tl_name = spec.loader_state
        if tl_name is None:
            return MissingTorchModule(spec.name)
        return TorchAlias(spec.name, importlib.import_module(tl_name))

    def exec_module(self, module):
        pass


FINDER = TorchFinder()
