"""tensorlab.compat: run unmodified PyTorch code on tensorlab.

    python -m tensorlab.compat train.py --epochs 3     # the script's `import torch` is tensorlab

or, in a notebook (before anything imports torch):

    import tensorlab.compat
    tensorlab.compat.install()          # or: with tensorlab.compat.install(): import torch ...

`torch`, `torch.nn`, `torch.nn.functional`, `torch.optim`, `torch.cuda`, `torch.autograd`,
`torch.nn.modules.*`, ... resolve to the tensorlab modules of the same path (see _alias.py); a
name tensorlab lacks fails with "tensorlab does not implement torch.X yet". Real torch and the
alias cannot share one process: install() refuses when torch is already imported."""
from __future__ import annotations

import sys

from ._alias import FINDER, MissingTorchModule, TorchAlias

__all__ = ["install", "uninstall", "installed", "TorchAlias", "MissingTorchModule"]


class _Installed:
    """What install() returns: also a context manager that uninstalls on exit."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        uninstall()


def installed():
    return FINDER in sys.meta_path


def install():
    """Make `import torch` (and torch.X.Y) resolve to tensorlab in this process."""
    real = sys.modules.get("torch")
    if real is not None and not isinstance(real, TorchAlias):
        raise RuntimeError("tensorlab.compat: PyTorch itself is already imported in this process "
                           f"({getattr(real, '__file__', None) or 'torch'}), so `torch` cannot also name tensorlab. "
                           "Install the alias before anything imports torch (first cell of a fresh kernel), or run "
                           "the script with `python -m tensorlab.compat script.py`.")
    if not installed():
        sys.meta_path.insert(0, FINDER)
        _follow_into_spawned_children()
    return _Installed()


class _InstallOnUnpickle:
    """Rides in multiprocessing's spawn preparation data: unpickling it in the child (before the
    child re-imports the main module) installs the alias there too."""

    def __reduce__(self):
        return install, ()


def _follow_into_spawned_children():
    """Processes started with "spawn" or "forkserver" (DataLoader workers, multiprocessing pools)
    import `torch` afresh; without this they would get real torch (or nothing) while the parent
    holds tensorlab. Forked children inherit the alias anyway."""
    import multiprocessing.spawn as spawn
    if getattr(spawn.get_preparation_data, "_tensorlab_compat", False):
        return
    original = spawn.get_preparation_data

    def get_preparation_data(name):
        data = original(name)
        if installed():
            data["tensorlab_compat"] = _InstallOnUnpickle()
        return data
    get_preparation_data._tensorlab_compat = True
    spawn.get_preparation_data = get_preparation_data


def uninstall():
    """Remove the alias and forget the aliased modules (a later `import torch` finds real torch)."""
    while FINDER in sys.meta_path:
        sys.meta_path.remove(FINDER)
    for name in [n for n, m in sys.modules.items() if n == "torch" or n.startswith("torch.")]:
        if isinstance(sys.modules[name], (TorchAlias, MissingTorchModule)):
            del sys.modules[name]
